import Foundation
import Inbox
import Notifications
import Replica
import Wire

/// `stepo bench inbox`: a replica of `--rows` rows; the time to the first painted screen,
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
        try InboxBench.fill(path, rows: rows, now: Int64(Date().timeIntervalSince1970 * 1000))
        var figures = BenchFigures()
        let start = DispatchTime.now()
        let replica = try Replica(path: path)
        var state = InboxState(now: Int64(Date().timeIntervalSince1970 * 1000))
        _ = Inbox.reduce(&state, .resized(width: 120, height: 40))
        _ = Inbox.reduce(&state, .opened(seenThrough: replica.seenThrough))
        _ = Inbox.reduce(&state, .listLoaded(InboxApp.page(.top, newAbove: replica.seenThrough, filter: nil, replica: replica)))
        _ = ActivityView.render(state)
        let firstPaint = BenchFigures.seconds(since: start) * 1000
        figures.line("first paint with \(rows) rows in the replica", String(format: "%.1f ms", firstPaint), met: firstPaint <= 100,
                     target: "≤ 100 ms")
        var times: [Double] = []
        let keys: [Key] = [.character("j"), .character("j"), .space, .character("j"), .character("k"), .pageDown, .character("g")]
        for i in 0..<400 {
            let t0 = DispatchTime.now()
            for effect in Inbox.reduce(&state, .keyPressed(keys[i % keys.count])) {
                if case let .loadList(request, newAbove, filter) = effect {
                    _ = Inbox.reduce(&state, .listLoaded(InboxApp.page(request, newAbove: newAbove, filter: filter, replica: replica)))
                }
            }
            _ = ActivityView.render(state)
            times.append(BenchFigures.seconds(since: t0) * 1000)
        }
        let median = BenchFigures.median(times)
        figures.line("keystroke to redrawn screen", String(format: "%.2f ms median, %.2f ms p99", median,
                                                              BenchFigures.percentile(times, 0.99)),
                     met: median <= 5, target: "≤ 5 ms median")
        let rss = SyncBench.residentMB(of: getpid())
        figures.line("resident memory", String(format: "%.0f MB (cards held: %d)", rss, state.list.cards.count), met: rss <= 60,
                     target: "≤ 60 MB")
        return figures.finish()
    }

    /// A replica of `rows` hearts on a thousand steps, written through the replica's own apply
    /// path in pages, as a sync writes them; the newest 40 unseen.
    static func fill(_ path: String, rows: Int, now: Int64) throws {
        let replica = try Replica(path: path)
        try replica.reset(for: "bench")
        replica.user = "u1"
        let page = 5000
        var first = 1
        while first <= rows {
            let last = min(rows, first + page - 1)
            let batch = (first...last).map { i -> ActivityRow in
                let step = "s\(i % 1000)"
                return ActivityRow(id: i, event: "e\(i)", recipient: "u1", kind: .heart, actor: "u\(i % 977)",
                                   title: "User \(i % 977)", body: "Hearted your step: morning run", media: Media(),
                                   tap: .step(step, comments: .closed, comment: nil), thread: "step:\(step)", push: .sent,
                                   subject: RowSubject(step: step), createdAt: now - Int64(rows - i) * 60_000, version: i)
            }
            let marks = last == rows && rows > 40 ? [Mark(kind: .seen, throughRow: rows - 40, at: now - 1, version: rows)] : []
            try replica.apply(ActivityPage(rows: batch, entities: Entities(), counts: Counts(unseen: 40, unread: rows), next: last,
                                           marks: marks, more: last < rows))
            first = last + 1
        }
    }
}
