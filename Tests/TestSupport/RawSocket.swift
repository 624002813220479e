import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket as a hostile (or plain) client holds one: from a chosen loopback address, with
/// bytes sent by hand and answers read under a deadline.
public final class RawSocket {
    public let fd: Int32

    /// Connects from `source` (any 127.x.y.z) to 127.0.0.1:`port`. With `wait: false` the
    /// connection is only started (the kernel finishes it), so thousands open quickly.
    public init(from source: String, to port: UInt16, wait: Bool = true) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Spawn.Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0 else { close(fd); throw Spawn.Failure(description: "bind \(source): \(String(cString: strerror(errno)))") }
        if !wait { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 || errno == EINPROGRESS else {
            close(fd)
            throw Spawn.Failure(description: "connect: \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    /// Sends `text` (best effort on a non-blocking socket).
    @discardableResult
    public func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Sends `count` filler bytes whole, waiting at most `timeout` seconds for room; false when
    /// the peer reset the connection (or the time ran out).
    public func send(filler count: Int, timeout: Double = 5) -> Bool {
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let bytes = [UInt8](repeating: UInt8(ascii: "x"), count: count)
        var sent = 0
        while sent < count {
            let wrote = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
            if wrote <= 0 { return false }
            sent += wrote
        }
        return true
    }

    /// Whether the server has ended this connection (closed or reset) within `timeout` seconds.
    public func closedByPeer(within timeout: Double) -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(timeout * 1000)) > 0 else { return false }
        if pfd.revents & Int16(POLLHUP | POLLERR) != 0 { return true }
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Reads what the server answers until it closes or `timeout` seconds pass.
    public func read(timeout: Double) -> String {
        var out = Data()
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { break }
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count <= 0 { if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { continue }; break }
            out.append(contentsOf: buffer[0..<count])
            if let text = String(data: out, encoding: .utf8), RawSocket.complete(text) { break }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether `text` holds a whole HTTP response (headers and the body its length says).
    static func complete(_ text: String) -> Bool {
        guard let end = text.range(of: "\r\n\r\n") else { return false }
        let head = text[..<end.lowerBound].lowercased()
        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
              let length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) else { return true }
        return text[end.upperBound...].utf8.count >= length
    }

    /// One GET with a bearer token, from `source`; returns the status line's code and the time.
    public static func get(_ path: String, port: UInt16, token: String? = nil, from source: String = "127.0.0.1",
                           timeout: Double = 10) throws -> (status: Int, body: String, seconds: Double) {
        let start = Date()
        let socket = try RawSocket(from: source, to: port)
        let auth = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        socket.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(auth)Connection: close\r\n\r\n")
        let answer = socket.read(timeout: timeout)
        let status = Int(answer.split(separator: " ").dropFirst().first ?? "") ?? 0
        let body = answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) } ?? ""
        return (status, body, Date().timeIntervalSince(start))
    }

    /// Raises this process's open-file limit to its maximum (thousands of sockets).
    /// As root the hard limit itself is raised (to 65,536 at least), so 20,000 sockets fit
    /// beside the test process's own files; a child started after inherits it.
    public static func raiseFileLimit() {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_max < 65_536 {
            var raised = rlimit(rlim_cur: 65_536, rlim_max: 65_536)
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return }
        }
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
