import Foundation
import Inbox
import Notifications
import Replica
import SQLite

/// `stepo bench inbox`: a replica of 100,000 rows; the time to the first painted screen,
/// keystroke to redrawn screen, and resident memory — measured on the inbox's own code
/// (replica read, list, reducer, view into the grid), the terminal's copy-out aside.
struct InboxBench {
    let folder: String
    let rows: Int

    init(arguments: Arguments) throws {
        folder = arguments["dir"] ?? NSTemporaryDirectory() + "stepo-inboxbench-\(ProcessInfo.processInfo.processIdentifier)"
        rows = try arguments.integer("rows") ?? 100_000
    }

    func run() throws -> Int32 {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        print("stepo bench inbox · \(ProcessInfo.processInfo.activeProcessorCount) cores")
        let path = folder + "/replica.db"
        do {
            // A replica of `rows` rows, written directly (a sync of this size is bench sync's job).
            _ = try Replica(path: path)
            let db = try Database(path: path)
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            try db.transaction {
                let insert = try db.prepare("INSERT INTO rows(id, version, created_at, kind, title, body, seen_at, json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
                for i in 1...rows {
                    let step = "s\(i / 7)"
                    let json = #"{"id":\#(i),"kind":"heart","title":"User \#(i % 977)","body":"Hearted your step: morning run","thread":"step:\#(step)","actor":"u\#(i % 977)","tap":{"screen":"step","step":"\#(step)","comments":"closed"}}"#
                    try insert.bind([i, i, now - Int64(rows - i) * 60_000, "heart", "User \(i % 977)", "Hearted your step: morning run",
                                     i > rows - 40 ? nil : now - 1, json]).run()
                }
            }
        }
        var failures = 0
        let start = DispatchTime.now()
        let replica = try Replica(path: path)
        var state = InboxState(now: Int64(Date().timeIntervalSince1970 * 1000))
        _ = Inbox.reduce(&state, .resized(width: 120, height: 40))
        _ = Inbox.reduce(&state, .rowsLoaded(try replica.rows(limit: InboxApp.rowWindow)))
        _ = ActivityView.render(state)
        let firstPaint = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6
        failures += report("first paint with \(rows) rows in the replica", String(format: "%.1f ms", firstPaint),
                           meets: firstPaint <= 100, target: "≤ 100 ms")
        var times: [Double] = []
        let keys: [Key] = [.character("j"), .character("j"), .space, .character("j"), .character("k"), .pageDown, .character("G"), .character("g")]
        for i in 0..<400 {
            let t0 = DispatchTime.now()
            _ = Inbox.reduce(&state, .keyPressed(keys[i % keys.count]))
            _ = ActivityView.render(state)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - t0.uptimeNanoseconds) / 1e6)
        }
        times.sort()
        let median = times[times.count / 2]
        failures += report("keystroke to redrawn screen", String(format: "%.2f ms median, %.2f ms p99", median, times[times.count * 99 / 100]),
                           meets: median <= 5, target: "≤ 5 ms median")
        let rss = SyncBench.residentMB(of: getpid())
        failures += report("resident memory", String(format: "%.0f MB (rows held: %d of %d)", rss, state.rows.count, rows),
                           meets: rss <= 60, target: "≤ 60 MB")
        print(failures == 0 ? "all targets met" : "\(failures) target(s) missed")
        return failures == 0 ? 0 : 1
    }

    private func report(_ what: String, _ figure: String, meets: Bool, target: String) -> Int {
        print("\(what): \(figure) — target \(target): \(meets ? "met" : "MISSED")")
        return meets ? 0 : 1
    }
}
