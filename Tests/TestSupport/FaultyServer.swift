import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A server on 127.0.0.1 that misbehaves the way networks do: it resets every connection,
/// answers half a response and hangs up, or answers bytes that are not HTTP. A client under
/// test must call each of these "no answer", never crash.
public final class FaultyServer: @unchecked Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        /// Accepts, then closes with a reset (SO_LINGER 0).
        case reset
        /// Answers a status line, headers promising 1000 bytes, ten of them, then closes.
        case half
        /// Answers bytes that are not HTTP, then closes.
        case garbage
        /// Accepts and reads, then never answers (the connection stays open until `stop`).
        case silent
        /// Answers 200 with a well-formed HTTP response whose JSON body is not JSON (and
        /// carries terminal escapes), then closes.
        case nonsense
        /// Answers every request 503 storeUnavailable with Retry-After: 1, as a server whose
        /// database is away does.
        case unavailable
    }

    public let port: UInt16
    private let fd: Int32
    private let mode: Mode
    private let lock = NSLock()
    private var stopped = false
    /// Connections accepted so far.
    public private(set) var accepted = 0
    /// Connections held open, unanswered (`silent`).
    private var held: [Int32] = []

    public init(_ mode: Mode) throws {
        self.mode = mode
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Spawn.Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            close(fd)
            throw Spawn.Failure(description: "bind/listen: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        self.fd = fd
        Thread { [self] in serve() }.start()
    }

    deinit { stop() }

    public var url: String { "http://127.0.0.1:\(port)" }

    public func stop() {
        lock.lock()
        let first = !stopped
        stopped = true
        let open = held
        held = []
        lock.unlock()
        if first { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
        for client in open { close(client) }
    }

    private func serve() {
        while true {
            let client = accept(fd, nil, nil)
            guard client >= 0 else {
                lock.lock()
                let done = stopped
                lock.unlock()
                if done || (errno != EINTR && errno != ECONNABORTED) { return }
                continue
            }
            lock.lock()
            accepted += 1
            lock.unlock()
            // Read what the client sent (its request line at least), then misbehave.
            var buffer = [UInt8](repeating: 0, count: 4096)
            var pfd = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 1000) > 0 { _ = recv(client, &buffer, buffer.count, 0) }
            switch mode {
            case .reset:
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            case .half:
                let text = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"rows\":[{"
                _ = text.withCString { Glibc.send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            case .garbage:
                let text = "\u{1B}[31mSSH-2.0-not-http\r\n\u{0}\u{7}"
                _ = text.withCString { Glibc.send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            case .silent:
                lock.lock()
                held.append(client)
                lock.unlock()
                continue
            case .nonsense:
                let body = "\u{1B}]0;pwned\u{7}<html>this is not JSON</html>"
                let text = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                    + "Connection: close\r\n\r\n\(body)"
                _ = text.withCString { Glibc.send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            case .unavailable:
                let body = #"{"error":{"code":"storeUnavailable","message":"the server's database cannot be reached just now","retryAfter":1}}"#
                let text = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                    + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
                _ = text.withCString { Glibc.send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            }
            close(client)
        }
    }
}

/// A port on 127.0.0.1 that nothing listens on (connections to it are refused).
public func refusedPort() throws -> UInt16 {
    let server = try FaultyServer(.reset)
    let port = server.port
    server.stop()
    return port
}
