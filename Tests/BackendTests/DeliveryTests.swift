import Foundation
import Notifications
import Wire
import Testing
@testable import Backend

@Suite("Interactions, the window and comment precedence, through the store")
struct DeliveryTests {
    /// owner "o" with a published step "s" in journey "j"; fans "a", "b", "c".
    func world() throws -> World {
        let w = try World()
        try w.users("o", "a", "b", "c")
        try w.journey("j", owner: "o")
        try w.step("s", journey: "j", caption: "Trail run")
        return w
    }

    func published(_ w: World) throws -> Int64 {
        try #require(try w.store.step("s")?.publishedAt)
    }

    @Test("a heart one millisecond before 24 hours steps with; at exactly 24 hours it is a plain heart")
    func windowEdges() throws {
        let w = try world()
        let t = try published(w)
        let inside = try w.rows(try w.interact("heart", "a", "s", at: t + Timestamp.day - 1))
        #expect(inside.map(\.kind) == [.steppedWithHeart])
        #expect(inside.first?.body == "Stepped with you by heart: Trail run")
        let after = try w.rows(try w.interact("heart", "b", "s", at: t + Timestamp.day))
        #expect(after.map(\.kind) == [.heart])
        let share = try w.rows(try w.interact("share", "c", "s", at: t + Timestamp.day))
        #expect(share.map(\.kind) == [.share])
    }

    @Test("a comment after the window to the owner, replying to b and mentioning c, gives each one row")
    func precedence() throws {
        let w = try world()
        let t = try published(w)
        try w.comment("b", on: "s", "c1", "first!", at: t + 10)
        let rows = try w.rows(try w.comment("a", on: "s", "c2", "@c @o agreed", parent: "c1", at: t + 2 * Timestamp.day))
        let byRecipient = Dictionary(uniqueKeysWithValues: rows.map { ($0.recipient, $0.kind) })
        #expect(byRecipient == ["b": .reply, "c": .mention, "o": .mention])
        #expect(rows.first { $0.recipient == "b" }?.tap == .step("s", comments: .highlight, comment: "c2"))
    }

    @Test("inside the window the owner's row is stepped-with even when the comment replies to them")
    func steppedWithBeatsReply() throws {
        let w = try world()
        let t = try published(w)
        try w.comment("o", on: "s", "c1", "thanks all", at: t + 10)
        let rows = try w.rows(try w.comment("a", on: "s", "c2", "you earned it", parent: "c1", at: t + 20))
        #expect(rows.map(\.kind) == [.steppedWithComment])
        #expect(rows.first?.tap == .step("s", comments: .open, comment: nil))
    }

    @Test("interactions on an unpublished or deleted step are refused")
    func unpublished() throws {
        let w = try world()
        try w.step("draft", journey: "j", publish: false)
        #expect(throws: EventError("step draft is not published yet (its media is still processing)")) {
            try w.interact("heart", "a", "draft")
        }
        try w.event("delete", [("step", "s")])
        #expect(throws: EventError("step s was deleted")) { try w.interact("heart", "a", "s") }
        #expect(throws: EventError("unknown step nope")) { try w.interact("heart", "a", "nope") }
    }

    @Test("a refused event changes nothing: no row, no interaction, no event record")
    func atomic() throws {
        let w = try world()
        try w.step("draft", journey: "j", publish: false)
        let (events, rows) = (try w.store.audit.eventsApplied(), try w.store.audit.rowsStored())
        #expect(throws: EventError.self) { try w.interact("heart", "a", "draft") }
        #expect(try w.store.audit.eventsApplied() == events)
        #expect(try w.store.audit.rowsStored() == rows)
        let draft = try #require(try w.store.step("draft"))
        let owner = Visibility(store: w.store, viewer: try w.record("o"))
        #expect(try w.store.entities.interactions(onStep: draft, visibility: owner).isEmpty)
    }

    @Test("tier crossings recognise both sides")
    func recognition() throws {
        let w = try world()
        let outcome = try w.event("tierCrossed", [("actor", "a"), ("journey", "j"), ("tier", "Die-Hard Fan")])
        let rows = try w.rows(outcome)
        #expect(rows.map(\.recipient) == ["o", "a"])
        #expect(rows.map(\.body) == ["Became a Die-Hard Fan of your Journey j", "You're now a Die-Hard Fan on Journey j"])
        #expect(rows.first?.tap == .journey("j", panel: .people))
    }

    @Test("follows: public gives a new follower, private a request, acceptance reaches the requester")
    func people() throws {
        let w = try world()
        try w.user("p", private: true)
        let follow = try w.rows(try w.event("follow", [("actor", "a"), ("target", "o")]))
        #expect(follow.map(\.kind) == [.newFollower])
        #expect(follow.first?.tap == .profile("a", action: .followBack))
        let request = try w.rows(try w.event("follow", [("actor", "a"), ("target", "p")]))
        #expect(request.map(\.kind) == [.followRequest])
        #expect(request.first?.tap == .profile("a", action: .acceptDecline))
        let accepted = try w.rows(try w.event("followRequestAccepted", [("actor", "p"), ("target", "a")]))
        #expect(accepted.map { "\($0.recipient) \($0.kind)" } == ["a followRequestAccepted"])
        #expect(try w.store.follows(try w.record("a").key, try w.record("p").key))
        #expect(throws: EventError("no pending follow request from b to p")) {
            try w.event("followRequestDeclined", [("actor", "p"), ("target", "b")])
        }
    }

    @Test("deleting a step strikes its rows through and withholds their push")
    func deletion() throws {
        let w = try world()
        let heart = try w.rows(try w.interact("heart", "a", "s")).first
        let row = try #require(heart)
        let delete = try w.event("delete", [("step", "s")])
        #expect(delete.note == "1 rows marked deleted")
        #expect(try w.store.inboxes.row(row.id)?.deleted == true)
        #expect(try w.store.inboxes.row(row.id)!.version > row.version)
        #expect(throws: PushUnavailable.self) { try w.store.outbox.pushContent(row: row.id) }
    }
}
