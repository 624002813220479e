import Foundation
import Notifications
import Wire
import Testing
import TestSupport
@testable import Backend

/// The rules hold across time (docs/delivery.md): a push is judged when its row is decided and
/// again when it is drawn or sent. What is queued obeys a block, a ban, a deactivation, a
/// deletion or a switch turned off since; an actor gone private since is masked.
@Suite("The quiet rules at send time")
struct SendTimeTests {
    /// Alice follows Bob and has a phone; Bob follows her, hearts and comments on her step,
    /// mentions her on his own step and posts a new step: five pushes queued for her phone.
    func world() throws -> (w: World, rows: [Int]) {
        let w = try World()
        try w.user("alice", name: "Alice Ames")
        try w.user("bob", name: "Bob Brandt")
        try w.journey("ja", owner: "alice", title: "Alice's secret garden")
        try w.journey("jb", owner: "bob", title: "Bob's hidden trail")
        try w.step("sa", journey: "ja", caption: "my tomatoes")
        try w.step("sb", journey: "jb", caption: "first bend")
        try w.follow("alice", "bob")
        try w.store.devices.register("alice-phone", platform: .apns, environment: .production, for: try w.record("alice"), at: w.clock)
        var rows: [Int] = []
        rows += try w.rows(try w.follow("bob", "alice")).map(\.id)
        rows += try w.rows(try w.interact("heart", "bob", "sa")).map(\.id)
        rows += try w.rows(try w.comment("bob", on: "sa", "c1", "BOBSECRET comment on your tomatoes")).map(\.id)
        rows += try w.rows(try w.comment("bob", on: "sb", "c2", "@alice BOBSECRET look at this bend")).map(\.id)
        rows += try w.rows(try w.step("sb2", journey: "jb", caption: "BOBSECRET caption")).map(\.id)
        return (w, rows)
    }

    /// The pushes a surface would draw now, by row: the content, or the reason it is withheld.
    func drawn(_ w: World, _ rows: [Int]) throws -> [Int: Result<PushContent, PushUnavailable>] {
        var result: [Int: Result<PushContent, PushUnavailable>] = [:]
        for row in rows {
            do { result[row] = .success(try w.store.outbox.pushContent(row: row)) } catch let error as PushUnavailable { result[row] = .failure(error) }
        }
        return result
    }

    @Test("five pushes are queued for Alice's phone, each drawn in full")
    func queued() throws {
        let (w, rows) = try world()
        #expect(rows.count == 5)
        #expect(try w.store.outbox.due(now: .max, limit: 100).count == 5)
        for (_, drawn) in try drawn(w, rows) {
            let content = try drawn.get()
            #expect(content.title == "Bob Brandt")
        }
    }

    @Test("after a block either way, a ban or a deactivation, every queued push is withheld with its reason",
          arguments: ["aliceBlocksBob", "bobBlocksAlice", "banned", "deactivated"])
    func losingSight(change: String) throws {
        let (w, rows) = try world()
        switch change {
        case "aliceBlocksBob": try w.relation("block", "alice", "bob")
        case "bobBlocksAlice": try w.relation("block", "bob", "alice")
        case "banned": try w.event("account", [("user", "bob"), ("state", "banned")])
        default: try w.event("account", [("user", "bob"), ("state", "deactivated")])
        }
        let expected: Reason = change.hasSuffix("Bob") || change.hasSuffix("Alice") ? .blocked : .actorInactive
        for (row, drawn) in try drawn(w, rows) {
            guard case .failure(let error) = drawn else {
                Issue.record("row \(row) still draws a push after \(change)")
                continue
            }
            #expect(error.reason == expected)
        }
    }

    @Test("a deleted step withholds its queued pushes: deleted")
    func deleted() throws {
        let (w, rows) = try world()
        try w.event("delete", [("step", "sa")])
        let drawn = try drawn(w, rows)
        // The heart and the comment on Alice's step.
        #expect(drawn[rows[1]].flatMap { try? $0.get() } == nil)
        if case .failure(let error)? = drawn[rows[1]] { #expect(error.reason == .deleted) }
        if case .failure(let error)? = drawn[rows[2]] { #expect(error.reason == .deleted) }
        #expect((try? drawn[rows[4]]?.get()) != nil)
    }

    @Test("switched off since: the master switch or the category withholds what is queued")
    func switchedOff() throws {
        let (w, rows) = try world()
        try w.event("preferences", [("user", "alice"), ("journeys", false)])
        let drawn = try drawn(w, rows)
        if case .failure(let error)? = drawn[rows[4]] { #expect(error.reason == .preferences) } else { Issue.record("the new step still pushes") }
        #expect((try? drawn[rows[1]]?.get()) != nil)
        try w.event("preferences", [("user", "alice"), ("all", false)])
        #expect(try self.drawn(w, rows).values.allSatisfy { (try? $0.get()) == nil })
    }

    @Test("Bob goes private and Alice no longer follows him: his queued pushes go out masked; the mention is withheld")
    func wentPrivate() throws {
        let (w, rows) = try world()
        try w.relation("unfollow", "alice", "bob")
        try w.event("privacy", [("user", "bob"), ("private", true)])
        let drawn = try drawn(w, rows)
        #expect(try drawn[rows[0]]?.get().body == "Started following you")
        #expect(try drawn[rows[1]]?.get().body == "@bob interacted with your content")
        #expect(try drawn[rows[1]]?.get().image == nil)
        #expect(try drawn[rows[2]]?.get().body == "@bob interacted with your content")
        if case .failure(let error)? = drawn[rows[3]] { #expect(error.reason == .notVisible) } else { Issue.record("the mention still pushes") }
        #expect(try drawn[rows[4]]?.get().body == "Posted a new step")
        #expect(try drawn[rows[4]]?.get().image == nil)
        for case .success(let content) in drawn.values {
            #expect(!content.body.contains("BOBSECRET") && !content.title.contains("BOBSECRET"))
        }
    }

    @Test("a first pull carries no face of a person out of sight, whatever the row's kind")
    func noFaceAfterBlock() throws {
        let (w, _) = try world()
        try w.relation("block", "alice", "bob")
        let page = try w.store.sync.page(for: try w.record("alice"), after: 0, limit: 100)
        #expect(!page.rows.isEmpty)
        for row in page.rows where row.actor == "bob" {
            #expect(row.media.face == nil, "row \(row.id) (\(row.kind)) still carries Bob's face")
            #expect(row.media.facepile == nil)
        }
        #expect(!page.entities.users.contains { $0.id == "bob" })
    }
}
