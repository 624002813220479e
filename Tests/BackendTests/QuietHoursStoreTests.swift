import Foundation
import Notifications
import TestSupport
import Wire
import Testing
@testable import Backend

/// Quiet hours in the store (both engines): a push decided inside them is held — its row in
/// the inbox at once and counted, its outbox entries due when the hours end.
@Suite("Quiet hours in the store")
struct QuietHoursStoreTests {
    /// Owner `o` with a phone; fans `a`, `b`, `c`; a step `s` published at the world's origin.
    func world() throws -> World {
        let w = try World()
        try w.users("o", "a", "b", "c")
        try w.journey("j", owner: "o")
        try w.step("s", journey: "j")
        try w.store.devices.register("o-phone", platform: .apns, environment: .production, for: try w.record("o"), at: w.clock)
        return w
    }

    func quiet(_ w: World, _ user: String, _ from: String = "22:00", _ to: String = "07:00", zone: String = "Europe/Paris",
               at: Int64? = nil) throws {
        try w.event("preferences", at: at, [("user", .string(user)),
                                            ("quietHours", .object([("from", .string(from)), ("to", .string(to)), ("zone", .string(zone))]))])
    }

    @Test("a heart inside quiet hours: the row is in the inbox and counted at once, its push is held until they end")
    func held() throws {
        let w = try world()
        try quiet(w, "o", at: Timestamp.parse("2026-11-01T20:00:00Z")!)
        // 23:30 in Paris (UTC+1 in November).
        let heart = try w.interact("heart", "a", "s", at: Timestamp.parse("2026-11-01T22:30:00Z")!)
        let row = try #require(heart.writtenRows.first)
        #expect(row.push == .sent)
        #expect(try w.activity("o").contains { $0.id == row.id })
        #expect(try w.store.inboxes.counts(for: try w.record("o").key).unseen == 1)
        let entry = try #require(try w.store.outbox.entries(ofRow: row.id).first)
        #expect(entry.held && entry.state == .due)
        #expect(entry.dueAt == Timestamp.parse("2026-11-02T06:00:00Z")!)
        // Nothing is due before then; at the end it is.
        #expect(try w.store.outbox.due(now: entry.dueAt - 1, limit: 10).isEmpty)
        #expect(try w.store.outbox.due(now: entry.dueAt, limit: 10).map(\.id) == [entry.id])
    }

    @Test("outside quiet hours, or with them turned off, a push is due at once")
    func notHeld() throws {
        let w = try world()
        try quiet(w, "o", at: Timestamp.parse("2026-11-01T09:00:00Z")!)
        let noon = try #require(try w.interact("heart", "a", "s", at: Timestamp.parse("2026-11-01T11:00:00Z")!).writtenRows.first)
        #expect(try w.store.outbox.entries(ofRow: noon.id).allSatisfy { !$0.held && $0.dueAt == noon.createdAt })
        try w.event("preferences", at: Timestamp.parse("2026-11-01T12:00:00Z")!, [("user", .string("o")), ("quietHours", .null)])
        #expect(try w.record("o").preferences.quietHours == nil)
        let night = try #require(try w.interact("share", "b", "s", at: Timestamp.parse("2026-11-01T23:00:00Z")!).writtenRows.first)
        #expect(try w.store.outbox.entries(ofRow: night.id).allSatisfy { !$0.held && $0.dueAt == night.createdAt })
    }

    @Test("quiet hours turned off or shortened let what they hold go sooner; lengthened, never later")
    func changedWhileHeld() throws {
        let w = try world()
        try quiet(w, "o", at: Timestamp.parse("2026-11-01T20:00:00Z")!)
        let row = try #require(try w.interact("heart", "a", "s", at: Timestamp.parse("2026-11-01T22:30:00Z")!).writtenRows.first)
        func due() throws -> Int64? { try w.store.outbox.entries(ofRow: row.id).first?.dueAt }
        #expect(try due() == Timestamp.parse("2026-11-02T06:00:00Z")!)
        // Lengthened to 09:00: still 06:00.
        try quiet(w, "o", "22:00", "09:00", at: Timestamp.parse("2026-11-01T23:00:00Z")!)
        #expect(try due() == Timestamp.parse("2026-11-02T06:00:00Z")!)
        // Shortened to 05:00 (04:00 UTC).
        try quiet(w, "o", "22:00", "05:00", at: Timestamp.parse("2026-11-01T23:30:00Z")!)
        #expect(try due() == Timestamp.parse("2026-11-02T04:00:00Z")!)
        // Off at 01:00 UTC: due then.
        let off = Timestamp.parse("2026-11-02T01:00:00Z")!
        try w.event("preferences", at: off, [("user", .string("o")), ("quietHours", .null)])
        #expect(try due() == off)
        #expect(try w.store.outbox.entries(ofRow: row.id).first?.held == true)
    }

    @Test("a fan-out holds the pushes of those inside their quiet hours and sends the others' at once")
    func fanout() throws {
        let w = try world()
        for fan in ["a", "b", "c"] {
            try w.follow(fan, "o")
            try w.store.devices.register("\(fan)-phone", platform: .fcm, environment: .production, for: try w.record(fan), at: w.clock)
        }
        try quiet(w, "a")                                // Paris night
        try quiet(w, "b", zone: "Pacific/Kiritimati")    // UTC+14: its morning
        let at = Timestamp.parse("2026-11-01T22:30:00Z")!
        try w.step("s2", journey: "j", at: at)
        let entries = try ["a", "b", "c"].map { try #require(try w.store.outbox.entries(ofDevice: "\($0)-phone").last) }
        #expect(entries[0].held && entries[0].dueAt == Timestamp.parse("2026-11-02T06:00:00Z")!)
        // 22:30 UTC is 12:30 the next day in Kiritimati: not quiet.
        #expect(!entries[1].held && entries[1].dueAt == at)
        #expect(!entries[2].held && entries[2].dueAt == at)
        // A held push lives a day past its due time, not a day past its row.
        #expect(entries[0].expiresAt == entries[0].dueAt + Timestamp.day)
    }

    @Test("across a daylight-saving change: the end the clock jumps over is the jump")
    func daylightSaving() throws {
        let w = try world()
        try quiet(w, "o", "22:00", "02:30", at: Timestamp.parse("2027-03-27T20:00:00Z")!)
        try w.step("s3", journey: "j", at: Timestamp.parse("2027-03-27T21:00:00Z")!)
        let row = try #require(try w.interact("heart", "a", "s3", at: Timestamp.parse("2027-03-27T23:00:00Z")!).writtenRows.first)
        let entry = try #require(try w.store.outbox.entries(ofRow: row.id).first)
        #expect(entry.held && entry.dueAt == Timestamp.parse("2027-03-28T01:00:00Z")!)
    }

    @Test("a batch that grows while held keeps one held entry, due at the end, with the sound")
    func batchWhileHeld() throws {
        let w = try world()
        try quiet(w, "o", at: Timestamp.parse("2026-11-01T20:00:00Z")!)
        let first = try #require(try w.interact("heart", "a", "s", at: Timestamp.parse("2026-11-01T22:30:00Z")!).writtenRows.first)
        try w.interact("heart", "b", "s", at: Timestamp.parse("2026-11-01T22:40:00Z")!)
        let entries = try w.store.outbox.entries(ofRow: first.id)
        #expect(entries.map(\.state) == [.superseded, .due])
        #expect(entries.last?.held == true && entries.last?.silent == false)
        #expect(entries.last?.dueAt == Timestamp.parse("2026-11-02T06:00:00Z")!)
    }

    @Test("a claim of one held entry brings every held entry of its device that is due")
    func claimsSiblings() throws {
        let w = try world()
        try quiet(w, "o", at: Timestamp.parse("2026-11-01T20:00:00Z")!)
        try w.interact("heart", "a", "s", at: Timestamp.parse("2026-11-01T22:30:00Z")!)
        try w.comment("b", on: "s", "c1", "nice", at: Timestamp.parse("2026-11-01T22:35:00Z")!)
        try w.comment("c", on: "s", "c2", "lovely", at: Timestamp.parse("2026-11-01T22:36:00Z")!)
        let due = Timestamp.parse("2026-11-02T06:00:00Z")!
        let claimed = try w.store.outbox.claimDue(worker: "t", now: due, lease: 60_000, limit: 1)
        #expect(claimed.count == 3 && claimed.allSatisfy(\.held))
        #expect(try w.store.outbox.claimDue(worker: "t2", now: due, lease: 60_000, limit: 10).isEmpty)
    }

    @Test("quiet hours change when pushes go, never which rows exist: the same events with and without them make the same rows")
    func sameRows() throws {
        func run(quietFor people: [String]) throws -> [String] {
            let w = try world()
            for fan in ["a", "b", "c"] {
                try w.follow(fan, "o")
                try w.store.devices.register("\(fan)-phone", platform: .fcm, environment: .production, for: try w.record(fan), at: w.clock)
            }
            for person in people { try quiet(w, person, "00:00", "23:59", zone: "UTC") }
            try w.step("s2", journey: "j")
            try w.interact("heart", "a", "s")
            try w.interact("heart", "b", "s")
            try w.comment("c", on: "s2", "c1", "go on")
            try w.interact("share", "a", "s2")
            return try ["o", "a", "b", "c"].flatMap { try w.activity($0) }
                .map { "\($0.recipient) \($0.kind.rawValue) \($0.title) \($0.push)" }.sorted()
        }
        let plain = try run(quietFor: [])
        #expect(plain.count > 4)
        #expect(try run(quietFor: ["o", "a", "b", "c"]) == plain)
    }

    /// The seeded stream with every person given a phone after the first lines, and (with
    /// `quiet`) quiet hours set and changed among its lines by a generator of their own, so the
    /// stream's own events are the same either way.
    static func run(_ stream: RandomStream, quiet: Bool, at location: String) throws -> (rows: [String], entries: [String], held: Int) {
        let store = try Store(location: location)
        let people = stream.lines.prefix { $0.contains(#""type":"user""#) }.count
        var lines = Array(stream.lines.prefix(people))
        var random = SplitMix(seed: 77)
        let zones = ["Europe/Paris", "America/New_York", "Asia/Tokyo", "Pacific/Kiritimati", "Pacific/Pago_Pago", "UTC"]
        for (index, line) in stream.lines.dropFirst(people).enumerated() {
            if quiet, index % 40 == 0, let at = (try? JSON.parse(Data(line.utf8)))?["at"]?.string {
                let person = "p\(random.below(24))"
                let from = random.below(1440)
                let hours = random.below(5) == 0 ? "null"
                    : #"{"from":"\#(QuietHours.clock(from))","to":"\#(QuietHours.clock((from + 1 + random.below(1439)) % 1440))","zone":"\#(zones[random.below(zones.count)])"}"#
                lines.append(#"{"id":"quiet-\#(index)","type":"preferences","at":"\#(at)","user":"\#(person)","quietHours":\#(hours)}"#)
            }
            lines.append(line)
        }
        var ingestor = Ingestor(store: store)
        _ = try ingestor.ingest(LineReader(data: Data((lines.prefix(people).joined(separator: "\n") + "\n").utf8)), onRow: { _ in }, onReject: { _, _ in })
        for i in 0..<24 {
            guard let user = try store.user("p\(i)") else { continue }
            try store.devices.register("phone-p\(i)", platform: i % 2 == 0 ? .apns : .fcm, environment: .production, for: user, at: 0)
        }
        ingestor = Ingestor(store: store)
        _ = try ingestor.ingest(LineReader(data: Data((lines.dropFirst(people).joined(separator: "\n") + "\n").utf8)),
                                onRow: { _ in }, onReject: { _, _ in })
        let renumber = DifferentialTests.Renumber()
        var rows: [String] = []
        var last = 0
        while true {
            let page = try store.inboxes.rows(afterRow: last, limit: 5_000)
            guard let end = page.last?.id else { break }
            rows += page.map { DifferentialTests.canonical($0, renumber, state: true) }
            last = end
        }
        var entries: [String] = []
        var held = 0
        for i in 0..<24 {
            for entry in try store.outbox.entries(ofDevice: "phone-p\(i)") {
                entries.append("\(renumber(entry.row)) \(entry.token) \(entry.silent) \(entry.state.rawValue)")
                if entry.held { held += 1 }
            }
        }
        return (rows, entries.sorted(), held)
    }

    @Test("quiet hours never change which rows exist or which pushes are due, only when: a seeded stream with and without them",
          arguments: [606, 707] as [UInt64])
    func seededStreams(seed: UInt64) throws {
        let folder = NSTemporaryDirectory() + "stepo-quiet-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let stream = RandomStream(seed: seed, events: 3_000)
        let plain = try Self.run(stream, quiet: false, at: try TestEngine.location(folder, "plain.db"))
        let quiet = try Self.run(stream, quiet: true, at: try TestEngine.location(folder, "quiet.db"))
        #expect(plain.rows.count > 1_000 && plain.entries.count > 500)
        #expect(plain.held == 0 && quiet.held > 50, "held: \(quiet.held)")
        #expect(quiet.rows == plain.rows)
        #expect(quiet.entries == plain.entries)
    }
}
