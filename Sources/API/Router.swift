import Backend
import Synchronization
import Storage
import Foundation
import Notifications
import Wire

/// Counts of where reads went, for `/v1/health`.
public final class ReadCounts: Sendable {
    public enum Place: String, CaseIterable, Sendable { case standby, standbyBehind, standbyDown }
    private struct State {
        var counts: [Place: Int] = [:]
        var told: (@Sendable (String) -> Void)?
        var reaching: Bool?
    }
    private let state = Mutex(State())

    /// Told, once each time, when reads stop reaching the standby and when they reach it again
    /// (`stepo serve` prints it); a standby merely behind for a moment is not a change.
    public var onChange: (@Sendable (String) -> Void)? {
        get { state.withLock { $0.told } }
        set { state.withLock { $0.told = newValue } }
    }

    func count(_ place: Place, why: String? = nil) {
        let (message, tell) = state.withLock { state -> (String?, (@Sendable (String) -> Void)?) in
            state.counts[place, default: 0] += 1
            var message: String?
            switch place {
            case .standby where state.reaching != true:
                message = "reads go to the standby"
                state.reaching = true
            case .standbyDown where state.reaching != false:
                message = "the standby cannot serve reads (\(why ?? "not reachable")); reads go to the primary until it can"
                state.reaching = false
            case .standby, .standbyBehind, .standbyDown: break
            }
            return (message, state.told)
        }
        if let message { tell?(message) }
    }

    public var snapshot: [Place: Int] { state.withLock { $0.counts } }
}

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
    static let writes = Mutex(())

    /// On PostgreSQL writers run side by side (their versions are kept in order by the store),
    /// so there is nothing to wait for here.
    func writing<T>(_ body: () throws -> T) rethrows -> T {
        guard !store.dialect.writersSideBySide else { return try body() }
        return try Router.writes.withLock { _ in try body() }
    }

    /// Opens a store on a streaming standby for this router's reads (`--read-database`), or
    /// nil: every read goes to `store`.
    private let openReader: ((Store) throws -> Store)?
    private var reader: Store?
    /// When to try the standby again after it could not be reached.
    private var readerRetry = Date.distantPast

    public init(store: Store, reader openReader: ((Store) throws -> Store)? = nil) {
        self.store = store
        self.openReader = openReader
    }

    /// Where reads went, process-wide: to the standby, or to the primary because the standby
    /// was behind or could not be reached (`/v1/health` reports them).
    public static let reads = ReadCounts()

    /// Runs a read on the standby when there is one and it has replayed everything the primary
    /// had written when the read began (`caughtUp`: the body checks that itself, through the
    /// horizon); else on the primary. A standby that is behind or gone costs a read a second
    /// round trip, never a stale answer; one that cannot be reached is tried again after a second.
    func reading<T>(caughtUp: Bool = false, _ body: (Store) throws -> T) throws -> T {
        guard let openReader else { return try body(store) }
        var why: String?
        if reader == nil, Date() >= readerRetry {
            do {
                reader = try openReader(store)
            } catch {
                why = Store.redacted("\(error)")
                readerRetry = Date().addingTimeInterval(1)
            }
        }
        guard let standby = reader else {
            Router.reads.count(.standbyDown, why: why)
            return try body(store)
        }
        do {
            if !caughtUp { try standby.requireCaughtUp() }
            let answer = try body(standby)
            Router.reads.count(.standby)
            return answer
        } catch let behind as StandbyBehind {
            if behind.moved {
                // It follows something else now: checked again when next opened.
                reader = nil
                Router.reads.count(.standbyDown, why: "it moved to another timeline")
            } else {
                Router.reads.count(.standbyBehind)
            }
            return try body(store)
        } catch where !standby.isConnected || (Connection.fault(of: error) != nil && store.isConnected) {
            // The standby went away (or stopped taking reads): the primary answers meanwhile.
            reader = nil
            readerRetry = Date().addingTimeInterval(1)
            Router.reads.count(.standbyDown, why: Store.redacted(Connection.message(of: error)))
            return try body(store)
        }
    }

    /// Whether `poll`'s user has a change after its version now.
    public func hasChanges(_ poll: LongPoll) -> Bool {
        (try? store.sync.hasChanges(for: poll.userKey, after: poll.after)) ?? true
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
        } catch {
            return response(for: error)
        }
    }

    /// The answer an error makes.
    public func response(for error: Error) -> HTTPResponse {
        switch error {
        case let error as APIError:
            return error.response
        case let error as WireError:
            return APIError.invalid(error.description).response
        case let diverged as HistoryDiverged:
            // A pull or a batch of mutations made on a history the store no longer has.
            return APIError(409, "historyDiverged", diverged.description).response
        default:
            // A full disk, a database restarting: retryable, and said so. A connection that
            // broke without a word is the same fault.
            if let fault = Connection.fault(of: error) ?? (store.isConnected ? nil : .unavailable) {
                return APIError.unavailable(fault).response
            }
            return APIError(500, "internal", "the store failed: \(Connection.message(of: error))").response
        }
    }

    /// One route: the methods it answers, its path (`{id}` stands for one segment), its handler.
    public struct Endpoint: Sendable {
        public let methods: [String]
        public let path: String
        /// Whether a GET here only reads: on SQLite it then reads in one transaction, not one
        /// per statement (each of which took a lock and looked at the file: a sixth of a
        /// small read's time), and sees one state of the store throughout.
        var readsOnly = false
        let handle: @Sendable (Router, HTTPRequest, String) throws -> HTTPResponse

        /// The `{id}` segment of `parts` when they match this path, "" when it has none; nil otherwise.
        func match(_ parts: [Substring]) -> String? {
            let pattern = path.split(separator: "/")
            guard pattern.count == parts.count else { return nil }
            var id = ""
            for (expected, part) in zip(pattern, parts) {
                if expected == "{id}" { id = String(part) } else if expected != part { return nil }
            }
            return id
        }
    }

    /// Every route the API serves: the routing table itself, and what docs/api.md must list.
    public static let endpoints: [Endpoint] = [
        Endpoint(methods: ["GET"], path: "/v1/health") { router, request, _ in
            var fields: [(String, JSON)] = [("ok", true), ("version", .int(try router.store.currentVersion())),
                                            ("store", .string(router.store.identity))]
            // How POST /v1/events requests joined groups (one transaction each) since the start:
            // for an admin token only (the traffic is not anyone's business).
            if (try? router.admin(request)) != nil {
                let groups = EventGroups.of(router.store).counts
                fields.append(("eventGroups", .object([("requests", .int(groups.requests)), ("groups", .int(groups.groups)),
                                                       ("largest", .int(groups.largest)), ("retried", .int(groups.retried))])))
                // Pages answered from the page cache, pages written afresh, and its size.
                let pages = PageCache.shared.counts
                fields.append(("pageCache", .object([("hits", .int(pages.hits)), ("misses", .int(pages.misses)),
                                                     ("bytes", .int(pages.bytes))])))
            }
            if router.openReader != nil {
                // With a standby: where reads went since the server started.
                let reads = Router.reads.snapshot
                fields.append(("reads", .object(ReadCounts.Place.allCases.map { ($0.rawValue, JSON.int(reads[$0] ?? 0)) })))
            }
            return .ok(.object(fields))
        },
        Endpoint(methods: ["GET"], path: "/v1/me", readsOnly: true) { router, request, _ in
            let me = try router.user(request)
            return .ok(.object([("user", .string(me.id)), ("username", .string(me.username)), ("name", .string(me.name))]))
        },
        Endpoint(methods: ["GET"], path: "/v1/counts", readsOnly: true) { router, request, _ in
            let user = try router.user(request)
            return .ok(try router.reading { try $0.inboxes.counts(for: user.key) }.json)
        },
        Endpoint(methods: ["GET"], path: "/v1/activity", readsOnly: true) { router, request, _ in try router.activity(request) },
        Endpoint(methods: ["POST"], path: "/v1/mutations") { router, request, _ in try router.mutations(request) },
        Endpoint(methods: ["POST"], path: "/v1/events") { router, request, _ in try router.events(request) },
        Endpoint(methods: ["GET", "PUT"], path: "/v1/preferences") { router, request, _ in try router.preferences(request) },
        Endpoint(methods: ["GET"], path: "/v1/steps/{id}", readsOnly: true) { router, request, id in try router.step(request, id) },
        Endpoint(methods: ["GET"], path: "/v1/steps/{id}/interactions", readsOnly: true) { router, request, id in try router.interactions(request, id) },
        Endpoint(methods: ["GET"], path: "/v1/users/{id}", readsOnly: true) { router, request, id in try router.profile(request, id) },
        Endpoint(methods: ["GET"], path: "/v1/journeys/{id}", readsOnly: true) { router, request, id in try router.journey(request, id) },
        Endpoint(methods: ["GET"], path: "/v1/rows/{id}/push", readsOnly: true) { router, request, id in try router.push(request, id) },
        Endpoint(methods: ["GET", "POST"], path: "/v1/devices") { router, request, _ in try router.devices(request) },
        Endpoint(methods: ["DELETE"], path: "/v1/devices/{id}") { router, request, token in try router.removeDevice(request, token) },
        Endpoint(methods: ["GET"], path: "/v1/stats") { router, request, _ in try router.stats(request) },
    ]

    /// A path's segments, each decoded on its own: an id's "/" (sent as %2F) stays inside its segment.
    static func segments(_ path: String) -> [Substring] {
        // Decoded only where there is something to decode: Foundation's decoding costs about a
        // microsecond a segment, and most paths have none.
        path.split(separator: "/", omittingEmptySubsequences: true).map { part in
            guard part.utf8.contains(UInt8(ascii: "%")) else { return part }
            return part.removingPercentEncoding.map { Substring($0) } ?? part
        }
    }

    /// Whether the request is `POST /v1/events`, which an HTTP server answers in two halves
    /// (`startEvents`, `finishEvents`) so that a request waiting for its group holds no thread.
    public static func postsEvents(_ request: HTTPRequest) -> Bool {
        request.method == "POST" && segments(request.path) == ["v1", "events"]
    }

    private func route(_ request: HTTPRequest) throws -> HTTPResponse {
        let parts = Router.segments(request.path)
        for endpoint in Router.endpoints {
            guard let id = endpoint.match(parts) else { continue }
            // HEAD is GET without the body (the HTTP server sends no body for it).
            var request = request
            if request.method == "HEAD", endpoint.methods.contains("GET") { request.method = "GET" }
            guard endpoint.methods.contains(request.method) else { throw APIError.methodNotAllowed(endpoint.methods) }
            if endpoint.readsOnly, !store.dialect.writersSideBySide {
                return try store.snapshot { try endpoint.handle(self, request, id) }
            }
            return try endpoint.handle(self, request, id)
        }
        throw APIError.notFound()
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
            guard let token = request.bearerToken, let holder = try store.tokens.holder(of: token, at: now()) else {
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
        if request.trustedAdmin { return }
        guard let token = request.bearerToken, let holder = try store.tokens.holder(of: token, at: now()) else {
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
