import Foundation
import Notifications
import Wire
import Testing
@testable import Backend

@Suite("Seen, read, counts and the badge")
struct CountsAndPushTests {
    func world() throws -> World {
        let w = try World()
        try w.users("o", "a", "b", "c")
        try w.journey("j", owner: "o")
        try w.step("s", journey: "j")
        // Half an hour apart, so each heart is a row of its own (closer, they would batch).
        for fan in ["a", "b", "c"] { try w.interact("heart", fan, "s", at: w.clock + Batching.window + 60_000) }
        return w
    }

    @Test("new rows are unseen and unread; counts are fresh COUNTs")
    func fresh() throws {
        let w = try world()
        let o = try w.record("o")
        #expect(try w.store.inboxes.counts(for: o.key) == Counts(unseen: 3, unread: 3))
    }

    @Test("opening Activity stamps every row seen: the badge clears, unread stays")
    func seen() throws {
        let w = try world()
        let o = try w.record("o")
        let counts = try w.store.inboxes.markSeen(o, at: w.clock + 1)
        #expect(counts == Counts(unseen: 0, unread: 3))
        #expect(try w.activity("o").allSatisfy { $0.seenAt == w.clock + 1 })
    }

    @Test("reading a row stamps it read and seen; the earliest stamp wins")
    func read() throws {
        let w = try world()
        let o = try w.record("o")
        let row = try #require(try w.activity("o").first)
        #expect(try w.store.inboxes.markRead(o, row: row.id, at: 5_000) == Counts(unseen: 2, unread: 2))
        #expect(try w.store.inboxes.markRead(o, row: row.id, at: 9_000) == Counts(unseen: 2, unread: 2))
        let stamped = try #require(try w.store.inboxes.row(row.id))
        #expect(stamped.readAt == 5_000 && stamped.seenAt == 5_000)
        try w.store.inboxes.markSeen(o, at: 7_000)
        #expect(try w.store.inboxes.row(row.id)?.seenAt == 5_000)
    }

    @Test("seen up to a version leaves later rows unseen")
    func seenUpTo() throws {
        let w = try world()
        let o = try w.record("o")
        let rows = try w.activity("o").sorted { $0.version < $1.version }
        try w.store.inboxes.markSeen(o, upTo: rows[1].version, at: 1)
        #expect(try w.store.inboxes.counts(for: o.key) == Counts(unseen: 1, unread: 3))
    }

    @Test("another user's row cannot be stamped")
    func foreignRow() throws {
        let w = try world()
        let row = try #require(try w.activity("o").first)
        #expect(try w.store.inboxes.markRead(try w.record("a"), row: row.id, at: 1) == nil)
        #expect(try w.store.inboxes.row(row.id)?.readAt == nil)
    }

    @Test("every stamp bumps the row's version")
    func versions() throws {
        let w = try world()
        let o = try w.record("o")
        let before = try #require(try w.activity("o").first)
        _ = try w.store.inboxes.markRead(o, row: before.id, at: 1)
        #expect(try w.store.inboxes.row(before.id)!.version > before.version)
    }

    @Test("a push carries the absolute badge: the recipient's unseen count when it is rendered")
    func badge() throws {
        let w = try world()
        let o = try w.record("o")
        let row = try #require(try w.activity("o").first)
        #expect(try w.store.outbox.pushContent(row: row.id).badge == 3)
        try w.store.inboxes.markSeen(o, at: 1)
        #expect(try w.store.outbox.pushContent(row: row.id).badge == 0)
        let apns = Payload.apns(try w.store.outbox.pushContent(row: row.id))
        #expect(apns["payload"]?["aps"]?["badge"] == 0)
    }

    @Test("a private actor's push is masked while the row keeps the full copy")
    func masked() throws {
        let w = try world()
        try w.user("p", private: true)
        let row = try #require(try w.rows(try w.comment("p", on: "s", "c1", "lovely view")).first)
        #expect(row.body == "Stepped with you: lovely view")
        let push = try w.store.outbox.pushContent(row: row.id)
        #expect(push.body == "@p interacted with your content")
        #expect(push.image == nil)
        let fcm = Payload.fcm(push)
        #expect(fcm["message"]?["notification"]?["image"] == nil)
    }
}
