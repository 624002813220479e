import CHTTP2
import Foundation

/// Many requests at once over one HTTP/2 connection per origin, as APNs and FCM ask a sender to
/// talk to them: nghttp2 frames the streams (HPACK, flow control, the server's stream limit)
/// and OpenSSL carries them; this class only moves bytes between the two and a non-blocking
/// socket. All the frames one moment produced leave in one TLS write, and a read takes all the
/// answers that arrived: a push costs a fraction of a system call, where libcurl's multi
/// interface made about ten a push and walked every transfer on each call (docs/delivery.md,
/// "The worker's HTTP/2 client").
///
/// Not thread-safe: one owner starts requests and polls for their answers.
public final class HTTP2Multiplexer {
    public let largestBody: Int
    public let timeout: TimeInterval
    /// How many requests share a connection at once (a server may allow fewer: the smaller holds).
    public let streams: Int

    /// What came of one request started with `tag`.
    public struct Completion {
        public let tag: Int
        public let result: Result<HTTPAnswer, HTTPFailure>
    }

    /// The open (or opening) connection of each origin and trust; connections told to go away
    /// finish their streams in `leaving`.
    private var connections: [String: Connection] = [:]
    private var leaving: [Connection] = []
    /// TLS settings by the certificates trusted ("" for the system's).
    private var contexts: [String: OpaquePointer] = [:]
    fileprivate var done: [Completion] = []
    private var started = 0, returned = 0

    /// Requests started and not yet returned by `poll`.
    public var inFlight: Int { started - returned }

    /// `timeout`: the longest wait for one answer, connecting and queueing included.
    public init(largestBody: Int = 64 << 10, streams: Int = 200, timeout: TimeInterval = 15) {
        self.largestBody = largestBody
        self.streams = max(1, streams)
        self.timeout = timeout
    }

    deinit {
        for connection in Array(connections.values) + leaving { connection.close() }
        for context in contexts.values { SSL_CTX_free(context) }
    }

    /// Starts `request` (HTTP/2 over TLS negotiated by ALPN, or in clear text with prior
    /// knowledge; trusting `caFile` instead of the system's certificates); its answer comes
    /// back from `poll` under `tag`.
    public func start(_ request: HTTPRequest, tag: Int, version: HTTPClient.Version = .http2, caFile: String? = nil) {
        started += 1
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
        guard version != .http1 else {
            return done.append(Completion(tag: tag, result: .failure(HTTPFailure(reason: .other, description: "\(request.url): HTTP/2 only"))))
        }
        guard let target = Target(request.url, tls: version == .http2) else {
            return done.append(Completion(tag: tag, result: .failure(HTTPFailure(reason: .other, description: "not an http(s) URL: \(request.url)"))))
        }
        let key = target.origin + "|" + (caFile ?? "")
        let connection: Connection
        if let open = connections[key], open.accepting {
            connection = open
        } else {
            if let old = connections[key], !old.idle { leaving.append(old) } else { connections[key]?.close() }
            var context: OpaquePointer?
            if target.tls {
                do { context = try tlsContext(caFile) } catch {
                    return done.append(Completion(tag: tag, result: .failure(error as? HTTPFailure ?? HTTPFailure(reason: .connect, description: "\(error)"))))
                }
            }
            connection = Connection(target, key: key, context: context, owner: self,
                                    deadline: DispatchTime.now().uptimeNanoseconds + UInt64(min(10, timeout) * 1e9))
            connections[key] = connection
        }
        if let failure = connection.failure {  // it could not even begin (no such host, no socket)
            connections[key] = nil
            return done.append(Completion(tag: tag, result: .failure(failure)))
        }
        connection.waiting.append(Stream(tag: tag, url: request.url, path: target.path, request: request, deadline: deadline))
        connection.dirty = true
    }

    /// Moves the requests on, waiting at most `wait` seconds for something to happen, and
    /// returns those answered (or failed) since the last call.
    public func poll(wait: TimeInterval) -> [Completion] {
        withoutSIGPIPE { move(wait: wait) }
        for (key, connection) in connections where connection.closed { connections[key] = nil }
        leaving.removeAll { connection in
            if connection.idle { connection.close() }
            return connection.closed
        }
        let answers = done
        done.removeAll(keepingCapacity: true)
        returned += answers.count
        return answers
    }

    /// OpenSSL writes to its socket with `write`: a peer gone would raise SIGPIPE, and kill a
    /// process that did not ignore it. The signal is held for this thread while `body` runs and
    /// the one it raised taken back (libpq does the same around its TLS writes); the socket's
    /// EPIPE fails the connection as any other error does.
    private func withoutSIGPIPE(_ body: () -> Void) {
        var pipe = sigset_t(), old = sigset_t(), pending = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipe, &old)
        sigpending(&pending)
        let before = sigismember(&pending, SIGPIPE) == 1
        body()
        if !before {
            sigpending(&pending)
            if sigismember(&pending, SIGPIPE) == 1 {
                var now = timespec()
                sigtimedwait(&pipe, nil, &now)
            }
        }
        pthread_sigmask(SIG_SETMASK, &old, nil)
    }

    private func move(wait: TimeInterval) {
        let all = Array(connections.values) + leaving
        for connection in all where connection.dirty { connection.pump(readable: false) }
        expire(all)
        if done.isEmpty, inFlight > 0 || wait > 0 {
            var waitNs = UInt64(max(0, wait) * 1e9)
            let now = DispatchTime.now().uptimeNanoseconds
            for connection in all {
                if let soonest = connection.soonestDeadline { waitNs = min(waitNs, soonest > now ? soonest - now : 0) }
            }
            var watched = all.filter { $0.socket >= 0 }
            var fds = watched.map { pollfd(fd: $0.socket, events: Int16(POLLIN) | ($0.wantsWrite ? Int16(POLLOUT) : 0), revents: 0) }
            let ready = Glibc.poll(&fds, nfds_t(fds.count), Int32(clamping: (waitNs + 999_999) / 1_000_000))
            if ready > 0 {
                for (i, fd) in fds.enumerated() where fd.revents != 0 { watched[i].pump(readable: true) }
            }
            watched.removeAll()
            expire(all)
        }
    }

    /// Fails the requests past their deadline (and a connection not made in time).
    private func expire(_ all: [Connection]) {
        let now = DispatchTime.now().uptimeNanoseconds
        for connection in all where !connection.closed {
            if let soonest = connection.soonestDeadline, soonest <= now { connection.expire(now: now) }
        }
    }

    private func tlsContext(_ caFile: String?) throws -> OpaquePointer {
        if let context = contexts[caFile ?? ""] { return context }
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw HTTPFailure(reason: .connect, description: "TLS: \(Self.tlsError())") }
        _ = stepo_ssl_context_minimum_tls12(context)
        _ = stepo_ssl_context_modes(context)
        stepo_ssl_context_read_ahead(context, 64 << 10)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        // A certificate trusted itself ends the chain (as libcurl and browsers have it), even one
        // that is not a root: a stand-in's, or an intermediate named in --ca.
        X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(context), UInt(X509_V_FLAG_PARTIAL_CHAIN))
        let loaded = caFile.map { SSL_CTX_load_verify_locations(context, $0, nil) } ?? SSL_CTX_set_default_verify_paths(context)
        guard loaded == 1 else {
            SSL_CTX_free(context)
            throw HTTPFailure(reason: .connect, description: "cannot read the certificates to trust\(caFile.map { " in \($0)" } ?? ""): \(Self.tlsError())")
        }
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        _ = SSL_CTX_set_alpn_protos(context, alpn, UInt32(alpn.count))
        contexts[caFile ?? ""] = context
        return context
    }

    /// OpenSSL's last error, as text (and its queue emptied).
    static func tlsError() -> String {
        var last = "unknown error"
        while case let code = ERR_get_error(), code != 0 {
            var text = [UInt8](repeating: 0, count: 256)
            text.withUnsafeMutableBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { ERR_error_string_n(code, $0.baseAddress, $0.count) }
            }
            last = String(decoding: text.prefix { $0 != 0 }, as: UTF8.self)
        }
        return last
    }
}

/// Where a URL goes: its origin (what a connection is shared by), host, port and path.
private struct Target {
    let tls: Bool
    let host: String
    let port: Int
    let authority: String
    let path: String
    var origin: String { (tls ? "https://" : "http://") + authority }

    init?(_ url: String, tls: Bool) {
        let scheme = tls ? "https://" : "http://"
        guard url.hasPrefix(scheme) else { return nil }
        let rest = url.dropFirst(scheme.count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        path = slash == rest.endIndex ? "/" : String(rest[slash...])
        var host = Substring(authority), port = tls ? 443 : 80
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {  // [IPv6]:port
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { guard let number = Int(after.dropFirst()) else { return nil }; port = number }
        } else if let colon = authority.lastIndex(of: ":") {
            guard let number = Int(authority[authority.index(after: colon)...]) else { return nil }
            host = authority[..<colon]
            port = number
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        self.tls = tls
        self.host = String(host)
        self.port = port
        self.authority = String(authority)
    }
}

/// One request on its way.
private final class Stream {
    let tag: Int
    let url: String
    let path: String
    let request: HTTPRequest
    let deadline: UInt64
    /// The body's bytes handed to nghttp2 so far.
    var offset = 0
    var status = 0
    var headers: [(name: String, value: String)] = []
    var body = Data()
    var overflowed = false
    /// Answered or failed already (a timed-out stream stays until nghttp2 closes it).
    var completed = false

    init(tag: Int, url: String, path: String, request: HTTPRequest, deadline: UInt64) {
        self.tag = tag
        self.url = url
        self.path = path
        self.request = request
        self.deadline = deadline
    }
}

/// One connection: a socket, TLS over it (or not), and an nghttp2 client session.
private final class Connection {
    enum State { case connecting, handshaking, open, closed }
    let target: Target
    /// Its origin and the certificates it trusts: what requests share it by.
    let key: String
    unowned let owner: HTTP2Multiplexer
    let context: OpaquePointer?
    private(set) var socket: Int32 = -1
    private var tls: OpaquePointer?
    private var session: OpaquePointer?
    private var state = State.connecting
    /// When the connection must be made by.
    private let connectDeadline: UInt64
    /// Requests not yet given to nghttp2: the connection is not open, or at its stream limit.
    var waiting: [Stream] = []
    var streams: [Int32: Stream] = [:]
    /// Frames written by nghttp2 and not yet taken by the socket.
    private var out: [UInt8] = []
    private var outSent = 0
    private var input = [UInt8](repeating: 0, count: 64 << 10)
    /// The server said it is going away: no new streams here.
    private var goingAway = false
    /// Requests were added since the last pump.
    var dirty = false
    private(set) var wantsWrite = false

    var closed: Bool { state == .closed }
    var accepting: Bool { state != .closed && !goingAway }
    var idle: Bool { waiting.isEmpty && streams.isEmpty }

    /// Why the connection failed, once it has.
    private(set) var failure: HTTPFailure?

    init(_ target: Target, key: String, context: OpaquePointer?, owner: HTTP2Multiplexer, deadline: UInt64) {
        self.target = target
        self.key = key
        self.context = context
        self.owner = owner
        self.connectDeadline = deadline
        connect()
    }

    var soonestDeadline: UInt64? {
        var soonest = state == .open ? UInt64.max : connectDeadline
        for stream in waiting { soonest = min(soonest, stream.deadline) }
        for stream in streams.values where !stream.completed { soonest = min(soonest, stream.deadline) }
        return soonest == .max ? nil : soonest
    }

    // MARK: Connecting

    private func connect() {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(target.host, String(target.port), &hints, &found)
        guard status == 0, let address = found else {
            return fail(.connect, "cannot connect to \(target.origin): cannot resolve \(target.host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(found) }
        socket = Glibc.socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { return fail(.connect, "cannot connect to \(target.origin): \(String(cString: strerror(errno)))") }
        var on: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        if Glibc.connect(socket, address.pointee.ai_addr, address.pointee.ai_addrlen) != 0, errno != EINPROGRESS {
            return fail(.connect, "cannot connect to \(target.origin): \(String(cString: strerror(errno)))")
        }
        wantsWrite = true  // writable once connected
    }

    /// The socket is writable after a connect: did it connect?
    private func connected() {
        var probe = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
        guard Glibc.poll(&probe, 1, 0) > 0 else { return }  // still connecting
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(socket, SOL_SOCKET, SO_ERROR, &error, &length)
        if error == EINPROGRESS { return }
        guard error == 0 else { return fail(.connect, "cannot connect to \(target.origin): \(String(cString: strerror(error)))") }
        guard let context else { return opened() }
        guard let tls = SSL_new(context) else { return fail(.connect, "cannot connect to \(target.origin): \(HTTP2Multiplexer.tlsError())") }
        self.tls = tls
        SSL_set_fd(tls, socket)
        if target.host.contains(":") || target.host.allSatisfy({ $0.isNumber || $0 == "." }) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(tls), target.host)
        } else {
            _ = stepo_ssl_set_server_name(tls, target.host)
            SSL_set1_host(tls, target.host)
        }
        SSL_set_connect_state(tls)
        state = .handshaking
        handshake()
    }

    private func handshake() {
        guard let tls else { return }
        let result = SSL_do_handshake(tls)
        if result == 1 {
            var protocolName: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(tls, &protocolName, &length)
            guard length == 2, let protocolName, protocolName[0] == UInt8(ascii: "h"), protocolName[1] == UInt8(ascii: "2") else {
                return fail(.connect, "\(target.origin) does not speak HTTP/2 (ALPN)")
            }
            return opened()
        }
        switch SSL_get_error(tls, result) {
        case SSL_ERROR_WANT_READ: wantsWrite = false
        case SSL_ERROR_WANT_WRITE: wantsWrite = true
        default:
            let verify = SSL_get_verify_result(tls)
            let why = verify != Int(X509_V_OK) ? String(cString: X509_verify_cert_error_string(verify)) : HTTP2Multiplexer.tlsError()
            fail(.connect, "cannot connect to \(target.origin): TLS: \(why)")
        }
    }

    /// Connected (and TLS done): the HTTP/2 session starts.
    private func opened() {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, context in
            let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
            guard let frame, stepo_h2_frame_type(frame) == UInt8(NGHTTP2_HEADERS.rawValue),
                  let stream = connection.streams[stepo_h2_frame_stream(frame)], let name, let value else { return 0 }
            let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
            let valueBytes = UnsafeBufferPointer(start: value, count: valueLength)
            if nameLength == 7, nameBytes.elementsEqual(":status".utf8) {
                stream.status = Int(String(decoding: valueBytes, as: UTF8.self)) ?? 0
            } else if nameLength > 0, nameBytes[0] != UInt8(ascii: ":") {
                stream.headers.append((String(decoding: nameBytes, as: UTF8.self), String(decoding: valueBytes, as: UTF8.self)))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { session, _, id, data, length, context in
            let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
            guard let stream = connection.streams[id], !stream.completed, let data else { return 0 }
            if stream.body.count + length > connection.owner.largestBody {
                stream.overflowed = true
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_CANCEL.rawValue)
            } else if !stream.overflowed {
                stream.body.append(data, count: length)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, id, code, context in
            let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
            connection.closedStream(id, code: code)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, context in
            let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
            if let frame, stepo_h2_frame_type(frame) == UInt8(NGHTTP2_GOAWAY.rawValue) { connection.goingAway = true }
            return 0
        }
        var session: OpaquePointer?
        guard nghttp2_session_client_new(&session, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0, let session else {
            return fail(.connect, "cannot start HTTP/2 with \(target.origin)")
        }
        self.session = session
        state = .open
        // No server push; a window for answers as wide as the largest one.
        var settings = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
                        nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: 100)]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
    }

    // MARK: Moving bytes

    /// Does what can be done now: connect, shake hands, read what arrived, start what waits,
    /// and write what nghttp2 has.
    func pump(readable: Bool) {
        dirty = false
        switch state {
        case .connecting: connected()
        case .handshaking: handshake()
        case .open, .closed: break
        }
        guard state == .open else { return }
        if readable { receive() }
        guard state == .open else { return }
        submit()
        send()
        if state == .open, goingAway, !waiting.isEmpty {
            // The server takes no new streams here: those still waiting go on a new connection.
            let moved = waiting
            waiting = []
            for stream in moved where !stream.completed { owner.restart(stream, from: self) }
        }
    }

    private func receive() {
        while state == .open, let session {
            let count = input.withUnsafeMutableBytes { read(into: $0) }
            if count > 0 {
                let used = input.withUnsafeBytes { nghttp2_session_mem_recv(session, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), count) }
                if used < 0 { return fail(.other, "\(target.origin): HTTP/2: \(String(cString: nghttp2_strerror(Int32(used))))") }
                if count < input.count, tls.map({ SSL_has_pending($0) == 0 }) ?? true { return }
            } else if count == 0 {
                return  // nothing more for now
            } else {
                return fail(.other, "\(target.origin): the connection closed")
            }
        }
    }

    /// Reads what the socket (or TLS) has: the byte count, 0 when nothing is there yet, -1 when
    /// the connection ended or failed.
    private func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        if let tls {
            let result = SSL_read(tls, buffer.baseAddress, Int32(buffer.count))
            if result > 0 { return Int(result) }
            let error = SSL_get_error(tls, result)
            if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { return 0 }
            ERR_clear_error()
            return -1
        }
        let result = recv(socket, buffer.baseAddress, buffer.count, 0)
        if result > 0 { return result }
        if result < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return 0 }
        return -1
    }

    /// Hands waiting requests to nghttp2, as many as the stream limits allow.
    private func submit() {
        guard let session, !goingAway, !waiting.isEmpty else { return }
        let limit = min(owner.streams, Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)))
        var taken = 0
        while taken < waiting.count, streams.count < limit {
            let stream = waiting[taken]
            taken += 1
            if stream.completed { continue }
            let id = submit(stream, session)
            guard id > 0 else {
                stream.completed = true
                owner.done.append(.init(tag: stream.tag, result: .failure(HTTPFailure(reason: .other, description: "\(stream.url): HTTP/2: \(String(cString: nghttp2_strerror(id)))"))))
                continue
            }
            streams[id] = stream
        }
        waiting.removeFirst(taken)
    }

    private func submit(_ stream: Stream, _ session: OpaquePointer) -> Int32 {
        let request = stream.request
        var fields: [(String, String)] = [(":method", request.method), (":scheme", target.tls ? "https" : "http"),
                                          (":authority", target.authority), (":path", stream.path)]
        for (name, value) in request.headers { fields.append((name.lowercased(), value)) }
        if let body = request.body { fields.append(("content-length", String(body.count))) }
        let source = Unmanaged.passUnretained(stream).toOpaque()
        return HTTP2HeaderTable.with(fields) { table, count in
            stepo_h2_submit(session, table, count, request.body == nil ? 0 : 1, { _, _, buffer, length, flags, source, _ in
                let stream = Unmanaged<Stream>.fromOpaque(stepo_h2_source(source)!).takeUnretainedValue()
                guard let body = stream.request.body, let buffer else { flags?.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue); return 0 }
                let count = min(length, body.count - stream.offset)
                body.withUnsafeBytes { raw in
                    if count > 0 { UnsafeMutableRawPointer(buffer).copyMemory(from: raw.baseAddress! + stream.offset, byteCount: count) }
                }
                stream.offset += count
                if stream.offset == body.count { flags?.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
                return count
            }, source)
        }
    }

    /// Writes what nghttp2 has to send: all of it gathered first, then as few writes as the
    /// socket takes.
    private func send() {
        guard let session else { return }
        while state == .open {
            if outSent == out.count {
                out.removeAll(keepingCapacity: true)
                outSent = 0
                while out.count < 256 << 10 {
                    var chunk: UnsafePointer<UInt8>?
                    let count = nghttp2_session_mem_send(session, &chunk)
                    if count < 0 { return fail(.other, "\(target.origin): HTTP/2: \(String(cString: nghttp2_strerror(Int32(count))))") }
                    guard count > 0, let chunk else { break }
                    out.append(contentsOf: UnsafeBufferPointer(start: chunk, count: count))
                }
                if out.isEmpty { wantsWrite = false; return }
            }
            let written = out.withUnsafeBytes { write($0.baseAddress! + outSent, out.count - outSent) }
            if written > 0 {
                outSent += written
            } else if written == 0 {
                wantsWrite = true
                return
            } else {
                return fail(.other, "\(target.origin): the connection closed")
            }
        }
    }

    /// Writes bytes: how many were taken, 0 when the socket is full, -1 when it failed.
    private func write(_ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        if let tls {
            let result = SSL_write(tls, bytes, Int32(count))
            if result > 0 { return Int(result) }
            let error = SSL_get_error(tls, result)
            if error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ { return 0 }
            ERR_clear_error()
            return -1
        }
        let result = Glibc.send(socket, bytes, count, Int32(MSG_NOSIGNAL))
        if result >= 0 { return result }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return 0 }
        return -1
    }

    // MARK: Ends

    /// nghttp2 closed a stream: its answer, or why there is none.
    private func closedStream(_ id: Int32, code: UInt32) {
        guard let stream = streams.removeValue(forKey: id), !stream.completed else { return }
        stream.completed = true
        let failure: HTTPFailure?
        if stream.overflowed {
            failure = HTTPFailure(reason: .tooLarge, description: "the answer from \(stream.url) is larger than \(owner.largestBody) bytes")
        } else if code != NGHTTP2_NO_ERROR.rawValue || stream.status == 0 {
            let why = code == NGHTTP2_REFUSED_STREAM.rawValue ? "the server refused the stream (it is going away)"
                : code == NGHTTP2_NO_ERROR.rawValue ? "no answer" : String(cString: nghttp2_http2_strerror(code))
            failure = HTTPFailure(reason: .other, description: "\(stream.url): \(why)")
        } else {
            failure = nil
        }
        owner.done.append(.init(tag: stream.tag, result: failure.map { .failure($0) }
            ?? .success(HTTPAnswer(status: stream.status, headers: stream.headers, body: stream.body))))
    }

    /// Fails what is past its deadline; a connection not made by its own deadline fails whole.
    func expire(now: UInt64) {
        if state != .open, connectDeadline <= now {
            return fail(.timeout, "no connection to \(target.origin) within \(Int(min(10, owner.timeout))) s")
        }
        func timedOut(_ stream: Stream) {
            stream.completed = true
            owner.done.append(.init(tag: stream.tag, result: .failure(HTTPFailure(reason: .timeout, description: "no answer from \(stream.url) within \(Int(owner.timeout)) s"))))
        }
        for stream in waiting where !stream.completed && stream.deadline <= now { timedOut(stream) }
        waiting.removeAll { $0.completed }
        for (id, stream) in streams where !stream.completed && stream.deadline <= now {
            timedOut(stream)
            // Kept until nghttp2 closes it: its body may still be being read.
            if let session { nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_CANCEL.rawValue) }
        }
        if session != nil { send() }
    }

    /// The connection failed: every request on it fails with `reason`.
    func fail(_ reason: HTTPFailure.Reason, _ description: String) {
        failure = HTTPFailure(reason: reason, description: description)
        for stream in waiting + streams.values where !stream.completed {
            stream.completed = true
            owner.done.append(.init(tag: stream.tag, result: .failure(HTTPFailure(reason: reason, description: description))))
        }
        waiting = []
        streams = [:]
        close()
    }

    func close() {
        if let session { nghttp2_session_del(session) }
        session = nil
        if let tls { SSL_free(tls) }
        tls = nil
        if socket >= 0 { Glibc.close(socket) }
        socket = -1
        state = .closed
        wantsWrite = false
    }
}

extension HTTP2Multiplexer {
    /// A request that waited on a connection going away starts again on a fresh one, keeping
    /// its deadline.
    fileprivate func restart(_ stream: Stream, from old: Connection) {
        let key = old.key
        let connection: Connection
        if let open = connections[key], open.accepting, open !== old {
            connection = open
        } else {
            if let current = connections[key], current !== old, !current.idle { leaving.append(current) }
            if connections[key] === old { leaving.append(old) }
            connection = Connection(old.target, key: key, context: old.context, owner: self,
                                    deadline: DispatchTime.now().uptimeNanoseconds + UInt64(min(10, timeout) * 1e9))
            connections[key] = connection
        }
        connection.waiting.append(stream)
        connection.dirty = true
    }
}
