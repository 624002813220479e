import API
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a replica reaches its server: a request in, a status and a body out. A thrown error
/// means the server could not be reached (the replica is offline); an HTTP status is an answer.
public protocol Transport: Sendable {
    /// A name for this server, used to name the replica's file.
    var serverName: String { get }
    func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data)
}

/// The server could not be reached.
public struct Unreachable: Error, CustomStringConvertible {
    public let description: String
}

/// The API over HTTP, with Foundation's URLSession.
public final class HTTPTransport: Transport, @unchecked Sendable {
    public let baseURL: URL
    private let token: String
    private let session: URLSession

    public init(baseURL: URL, token: String) {
        self.baseURL = baseURL
        self.token = token
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 75  // above the longest long-poll
        session = URLSession(configuration: configuration)
    }

    public var serverName: String { baseURL.absoluteString }

    public func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data) {
        var components = URLComponents(url: baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)!
        if !query.isEmpty { components.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) } }
        var request = URLRequest(url: components.url!)
        request.httpMethod = method
        request.httpBody = body
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox()
        session.dataTask(with: request) { data, response, error in
            if let response = response as? HTTPURLResponse {
                result.value = .success((response.statusCode, data ?? Data()))
            } else {
                result.value = .failure(Unreachable(description: error?.localizedDescription ?? "no answer from \(self.serverName)"))
            }
            done.signal()
        }.resume()
        done.wait()
        return try result.value!.get()
    }
}

private final class ResultBox: @unchecked Sendable {
    var value: Result<(Int, Data), Error>?
}

/// The API in this process: the router called directly, as the given user. Each call borrows
/// a router (a store connection) from a pool, so a long-poll waiting on the router's change
/// signal never holds up a stamp sent beside it.
public final class InProcessTransport: Transport, @unchecked Sendable {
    private let routers: RouterPool
    private let user: String
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
        let response = try routers.borrow { $0.respondWaiting(to: request) }
        return (response.status, response.body)
    }
}
