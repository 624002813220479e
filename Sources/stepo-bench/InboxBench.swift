import BenchSupport
import CLI
import Backend
import Foundation
import Synchronization
import HTTPClient
import Notifications

/// `stepo-bench inbox`: the real `stepo inbox` in a pseudo-terminal, against a real `stepo
/// serve`, on replicas of 10k, 100k and 1M rows (one person with a lot, every row unseen).
///
/// - First row: process start to the first row's text drawn, the first open (everything
///   unseen) and the median of three opens, at each size; the largest within 1.5× the smallest.
/// - A session on the largest: first open, the end of the list (G) and back, a filter, twenty
///   destinations opened and closed, a thread expanded, live rows arriving all along, for
///   `--seconds`; the process's peak resident memory over all of it (its own rusage).
struct InboxBench {
    let folder: String
    let sizes: [Int]
    let seconds: Int

    init(arguments: Arguments) throws {
        folder = arguments["dir"] ?? NSTemporaryDirectory() + "stepo-inboxbench-\(ProcessInfo.processInfo.processIdentifier)"
        sizes = try (arguments["rows"] ?? "10000,100000,1000000").split(separator: ",").map {
            guard let n = Int($0), n > 0 else { throw UsageError(description: "--rows takes whole numbers, e.g. 10000,100000") }
            return n
        }
        seconds = try arguments.integer("seconds") ?? 60
    }

    func run() throws -> Int32 {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let keep = ProcessInfo.processInfo.environment["STEPO_BENCH_KEEP"] != nil
        defer { if !keep { try? FileManager.default.removeItem(atPath: folder) } }
        print("stepo-bench inbox · \(ProcessInfo.processInfo.activeProcessorCount) cores · the real binary in a 120×40 pseudo-terminal")
        var figures = BenchFigures()
        var medians: [Int: Double] = [:]
        for size in sizes {
            let world = try World(folder: folder + "/rows-\(size)", rows: size)
            defer { world.stop() }
            // The first open: every row unseen. On the largest replica, the whole session.
            let first = try world.open(session: size == sizes.max() ? seconds : 0)
            var opens = [first.firstRow]
            for _ in 0..<2 { opens.append(try world.open(session: 0).firstRow) }
            let median = BenchFigures.median(opens)
            medians[size] = median
            figures.line("first row drawn, \(size) rows: process start → first row",
                         String(format: "first open %.0f ms, median of 3 %.0f ms", first.firstRow, median),
                         met: first.firstRow <= 100 && median <= 100, target: "≤ 100 ms")
            if let session = first.session {
                figures.line("  session of \(session.seconds) s on \(size) rows (G and back, filter, \(session.destinations) destinations opened, \(session.liveRows) live rows)",
                             String(format: "peak memory %.1f MB; keystroke → redraw %.1f ms median, %.1f ms p99",
                                    first.megabytes, session.keyMedian, session.keyP99),
                             met: first.megabytes <= 40 && session.destinations == 20, target: "≤ 40 MB, 20 destinations")
            } else {
                figures.line("  peak memory of that open", String(format: "%.1f MB", first.megabytes), met: first.megabytes <= 40,
                             target: "≤ 40 MB")
            }
        }
        if let small = sizes.min(), let large = sizes.max(), small != large, let a = medians[small], let b = medians[large] {
            figures.line("first row at \(large) rows against \(small)", String(format: "%.2f×", b / max(a, 0.001)),
                         met: b <= 1.5 * a, target: "≤ 1.5×")
        }
        return figures.finish()
    }

    /// What one open measured.
    struct Open {
        var firstRow: Double
        var megabytes: Double
        var session: Session?
    }

    struct Session {
        var seconds: Int
        var liveRows: Int
        var destinations: Int
        var keyMedian: Double
        var keyP99: Double
    }

    /// One replica's world: the store, its server, a synced replica.
    final class World {
        let folder: String
        let rows: Int
        let server: Child
        let address: String
        let token: String
        let admin: String
        var live = 0

        init(folder: String, rows: Int) throws {
            self.folder = folder
            self.rows = rows
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let store = try BenchWorld.popularReader(folder + "/server.db", rows: rows)
            token = try store.tokens.create(for: try store.user("u1"), admin: false, at: 0)
            admin = try store.tokens.create(for: nil, admin: true, at: 0)
            (server, address) = try BenchWorld.serve(folder + "/server.db", log: folder + "/serve.log")
            // The replica, synced before the inbox first opens it (the sync bench times that).
            let sync = try Child.start([Bench.stepo, "sync", "--server", address, "--token", token],
                                       log: folder + "/sync.log", environment: ["XDG_STATE_HOME": folder + "/state"])
            guard sync.wait().status == 0 else {
                server.stop()
                throw CommandError(description: "stepo sync failed: \((try? String(contentsOfFile: folder + "/sync.log", encoding: .utf8)) ?? "")")
            }
        }

        func stop() { server.stop() }

        /// Opens the inbox, waits for its first row, runs a session of `session` seconds (none
        /// for 0), quits, and reaps it.
        func open(session: Int) throws -> Open {
            let terminal = try PseudoTerminal(rows: 40, columns: 120)
            var environment = ["TERM": "xterm-256color", "LANG": "C.UTF-8", "XDG_STATE_HOME": folder + "/state",
                               "HOME": folder]
            if let path = ProcessInfo.processInfo.environment["PATH"] { environment["PATH"] = path }
            let pid = try terminal.spawn([Bench.stepo, "inbox", "--server", address, "--token", token],
                                         environment: environment)
            // Its peak memory, sampled from the start (see `Child.wait`).
            let peak = PeakSampler(pid: pid)
            // A row's words: the step's caption, in a step's card or a row of its own.
            guard let first = terminal.waitFor("a morning run", timeout: 30) else {
                kill(pid, SIGKILL)
                throw CommandError(description: "the inbox drew no row within 30 s")
            }
            var result = Open(firstRow: first * 1000, megabytes: 0)
            if session > 0 { result.session = try self.session(terminal, seconds: session) }
            terminal.settle()
            terminal.write("q")
            var status: Int32 = 0
            let deadline = Date().addingTimeInterval(10)
            while waitpid(pid, &status, WNOHANG) == 0 {
                if Date() > deadline { kill(pid, SIGKILL); _ = waitpid(pid, &status, 0); break }
                usleep(20_000)
            }
            result.megabytes = peak.stop()
            return result
        }

        /// The scripted session; live rows arrive through the server all along.
        private func session(_ terminal: PseudoTerminal, seconds: Int) throws -> Session {
            let end = Date().addingTimeInterval(Double(seconds))
            let poster = LivePoster(address: address, admin: admin, until: end)
            poster.start()
            var keys: [Double] = []
            var slow: [String] = []
            func press(_ key: String) {
                let before = terminal.count
                let sent = BenchFigures.seconds(since: terminal.started)
                terminal.write(key)
                if let drawn = terminal.waitForOutput(after: before, timeout: 5) {
                    keys.append((drawn - sent) * 1000)
                    if (drawn - sent) > 0.1 { slow.append(String(format: "%@ %.0f ms", key.debugDescription, (drawn - sent) * 1000)) }
                }
                terminal.settle(quiet: 0.1, timeout: 3)
            }
            terminal.settle()
            press("G"); press("g")
            press("/")
            for character in "Step 7" { press(String(character)) }
            press("\r"); press("\u{1B}")
            var opened = 0
            for _ in 0..<20 {
                press("j"); press("j")
                let before = terminal.count
                press("\r")
                if terminal.waitFor("Comments (", from: before, timeout: 3) != nil { opened += 1 }
                press("q")
            }
            press(" "); press("j"); press("j"); press(" ")
            while Date() < end {
                press("j")
                Thread.sleep(forTimeInterval: 0.5)
            }
            poster.stop()
            if !slow.isEmpty { print("  keys slower than 100 ms: \(slow.joined(separator: ", "))") }
            return Session(seconds: seconds, liveRows: poster.posted, destinations: opened, keyMedian: BenchFigures.median(keys),
                           keyP99: BenchFigures.percentile(keys, 0.99))
        }
    }

    /// Reads a process's peak memory every 20 ms until stopped: the highest seen.
    final class PeakSampler: Sendable {
        private let state = Mutex<(peak: Double, running: Bool)>((0, true))
        private let done = DispatchSemaphore(value: 0)

        init(pid: pid_t) {
            Thread { [self] in
                while true {
                    let now = Child.highWaterMB(pid)
                    let go = state.withLock { state in state.peak = max(state.peak, now); return state.running }
                    if !go { break }
                    usleep(20_000)
                }
                done.signal()
            }.start()
        }

        func stop() -> Double {
            state.withLock { $0.running = false }
            done.wait()
            return state.withLock { $0.peak }
        }
    }

    /// Posts a few hearts for u1 every half second through the admin API.
    final class LivePoster: Sendable {
        let address: String
        let admin: String
        let until: Date
        private let state = Mutex<(stopped: Bool, count: Int)>((false, 0))
        private let done = DispatchSemaphore(value: 0)

        init(address: String, admin: String, until: Date) {
            self.address = address
            self.admin = admin
            self.until = until
        }

        var posted: Int { state.withLock { $0.count } }

        func start() {
            Thread { [self] in
                let client = HTTPClient()
                var n = 0
                while Date() < until {
                    if state.withLock({ $0.stopped }) { break }
                    var lines: [String] = []
                    let at = Timestamp.format(Int64(Date().timeIntervalSince1970 * 1000))
                    for _ in 0..<3 {
                        lines.append(#"{"id":"live-\#(n)","type":"heart","at":"\#(at)","actor":"u\#(2 + n % 1000)","step":"s\#(1 + (n / 1000) % 100)"}"#)
                        n += 1
                    }
                    let answer = try? client.perform(method: "POST", url: address + "/v1/events",
                                                     headers: [("Authorization", "Bearer \(admin)")],
                                                     body: Data(lines.joined(separator: "\n").utf8), timeout: 10)
                    if answer?.status == 200 {
                        state.withLock { $0.count += lines.count }
                    }
                    Thread.sleep(forTimeInterval: 0.5)
                }
                done.signal()
            }.start()
        }

        func stop() {
            state.withLock { $0.stopped = true }
            done.wait()
        }
    }
}
