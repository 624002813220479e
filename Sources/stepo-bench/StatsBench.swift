import BenchSupport
import CLI
import Backend
import Foundation
import Notifications

/// `stepo-bench stats`: the real `stepo stats --json` from process start over stores of
/// growing size — the same people (10,000), ten times the rows — against the same figures read
/// row by row (`--from-rows`), the cost the counters save.
struct StatsBench {
    let folder: String
    let rows: [Int]
    let people: Int
    /// CI's short run (any build): only the growth from the smallest store to the largest is a
    /// target — what a regression that walks rows instead of counters would break.
    let guardOnly: Bool

    /// The guard's figure (the row walk's CPU over the counters', 1,000,000 rows among 2,000
    /// people, release) from ten runs here, and the threshold a quarter's rise in the counters'
    /// cost crosses and the spread does not (docs/performance.md, "The guards").
    static let recorded = 5.2, threshold = 4.2
    static let readsPerPair = 5

    init(arguments: Arguments) throws {
        guardOnly = arguments.has("guard")
        folder = arguments["dir"] ?? NSTemporaryDirectory() + "stepo-bench-stats-\(ProcessInfo.processInfo.processIdentifier)"
        rows = try (arguments["rows"] ?? "10000,10000000").split(separator: ",").map { text in
            guard let n = Int(text), n >= 1000 else { throw UsageError(description: "--rows takes counts of at least 1000, such as 10000,10000000") }
            return n
        }
        guard let chosen = Int(arguments["people"] ?? "10000"), chosen >= 1500 else {
            throw UsageError(description: "--people takes a count of at least 1500")
        }
        people = chosen
    }

    func run() throws -> Int32 {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // A folder the bench chose is removed after; one given with --dir keeps the stores.
        let chosen = folder
        defer { if chosen.hasPrefix(NSTemporaryDirectory() + "stepo-bench-stats-") { try? FileManager.default.removeItem(atPath: chosen) } }
        var figures = BenchFigures()
        print("stepo-bench stats · 2 cores · \(people) people, rows over 14 days, the default span (7 days)"
              + (guardOnly ? " · guard: growth only" : ""))
        var medians: [Int: Double] = [:]
        for count in rows {
            let path = folder + "/stats-\(count).db"
            let built = DispatchTime.now()
            try build(path, rows: count)
            print(String(format: "%d rows: built in %.1f s", count, BenchFigures.seconds(since: built)))
            var times: [Double] = [], peak = 0.0
            for _ in 0..<5 {
                let (seconds, megabytes, output, _) = try stats(path, fromRows: false)
                times.append(seconds)
                peak = max(peak, megabytes)
                guard (try? JSON.parse(output))?["mutes"]?.int ?? 0 > 0 else { throw CommandError(description: "stats found no mutes: \(output.prefix(200))") }
            }
            let median = BenchFigures.median(times)
            medians[count] = median
            if guardOnly {
                print(String(format: "  stepo stats --json from process start, median of 5: %.0f ms, peak %.1f MB", median * 1000, peak))
            } else {
                figures.line("  stepo stats --json from process start, median of 5", String(format: "%.0f ms, peak %.1f MB", median * 1000, peak),
                             met: median <= 0.2, target: "≤ 200 ms")
            }
            if guardOnly && count == rows.max() {
                // CI's guard: the counters must stay far cheaper than walking the rows. CPU time of
                // the two processes, in turns, so a busy core cannot fail it.
                print("  " + Guard.settle())
                var taken: [Guard.Pair] = []
                for _ in 0..<Guard.pairs {
                    // One row walk against five reads from the counters: one read is ~40 ms, mostly
                    // the process starting, and alone varied by a third from pair to pair.
                    let rows = try stats(path, fromRows: true)
                    let reads = try (0..<StatsBench.readsPerPair).map { _ in try stats(path, fromRows: false) }
                    taken.append(Guard.Pair(floorCPU: rows.cpu, workCPU: reads.map(\.cpu).reduce(0, +),
                                            floorWall: rows.seconds, workWall: reads.map(\.seconds).reduce(0, +)))
                }
                Guard.judge(taken, "  one row walk (--from-rows) over \(StatsBench.readsPerPair) reads from the counters", threshold: StatsBench.threshold,
                            recorded: StatsBench.recorded, &figures)
            } else if count <= 2_000_000 && !guardOnly {
                let (seconds, megabytes, _, _) = try stats(path, fromRows: true)
                print(String(format: "  the same figures read row by row (--from-rows): %.0f ms, peak %.1f MB — the counters' %.0f×",
                             seconds * 1000, megabytes, seconds / max(median, 1e-9)))
            } else if !guardOnly {
                print("  the same figures read row by row: not run above 2,000,000 rows (minutes)")
            }
        }
        if let small = rows.min(), let large = rows.max(), small != large, let a = medians[small], let b = medians[large] {
            // The counters' cost follows the people pushed to and the span's hours, not the rows:
            // ten times the rows among the same people must not cost anywhere near ten times.
            let growth = String(format: "%.0f ms → %.0f ms (%.2f×)", a * 1000, b * 1000, b / a)
            if guardOnly {
                print("  ×\(large / small) the rows: \(growth)")
            } else {
                figures.line("  ×\(large / small) the rows", growth, met: b / a <= 2, target: "≤ 2× (the cost does not follow the rows)")
            }
        }
        print(figures.missed == 0 ? "all targets met" : "\(figures.missed) target(s) missed")
        return figures.missed == 0 ? 0 : 1
    }

    /// A store of `rows` heart rows over 14 days (one event an hour) to people 2…`people`; the first 1,000 of them
    /// opened Activity at the end, and 200 turned engagement pushes off after the last of them.
    private func build(_ path: String, rows: Int) throws {
        try? FileManager.default.removeItem(atPath: path)
        let store = try Store(path: path)
        let world = BulkWorld(store)
        let now = Timestamp.parse("2026-11-29T12:00:00Z")!
        try world.build {
            try world.addUsers(1...people)
            try world.addHourlyRows(rows, recipients: 2...people, newest: now, hours: 14 * 24)
        }
        for key in 2...1001 {
            if let user = try store.user(key: key) { try store.inboxes.markSeen(user, at: now + 60_000) }
        }
        for key in stride(from: 2, through: 2 + 199 * 7, by: 7) {
            try store.apply(Event(id: "mute-\(key)", at: now + 120_000, body: .preferences(user: "u\(key)", changes: [(.engagement, false)])))
        }
    }

    private func stats(_ path: String, fromRows: Bool) throws -> (seconds: Double, megabytes: Double, output: String, cpu: Double) {
        let output = folder + "/stats.json", log = folder + "/stats.log"
        let child = try Child.start([Bench.stepo, "stats", "--db", path, "--json"] + (fromRows ? ["--from-rows"] : []),
                                    log: log, output: output)
        let (status, seconds, megabytes, cpu) = child.wait()
        guard status == 0 else {
            throw CommandError(description: "stepo stats exited \(status): \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
        return (seconds, megabytes, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "", cpu)
    }
}
