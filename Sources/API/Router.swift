import Backend
import Foundation
import Notifications
import Wire

/// The API as a function from request to response. The HTTP server and the in-process
/// transport call the same router; it owns one store connection, so use one per thread.
public final class Router {
    public let store: Store
    /// The wall clock, for the stamps clients make (events carry their own time).
    var now: () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }

    public static let maximumBody = 1 << 20

    /// One writer at a time in this process. SQLite allows one writer anyway, but a writer
    /// that finds the lock taken sleeps in growing steps (up to 100 ms) before trying again;
    /// waiting on this lock instead wakes the moment the other write is done.
    static let writes = NSLock()

    func writing<T>(_ body: () throws -> T) rethrows -> T {
        Router.writes.lock()
        defer { Router.writes.unlock() }
        return try body()
    }

    public init(store: Store) { self.store = store }

    /// Whether `poll`'s user has a change after its version now.
    public func hasChanges(_ poll: LongPoll) -> Bool {
        (try? store.hasChanges(for: poll.userKey, after: poll.after)) ?? true
    }

    /// Answers `request`, waiting in this thread when it is a long-poll with nothing yet: for
    /// callers in-process, which have no connection to suspend.
    public func respondWaiting(to request: HTTPRequest) -> HTTPResponse {
        var request = request
        while true {
            let seen = ChangeSignal.shared.current
            let response = respond(to: request)
            guard let poll = response.longPoll else { return response }
            request.deadline = poll.deadline
            if hasChanges(poll) { continue }
            // Writes from other processes do not signal: look again at least every 100 ms.
            ChangeSignal.shared.wait(after: seen, until: min(poll.deadline, Date().addingTimeInterval(0.1)))
            if Date() >= poll.deadline { request.deadline = Date.distantPast }
        }
    }

    public func respond(to request: HTTPRequest) -> HTTPResponse {
        do {
            guard request.body.count <= Router.maximumBody else { throw APIError.tooLarge }
            return try route(request)
        } catch let error as APIError {
            return error.response
        } catch let error as WireError {
            return APIError.invalid(error.description).response
        } catch {
            return APIError(500, "internal", "the store failed: \(error)").response
        }
    }

    private func route(_ request: HTTPRequest) throws -> HTTPResponse {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard parts.first == "v1" else { throw APIError.notFound() }
        let rest = Array(parts.dropFirst())
        func only(_ methods: String..., then body: () throws -> HTTPResponse) throws -> HTTPResponse {
            guard methods.contains(request.method) else { throw APIError.methodNotAllowed(methods) }
            return try body()
        }
        let id = rest.count > 1 ? rest[1] : ""
        switch (rest.first ?? "", rest.count, rest.last ?? "") {
        case ("health", 1, _):
            return try only("GET") {
                .ok(.object([("ok", true), ("version", .int(try store.currentVersion())), ("store", .string(store.identity))]))
            }
        case ("me", 1, _):
            return try only("GET") {
                let me = try user(request)
                return .ok(.object([("user", .string(me.id)), ("username", .string(me.username)), ("name", .string(me.name))]))
            }
        case ("counts", 1, _):
            return try only("GET") { .ok(try store.counts(for: try user(request).key).json) }
        case ("activity", 1, _):
            return try only("GET") { try activity(request) }
        case ("mutations", 1, _):
            return try only("POST") { try mutations(request) }
        case ("events", 1, _):
            return try only("POST") { try events(request) }
        case ("preferences", 1, _):
            return try only("GET", "PUT") { try preferences(request) }
        case ("steps", 2, _):
            return try only("GET") { try step(request, id) }
        case ("steps", 3, "interactions"):
            return try only("GET") { try interactions(request, id) }
        case ("users", 2, _):
            return try only("GET") { try profile(request, id) }
        case ("journeys", 2, _):
            return try only("GET") { try journey(request, id) }
        case ("rows", 3, "push"):
            return try only("GET") { try push(request, id) }
        default:
            throw APIError.notFound()
        }
    }

    /// The user the bearer token speaks for: 401 without a valid token (unknown, revoked or
    /// expired), 403 for an admin token or an account that is banned or deactivated — from the
    /// moment its state changes, whatever token it holds.
    func user(_ request: HTTPRequest) throws -> UserRecord {
        let user: UserRecord
        if let trusted = request.trustedUser {
            guard let found = try store.user(trusted) else { throw APIError.unauthorized }
            user = found
        } else {
            guard let token = request.bearerToken, let holder = try store.holder(ofToken: token, at: now()) else {
                throw APIError.unauthorized
            }
            guard let found = holder.user else { throw APIError.forbidden }
            user = found
        }
        guard user.isActive else { throw APIError.accountInactive(user.state) }
        return user
    }

    /// An admin token's holder, or 401/403.
    func admin(_ request: HTTPRequest) throws {
        guard let token = request.bearerToken, let holder = try store.holder(ofToken: token, at: now()) else {
            throw APIError.unauthorized
        }
        guard holder.isAdmin else { throw APIError.forbidden }
    }

    func jsonBody(_ request: HTTPRequest) throws -> JSON {
        guard let json = try? JSON.parse(request.body), case .object = json else {
            throw APIError.malformed("the body must be a JSON object")
        }
        return json
    }

    func integer(_ request: HTTPRequest, _ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = request.query[name] else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw APIError.invalid("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}
