import Foundation
import Wire

/// The API in this process: the router called directly, as the given user — the embedded
/// default's transport. Each call borrows a router (a store connection) from a pool, so a
/// long-poll waiting on the change signal never holds up a stamp sent beside it.
public final class InProcessTransport: Transport, @unchecked Sendable {  // lends store connections (C handles) one thread at a time; `admin` is set before use
    private let routers: RouterPool
    private let user: String
    /// Whether its calls may do what an admin token may (see `HTTPRequest.trustedAdmin`).
    public var admin = false
    public let serverName: String

    /// `makeRouter` opens a router on the store (called when the pool needs one more).
    public init(user: String, serverName: String = "embedded", makeRouter: @escaping () throws -> Router) {
        self.user = user
        self.serverName = serverName
        routers = RouterPool(open: makeRouter)
    }

    /// One router only: for callers that use the transport from one thread at a time (a
    /// second concurrent call is refused rather than sharing the connection).
    public init(router: Router, user: String, serverName: String = "embedded") {
        self.user = user
        self.serverName = serverName
        routers = RouterPool(only: [router], otherwise: Unreachable(description: "this in-process transport serves one call at a time"))
    }

    public func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data) {
        var request = HTTPRequest(method: method, path: path, query: query, body: body ?? Data())
        request.trustedUser = user
        request.trustedAdmin = admin
        let response = try routers.borrow { $0.respondWaiting(to: request) }
        return (response.status, response.body)
    }
}
