import API
import Backend
import CMicroHTTPD
import Dispatch
import Foundation
import Synchronization

/// The API over HTTP/1.1 with GNU libmicrohttpd: epoll in a thread pool, keep-alive, a 1 MiB
/// body limit, one log line per request. Each worker borrows a router (a store connection) from
/// a small pool, so requests run in parallel over WAL.
///
/// Under hostile load it holds: each address may hold `ServerLimits.perAddress` connections
/// (more are answered 429, and twice as many are closed at accept); headers and bodies have
/// deadlines; the process's file limit is raised at start and the connection limit follows it.
/// Parked long-polls hold no thread and no deadline.
public final class HTTPServer: @unchecked Sendable {  // owns the libmicrohttpd daemon; what changes is guarded by Waiters and ConnectionGuard
    private var daemon: OpaquePointer?
    private let routers: RouterPool
    private let waiters = Waiters()
    private var waker: Thread?
    /// On PostgreSQL: the connection that hears other servers' commits.
    private var listener: ChangeListener?
    private let log: (@Sendable (String) -> Void)?
    /// The groups its `POST /v1/events` requests join.
    private var eventGroups: EventGroups?
    /// `POST /v1/events` requests let in and not yet completed (answered, or their connection
    /// gone); once the server stops, none is let in, and it waits for these to complete — a
    /// parked one is answered on the daemon's next turn after its group is written.
    private let eventsGate = Mutex((stopping: false, inFlight: 0))
    let connections: ConnectionGuard
    /// The port the server listens on (the one the system chose, when asked for 0).
    public private(set) var port: UInt16 = 0
    /// Connections the server will hold at once.
    public let connectionLimit: Int
    /// Long-polls parked at once, at most: half the connections, so parked polls can never
    /// take the room new clients need.
    public var parkedLimit: Int { connectionLimit / 2 }

    /// Starts serving the store at `databasePath` on `address:port` (port 0: any free port).
    /// With `readDatabase` (a streaming standby of the PostgreSQL store), reads go there
    /// whenever it has replayed what they must see (see `Router.reading`).
    public init(databasePath: String, readDatabase: String? = nil, address: String = "127.0.0.1", port: UInt16 = 8080,
                threads: Int = 4, limits: ServerLimits = ServerLimits(), log: (@Sendable (String) -> Void)? = nil) throws {
        let openReader: ((Store) throws -> Store)? = readDatabase.map { url in { primary in try Store(standby: url, primary: primary) } }
        routers = RouterPool { Router(store: try Store(location: databasePath), reader: openReader) }
        self.log = log
        connections = ConnectionGuard(limits: limits)
        // Room for the connections, the store's files and a margin.
        connectionLimit = max(64, min(ConnectionGuard.raiseFileLimit() - 128, 60_000))
        // Open (and migrate) the store before listening. Event groups are written on a thread
        // of their own: a server thread never waits on the store for them.
        eventGroups = try routers.borrow(then: { $0.eventGroups })
        eventGroups?.attachWriter { Router(store: try Store(location: databasePath)) }
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = port.bigEndian
        guard inet_pton(AF_INET, address, &socketAddress.sin_addr) == 1 else {
            throw ServerError("cannot listen on \(address): give an IPv4 address such as 127.0.0.1")
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        let completed = unsafeBitCast(stepoRequestCompleted as MHD_RequestCompletedCallback, to: UnsafeRawPointer.self)
        let notified = unsafeBitCast(stepoConnectionNotified as MHD_NotifyConnectionCallback, to: UnsafeRawPointer.self)
        let flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_USE_ERROR_LOG.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue
        let limit = connectionLimit
        daemon = withUnsafePointer(to: &socketAddress) { addressPointer -> OpaquePointer? in
            let sockaddrPointer = UnsafeRawPointer(addressPointer)
            var options: [CVarArg] = [
                MHD_OPTION.THREAD_POOL_SIZE.rawValue, UInt32(threads),
                MHD_OPTION.SOCK_ADDR.rawValue, OpaquePointer(sockaddrPointer),
                MHD_OPTION.NOTIFY_COMPLETED.rawValue, OpaquePointer(completed), OpaquePointer(context),
                MHD_OPTION.NOTIFY_CONNECTION.rawValue, OpaquePointer(notified), OpaquePointer(context),
                MHD_OPTION.CONNECTION_LIMIT.rawValue, UInt32(limit),
                // A backstop for idle sockets; the guard's deadlines are shorter.
                MHD_OPTION.CONNECTION_TIMEOUT.rawValue, UInt32(60),
                // Percent-decoding that keeps a %00 as written (see the shim).
                MHD_OPTION.UNESCAPE_CALLBACK.rawValue, OpaquePointer(stepo_mhd_unescape_callback()), OpaquePointer(context),
            ]
            if limits.perAddress > 0 {
                options += [MHD_OPTION.PER_IP_CONNECTION_LIMIT.rawValue, UInt32(limits.hardPerAddress)]
            }
            options.append(MHD_OPTION.END.rawValue)
            return withVaList(options) { arguments in
                MHD_start_daemon_va(UInt32(flags), port, nil, nil, stepoAccessHandler, context, arguments)
            }
        }
        guard let daemon else {
            throw ServerError("cannot listen on \(address):\(port) (is the port taken?)")
        }
        self.port = stepo_mhd_bound_port(daemon)
        // On PostgreSQL other servers write too: their commits notify, and a LISTEN connection
        // wakes the waker; the periodic look then only backs it up. On SQLite, writes by other
        // processes (an ingest) are found by looking every 50 ms.
        let shared = Store.isPostgresURL(databasePath)
        if shared {
            let listener = ChangeListener(url: databasePath) { ChangeSignal.shared.signal() }
            try listener.start()
            self.listener = listener
        }
        let waker = Thread { [waiters, routers] in HTTPServer.wake(waiters, routers, shared: shared) }
        waker.start()
        self.waker = waker
    }

    deinit { stop() }

    private let stopping = Mutex(())

    /// Stops listening and waits for requests in flight to finish; long-polls are answered.
    public func stop() {
        // Once, whoever asks first: a second MHD_stop_daemon joins threads already gone.
        stopping.withLock { _ in
            guard let daemon else { return }
            listener?.stop()
            connections.stop()
            waiters.close()
            // Suspended connections must be resumed before the daemon stops; they answer at once.
            for connection in waiters.takeAll() { MHD_resume_connection(connection) }
            // No new connection, and no new event let in; those let in are answered once their
            // group is written (bounded). If the store does not answer meanwhile, those still
            // waiting for a group are answered 503 (none of theirs was written); a group stuck
            // in the store keeps its connections suspended, and libmicrohttpd may not be stopped
            // with suspended connections: it is left to the process's exit.
            let listening = MHD_quiesce_daemon(daemon)
            eventsGate.withLock { $0.stopping = true }
            let inFlight = { self.eventsGate.withLock { $0.inFlight } }
            var deadline = Date().addingTimeInterval(30)
            while inFlight() > 0, Date() < deadline { usleep(2_000) }
            if inFlight() > 0 {
                eventGroups?.failWaiting(APIError.unavailable(.unavailable))
                deadline = Date().addingTimeInterval(2)
                while inFlight() > 0, Date() < deadline { usleep(2_000) }
            }
            eventGroups?.detachWriter()
            guard inFlight() == 0 else {
                log?("a group of events was still being written when the server stopped: its requests were not answered")
                self.daemon = nil
                return
            }
            MHD_stop_daemon(daemon)
            if listening >= 0 { close(listening) }  // quiesced: the listening socket is ours to close
            self.daemon = nil
        }
    }

    /// The waker: resumes each suspended long-poll when its user's rows change or its deadline
    /// passes. Looks are at least 10 ms apart (25 ms on PostgreSQL), and each asks one query about
    /// many polls.
    ///
    /// On SQLite, each look (on a write through this server's router, else every 50 ms, for
    /// other processes' writes) asks about every parked poll. On PostgreSQL (`shared`) other
    /// servers write too: their commits reach this one by LISTEN, and a look asks only which
    /// users changed since the last look (`usersChanged`), at a cost that follows the changes,
    /// not the parked polls; a poll just parked is asked about once on its own (a change may
    /// have come between its read and its parking), and every half second all of them are.
    private static func wake(_ waiters: Waiters, _ routers: RouterPool, shared: Bool) {
        var seen = ChangeSignal.shared.current
        let interval = shared ? 0.5 : 0.05
        let spacing = shared ? 0.025 : 0.01
        var since = shared ? ((try? routers.borrow { try $0.store.horizon() }) ?? 0) : 0
        var lastFull = Date()
        while !waiters.isClosed {
            seen = ChangeSignal.shared.wait(after: seen, until: Date().addingTimeInterval(interval))
            let now = Date()
            var changed: Set<Int>?
            if shared && waiters.count == 0 {
                // No one is parked: nobody to look for. Only keep the mark where changes start
                // current (one cheap read, at most twice a second), so the first look after a
                // poll parks covers the changes since, not the whole idle spell; a poll that
                // parks is asked about on its own anyway.
                if now.timeIntervalSince(lastFull) >= interval, let next = try? routers.borrow(then: { try $0.store.horizon() }) {
                    since = max(since, next)
                }
            } else if shared, let found = try? routers.borrow(then: { try $0.store.sync.usersChanged(since: since) }) {
                changed = found.users
                since = found.next
            }
            let full = !shared || now.timeIntervalSince(lastFull) >= interval
            if full { lastFull = now }
            let ready = waiters.take { polls in
                // A client that hung up while it waited frees its place now, not at its deadline.
                let hungUp = full ? HTTPServer.hungUp(polls.map(\.socket)) : Set<Int32>()
                let asked = polls.indices.filter { full || polls[$0].fresh }
                let found = asked.isEmpty ? Set<Int>() : try? routers.borrow {
                    try $0.store.sync.usersWithChanges(asked.map { (polls[$0].poll.userKey, polls[$0].poll.after) })
                }
                // A store that cannot answer: let the polls answer (and report) for themselves.
                guard let found else { return polls.map { _ in true } }
                let everyone = changed?.contains(0) ?? false
                return polls.map { entry in
                    now >= entry.poll.deadline || found.contains(entry.poll.userKey) || everyone
                        || (changed?.contains(entry.poll.userKey) ?? false) || hungUp.contains(entry.socket)
                }
            }
            for connection in ready { MHD_resume_connection(connection) }
            // Looks at least `spacing` apart: on PostgreSQL each costs the database an index
            // range per table, and three servers look.
            let spent = Date().timeIntervalSince(now)
            if spent < spacing { usleep(useconds_t((spacing - spent) * 1e6)) }
        }
        for connection in waiters.takeAll() { MHD_resume_connection(connection) }
    }

    /// Which of `sockets` their peer has closed (or that failed): one poll(2) over all of them.
    static func hungUp(_ sockets: [Int32]) -> Set<Int32> {
        // POLLRDHUP (Linux, 0x2000) is behind _GNU_SOURCE in the C headers Swift imports.
        let peerClosed: Int16 = 0x2000
        var watched = sockets.filter { $0 >= 0 }.map { pollfd(fd: $0, events: peerClosed, revents: 0) }
        guard !watched.isEmpty, poll(&watched, nfds_t(watched.count), 0) > 0 else { return [] }
        let gone = peerClosed | Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)
        return Set(watched.filter { $0.revents & gone != 0 }.map(\.fd))
    }

    // MARK: Called from the C callbacks (HTTPServer+Callbacks.swift)

    func handle(_ connection: OpaquePointer, url: String, method: String, upload: UnsafePointer<CChar>?,
                uploadSize: UnsafeMutablePointer<Int>, state slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let raw = slot.pointee else {
            // The first call for a request: headers only. Keep state for its body.
            let state = RequestState(method: method, path: url)
            slot.pointee = Unmanaged.passRetained(state).toOpaque()
            state.overCap = connections.item(connection)?.overCap ?? false
            connections.move(connection, to: .receivingBody)
            // What the headers alone refuse is answered now, before any body is invited (an
            // `Expect: 100-continue` is answered with the refusal, not with "100 Continue").
            if !state.overCap, let refusal = refusal(ofHeaders: connection, url: url) {
                state.status = refusal.status
                return queue(refusal.response, on: connection, closing: true)
            }
            // A long-poll its token (or the server) has no room to park is refused from its
            // head, before the store is asked anything: a flood of them costs a counter each.
            if !state.overCap, method == "GET", url.hasPrefix("/v1/activity"),
               let wait = MHD_lookup_connection_value(connection, .GET_ARGUMENT_KIND, "wait"), (Int(String(cString: wait)) ?? 0) > 0,
               waiters.parked(token: bearerToken(connection)) >= connections.limits.parkedPerToken || waiters.count >= parkedLimit {
                state.status = 429
                return queue(tooManyLongPolls.response, on: connection, closing: true)
            }
            return .YES
        }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
        if state.overCap {
            // Over the address's cap: a clear answer, then the connection closes.
            uploadSize.pointee = 0
            state.status = 429
            let refusal = APIError(429, "tooManyConnections",
                                   "this address holds \(connections.limits.perAddress) connections already; close some and try again")
            return queue(refusal.response, on: connection, closing: true)
        }
        if uploadSize.pointee > 0 {
            if let upload, state.body.count + uploadSize.pointee <= Router.maximumBody {
                state.body.append(UnsafeRawPointer(upload).assumingMemoryBound(to: UInt8.self), count: uploadSize.pointee)
            } else {
                state.tooLarge = true  // keep draining, answer 413 at the end
            }
            uploadSize.pointee = 0
            return .YES
        }
        let response: HTTPResponse
        if state.tooLarge {
            response = APIError.tooLarge.response
        } else {
            var request = HTTPRequest(method: method, path: url, query: values(connection, .GET_ARGUMENT_KIND),
                                      headers: values(connection, .HEADER_KIND), body: state.body)
            let token = request.bearerToken
            // Resumed after a wait: the first deadline holds (or has passed, when closing).
            request.deadline = waiters.isClosed ? Date.distantPast : state.deadline
            if let pending = state.pending {
                // Woken from its group: answered, or to lead the next group.
                response = finish(pending)
            } else if Router.postsEvents(request) {
                // Once the server stops, no event joins a group: it could be written after the
                // daemon must stop, with no one left to answer.
                state.gated = eventsGate.withLock { gate in
                    if gate.stopping { return false }
                    gate.inFlight += 1
                    return true
                }
                // Events join the group being gathered; while another group is written the
                // connection is parked (no thread held) until the leader wakes it.
                let started = !state.gated ? .stopping : try? routers.borrow { router -> Started in
                    do {
                        let pending = try router.startEvents(request)
                        return pending.leadsNow ? .answered(router.finishEvents(pending)) : .parks(pending)
                    } catch {
                        return .answered(router.response(for: error))
                    }
                }
                switch started {
                case .stopping:
                    var stopping = APIError(503, "stopping", "the server is stopping: nothing of this request was stored; send it again (to another server, or here once it is back)")
                    stopping.retryAfter = 2
                    response = stopping.response
                case .answered(let answer): response = answer
                case .parks(let pending):
                    state.pending = pending
                    connections.move(connection, to: .answering)
                    if pending.member.park(suspend: { MHD_suspend_connection(connection) }, resume: { MHD_resume_connection(connection) }) {
                        return .YES
                    }
                    response = finish(pending)
                case nil: response = APIError.unavailable(.unavailable).response
                }
            } else {
                response = (try? routers.borrow { $0.respond(to: request) })
                    ?? APIError.unavailable(.unavailable).response
            }
            if let poll = response.longPoll {
                // Nothing yet: park the connection without holding this thread — if its user,
                // its token and the server have room for one more.
                guard waiters.add(connection, poll, token: token, socket: connections.item(connection)?.socket ?? -1,
                                  limits: connections.limits, total: parkedLimit) else {
                    state.status = 429
                    return queue(tooManyLongPolls.response, on: connection, closing: true)
                }
                state.deadline = poll.deadline
                connections.move(connection, to: .parked)
                MHD_suspend_connection(connection)
                return .YES
            }
        }
        state.status = response.status
        connections.move(connection, to: .answering)
        return queue(response, on: connection, closing: false)
    }

    /// A parked `POST /v1/events`'s answer, on a router of the pool (writing the group it heads
    /// first, if it must lead); when no router can be had, 503 — and a group it had to lead
    /// fails, so none waits for it.
    private func finish(_ pending: PendingEvents) -> HTTPResponse {
        (try? routers.borrow { $0.finishEvents(pending) }) ?? {
            pending.failLead()
            return APIError.unavailable(.unavailable).response
        }()
    }

    /// How a `POST /v1/events` began: refused because the server is stopping, answered (it led
    /// its group, or was refused), or parked.
    private enum Started {
        case stopping
        case answered(HTTPResponse)
        case parks(PendingEvents)
    }

    /// The answer to a long-poll past its caps.
    private var tooManyLongPolls: APIError {
        var error = APIError(429, "tooManyLongPolls",
                             "too many long-polls wait already (\(connections.limits.parkedPerToken) a token, "
                                + "\(connections.limits.parkedPerUser) a user, or all the server holds): close some, or poll without wait")
        error.retryAfter = 10
        return error
    }

    private func queue(_ response: HTTPResponse, on connection: OpaquePointer, closing: Bool) -> MHD_Result {
        response.body.withUnsafeBytes { bytes -> MHD_Result in
            guard let reply = MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                                                              MHD_ResponseMemoryMode.RESPMEM_MUST_COPY) else { return .NO }
            defer { MHD_destroy_response(reply) }
            MHD_add_response_header(reply, "Content-Type", response.contentType)
            for header in response.headers { MHD_add_response_header(reply, header.name, header.value) }
            if closing {
                MHD_add_response_header(reply, "Connection", "close")
                connections.lingerAfterClose(connection)
            }
            return MHD_queue_response(connection, UInt32(response.status), reply)
        }
    }

    func completed(_ connection: OpaquePointer?, _ raw: UnsafeMutableRawPointer?) {
        // The connection may carry another request: its headers have a deadline again.
        if let connection { connections.move(connection, to: .awaitingHeaders) }
        guard let raw else { return }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
        // A parked request whose connection ended without being answered (its client went, the
        // server stopped) may have been woken to lead: lead here, so no group waits for it.
        if let pending = state.pending, pending.mustLead { _ = finish(pending) }
        if state.gated { eventsGate.withLock { $0.inFlight -= 1 } }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - state.started) / 1e6
        log?(String(format: "%@ %@ %d %.1fms", state.method, state.path, state.status, elapsed))
    }

    /// What a request's head alone is refused for: a declared body over the limit (413), a
    /// second Authorization header (which one speaks?), a NUL (%00) in its path or arguments.
    /// The request's bearer token, read in place (as `HTTPRequest.bearerToken` reads it).
    private func bearerToken(_ connection: OpaquePointer) -> String? {
        guard let value = MHD_lookup_connection_value(connection, .HEADER_KIND, "Authorization") else { return nil }
        return HTTPRequest(method: "GET", path: "", headers: ["authorization": String(cString: value)]).bearerToken
    }

    /// Looked at in place (libmicrohttpd's own strings, nothing copied out): this runs for every
    /// request, a flood's included.
    private func refusal(ofHeaders connection: OpaquePointer, url: String) -> APIError? {
        if let declared = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
           let length = Int(String(cString: declared).trimmingCharacters(in: .whitespaces)), length > Router.maximumBody {
            return APIError.tooLarge
        }
        let authorizations = stepo_mhd_count_values(connection, .HEADER_KIND, "Authorization")
        if authorizations > 1 {
            return APIError.malformed("a request carries one Authorization header, not \(authorizations)")
        }
        if HTTPServer.holdsEncodedNul(url) || stepo_mhd_values_contain(connection, .GET_ARGUMENT_KIND, "%00") != 0 {
            return APIError.malformed("the path or its arguments hold a NUL (%00)")
        }
        return nil
    }

    /// Whether `text` holds "%00" (bytes compared, no Foundation search).
    static func holdsEncodedNul(_ text: String) -> Bool {
        var zeros = 0
        var percent = false
        for byte in text.utf8 {
            if percent {
                if byte == UInt8(ascii: "0") { zeros += 1; if zeros == 2 { return true }; continue }
                percent = false
            }
            if byte == UInt8(ascii: "%") { percent = true; zeros = 0 }
        }
        return false
    }

    private func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [String: String] {
        collect(connection, kind).values
    }

    private func collect(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> ValuesBox {
        let box = ValuesBox()
        let context = Unmanaged.passUnretained(box).toOpaque()
        _ = MHD_get_connection_values(connection, kind, stepoCollectValue, context)
        return box
    }
}

/// A start or configuration failure, in words.
public struct ServerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// One request in flight: its body so far and what to log.
final class RequestState {
    let method: String
    let path: String
    let started = DispatchTime.now().uptimeNanoseconds
    var body = Data()
    var tooLarge = false
    var overCap = false
    var status = 0
    var deadline: Date?
    /// A `POST /v1/events` parked until its group is written.
    var pending: PendingEvents?
    /// Whether it is a `POST /v1/events` let in before the server began to stop (counted
    /// until it completes).
    var gated = false

    init(method: String, path: String) {
        self.method = method
        self.path = path
    }
}

/// Suspended long-polls, waiting for the waker, counted per token and per user.
final class Waiters: Sendable {
    /// One parked poll. `fresh`: not yet asked about by the waker; `socket`: the connection's,
    /// to notice a hang-up.
    struct Parked: @unchecked Sendable {  // a libmicrohttpd connection pointer: only resumed through its daemon
        let connection: OpaquePointer
        let poll: LongPoll
        var fresh: Bool
        let token: String?
        let socket: Int32
    }

    private struct State {
        var parked: [Parked] = []
        var perToken: [String: Int] = [:]
        var perUser: [Int: Int] = [:]
        var closed = false

        /// Forgets the counts of a poll leaving.
        mutating func uncount(_ entry: Parked) {
            let users = (perUser[entry.poll.userKey] ?? 1) - 1
            perUser[entry.poll.userKey] = users > 0 ? users : nil
            if let token = entry.token {
                let tokens = (perToken[token] ?? 1) - 1
                perToken[token] = tokens > 0 ? tokens : nil
            }
        }
    }

    private let state = Mutex(State())

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Long-polls parked now.
    var count: Int { state.withLock { $0.parked.count } }

    /// Long-polls parked now under `token`.
    func parked(token: String?) -> Int {
        guard let token else { return 0 }
        return state.withLock { $0.perToken[token] ?? 0 }
    }

    /// Parks `poll` unless its token, its user or the server (`total`) is at its cap.
    func add(_ connection: OpaquePointer, _ poll: LongPoll, token: String?, socket: Int32, limits: ServerLimits, total: Int) -> Bool {
        let entry = Parked(connection: connection, poll: poll, fresh: true, token: token, socket: socket)
        return state.withLock { state in
            if state.parked.count >= total || (state.perUser[poll.userKey] ?? 0) >= limits.parkedPerUser { return false }
            if let token, (state.perToken[token] ?? 0) >= limits.parkedPerToken { return false }
            state.parked.append(entry)
            state.perUser[poll.userKey, default: 0] += 1
            if let token { state.perToken[token, default: 0] += 1 }
            return true
        }
    }

    /// Removes and returns the connections whose poll is ready: `ready` answers for all of
    /// them at once, in order (asked outside the lock: it reads the store).
    func take(where ready: ([(poll: LongPoll, fresh: Bool, socket: Int32)]) -> [Bool]) -> [OpaquePointer] {
        let current = state.withLock { $0.parked }
        guard !current.isEmpty else { return [] }
        let answers = ready(current.map { (poll: $0.poll, fresh: $0.fresh, socket: $0.socket) })
        let asked = Set(current.map { UnsafeRawPointer($0.connection) })
        let chosen = Set(zip(current, answers).filter { $0.1 }.map { UnsafeRawPointer($0.0.connection) })
        let leaving = state.withLock { state -> [Parked] in
            for index in state.parked.indices where asked.contains(UnsafeRawPointer(state.parked[index].connection)) {
                state.parked[index].fresh = false
            }
            guard !chosen.isEmpty else { return [] }
            let leaving = state.parked.filter { chosen.contains(UnsafeRawPointer($0.connection)) }
            for entry in leaving { state.uncount(entry) }
            state.parked.removeAll { chosen.contains(UnsafeRawPointer($0.connection)) }
            return leaving
        }
        return leaving.map(\.connection)
    }

    func takeAll() -> [OpaquePointer] {
        state.withLock { state -> [Parked] in
            let all = state.parked
            state.parked.removeAll()
            state.perToken.removeAll()
            state.perUser.removeAll()
            return all
        }.map(\.connection)
    }

    func close() {
        state.withLock { $0.closed = true }
    }
}

/// Headers or arguments as libmicrohttpd hands them over: the last value of each name, and
/// how many times each (lower-cased) name came.
final class ValuesBox {
    var values: [String: String] = [:]
    var counts: [String: Int] = [:]
}
