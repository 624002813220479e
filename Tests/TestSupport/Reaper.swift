import Foundation

/// Ends what the tests started when the test process ends, however it ends (a crash, a
/// kill -9, a deadline): a watcher process waits on a pipe whose only writer is this process;
/// when the pipe closes, it kills every child and tmux server registered here.
public final class Reaper: @unchecked Sendable {
    public static let shared = Reaper()

    private let list: String
    private let lock = NSLock()
    private var writer: FileHandle?

    private static let script = """
        cat >/dev/null
        while read kind what start; do
          case "$kind" in
            pid) [ "$(cut -d' ' -f22 /proc/$what/stat 2>/dev/null)" = "$start" ] && kill -9 "$what" 2>/dev/null ;;
            tmux) tmux -S "$what" kill-server >/dev/null 2>&1 ;;
          esac
        done < "$1"
        rm -f "$1"
        """

    private init() {
        list = NSTemporaryDirectory() + "stepo-reaper-\(getpid()).list"
        _ = FileManager.default.createFile(atPath: list, contents: nil)
        let pipe = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", Reaper.script, "stepo-reaper", list]
        process.standardInput = pipe
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        if (try? process.run()) != nil {
            try? pipe.fileHandleForReading.close()
            writer = pipe.fileHandleForWriting  // never closed: its end is this process's end
        }
    }

    /// A child process: killed when the tests end, unless it already ended (its start time
    /// tells a reused pid apart).
    public func register(pid: pid_t) {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        let fields = stat.split(separator: " ")
        guard fields.count > 21 else { return }
        append("pid \(pid) \(fields[21])")
    }

    /// A tmux server, by its socket: ended when the tests end.
    public func register(tmuxSocket: String) { append("tmux \(tmuxSocket)") }

    private func append(_ line: String) {
        lock.lock()
        defer { lock.unlock() }
        guard let handle = FileHandle(forWritingAtPath: list) else { return }
        handle.seekToEndOfFile()
        handle.write(Data((line + "\n").utf8))
        try? handle.close()
    }
}
