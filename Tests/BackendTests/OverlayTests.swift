import Foundation
import Notifications
import Testing
import TestSupport
import Wire
@_spi(Bench) @testable import Backend

/// What a batch decided set at a time must know of its own earlier lines (`EventSet`'s
/// overlay): a block made earlier in the batch, the pushes already counted toward the daily
/// ceiling, a batch row opened a few lines up. Each case ingests one batch (one transaction,
/// one set) set at a time and again one event at a time on a world built the same way, and
/// requires the recipient's rows to match, besides the rule itself.
@Suite("A batch decided set at a time sees its own earlier lines")
struct OverlayTests {
    /// A world built by `setUp`, then `lines` ingested as one batch: set at a time (runs of up
    /// to 512 lines, no run too small for a set) or one event at a time.
    static func ingested(_ lines: (World) -> [String], setAtATime: Bool, setUp: (World) throws -> Void) throws -> World {
        let w = try World()
        try setUp(w)
        var ingestor = Ingestor(store: w.store)
        ingestor.setAtATime = setAtATime
        ingestor.chunkLines = 512
        ingestor.smallestSet = 1
        let rejected = Box<[String]>([])
        _ = try ingestor.ingest(LineReader(data: Data((lines(w).joined(separator: "\n") + "\n").utf8)), onRow: { _ in },
                                onReject: { line, reason in rejected.value.append("\(line): \(reason)") })
        #expect(rejected.value.isEmpty, "\(rejected.value)")
        return w
    }

    /// Both ways; the recipient's rows must be the same (kind, push, members, actor).
    static func bothWays(_ recipient: String, _ lines: @escaping (World) -> [String], setUp: @escaping (World) throws -> Void,
                         sourceLocation: SourceLocation = #_sourceLocation) throws -> [ActivityRow] {
        let set = try ingested(lines, setAtATime: true, setUp: setUp)
        let one = try ingested(lines, setAtATime: false, setUp: setUp)
        func digest(_ w: World) throws -> [String] {
            try w.activity(recipient).map { "\($0.kind.rawValue) \($0.push.description) \($0.members ?? 1) \($0.actor ?? "-")" }.sorted()
        }
        #expect(try digest(set) == digest(one), "set at a time and one at a time disagree", sourceLocation: sourceLocation)
        // The badge is the inbox's counters; nothing is seen yet, so they are the rows.
        for w in [set, one] {
            let rows = try w.activity(recipient).count
            #expect(try w.store.inboxes.counts(for: w.record(recipient).key) == Counts(unseen: rows, unread: rows),
                    "the counters of \(recipient) against \(rows) rows", sourceLocation: sourceLocation)
            // Each row's place among the recipient's (what seen and read marks count by): 1, 2, 3 …
            let places = try w.store.connection.query("SELECT ord FROM notifications WHERE recipient = ? ORDER BY ord",
                                                      [w.record(recipient).key]) { $0.int(0) }
            #expect(places == Array(1...max(1, places.count)).prefix(places.count).map { $0 }, "places \(places)", sourceLocation: sourceLocation)
        }
        return try set.activity(recipient)
    }

    static func line(_ type: String, _ id: String, at: Int64, _ fields: [(String, JSON)]) -> String {
        JSON.object([("id", .string(id)), ("type", .string(type)), ("at", .string(Timestamp.format(at)))] + fields).serialized
    }

    static func heart(_ id: String, _ actor: String, _ step: String, at: Int64) -> String {
        line("heart", id, at: at, [("actor", .string(actor)), ("step", .string(step))])
    }

    @Test("a block earlier in the batch: the hearts and comments after it reach no one, those before it stay")
    func blockInTheBatch() throws {
        let rows = try Self.bothWays("r", { w in
            let at = w.clock + 60_000
            return [
                Self.heart("b1", "a", "s1", at: at),
                Self.heart("b2", "c", "s1", at: at + 1_000),
                Self.line("block", "b3", at: at + 2_000, [("actor", .string("r")), ("target", .string("a"))]),
                Self.heart("b4", "a", "s2", at: at + 3_000),
                Self.line("comment", "b5", at: at + 4_000, [("actor", .string("a")), ("step", .string("s2")),
                                                           ("comment", .object([("id", .string("k1")), ("text", .string("hi"))]))]),
                Self.heart("b6", "c", "s2", at: at + 5_000),
            ]
        }, setUp: { w in
            try w.users("r", "a", "c")
            try w.journey("jr", owner: "r")
            try w.step("s1", journey: "jr")
            try w.step("s2", journey: "jr")
        })
        // s1: a's heart and c's joined one batch before the block, which then takes a out of it;
        // s2: c's heart alone, as a's heart and comment after the block reach no one.
        let seen = rows.map { "\($0.kind) \($0.actor ?? "-") \($0.members ?? 1)" }
        #expect(rows.count == 2, "\(seen)")
        #expect(rows.allSatisfy { $0.actor == "c" && ($0.members ?? 1) == 1 }, "\(seen)")
    }

    @Test("a follow between hearts in one batch: its row and theirs are all counted, each in its own place")
    func otherTypeInTheBatch() throws {
        let rows = try Self.bothWays("r", { w in
            let at = w.clock + 60_000
            return [
                Self.heart("f1", "a", "s1", at: at),
                Self.line("follow", "f2", at: at + 1_000, [("actor", .string("c")), ("target", .string("r"))]),
                Self.heart("f3", "d", "s2", at: at + 2_000),
                Self.line("follow", "f4", at: at + 3_000, [("actor", .string("a")), ("target", .string("r"))]),
                Self.heart("f5", "c", "s1", at: at + 4_000),
            ]
        }, setUp: { w in
            try w.users("r", "a", "c", "d")
            try w.journey("jr", owner: "r")
            try w.step("s1", journey: "jr")
            try w.step("s2", journey: "jr")
        })
        #expect(rows.count == 4, "\(rows.map { "\($0.kind) \($0.actor ?? "-")" })")
    }

    @Test("150 pushes to one person in one batch: the ceiling counts the ones the batch already sent, and sends 100")
    func ceilingInTheBatch() throws {
        let people = 150
        let rows = try Self.bothWays("r", { w in
            let at = w.clock + 60_000
            return (0..<people).map { Self.heart("h\($0)", "p\($0)", "s\($0)", at: at + Int64($0) * 1_000) }
        }, setUp: { w in
            try w.user("r")
            try w.journey("jr", owner: "r")
            for i in 0..<people {
                try w.user("p\(i)")
                try w.step("s\(i)", journey: "jr")
            }
        })
        #expect(rows.count == people)
        #expect(rows.filter { $0.push == .sent }.count == QuietRules.dailyCeiling)
    }

    @Test("hearts on one step in one batch: the first opens the batch, the rest join it, one push")
    func batchJoinedInTheBatch() throws {
        let rows = try Self.bothWays("r", { w in
            let at = w.clock + 60_000
            return (0..<7).map { Self.heart("j\($0)", "p\($0)", "s1", at: at + Int64($0) * 60_000) }
        }, setUp: { w in
            try w.user("r")
            for i in 0..<7 { try w.user("p\(i)") }
            try w.journey("jr", owner: "r")
            try w.step("s1", journey: "jr")
        })
        #expect(rows.count == 1, "\(rows.map { "\($0.actor) \($0.members ?? 1)" })")
        #expect(rows.first?.members == 7)
    }
}
