import CPseudoTerminal
import Foundation
import Inbox

/// A pseudo-terminal a bench runs the real `stepo` in, as a person's terminal would: the
/// child's standard streams are its other end, its size is set, what the child draws is kept
/// with the time it came, and cursor-position questions (ESC [ 6 n) are answered the way a
/// terminal would, from the width of what was written since the last carriage return.
public final class PseudoTerminal: @unchecked Sendable {  // owns a pseudo-terminal's descriptor; its condition guards what was read
    private let master: Int32
    private let secondary: String
    private let condition = NSCondition()
    private var output: [UInt8] = []
    /// When each byte count was reached: (count, time since start).
    private var arrivals: [(count: Int, at: Double)] = []
    private var closed = false
    public private(set) var started = DispatchTime.now()

    public init(rows: Int, columns: Int) throws {
        var name = [CChar](repeating: 0, count: 128)
        master = stepo_open_pseudo_terminal(&name, name.count)
        guard master >= 0 else { throw PseudoTerminalError("cannot open a pseudo-terminal: \(String(cString: strerror(errno)))") }
        secondary = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        _ = stepo_set_window_size(master, UInt16(rows), UInt16(columns))
    }

    deinit { close(master) }

    /// Starts `arguments` with the terminal as its controlling terminal and standard streams.
    public func spawn(_ arguments: [String], environment: [String: String]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, stepo_spawn_setsid())
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Opened by the new session's leader, the terminal becomes its controlling terminal.
        posix_spawn_file_actions_addopen(&actions, 0, secondary, O_RDWR, 0)
        posix_spawn_file_actions_adddup2(&actions, 0, 1)
        posix_spawn_file_actions_adddup2(&actions, 0, 2)
        posix_spawn_file_actions_addclose(&actions, master)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        started = DispatchTime.now()
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard result == 0 else { throw PseudoTerminalError("cannot start \(arguments[0]): \(String(cString: strerror(result)))") }
        Thread { [self] in readLoop() }.start()
        return pid
    }

    private func readLoop() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var line: [UInt8] = []  // what was written since the last carriage return
        while true {
            let count = read(master, &buffer, buffer.count)
            guard count > 0 else { break }
            let chunk = buffer[0..<count]
            let at = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            var answers = ""
            for byte in chunk {
                if byte == 0x0D { line = []; continue }
                line.append(byte)
                if line.count >= 4, line.suffix(4) == [0x1B, 0x5B, 0x36, 0x6E] {  // ESC [ 6 n
                    let text = String(decoding: line.dropLast(4), as: UTF8.self)
                    answers += "\u{1B}[1;\(1 + TextWidth.cells(text))R"
                    line = []
                }
            }
            if !answers.isEmpty { write(answers) }
            condition.lock()
            output += chunk
            arrivals.append((output.count, at))
            condition.broadcast()
            condition.unlock()
        }
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Types `text` (keys are their bytes: "\r" is Enter, "\u{1B}" Escape).
    public func write(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBufferPointer { Foundation.write(master, $0.baseAddress, $0.count) }
    }

    /// Every byte written to the terminal so far.
    public var bytes: [UInt8] {
        condition.lock()
        defer { condition.unlock() }
        return output
    }

    /// How many bytes were drawn so far.
    public var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return output.count
    }

    /// Seconds since the spawn at which `text` first appeared after byte `from`, waiting up
    /// to `timeout` seconds for it; nil if it did not.
    public func waitFor(_ text: String, from: Int = 0, timeout: Double) -> Double? {
        let needle = Array(text.utf8)
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        var searched = from
        while true {
            if output.count >= needle.count {
                let start = max(from, searched - needle.count + 1)
                if start <= output.count - needle.count {
                    for index in start...(output.count - needle.count) where output[index] == needle[0] {
                        if Array(output[index..<(index + needle.count)]) == needle {
                            let end = index + needle.count
                            return arrivals.first { $0.count >= end }?.at
                        }
                    }
                }
                searched = output.count
            }
            if closed || !condition.wait(until: deadline) { return nil }
        }
    }

    /// Seconds since the spawn at which something was first drawn after byte `from`, waiting up
    /// to `timeout` seconds.
    public func waitForOutput(after from: Int, timeout: Double) -> Double? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while output.count <= from {
            if closed || !condition.wait(until: deadline) { return nil }
        }
        return arrivals.first { $0.count > from }?.at
    }

    /// Waits until nothing has been drawn for `quiet` seconds (or `timeout` passed).
    public func settle(quiet: Double = 0.25, timeout: Double = 5) {
        let deadline = Date().addingTimeInterval(timeout)
        var seen = count
        while Date() < deadline {
            Thread.sleep(forTimeInterval: quiet)
            let now = count
            if now == seen { return }
            seen = now
        }
    }
}

/// A pseudo-terminal that could not be opened, or a program not started in it.
public struct PseudoTerminalError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
