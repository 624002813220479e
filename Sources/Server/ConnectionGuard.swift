import CMicroHTTPD
import Foundation
import Synchronization

/// How much of the server one client may hold, and for how long it may dawdle.
public struct ServerLimits: Sendable {
    /// Connections one address may hold before its new ones are answered 429 (0: no cap, for
    /// a server behind a proxy, where every client has the proxy's address).
    public var perAddress: Int
    /// Past twice `perAddress`, a new connection is closed the moment it is accepted.
    public var hardPerAddress: Int { perAddress * 2 }
    /// Seconds a connection has to send a request's headers (from its start, or from the end of
    /// its previous request).
    public var headerTimeout: Double
    /// Seconds a request's body has to arrive, once its headers did.
    public var bodyTimeout: Double

    /// Long-polls one token may hold parked at once, and one user (over all their tokens):
    /// an inbox parks one; a few devices, a few more. Past them a poll is answered 429 at once.
    public var parkedPerToken: Int
    public var parkedPerUser: Int

    /// Seconds a connection the server ends while its client may still be sending (a body
    /// refused from its head) is read and dropped before it closes, so the client can read
    /// the refusal instead of a reset (see `Lingerer`). 0: close at once.
    public var lingerSeconds: Double

    public init(perAddress: Int = 256, headerTimeout: Double = 10, bodyTimeout: Double = 30,
                parkedPerToken: Int = 8, parkedPerUser: Int = 16, lingerSeconds: Double = 5) {
        self.perAddress = perAddress
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.parkedPerToken = parkedPerToken
        self.parkedPerUser = parkedPerUser
        self.lingerSeconds = lingerSeconds
    }
}

/// Watches every connection: how many each address holds, and where each stands in its
/// request. A connection past its deadline (headers dripping in, a body that never ends) is
/// shut down from a reaper thread; libmicrohttpd then closes it. Parked long-polls have no
/// deadline: they wait for a change, not for their client.
final class ConnectionGuard: Sendable {
    /// One connection's state: libmicrohttpd holds it as the connection's context, and the
    /// guard's lock guards its changing fields.
    final class Tracked: @unchecked Sendable {  // its `var`s are read and written under the guard's lock only
        enum Stage { case awaitingHeaders, receivingBody, answering, parked }
        let address: String
        let socket: Int32
        /// Over the address's cap: answered 429 as soon as it asks anything.
        let overCap: Bool
        var stage = Stage.awaitingHeaders
        var since = Date()
        /// The server ends this connection after a refusal its client may still be sending
        /// a body to: it lingers before it closes.
        var lingers = false

        init(address: String, socket: Int32, overCap: Bool) {
            self.address = address
            self.socket = socket
            self.overCap = overCap
        }
    }

    let limits: ServerLimits

    private struct State {
        /// By connection pointer (as an address: only ever compared, never followed here).
        var tracked: [UInt: Tracked] = [:]
        var perAddress: [String: Int] = [:]
        var stopped = false
        /// Connections shut down for dawdling, since the start.
        var reaped = 0
    }

    private let state = Mutex(State())

    /// Connections shut down for dawdling, since the start (for the log and tests).
    var reaped: Int { state.withLock { $0.reaped } }

    let lingerer: Lingerer

    init(limits: ServerLimits) {
        self.limits = limits
        lingerer = Lingerer(seconds: limits.lingerSeconds)
        Thread { [weak self] in self?.reap() }.start()
    }

    func stop() {
        state.withLock { $0.stopped = true }
        lingerer.stop()
    }

    /// A connection was accepted: count it against its address, and note where it stands.
    func started(_ connection: OpaquePointer, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        var buffer = [CChar](repeating: 0, count: 64)
        let address = stepo_mhd_client_address(connection, &buffer, socklen_t(buffer.count)) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        let socket = stepo_mhd_connection_fd(connection)
        let key = UInt(bitPattern: UnsafeMutableRawPointer(connection))
        let cap = limits.perAddress
        let item = state.withLock { state -> Tracked in
            let count = (state.perAddress[address] ?? 0) + 1
            state.perAddress[address] = count
            let item = Tracked(address: address, socket: socket, overCap: cap > 0 && count > cap)
            state.tracked[key] = item
            return item
        }
        context.pointee = Unmanaged.passRetained(item).toOpaque()
    }

    /// A connection is gone: it no longer counts.
    func closed(_ connection: OpaquePointer, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        let key = UInt(bitPattern: UnsafeMutableRawPointer(connection))
        let lingering = state.withLock { state -> Int32? in
            guard let item = state.tracked.removeValue(forKey: key) else { return nil }
            let left = (state.perAddress[item.address] ?? 1) - 1
            state.perAddress[item.address] = left > 0 ? left : nil
            return item.lingers ? item.socket : nil
        }
        // libmicrohttpd closes the socket after this returns; the lingerer's copy outlives it.
        if let socket = lingering { lingerer.linger(socket) }
        if let raw = context.pointee { Unmanaged<Tracked>.fromOpaque(raw).release() }
        context.pointee = nil
    }

    /// The connection's state, as stored when it started.
    func item(_ connection: OpaquePointer) -> Tracked? {
        guard let raw = stepo_mhd_socket_context(connection) else { return nil }
        return Unmanaged<Tracked>.fromOpaque(raw).takeUnretainedValue()
    }

    /// The server will end `connection` after its answer: let it linger when it closes.
    func lingerAfterClose(_ connection: OpaquePointer) {
        guard let item = item(connection) else { return }
        state.withLock { _ in item.lingers = true }
    }

    func move(_ connection: OpaquePointer, to stage: Tracked.Stage) {
        guard let item = item(connection) else { return }
        state.withLock { _ in
            item.stage = stage
            item.since = Date()
        }
    }

    /// Connections of `address` held now.
    func connections(from address: String) -> Int {
        state.withLock { $0.perAddress[address] ?? 0 }
    }

    /// Every half second: shut down connections past their deadline.
    private func reap() {
        while true {
            Thread.sleep(forTimeInterval: 0.5)
            let limits = self.limits
            let stopped = state.withLock { state -> Bool in
                guard !state.stopped else { return true }
                let now = Date()
                for item in state.tracked.values {
                    let limit: Double
                    switch item.stage {
                    case .awaitingHeaders: limit = limits.headerTimeout
                    case .receivingBody: limit = limits.bodyTimeout
                    case .answering, .parked: continue
                    }
                    if now.timeIntervalSince(item.since) > limit, item.socket >= 0 {
                        // The socket stays libmicrohttpd's to close: shutting it down ends the
                        // connection, and its next read sees that.
                        shutdown(item.socket, Int32(SHUT_RDWR))
                        item.stage = .answering
                        state.reaped += 1
                    }
                }
                return false
            }
            if stopped { return }
        }
    }

    /// Raises this process's open-file limit to its hard maximum; returns the limit now.
    @discardableResult
    static func raiseFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_max < 65_536 {
            // Allowed to (as root): the hard limit itself, so tens of thousands of clients fit.
            var raised = rlimit(rlim_cur: 65_536, rlim_max: 65_536)
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return 65_536 }
        }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(limit.rlim_cur)
    }
}
