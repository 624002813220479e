import Foundation
import Notifications
import Wire
import Testing
@testable import Backend

/// Each quiet rule of docs/board.md ("The quiet rules"), through a real store.
@Suite("Quiet rules, through the store")
struct QuietRuleStoreTests {
    func world() throws -> World {
        let w = try World()
        try w.users("o", "a", "b")
        try w.journey("j", owner: "o")
        try w.step("s", journey: "j")
        return w
    }

    @Test("your own heart never pings you")
    func selfRule() throws {
        let w = try world()
        #expect(try w.explain(try w.interact("heart", "o", "s")) == ["o": "no row: self"])
    }

    @Test("a block silences both directions; without one the heart lands")
    func blocked() throws {
        let w = try world()
        try w.relation("block", "o", "a")
        #expect(try w.explain(try w.interact("heart", "a", "s")) == ["o": "no row: blocked"])
        try w.relation("block", "b", "o")
        #expect(try w.explain(try w.interact("heart", "b", "s")) == ["o": "no row: blocked"])
        try w.relation("unblock", "b", "o")
        #expect(try w.explain(try w.interact("share", "b", "s")) == ["o": "steppedWithShare sent"])
    }

    @Test("banned and deactivated actors never ping, nor do inactive recipients get rows")
    func inactive() throws {
        let w = try world()
        try w.event("account", [("user", "a"), ("state", "banned")])
        #expect(try w.explain(try w.interact("heart", "a", "s")) == ["o": "no row: actorInactive"])
        try w.event("account", [("user", "o"), ("state", "deactivated")])
        #expect(try w.explain(try w.interact("heart", "b", "s")) == ["o": "no row: recipientInactive"])
        try w.event("account", [("user", "o"), ("state", "active")])
        #expect(try w.explain(try w.interact("share", "b", "s")) == ["o": "steppedWithShare sent"])
    }

    @Test("a mention on a private account's step reaches only those who may see it")
    func notVisible() throws {
        let w = try World()
        try w.user("p", private: true)
        try w.users("a", "f")
        try w.journey("j", owner: "p")
        try w.step("s", journey: "j")
        try w.follow("f", "p")
        try w.event("followRequestAccepted", [("actor", "p"), ("target", "f")])
        let outcome = try w.comment("p", on: "s", "c1", "hey @a and @f")
        #expect(try w.explain(outcome) == ["a": "no row: notVisible", "f": "mention sent", "p": "no row: self"])
    }

    @Test("one person, one request ping: 20 cycles of request and withdraw to a private account, a decline and a second accept ping once each")
    func requestCycles() throws {
        let w = try World()
        try w.user("pat", private: true)
        try w.user("bob")
        for _ in 0..<20 {
            try w.follow("bob", "pat")
            try w.relation("unfollow", "bob", "pat")
        }
        // Asked again after a decline: still the one ping.
        try w.follow("bob", "pat")
        try w.event("followRequestDeclined", [("actor", "pat"), ("target", "bob")])
        try w.follow("bob", "pat")
        let requests = try w.activity("pat").filter { $0.kind == .followRequest }
        #expect(requests.count == 1 && requests.allSatisfy { $0.push == .sent })
        // The request asked last still stands, and is answered from that one row.
        #expect(try w.store.hasPendingRequest(from: try w.record("bob").key, to: try w.record("pat").key))
        try w.event("followRequestAccepted", [("actor", "pat"), ("target", "bob")])
        try w.relation("unfollow", "bob", "pat")
        try w.follow("bob", "pat")
        try w.event("followRequestAccepted", [("actor", "pat"), ("target", "bob")])
        #expect(try w.activity("bob").filter { $0.kind == .followRequestAccepted }.count == 1)
        #expect(try w.store.follows(try w.record("bob").key, try w.record("pat").key))
        // Another person's request is their own first ping.
        try w.user("ana")
        try w.follow("ana", "pat")
        #expect(try w.activity("pat").filter { $0.kind == .followRequest }.count == 2)
    }

    @Test("a re-heart is a re-ping: no second row")
    func duplicate() throws {
        let w = try world()
        #expect(try w.explain(try w.interact("heart", "a", "s")) == ["o": "steppedWithHeart sent"])
        #expect(try w.explain(try w.interact("heart", "a", "s")) == ["o": "no row: duplicate"])
        try w.relation("follow", "a", "o")
        try w.relation("unfollow", "a", "o")
        #expect(try w.explain(try w.event("follow", [("actor", "a"), ("target", "o")])) == ["o": "no row: duplicate"])
    }

    @Test("a repeated event id is a no-op")
    func repeatedEvent() throws {
        let w = try world()
        let first = try w.interact("heart", "a", "s")
        let again = try w.event("heart", id: first.eventId, [("actor", "b"), ("step", "s")])
        #expect(again.repeated)
        #expect(try w.activity("o").count == 1)
    }

    @Test("a category switched off keeps the row and withholds the push; on again, pushes resume")
    func preferences() throws {
        let w = try world()
        try w.event("preferences", [("user", "o"), ("stepWith", false)])
        #expect(try w.explain(try w.interact("heart", "a", "s")) == ["o": "steppedWithHeart suppressed:preferences"])
        try w.event("preferences", [("user", "o"), ("stepWith", true)])
        #expect(try w.explain(try w.interact("share", "b", "s")) == ["o": "steppedWithShare sent"])
    }

    @Test("the master switch silences everything, announcements included")
    func master() throws {
        let w = try world()
        try w.event("preferences", [("user", "o"), ("all", false)])
        #expect(try w.explain(try w.interact("heart", "a", "s")) == ["o": "steppedWithHeart suppressed:preferences"])
        let announcement = try w.explain(try w.event("announcement", [("text", "News"), ("audience", "everyone")]))
        #expect(announcement["o"] == "announcement suppressed:preferences")
        #expect(announcement["a"] == "announcement sent")
    }

    @Test("announcements ignore the category switches")
    func announcementCategories() throws {
        let w = try world()
        try w.event("preferences", [("user", "o"), ("stepWith", false), ("social", false), ("engagement", false), ("journeys", false)])
        let announcement = try w.explain(try w.event("announcement", [("text", "News"), ("audience", "everyone")]))
        #expect(announcement["o"] == "announcement sent")
    }

    @Test("the 100th push in 24 hours goes out, the 101st is held, and a day later they flow again")
    func dailyCeiling() throws {
        let w = try World()
        try w.user("o")
        try w.journey("j", owner: "o")
        for i in 0..<101 { try w.user("f\(i)") }
        for i in 0..<101 { try w.step("s\(i)", journey: "j", publish: true) }
        let start = w.clock
        for i in 0..<99 { try w.interact("heart", "f\(i)", "s\(i)", at: start + Int64(i) * 1000) }
        #expect(try w.store.pushesInLastDay(to: try w.record("o").key, at: start + 99_000) == 99)
        let hundredth = try w.interact("heart", "f99", "s99", at: start + 99_000)
        #expect(try w.explain(hundredth) == ["o": "steppedWithHeart sent"])
        let hundredFirst = try w.interact("heart", "f100", "s100", at: start + 100_000)
        #expect(try w.explain(hundredFirst) == ["o": "steppedWithHeart suppressed:dailyCeiling"])
        #expect(try w.activity("o").count == 101)
        let nextDay = try w.interact("share", "f0", "s0", at: start + Timestamp.day + 1)
        #expect(try w.explain(nextDay) == ["o": "share sent"])
    }
}

@Suite("The ladder: one step, one push")
struct LadderStoreTests {
    /// o owns journey j. f1, f2 follow o; f2, g follow the journey; x follows nobody.
    func world() throws -> World {
        let w = try World()
        try w.users("o", "f1", "f2", "g", "x")
        try w.journey("j", owner: "o", title: "Learn to play guitar")
        try w.follow("f1", "o")
        try w.follow("f2", "o")
        try w.followJourney("f2", "j")
        try w.followJourney("g", "j")
        try w.followJourney("o", "j")
        return w
    }

    @Test("a first step reaches the owner's followers only; journey followers alone are covered by the ladder")
    func firstStep() throws {
        let w = try world()
        let outcome = try w.step("s1", journey: "j")
        #expect(try w.explain(outcome) == ["f1": "firstStep sent", "f2": "firstStep sent", "g": "no row: ladder", "o": "no row: self"])
    }

    @Test("a regular step reaches followers and journey followers, each once")
    func newStep() throws {
        let w = try world()
        try w.step("s1", journey: "j")
        let outcome = try w.step("s2", journey: "j", caption: "barre chords")
        #expect(try w.explain(outcome) == ["f1": "newStep sent", "f2": "newStep sent", "g": "newStep sent", "o": "no row: self"])
        #expect(try w.rows(outcome).count == 3)
    }

    @Test("the final step is the achievement, to everyone deduplicated, landing on the journey")
    func achievement() throws {
        let w = try world()
        try w.step("s1", journey: "j")
        let outcome = try w.step("s2", journey: "j", final: true)
        let rows = try w.rows(outcome)
        #expect(rows.map(\.recipient).sorted() == ["f1", "f2", "g"])
        #expect(rows.allSatisfy { $0.kind == .achievement && $0.body == "Finished Learn to play guitar — the finale is on air" })
        #expect(rows.first?.tap == .journey("j", panel: .none))
    }

    @Test("a one-step journey whose step is final is an achievement")
    func oneStepFinale() throws {
        let w = try world()
        let rows = try w.rows(try w.step("only", journey: "j", final: true))
        #expect(Set(rows.map(\.kind)) == [.achievement])
    }

    @Test("nothing fires before media is ready, and a second mediaReady never re-pings")
    func publishGated() throws {
        let w = try world()
        let created = try w.step("s1", journey: "j", publish: false)
        #expect(created.rowCount == 0)
        #expect(try w.mediaReady("s1").rowCount == 2)
        let again = try w.mediaReady("s1")
        #expect(again.rowCount == 0)
        #expect(again.note == "step s1 was already published: one step, one push")
    }

    @Test("a journey-category switch keeps fan-out rows and withholds their pushes")
    func fanoutPreferences() throws {
        let w = try world()
        try w.event("preferences", [("user", "f1"), ("journeys", false)])
        #expect(try w.explain(try w.step("s1", journey: "j"))["f1"] == "firstStep suppressed:preferences")
    }

    @Test("fan-out honours blocks, inactive recipients and an inactive owner")
    func fanoutRules() throws {
        let w = try world()
        try w.step("s1", journey: "j")
        try w.relation("block", "g", "o")
        try w.event("account", [("user", "f1"), ("state", "deactivated")])
        #expect(try w.explain(try w.step("s2", journey: "j")) == [
            "f1": "no row: recipientInactive", "f2": "newStep sent", "g": "no row: blocked", "o": "no row: self"])
        try w.event("account", [("user", "o"), ("state", "banned")])
        let banned = try w.explain(try w.step("s3", journey: "j"))
        #expect(banned["f2"] == "no row: actorInactive")
        #expect(banned["o"] == "no row: self")
    }
}
