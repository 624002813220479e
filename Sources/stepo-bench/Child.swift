import BenchSupport
import CLI
import Foundation

/// A child process a bench starts and measures: started with posix_spawn (its output in a
/// file), timed, and watched for its own peak memory until it exits.
struct Child {
    let pid: pid_t
    let started: DispatchTime
    /// Where its output went.
    var log: String? = nil

    /// `output`: where its standard output goes, when not with its errors in `log`.
    static func start(_ arguments: [String], log: String, output: String? = nil, environment: [String: String] = [:]) throws -> Child {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let output {
            posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let started = DispatchTime.now()
        let result = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard result == 0 else { throw CommandError(description: "cannot start \(arguments[0]): \(String(cString: strerror(result)))") }
        return Child(pid: pid, started: started, log: log)
    }

    /// Waits for it to exit: its status, seconds since it started, peak resident memory, and
    /// the CPU seconds it spent (user and system, all its threads and the children it waited
    /// for).
    ///
    /// The peak is the kernel's high-water mark of the child's own memory (`VmHWM`), read every
    /// 20 ms until it exits. Not `wait4`'s `ru_maxrss`: posix_spawn starts the child in this
    /// process's memory, and Linux carries that memory's peak across the exec, so `ru_maxrss`
    /// would report the bench's own size. `wait4`'s times are the child's own.
    func wait() -> (status: Int32, seconds: Double, megabytes: Double, cpu: Double) {
        var status: Int32 = 0
        var peak = 0.0
        var usage = rusage()
        while wait4(pid, &status, WNOHANG, &usage) == 0 {
            peak = max(peak, Child.highWaterMB(pid))
            usleep(20_000)
        }
        return ((status >> 8) & 0xff, BenchFigures.seconds(since: started), peak,
                Guard.seconds(usage.ru_utime) + Guard.seconds(usage.ru_stime))
    }

    /// The peak resident memory of process `pid` so far, in MB (0 once it is gone).
    static func highWaterMB(_ pid: pid_t) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kb = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kb / 1024
    }

    /// The fields of /proc/PID/stat after the command's closing parenthesis (the state is the
    /// first), or nil when the process is gone.
    private static func statFields(_ pid: String) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    /// The CPU time process `pid` has used so far (user and system), in seconds.
    static func cpuSeconds(_ pid: pid_t) -> Double {
        // utime and stime are fields 14 and 15 of the whole line.
        guard let fields = statFields(String(pid)), fields.count > 12, let user = Double(fields[11]),
              let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The CPU time of process `pid` and the processes it started (a server's workers).
    static func treeCPUSeconds(_ pid: pid_t) -> Double {
        var total = cpuSeconds(pid)
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            // The parent's pid is field 4 of the whole line.
            guard let child = pid_t(entry), let fields = statFields(entry), fields.count > 1, pid_t(fields[1]) == pid else { continue }
            total += treeCPUSeconds(child)
        }
        return total
    }

    /// Its exit status when it has ended already (it is reaped then), nil while it runs.
    func exitedEarly() -> Int32? {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        return (status >> 8) & 0xff
    }

    /// The last lines it wrote, for an error.
    func logTail(lines: Int = 5) -> String? {
        guard let log, let data = FileManager.default.contents(atPath: log), !data.isEmpty else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    /// SIGTERM, then reaped: the CPU seconds it used in all (user and system, to the
    /// microsecond, where /proc counts in ticks of 10 ms).
    @discardableResult
    func stop() -> Double {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        var usage = rusage()
        _ = wait4(pid, &status, 0, &usage)
        return Guard.seconds(usage.ru_utime) + Guard.seconds(usage.ru_stime)
    }

    /// The address a server (`stepo serve`, a stand-in) said it listens on, in its log.
    static func address(in log: String, scheme: String = "http") throws -> String {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: scheme + #"://127\.0\.0\.1:\d+"#, options: .regularExpression) { return String(text[range]) }
            usleep(20_000)
        }
        throw CommandError(description: "\(log): the server did not start")
    }
}

/// What the benches run.
enum Bench {
    /// The `stepo` binary the benches measure: the one built beside this executable (`swift
    /// build -c release` builds both into `.build/release`).
    static let stepo: String = {
        let beside = URL(fileURLWithPath: CommandLine.executablePath).deletingLastPathComponent().appendingPathComponent("stepo").path
        guard FileManager.default.isExecutableFile(atPath: beside) else {
            Output.error("stepo-bench: no stepo binary beside this one (\(beside)): build it first, `swift build -c release`")
            exit(1)
        }
        return beside
    }()
}
