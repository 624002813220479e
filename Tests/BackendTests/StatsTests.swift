import Foundation
import Notifications
import Testing
import TestSupport
import Wire
@_spi(Bench) @testable import Backend

/// The trust budget against a world small enough to count by hand (docs/stats.md).
@Suite("The trust budget")
struct StatsTests {
    static func at(_ text: String) -> Int64 { Timestamp.parse(text)! }

    /// Ann is followed by Bob, Cy and Dee and posts a step; Bob hearts it (and hearts again),
    /// Cy comments, Ann hearts her own step, Ann blocks Dee, who then hearts it. Ann turns
    /// social pushes off two hours after three follow pushes (a mute), so Eve's follow is kept
    /// without a push. The next day Ann opens Activity and reads the heart; Bob turns every
    /// push off 23.5 hours after his first-step push (a mute of journeys); Cy turns engagement
    /// off with no engagement push before it (not a mute); Ann turns social off again (no change).
    static func world() throws -> World {
        let w = try World()
        try w.users("ann", "bob", "cy", "dee", "eve")
        let ann = try w.record("ann")
        try w.store.devices.register("ann-phone", platform: .apns, environment: .production, for: ann, at: at("2026-11-01T00:06:00Z"))
        try w.follow("bob", "ann", at: at("2026-11-01T00:10:00Z"))
        try w.follow("cy", "ann", at: at("2026-11-01T00:11:00Z"))
        try w.follow("dee", "ann", at: at("2026-11-01T00:12:00Z"))
        try w.journey("j1", owner: "ann")
        try w.step("s1", journey: "j1", at: at("2026-11-01T01:00:00Z"))
        try w.interact("heart", "bob", "s1", at: at("2026-11-01T01:10:00Z"))
        try w.comment("cy", on: "s1", "c1", "so good", at: at("2026-11-01T01:20:00Z"))
        try w.interact("heart", "bob", "s1", at: at("2026-11-01T01:30:00Z"))
        try w.interact("heart", "ann", "s1", at: at("2026-11-01T01:40:00Z"))
        try w.relation("block", "ann", "dee")
        try w.interact("heart", "dee", "s1", at: at("2026-11-01T02:10:00Z"))
        try w.event("preferences", at: at("2026-11-01T03:00:00Z"), [("user", .string("ann")), ("social", .bool(false))])
        try w.follow("eve", "ann", at: at("2026-11-01T04:00:00Z"))
        // The next day.
        try w.store.inboxes.markSeen(try w.record("ann"), at: at("2026-11-02T00:00:00Z"))
        let heart = try #require(try w.activity("ann").first { $0.kind == .steppedWithHeart })
        _ = try w.store.inboxes.markRead(try w.record("ann"), row: heart.id, at: at("2026-11-02T01:00:00Z"))
        try w.event("preferences", at: at("2026-11-02T00:30:00Z"), [("user", .string("bob")), ("all", .bool(false))])
        try w.event("preferences", at: at("2026-11-02T01:30:00Z"), [("user", .string("ann")), ("social", .bool(false))])
        try w.event("preferences", at: at("2026-11-02T02:00:00Z"), [("user", .string("cy")), ("engagement", .bool(false))])
        return w
    }

    @Test("rows, pushes, withheld candidates, seen and read, per kind and per category")
    func figures() throws {
        let w = try Self.world()
        let b = try w.store.stats.trustBudget(since: Self.at("2026-10-26T02:00:00Z"), until: Self.at("2026-11-02T02:00:00Z"))

        let social = try #require(b.categories[.social]).figures
        #expect(social.rows == 4 && social.sent == 3 && social.suppressed == [.preferences: 1])
        #expect(social.seen == 4 && social.read == 0)
        let stepWith = try #require(b.categories[.stepWith]).figures
        #expect(stepWith.rows == 2 && stepWith.sent == 2)
        #expect(stepWith.suppressed == [.duplicate: 1, .self: 1, .blocked: 1])
        #expect(stepWith.seen == 2 && stepWith.read == 1 && stepWith.readRate == 0.5)
        let journeys = try #require(b.categories[.journeys]).figures
        #expect(journeys.rows == 3 && journeys.sent == 3 && journeys.seen == 0 && journeys.seenRate == 0)
        #expect(b.categories[.engagement]?.figures.rows == 0)

        let follows = try #require(b.kinds[.newFollower])
        #expect(follows.rows == 4 && follows.sent == 3 && follows.seenRate == 1)
        // To seen: 23 h 50 min, 23 h 49 min, 23 h 48 min and 20 h; the nearest-rank median is
        // the 2nd, 23 h 48 min, in the bucket up to 24 hours.
        #expect(follows.medianToSeen == Int64(24 * 3_600_000))
        let heart = try #require(b.kinds[.steppedWithHeart])
        #expect(heart.rows == 1 && heart.seen == 1 && heart.read == 1 && heart.readRate == 1)
        // 22 h 50 min and 23 h 50 min: both in the bucket from 20 to 24 hours.
        #expect(heart.medianToSeen == Int64(24 * 3_600_000) && heart.medianToRead == Int64(24 * 3_600_000))
        #expect(StampBuckets.bucket((22 * 60 + 50) * 60_000) == StampBuckets.bucket(20 * 3_600_000))
        #expect(StampBuckets.bucket(20 * 3_600_000 - 1) + 1 == StampBuckets.bucket(20 * 3_600_000))
        #expect(b.kinds[.steppedWithComment]?.medianToRead == nil)
        #expect(b.kinds[.firstStep]?.rows == 3)
    }

    @Test("a mute is a switch turned off within 24 hours after a push of its category; the rate is per person pushed")
    func mutes() throws {
        let w = try Self.world()
        let b = try w.store.stats.trustBudget(since: Self.at("2026-10-26T02:00:00Z"), until: Self.at("2026-11-02T02:00:00Z"))
        let social = try #require(b.categories[.social])
        #expect(social.recipients == 1 && social.mutes == 1 && social.muteRate == 1)
        #expect(social.mutedAfter == [.newFollower: 1])
        let journeys = try #require(b.categories[.journeys])
        #expect(journeys.recipients == 3 && journeys.mutes == 1 && abs(journeys.muteRate - 1.0 / 3) < 1e-9)
        #expect(journeys.mutedAfter == [.firstStep: 1])
        // Bob's master switch mutes only the category he had pushes of; Cy's engagement switch
        // had no push before it.
        #expect(b.categories[.stepWith]?.mutes == 0 && b.categories[.engagement]?.mutes == 0)
        #expect(b.recipients == 4 && b.mutes == 2 && b.muteRate == 0.5)

        // Per UTC day: Nov 1 holds the rows and Ann's mute, Nov 2 Bob's.
        #expect(b.days.count == 8 && b.days.first?.date == "2026-10-26")
        let first = b.days[6], second = b.days[7]
        #expect(first.date == "2026-11-01" && first.rows == 9 && first.sent == 8 && first.recipients == 4 && first.mutes == 1)
        #expect(second.date == "2026-11-02" && second.rows == 0 && second.recipients == 0 && second.mutes == 1 && second.muteRate == 0)
        #expect(b.categories[.social]?.days[6].muteRate == 1)

        // A span that starts after Bob's push still weighs his mute against it (the 24 hours
        // before a mute reach back past `since`), but counts no one pushed to.
        let late = try w.store.stats.trustBudget(since: Self.at("2026-11-02T00:00:00Z"), until: Self.at("2026-11-02T02:00:00Z"))
        #expect(late.mutes == 1 && late.recipients == 0 && late.muteRate == 0)
        #expect(late.categories[.journeys]?.mutes == 1)

        // A mute more than 24 hours after the push is not one.
        let after = try World()
        try after.users("ann", "bob")
        try after.follow("bob", "ann", at: Self.at("2026-11-01T00:10:00Z"))
        try after.event("preferences", at: Self.at("2026-11-02T00:10:01Z"), [("user", .string("ann")), ("social", .bool(false))])
        let none = try after.store.stats.trustBudget(since: Self.at("2026-11-01T00:00:00Z"), until: Self.at("2026-11-03T00:00:00Z"))
        #expect(none.mutes == 0 && none.recipients == 1)
    }

    @Test("pushes per person per day, and the span's edges")
    func load() throws {
        let w = try Self.world()
        let b = try w.store.stats.trustBudget(since: Self.at("2026-10-26T02:00:00Z"), until: Self.at("2026-11-02T02:00:00Z"))
        // Ann had 5 pushes on Nov 1; Bob, Cy and Dee one each.
        #expect(b.load == {
            var l = TrustBudget.Load()
            l.recipientDays = 4; l.total = 8; l.median = 1; l.p99 = 5; l.max = 5; l.atCeiling = 0
            return l
        }())
        // Both ends are included: a span of one instant holds the rows made at it.
        let instant = try w.store.stats.trustBudget(since: Self.at("2026-11-01T01:10:00Z"), until: Self.at("2026-11-01T01:10:00Z"))
        #expect(instant.kinds[.steppedWithHeart]?.rows == 1 && instant.categories[.stepWith]?.figures.rows == 1)
        #expect(instant.categories[.stepWith]?.figures.suppressed == [:])
        let before = try w.store.stats.trustBudget(since: Self.at("2026-11-01T00:00:00Z"), until: Self.at("2026-11-01T01:09:59Z"))
        #expect(before.kinds[.steppedWithHeart]?.rows ?? 0 == 0 && before.kinds[.newFollower]?.rows == 3)
    }

    @Test("the daily ceiling: the 101st push of a day is held, and that person-day counts as at the ceiling")
    func ceiling() throws {
        let w = try World()
        try w.user("ann")
        for i in 1...101 { try w.user("f\(i)") }
        // 101 follows of Ann, a minute apart from 01:00: 100 pushes, then the ceiling holds one.
        for i in 1...101 { try w.follow("f\(i)", "ann", at: Self.at("2026-11-01T01:00:00Z") + Int64(i) * 60_000) }
        let b = try w.store.stats.trustBudget(since: Self.at("2026-11-01T00:00:00Z"), until: Self.at("2026-11-01T23:59:59Z"))
        let social = try #require(b.categories[.social]).figures
        #expect(social.rows == 101 && social.sent == 100 && social.suppressed == [.dailyCeiling: 1])
        #expect(b.load.recipientDays == 1 && b.load.median == 100 && b.load.p99 == 100 && b.load.max == 100 && b.load.atCeiling == 1)
        #expect(b == (try w.store.stats.trustBudget(since: Self.at("2026-11-01T00:00:00Z"), until: Self.at("2026-11-01T23:59:59Z"), fromRows: true)))
    }

    @Test("delivery: entries by how they ended, retries, and row to the provider's answer")
    func delivery() throws {
        let w = try Self.world()
        let far = Self.at("2026-12-01T00:00:00Z")
        let claimed = try w.store.outbox.claimDue(worker: "test", now: far, lease: 3_600_000, limit: 10)
        #expect(claimed.count == 5)
        let rowTimes = try claimed.map { try #require(try w.store.inboxes.row($0.row)).createdAt }
        try w.store.outbox.settle(claimed[0], attempt: DeliveryAttempt(at: rowTimes[0] + 1_000, status: 200, reason: nil, providerId: "a", latencyMs: 300), next: .sent)
        try w.store.outbox.settle(claimed[1], attempt: DeliveryAttempt(at: rowTimes[1] + 1_000, status: 503, reason: "busy", providerId: nil, latencyMs: 50),
                           next: .due, retryAt: far)
        let again = try w.store.outbox.claimDue(worker: "test", now: far, lease: 3_600_000, limit: 10)
        #expect(again.map(\.id) == [claimed[1].id])
        try w.store.outbox.settle(again[0], attempt: DeliveryAttempt(at: rowTimes[1] + 5_000, status: 200, reason: nil, providerId: "b", latencyMs: 200), next: .sent)
        try w.store.outbox.drop(claimed[2], reason: Reason.blocked.rawValue, at: far)
        try w.store.outbox.abandon(claimed[3], reason: "expired", at: far)
        let d = try w.store.stats.trustBudget(since: Self.at("2026-10-26T02:00:00Z"), until: Self.at("2026-11-02T02:00:00Z")).delivery
        #expect(d.entries == 5 && d.sent == 2 && d.dropped == ["blocked": 1] && d.failed == 1 && d.pending == 1 && d.retried == 1)
        // 1.3 s and 5.2 s from row to answer: the buckets up to 2 s and up to 10 s.
        #expect(d.medianToAnswer == 2_000 && d.p99ToAnswer == 10_000)
        // Counted as the store went, the same as read entry by entry.
        let since = Self.at("2026-10-26T02:00:00Z"), until = Self.at("2026-11-02T02:00:00Z")
        #expect(try w.store.stats.trustBudget(since: since, until: until) == (try w.store.stats.trustBudget(since: since, until: until, fromRows: true)))
        try w.store.stats.recount(into: "recount_")
        #expect(try StatsCounterTests.entries(w, "stats_delivery") == (try StatsCounterTests.entries(w, "recount_stats_delivery")))
    }

    @Test("quiet hours: the pushes they held and how long they waited, counted as the store went and read entry by entry")
    func quietHeld() throws {
        let w = try World()
        try w.users("ann", "bob", "cy")
        try w.store.devices.register("ann-phone", platform: .apns, environment: .production, for: try w.record("ann"), at: Self.at("2026-11-01T00:00:00Z"))
        try w.event("preferences", at: Self.at("2026-11-01T00:01:00Z"), [("user", .string("ann")),
            ("quietHours", .object([("from", .string("22:00")), ("to", .string("07:00")), ("zone", .string("UTC"))]))])
        try w.journey("j1", owner: "ann")
        try w.step("s1", journey: "j1", at: Self.at("2026-11-01T20:00:00Z"))
        try w.step("s2", journey: "j1", at: Self.at("2026-11-01T20:01:00Z"))
        // Held: a comment at 23:00 (8 hours), a heart at 03:00 on another step (4 hours), a
        // heart at 06:00 on the comment's step (a newer push of its thread).
        try w.comment("bob", on: "s1", "c1", "so good", at: Self.at("2026-11-01T23:00:00Z"))
        try w.interact("heart", "cy", "s2", at: Self.at("2026-11-02T03:00:00Z"))
        try w.interact("heart", "cy", "s1", at: Self.at("2026-11-02T06:00:00Z"))
        let end = Self.at("2026-11-02T07:00:00Z")
        let claimed = try w.store.outbox.claimDue(worker: "test", now: end, lease: 60_000, limit: 1)
        #expect(claimed.count == 3 && claimed.allSatisfy(\.held))
        let comment = try #require(claimed.min { $0.id < $1.id })
        try w.store.outbox.settle([Outbox.Settlement(comment, attempt: DeliveryAttempt(at: end, status: nil, reason: "newer", providerId: nil, latencyMs: nil),
                                                     next: .superseded)]
                                  + claimed.filter { $0.id != comment.id }.map {
                                      Outbox.Settlement($0, attempt: DeliveryAttempt(at: end, status: 200, reason: nil, providerId: "p", latencyMs: 100), next: .sent)
                                  })
        let since = Self.at("2026-11-01T00:00:00Z"), until = Self.at("2026-11-02T23:59:59Z")
        let d = try w.store.stats.trustBudget(since: since, until: until).delivery
        #expect(d.entries == 3 && d.sent == 2 && d.superseded == 1 && d.pending == 0)
        // Waits of 4 hours and 1 hour: the median (nearest rank) is the hour's bucket, up to 1.5 hours.
        #expect(d.heldByQuietHours == 2 && d.medianHeld == 5_400_000)
        #expect(try w.store.stats.trustBudget(since: since, until: until) == (try w.store.stats.trustBudget(since: since, until: until, fromRows: true)))
        try w.store.stats.recount(into: "recount_")
        #expect(try StatsCounterTests.entries(w, "stats_delivery") == (try StatsCounterTests.entries(w, "recount_stats_delivery")))
        let json = try w.store.stats.trustBudget(since: since, until: until).json
        #expect(json["delivery"]?["heldByQuietHours"]?.int == 2 && json["delivery"]?["medianSecondsHeld"]?.number == 5_400)
    }

    @Test("the JSON keeps the contract's keys, every category and kind present")
    func json() throws {
        let w = try Self.world()
        let b = try w.store.stats.trustBudget(since: Self.at("2026-10-26T02:00:00Z"), until: Self.at("2026-11-02T02:00:00Z"))
        let json = try JSON.parse(b.json.serialized)
        #expect(json["since"] == "2026-10-26T02:00:00Z" && json["until"] == "2026-11-02T02:00:00Z")
        for category in ["stepWith", "social", "engagement", "journeys"] {
            let c = try #require(json["categories"]?[category])
            for key in ["rows", "sent", "suppressed", "recipients", "mutes", "muteRate"] { #expect(c[key] != nil, "\(category).\(key)") }
        }
        #expect(json["categories"]?["social"]?["suppressed"]?["preferences"] == .int(1))
        #expect(json["categories"]?["journeys"]?["muteRate"]?.number.map { abs($0 - 1.0 / 3) < 1e-9 } == true)
        #expect(json["kinds"]?["batch"] == nil)  // a batch counts as its members' kind
        for kind in TrustBudget.kindOrder {
            let k = try #require(json["kinds"]?[kind.rawValue], "\(kind)")
            for key in ["rows", "sent", "seenRate", "readRate"] { #expect(k[key] != nil, "\(kind).\(key)") }
        }
        #expect(json["kinds"]?["steppedWithHeart"]?["readRate"]?.number == 1)
        // What the inbox reads back is what was written.
        #expect(try TrustBudget(json: json).json.serialized == b.json.serialized)
    }

    @Test("only switches that change are recorded: turning off what is off is not a change")
    func changes() throws {
        let w = try Self.world()
        // What the mute rate is counted from: the store's record, not part of its API.
        let recorded = try w.store.connection.query("SELECT switch, was_on, now_on FROM preference_changes ORDER BY at") {
            "\($0.string(0)) \($0.int(1))→\($0.int(2))"
        }
        #expect(recorded == ["social 1→0", "all 1→0", "engagement 1→0"])
    }
}

/// The counters against the rows: after seeded random streams with stamps between the events,
/// the counters kept as the store went equal a full recount, and the figures they give equal
/// the figures read row by row, for spans that start and end anywhere.
@Suite("The trust budget's counters")
struct StatsCounterTests {
    static func stampedStream(seed: UInt64, events: Int) throws -> World {
        let w = try World()
        var random = SplitMix(seed: seed &+ 7)
        var stampClock = Timestamp.parse("2026-11-02T09:00:00Z")!
        let ingest = Ingestor(store: w.store)
        for (index, line) in RandomStream(seed: seed, events: events).lines.enumerated() {
            _ = try? ingest.apply(Data(line.utf8))
            guard index % 15 == 14 else { continue }
            // Someone opens Activity, reads everything, or opens one row, at the server's clock.
            stampClock += Int64(random.below(3 * 3_600_000))
            guard let person = try w.store.user("p\(random.below(random.below(2) == 0 ? 3 : 24))") else { continue }
            switch random.below(3) {
            case 0: try w.store.inboxes.markSeen(person, at: stampClock)
            case 1: try w.store.inboxes.markAllRead(person, at: stampClock)
            default:
                let rows = try w.store.inboxes.activity(of: person, limit: 50)
                if !rows.isEmpty { _ = try w.store.inboxes.markRead(person, row: rows[random.below(rows.count)].id, at: stampClock) }
            }
        }
        return w
    }

    /// A counter table's non-zero entries, as text, in order.
    static func entries(_ w: World, _ name: String) throws -> [String] {
        let table = name.hasPrefix("recount_") ? String(name.dropFirst(8)) : name
        let columns: [String: String] = [
            "stats_rows": "hour, kind, category, push, n", "stats_withheld": "hour, kind, reason, n",
            "stats_stamps": "hour, kind, category, stamp, bucket, n", "push_load": "hour, user, category, sent, held",
            "push_daily": "day, user, category, sent, held", "stats_delivery": "hour, outcome, reason, n",
        ]
        let list = columns[table]!
        let count = list.split(separator: ",").count
        // The shared counters are split into slots (one per writing connection): summed here.
        let keys = list.split(separator: ",").dropLast(table.hasPrefix("push_") ? 2 : 1).joined(separator: ",")
        let values = table.hasPrefix("push_") ? "sum(sent), sum(held)" : "sum(n)"
        // The counters are the store's cache, not part of its API: read from their tables.
        return try w.store.connection.query("SELECT \(keys), \(values) FROM \(name) GROUP BY \(keys) ORDER BY \(keys)") { r in
            (0..<count).map { r.optionalString($0) ?? "" }.joined(separator: " ")
        }.filter { !$0.hasSuffix(table.hasPrefix("push_") ? " 0 0" : " 0") }  // counted and taken back
    }

    @Test("counters an ingest keeps per batch equal a full recount: a clean stream (its batches never fail) and one with bad lines (each failing batch applied again)",
          arguments: [21, 22] as [UInt64])
    func batchRecount(seed: UInt64) throws {
        let stream = RandomStream(seed: seed, events: 1_500)
        // The lines a store refuses, found on a store of their own: refused, they changed nothing,
        // so the stream without them is applied the same — and its batches never fail.
        var refused = Set<Int>()
        let scratch = try World()
        _ = try Ingestor(store: scratch.store).ingest(LineReader(data: Data(stream.text.utf8)), onRow: { _ in },
                                                       onReject: { line, _ in refused.insert(line) })
        let clean = stream.lines.enumerated().filter { !refused.contains($0.offset + 1) }.map(\.element).joined(separator: "\n") + "\n"
        #expect(!refused.isEmpty)
        for (text, bad) in [(clean, false), (stream.text, true)] {
            let w = try World()
            let report = try Ingestor(store: w.store).ingest(LineReader(data: Data(text.utf8)), onRow: { _ in }, onReject: { _, _ in })
            #expect((report.rejected > 0) == bad && report.applied > 500, "\(report.applied) applied, \(report.rejected) refused")
            try w.store.stats.catchUpStamps()  // a fan-out's load entries are counted from its rows here
            try w.store.stats.recount(into: "recount_")
            for table in ["stats_rows", "stats_withheld", "push_load", "push_daily"] {
                let kept = try Self.entries(w, table), counted = try Self.entries(w, "recount_" + table)
                #expect(counted.count > 5, "\(table) holds \(counted.count) entries")
                #expect(kept == counted, "\(bad ? "with bad lines" : "clean"), \(table): kept \(kept.count), counted \(counted.count); first difference \(zip(kept, counted).first { $0 != $1 }.map { "\($0) ≠ \($1)" } ?? "in length")")
            }
        }
    }

    @Test("counters kept as the store went equal a full recount, the marks counted in slices of one, three or 5,000 rows a transaction",
          arguments: [11, 12, 13] as [UInt64])
    func recount(seed: UInt64) throws {
        let w = try Self.stampedStream(seed: seed, events: 700)
        try w.store.stats.catchUpStamps(rowsPerTransaction: [11: 1, 12: 3][seed] ?? 5_000)
        try w.store.stats.recount(into: "recount_")
        for table in ["stats_rows", "stats_withheld", "stats_stamps", "push_load", "push_daily"] {
            let kept = try Self.entries(w, table), counted = try Self.entries(w, "recount_" + table)
            #expect(counted.count > 5, "\(table) holds \(counted.count) entries")
            #expect(kept == counted, "\(table): kept \(kept.count), counted \(counted.count); first difference \(zip(kept, counted).first { $0 != $1 }.map { "\($0) ≠ \($1)" } ?? "in length")")
        }
    }

    @Test("a batch that makes its one sound late moves from withheld to sent; a batch counts as its members' kind")
    func lateSound() throws {
        let w = try World()
        try w.users("ann", "bob", "cy", "dee")
        try w.journey("j1", owner: "ann")
        let at = StatsTests.at
        try w.store.devices.register("ann-phone", platform: .apns, environment: .production, for: try w.record("ann"),
                                   at: at("2026-11-01T00:30:00Z"))
        try w.step("s1", journey: "j1", at: at("2026-11-01T01:00:00Z"))
        try w.event("preferences", at: at("2026-11-01T01:05:00Z"), [("user", .string("ann")), ("stepWith", .bool(false))])
        try w.interact("heart", "bob", "s1", at: at("2026-11-01T01:10:00Z"))
        try w.event("preferences", at: at("2026-11-01T01:15:00Z"), [("user", .string("ann")), ("stepWith", .bool(true))])
        try w.interact("heart", "cy", "s1", at: at("2026-11-01T01:20:00Z"))
        try w.interact("heart", "dee", "s1", at: at("2026-11-01T01:25:00Z"))
        let row = try #require(try w.activity("ann").first)
        #expect(row.kind == .batch && row.push == .sent)
        #expect(try CeilingTests.countersHold(w.store, exact: true) == 1)  // the late sound counts toward Ann's ceiling
        let b = try w.store.stats.trustBudget(since: at("2026-11-01T00:00:00Z"), until: at("2026-11-01T23:59:59Z"))
        #expect(b.kinds[.steppedWithHeart]?.rows == 1 && b.kinds[.steppedWithHeart]?.sent == 1)
        #expect(b.kinds[.steppedWithHeart]?.suppressed == [:] && b.categories[.stepWith]?.recipients == 1)
        // Ann's phone: the late sound (Cy), then Dee's silent card, which replaces it before it went.
        #expect(b.delivery.entries == 2 && b.delivery.superseded == 1 && b.delivery.pending == 1 && b.delivery.sent == 0)
        #expect(b == (try w.store.stats.trustBudget(since: at("2026-11-01T00:00:00Z"), until: at("2026-11-01T23:59:59Z"), fromRows: true)))
        try w.store.stats.recount(into: "recount_")
        for table in ["stats_rows", "push_load", "push_daily", "stats_delivery"] {
            #expect(try Self.entries(w, table) == (try Self.entries(w, "recount_" + table)), "\(table)")
        }
    }

    @Test("kill -9 in the middle of an ingest: the counters still equal a full recount")
    func killed() throws {
        let w = try World()
        let stream = w.folder + "/stream.ndjson"
        try Data(RandomStream(seed: 5, events: 6_000).text.utf8).write(to: URL(fileURLWithPath: stream))
        let ingest = try Spawn.start([Stepo.binary, "ingest"] + TestEngine.storeArguments(w.path) + ["--quiet", stream],
                                     log: w.folder + "/ingest.log")
        // Killed once some of it has committed, well before the stream ends.
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline, (try? w.store.audit.eventsApplied()) ?? 0 < 100 { usleep(5_000) }
        kill(ingest.pid, SIGKILL)
        _ = ingest.wait(timeout: 10)
        let reopened = try Store(location: w.path)
        try reopened.stats.catchUpStamps()
        let made = try reopened.audit.rowsStored()
        let applied = try reopened.audit.eventsApplied()
        #expect(made > 0 && applied >= 100 && applied < 6_000, "\(made) rows, \(applied) events: the kill came too late to test anything")
        try reopened.stats.recount(into: "recount_")
        for table in ["stats_rows", "stats_withheld", "push_load", "push_daily"] {
            #expect(try Self.entries(w, table) == (try Self.entries(w, "recount_" + table)), "\(table)")
        }
    }

    @Test("figures from the counters equal the figures read row by row, for spans with ragged edges")
    func spans() throws {
        let w = try Self.stampedStream(seed: 21, events: 700)
        var random = SplitMix(seed: 99)
        let start = Timestamp.parse("2026-11-02T00:00:00Z")!
        for _ in 0..<40 {
            // The stream's rows lie between about 36 hours before 11-02 08:00 and 10 hours after.
            let since = start - 36 * 3_600_000 + Int64(random.below(48 * 3_600_000))
            let until = since + Int64(random.below(48 * 3_600_000))
            let counted = try w.store.stats.trustBudget(since: since, until: until)
            let read = try w.store.stats.trustBudget(since: since, until: until, fromRows: true)
            #expect(counted == read, "\(Timestamp.format(since)) … \(Timestamp.format(until))")
        }
        // One wide span holds every counter; the whole-hour path must have been taken.
        let wide = try w.store.stats.trustBudget(since: start, until: start + 30 * Timestamp.day)
        #expect(wide == (try w.store.stats.trustBudget(since: start, until: start + 30 * Timestamp.day, fromRows: true)))
        #expect(wide.kinds.values.contains { $0.seen > 0 } && wide.kinds.values.contains { $0.read > 0 })
        #expect(wide.recipients > 0 && wide.load.recipientDays > 0 && wide.mutes + wide.categories.values.map(\.figures.rows).reduce(0, +) > 0)
    }
}
