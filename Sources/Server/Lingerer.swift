import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A lingering close (RFC 9112 §9.6), for connections the server ends while their client may
/// still be sending: a body refused from its head (413), a connection over its address's cap.
///
/// libmicrohttpd half-closes such a socket after its answer, then closes it. Closed with body
/// bytes still arriving, the kernel answers them with a reset, and a client still writing its
/// body fails on the write ("connection reset", "failed sending data") before it reads the
/// 413 already waiting for it. So the server keeps its own copy of the socket (a `dup` taken
/// before libmicrohttpd closes it), reads and drops what arrives until the client closes or
/// `seconds` pass, and only then closes. At most `capacity` linger at once: past that a
/// connection closes at once, as it would without this.
final class Lingerer: @unchecked Sendable {  // its lock guards `sockets`
    private struct Lingering { let socket: Int32; let until: Date }

    let seconds: Double
    let capacity: Int
    private let condition = NSCondition()
    private var sockets: [Lingering] = []
    private var stopped = false
    /// Connections handed over since the start.
    private var handedOver = 0

    init(seconds: Double, capacity: Int = 256) {
        self.seconds = seconds
        self.capacity = capacity
        let thread = Thread { [self] in drain() }
        thread.name = "stepo-linger"
        thread.start()
    }

    /// Takes a copy of `socket` (which its owner closes) and lingers on it.
    func linger(_ socket: Int32) {
        guard seconds > 0, socket >= 0 else { return }
        condition.lock()
        defer { condition.unlock() }
        // Past its room (or a failed copy) a connection closes at once, as without this.
        guard !stopped, sockets.count < capacity else { return }
        let copy = dup(socket)
        guard copy >= 0 else { return }
        _ = fcntl(copy, F_SETFL, fcntl(copy, F_GETFL) | O_NONBLOCK)
        // The answer is queued already: no more is written on this socket.
        shutdown(copy, Int32(SHUT_WR))
        sockets.append(Lingering(socket: copy, until: Date().addingTimeInterval(seconds)))
        handedOver += 1
        condition.signal()
    }

    /// Closes every lingering socket and ends the thread.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    /// How many sockets linger now.
    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return sockets.count
    }

    /// How many were handed over since the start.
    var lingered: Int {
        condition.lock()
        defer { condition.unlock() }
        return handedOver
    }

    private func drain() {
        var scratch = [UInt8](repeating: 0, count: 65_536)
        while true {
            condition.lock()
            while sockets.isEmpty && !stopped { condition.wait() }
            if stopped {
                for entry in sockets { close(entry.socket) }
                sockets.removeAll()
                condition.unlock()
                return
            }
            var watched = sockets.map { pollfd(fd: $0.socket, events: Int16(POLLIN), revents: 0) }
            condition.unlock()
            // A short wait: a socket handed over meanwhile is watched from the next turn.
            _ = poll(&watched, nfds_t(watched.count), 100)
            var finished = Set<Int32>()
            for entry in watched where entry.revents != 0 {
                // A few reads a turn: one fast sender does not hold the others up.
                for _ in 0..<16 {
                    let count = recv(entry.fd, &scratch, scratch.count, Int32(MSG_DONTWAIT))
                    if count > 0 { continue }
                    if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
                    finished.insert(entry.fd)  // the client closed, or the socket failed
                    break
                }
            }
            let now = Date()
            condition.lock()
            sockets.removeAll { entry in
                guard finished.contains(entry.socket) || entry.until <= now else { return false }
                close(entry.socket)
                return true
            }
            condition.unlock()
        }
    }
}
