import CHTTP2
import Foundation
import HTTPClient
import Notifications
import Synchronization

/// An HTTP/2 server over TLS on 127.0.0.1 that answers as APNs and FCM do (`ProviderStandIn`),
/// for `stepo-bench deliver`: nghttp2 and OpenSSL, a thread per connection reading whole
/// socket buffers and answering everything they held in one TLS write. It costs the bench a
/// fraction of what the worker it measures costs a push, where the Granian stand-in (Rust's
/// HTTP/2, Python's checks) cost as much as the worker (docs/delivery.md, "The bench's
/// stand-in").
///
/// Every request is logged as one JSON line to FOLDER/requests.jsonl, written before its
/// answer leaves, so a client that has its answer finds its line.
public final class HTTP2StandInServer: Sendable {
    public let port: Int
    private let listener: Int32
    private let standIn: ProviderStandIn
    private let log: Int32
    private let context: Context
    private let connections = Atomic<Int>(0)

    private struct Context: @unchecked Sendable { let pointer: OpaquePointer }

    /// Serves on `listener` (from `listen`), with the certificate in `folder`.
    public init(folder: String, listener: (socket: Int32, port: Int), standIn: ProviderStandIn) throws {
        self.standIn = standIn
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw StandInError(description: "TLS: cannot make a context") }
        _ = stepo_ssl_context_minimum_tls12(context)
        _ = stepo_ssl_context_modes(context)
        stepo_ssl_context_read_ahead(context, 64 << 10)
        stepo_ssl_context_alpn_h2_server(context)
        guard SSL_CTX_use_certificate_chain_file(context, folder + "/cert.pem") == 1,
              SSL_CTX_use_PrivateKey_file(context, folder + "/cert.key", SSL_FILETYPE_PEM) == 1 else {
            SSL_CTX_free(context)
            throw StandInError(description: "cannot read \(folder)/cert.pem and cert.key")
        }
        self.context = Context(pointer: context)
        log = open(folder + "/requests.jsonl", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard log >= 0 else { throw StandInError(description: "cannot write \(folder)/requests.jsonl") }
        self.listener = listener.socket
        self.port = listener.port
    }

    /// A socket listening on 127.0.0.1:`port`, and the port it has.
    public static func listen(port: Int) throws -> (socket: Int32, port: Int) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var on: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard listener >= 0, bound == 0, Glibc.listen(listener, 64) == 0 else {
            throw StandInError(description: "cannot listen on 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        return (listener, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Accepts connections until the process ends, each served on a thread of its own.
    public func serve() -> Never {
        signal(SIGPIPE, SIG_IGN)
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            var on: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            let number = connections.add(1, ordering: .relaxed).newValue
            let thread = Thread { [self] in
                let connection = StandInConnection(socket: client, number: number, server: self)
                connection.run()
            }
            thread.start()
        }
    }

    fileprivate var tlsContext: OpaquePointer { context.pointer }

    fileprivate func answer(_ request: ProviderStandIn.Request, connection: Int) -> ProviderStandIn.Answer {
        standIn.answer(request, connection: connection)
    }

    /// Appends log lines (whole lines, one write: lines of two connections never interleave).
    fileprivate func write(log lines: [UInt8]) {
        var offset = 0
        while offset < lines.count {
            let written = lines.withUnsafeBytes { Glibc.write(log, $0.baseAddress! + offset, lines.count - offset) }
            if written <= 0 { return }
            offset += written
        }
    }
}

/// One client's connection: TLS, an nghttp2 server session, and the requests in flight.
private final class StandInConnection {
    let socket: Int32
    let number: Int
    let server: HTTP2StandInServer
    var tls: OpaquePointer?
    var session: OpaquePointer?
    var requests: [Int32: ProviderStandIn.Request] = [:]
    /// Answers' bodies, by stream, and how much of each nghttp2 has taken.
    var bodies: [Int32: (bytes: [UInt8], offset: Int)] = [:]
    var logLines: [UInt8] = []
    var out: [UInt8] = []

    init(socket: Int32, number: Int, server: HTTP2StandInServer) {
        self.socket = socket
        self.number = number
        self.server = server
    }

    func run() {
        defer {
            if let session { nghttp2_session_del(session) }
            if let tls { SSL_free(tls) }
            close(socket)
        }
        guard let tls = SSL_new(server.tlsContext) else { return }
        self.tls = tls
        SSL_set_fd(tls, socket)
        guard SSL_accept(tls) == 1 else { return }
        guard start() else { return }
        var input = [UInt8](repeating: 0, count: 64 << 10)
        while let session {
            guard flush(), nghttp2_session_want_read(session) != 0 || nghttp2_session_want_write(session) != 0 else { return }
            // Everything that arrived, then every answer it made in one write.
            repeat {
                let count = input.withUnsafeMutableBytes { SSL_read(tls, $0.baseAddress, Int32($0.count)) }
                guard count > 0 else { return }
                let used = input.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, Int(count)) }
                guard used >= 0 else { return }
            } while SSL_has_pending(tls) != 0
        }
    }

    private func start() -> Bool {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, context in
            let connection = Unmanaged<StandInConnection>.fromOpaque(context!).takeUnretainedValue()
            if let frame, stepo_h2_frame_is_request(frame) != 0 {
                connection.requests[stepo_h2_frame_stream(frame)] = ProviderStandIn.Request()
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, context in
            let connection = Unmanaged<StandInConnection>.fromOpaque(context!).takeUnretainedValue()
            guard let frame, let name, let value else { return 0 }
            let id = stepo_h2_frame_stream(frame)
            guard connection.requests[id] != nil else { return 0 }
            let key = String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self)
            let text = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
            switch key {
            case ":method": connection.requests[id]!.method = text
            case ":path": connection.requests[id]!.path = text
            case _ where key.hasPrefix(":"): break
            default: connection.requests[id]!.headers.append((key, text))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, id, data, length, context in
            let connection = Unmanaged<StandInConnection>.fromOpaque(context!).takeUnretainedValue()
            if let data, connection.requests[id] != nil {
                connection.requests[id]!.body.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { session, frame, context in
            let connection = Unmanaged<StandInConnection>.fromOpaque(context!).takeUnretainedValue()
            guard let frame, let session, stepo_h2_frame_flags(frame) & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 else { return 0 }
            let type = stepo_h2_frame_type(frame)
            guard type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue) else { return 0 }
            let id = stepo_h2_frame_stream(frame)
            guard let request = connection.requests.removeValue(forKey: id) else { return 0 }
            connection.respond(to: request, on: id, session)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, id, _, context in
            let connection = Unmanaged<StandInConnection>.fromOpaque(context!).takeUnretainedValue()
            connection.requests[id] = nil
            connection.bodies[id] = nil
            return 0
        }
        guard nghttp2_session_server_new(&session, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0, let session else { return false }
        // APNs's limit for a connection with token authentication.
        var settings = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: 1000)]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 20)
        return true
    }

    private func respond(to request: ProviderStandIn.Request, on id: Int32, _ session: OpaquePointer) {
        let answer = server.answer(request, connection: number)
        JSON.object(answer.record).write(to: &logLines)
        logLines.append(UInt8(ascii: "\n"))
        bodies[id] = (answer.body, 0)
        let fields = [(":status", String(answer.status)), ("content-length", String(answer.body.count))] + answer.headers
        HTTP2HeaderTable.with(fields) { table, count in
            _ = stepo_h2_submit_response(session, id, table, count, answer.body.isEmpty ? 0 : 1) { _, id, buffer, length, flags, _, context in
                let connection = Unmanaged<StandInConnection>.fromOpaque(context!).takeUnretainedValue()
                guard let body = connection.bodies[id], let buffer else { flags?.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue); return 0 }
                let count = min(length, body.bytes.count - body.offset)
                body.bytes.withUnsafeBytes { raw in
                    if count > 0 { UnsafeMutableRawPointer(buffer).copyMemory(from: raw.baseAddress! + body.offset, byteCount: count) }
                }
                connection.bodies[id]!.offset += count
                if body.offset + count == body.bytes.count { flags?.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
                return count
            }
        }
    }

    /// The log's new lines, then every frame nghttp2 has, in one TLS write: false when the
    /// connection failed.
    private func flush() -> Bool {
        guard let session, let tls else { return false }
        if !logLines.isEmpty {
            server.write(log: logLines)
            logLines.removeAll(keepingCapacity: true)
        }
        out.removeAll(keepingCapacity: true)
        while true {
            var chunk: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &chunk)
            guard count >= 0 else { return false }
            guard count > 0, let chunk else { break }
            out.append(contentsOf: UnsafeBufferPointer(start: chunk, count: count))
        }
        var sent = 0
        while sent < out.count {
            let written = out.withUnsafeBytes { SSL_write(tls, $0.baseAddress! + sent, Int32(out.count - sent)) }
            guard written > 0 else { return false }
            sent += Int(written)
        }
        return true
    }
}
