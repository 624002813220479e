import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a helper program that may leave a daemon behind (tmux starts its server this way).
///
/// Foundation's `Process` learns that a child exited when the last copy of a socket it hands
/// the child is closed. A daemon forked by that child inherits the socket and keeps it open, so
/// `waitUntilExit` never returns: the whole test run hangs. Here the child is started with
/// `posix_spawn`, every descriptor above stderr closed, its input and output in files (no pipe
/// can fill or stay open), and its exit awaited with `waitpid` under a deadline.
public enum Spawn {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc ≥ 2.34 has it; the Glibc module does not declare it, so it is looked up by name.
    private static let closeFrom: CloseFrom? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: CloseFrom.self)
    }()

    public struct Result {
        /// The exit code, or 128 + the signal that ended it.
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// Runs `arguments` (the first looked up on PATH) with `stdin` as its input, and returns its
    /// status and what it wrote. Throws when it runs past `timeout` seconds (it is killed then).
    /// `blocking`: signals the child starts with blocked (by default, none).
    public static func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:],
                    blocking: [Int32] = [], timeout: Double = 60) throws -> Result {
        let base = NSTemporaryDirectory() + "stepo-spawn-" + UUID().uuidString
        let (input, output, errors) = (base + ".in", base + ".out", base + ".err")
        defer { for file in [input, output, errors] { unlink(file) } }
        try (stdin ?? Data()).write(to: URL(fileURLWithPath: input))
        let pid = try spawn(arguments, stdin: input, stdout: output, stderr: errors, environment: environment,
                            blocking: blocking)
        let deadline = Date().addingTimeInterval(timeout)
        var waitStatus: Int32 = 0
        while true {
            let result = waitpid(pid, &waitStatus, WNOHANG)
            if result == pid { break }
            if result == -1 && errno != EINTR { throw Failure(description: "waitpid: \(String(cString: strerror(errno)))") }
            if Date() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &waitStatus, 0)
                throw Failure(description: "\(arguments.joined(separator: " ")) ran past \(timeout) s")
            }
            usleep(2_000)
        }
        // The low 7 bits are the signal that ended it (0 for a normal exit), the next 8 the code.
        let signal = waitStatus & 0x7f
        let read = { (file: String) in String(decoding: FileManager.default.contents(atPath: file) ?? Data(), as: UTF8.self) }
        return Result(status: signal == 0 ? (waitStatus >> 8) & 0xff : 128 + signal,
                      stdout: read(output), stderr: read(errors))
    }

    /// A server started in the background (its output in `log`); `stop` ends it.
    public struct Background {
        public let pid: pid_t

        /// Whether it is still running (a server that exited at once failed to start).
        public var isRunning: Bool {
            var status: Int32 = 0
            return waitpid(pid, &status, WNOHANG) == 0
        }

        /// Waits for it to exit, at most `timeout` seconds: its exit status (128 + a signal's
        /// number when one ended it), or nil when it is still running (then it is killed).
        public func wait(timeout: Double) -> Int32? {
            var status: Int32 = 0
            let deadline = Date().addingTimeInterval(timeout)
            while waitpid(pid, &status, WNOHANG) == 0 {
                if Date() > deadline { kill(pid, SIGKILL); _ = waitpid(pid, &status, 0); return nil }
                usleep(5_000)
            }
            let signal = status & 0x7f
            return signal == 0 ? (status >> 8) & 0xff : 128 + signal
        }

        /// SIGTERM, then SIGKILL after two seconds; reaps it either way.
        public func stop() {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            let deadline = Date().addingTimeInterval(2)
            while waitpid(pid, &status, WNOHANG) == 0 {
                if Date() > deadline { kill(pid, SIGKILL); _ = waitpid(pid, &status, 0); return }
                usleep(10_000)
            }
        }
    }

    public static func start(_ arguments: [String], log: String, environment: [String: String] = [:]) throws -> Background {
        let pid = try spawn(arguments, stdin: "/dev/null", stdout: log, stderr: log, environment: environment, blocking: [])
        Reaper.shared.register(pid: pid)
        return Background(pid: pid)
    }

    private static func spawn(_ arguments: [String], stdin: String, stdout: String, stderr: String,
                              environment: [String: String], blocking: [Int32]) throws -> pid_t {
        guard let closeFrom else { throw Failure(description: "posix_spawn_file_actions_addclosefrom_np is missing") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if stderr == stdout {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        _ = closeFrom(&actions, 3)

        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }

        // The calling thread may be one of Dispatch's, which block most signals; a child
        // inherits that mask (an inbox behind it would never hear SIGWINCH). Start it clean.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t(), all = sigset_t()
        sigemptyset(&mask)
        for signal in blocking { sigaddset(&mask, signal) }
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            throw Failure(description: "\(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        return pid
    }
}
