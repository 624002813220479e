import Foundation
import Notifications
import Testing
import TestSupport
import Wire
@testable import Backend

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
        try w.store.registerDevice("ann-phone", platform: .apns, environment: .production, for: ann, at: at("2026-11-01T00:06:00Z"))
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
        try w.store.markSeen(try w.record("ann"), at: at("2026-11-02T00:00:00Z"))
        let heart = try #require(try w.activity("ann").first { $0.kind == .steppedWithHeart })
        _ = try w.store.markRead(try w.record("ann"), row: heart.id, at: at("2026-11-02T01:00:00Z"))
        try w.event("preferences", at: at("2026-11-02T00:30:00Z"), [("user", .string("bob")), ("all", .bool(false))])
        try w.event("preferences", at: at("2026-11-02T01:30:00Z"), [("user", .string("ann")), ("social", .bool(false))])
        try w.event("preferences", at: at("2026-11-02T02:00:00Z"), [("user", .string("cy")), ("engagement", .bool(false))])
        return w
    }

    @Test("rows, pushes, withheld candidates, seen and read, per kind and per category")
    func figures() throws {
        let w = try Self.world()
        let b = try w.store.trustBudget(since: Self.at("2026-10-26T02:00:00Z"), until: Self.at("2026-11-02T02:00:00Z"))

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
        // To seen: 23 h 50 min, 23 h 49 min, 23 h 48 min and 20 h; the nearest-rank median is the 2nd.
        #expect(follows.medianToSeen == Int64((23 * 60 + 48) * 60_000))
        let heart = try #require(b.kinds[.steppedWithHeart])
        #expect(heart.rows == 1 && heart.seen == 1 && heart.read == 1 && heart.readRate == 1)
        #expect(heart.medianToSeen == Int64((22 * 60 + 50) * 60_000) && heart.medianToRead == Int64((23 * 60 + 50) * 60_000))
        #expect(b.kinds[.steppedWithComment]?.medianToRead == nil)
        #expect(b.kinds[.firstStep]?.rows == 3)
    }

    @Test("a mute is a switch turned off within 24 hours after a push of its category; the rate is per person pushed")
    func mutes() throws {
        let w = try Self.world()
        let b = try w.store.trustBudget(since: Self.at("2026-10-26T02:00:00Z"), until: Self.at("2026-11-02T02:00:00Z"))
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
        let late = try w.store.trustBudget(since: Self.at("2026-11-02T00:00:00Z"), until: Self.at("2026-11-02T02:00:00Z"))
        #expect(late.mutes == 1 && late.recipients == 0 && late.muteRate == 0)
        #expect(late.categories[.journeys]?.mutes == 1)

        // A mute more than 24 hours after the push is not one.
        let after = try World()
        try after.users("ann", "bob")
        try after.follow("bob", "ann", at: Self.at("2026-11-01T00:10:00Z"))
        try after.event("preferences", at: Self.at("2026-11-02T00:10:01Z"), [("user", .string("ann")), ("social", .bool(false))])
        let none = try after.store.trustBudget(since: Self.at("2026-11-01T00:00:00Z"), until: Self.at("2026-11-03T00:00:00Z"))
        #expect(none.mutes == 0 && none.recipients == 1)
    }

    @Test("pushes per person per day, and the span's edges")
    func load() throws {
        let w = try Self.world()
        let b = try w.store.trustBudget(since: Self.at("2026-10-26T02:00:00Z"), until: Self.at("2026-11-02T02:00:00Z"))
        // Ann had 5 pushes on Nov 1; Bob, Cy and Dee one each.
        #expect(b.load == {
            var l = TrustBudget.Load()
            l.recipientDays = 4; l.median = 1; l.p99 = 5; l.max = 5; l.atCeiling = 0
            return l
        }())
        // Both ends are included: a span of one instant holds the rows made at it.
        let instant = try w.store.trustBudget(since: Self.at("2026-11-01T01:10:00Z"), until: Self.at("2026-11-01T01:10:00Z"))
        #expect(instant.kinds[.steppedWithHeart]?.rows == 1 && instant.categories[.stepWith]?.figures.rows == 1)
        #expect(instant.categories[.stepWith]?.figures.suppressed == [:])
        let before = try w.store.trustBudget(since: Self.at("2026-11-01T00:00:00Z"), until: Self.at("2026-11-01T01:09:59Z"))
        #expect(before.kinds[.steppedWithHeart]?.rows ?? 0 == 0 && before.kinds[.newFollower]?.rows == 3)
    }

    @Test("delivery: entries by how they ended, retries, and row to the provider's answer")
    func delivery() throws {
        let w = try Self.world()
        let far = Self.at("2026-12-01T00:00:00Z")
        let claimed = try w.store.claimDue(worker: "test", now: far, lease: 3_600_000, limit: 10)
        #expect(claimed.count == 5)
        let rowTimes = try claimed.map { try #require(try w.store.row($0.row)).createdAt }
        try w.store.settle(claimed[0], attempt: DeliveryAttempt(at: rowTimes[0] + 1_000, status: 200, reason: nil, providerId: "a", latencyMs: 300), next: .sent)
        try w.store.settle(claimed[1], attempt: DeliveryAttempt(at: rowTimes[1] + 1_000, status: 503, reason: "busy", providerId: nil, latencyMs: 50),
                           next: .due, retryAt: far)
        let again = try w.store.claimDue(worker: "test", now: far, lease: 3_600_000, limit: 10)
        #expect(again.map(\.id) == [claimed[1].id])
        try w.store.settle(again[0], attempt: DeliveryAttempt(at: rowTimes[1] + 5_000, status: 200, reason: nil, providerId: "b", latencyMs: 200), next: .sent)
        try w.store.drop(claimed[2], reason: .blocked, at: far)
        try w.store.abandon(claimed[3], reason: "expired", at: far)
        let d = try w.store.trustBudget(since: Self.at("2026-10-26T02:00:00Z"), until: Self.at("2026-11-02T02:00:00Z")).delivery
        #expect(d.entries == 5 && d.sent == 2 && d.dropped == ["blocked": 1] && d.failed == 1 && d.pending == 1 && d.retried == 1)
        #expect(d.medianToAnswer == 1_300 && d.p99ToAnswer == 5_200)
    }

    @Test("the JSON keeps the contract's keys, every category and kind present")
    func json() throws {
        let w = try Self.world()
        let b = try w.store.trustBudget(since: Self.at("2026-10-26T02:00:00Z"), until: Self.at("2026-11-02T02:00:00Z"))
        let json = try JSON.parse(b.json.serialized)
        #expect(json["since"] == "2026-10-26T02:00:00Z" && json["until"] == "2026-11-02T02:00:00Z")
        for category in ["stepWith", "social", "engagement", "journeys"] {
            let c = try #require(json["categories"]?[category])
            for key in ["rows", "sent", "suppressed", "recipients", "mutes", "muteRate"] { #expect(c[key] != nil, "\(category).\(key)") }
        }
        #expect(json["categories"]?["social"]?["suppressed"]?["preferences"] == .int(1))
        #expect(json["categories"]?["journeys"]?["muteRate"]?.number.map { abs($0 - 1.0 / 3) < 1e-9 } == true)
        for kind in Kind.allCases {
            let k = try #require(json["kinds"]?[kind.rawValue], "\(kind)")
            for key in ["rows", "sent", "seenRate", "readRate"] { #expect(k[key] != nil, "\(kind).\(key)") }
        }
        #expect(json["kinds"]?["steppedWithHeart"]?["readRate"]?.number == 1)
    }

    @Test("only switches that change are recorded: turning off what is off is not a change")
    func changes() throws {
        let w = try Self.world()
        let recorded = try w.store.db.query("SELECT switch, was_on, now_on FROM preference_changes ORDER BY at") {
            "\($0.string(0)) \($0.int(1))→\($0.int(2))"
        }
        #expect(recorded == ["social 1→0", "all 1→0", "engagement 1→0"])
    }
}
