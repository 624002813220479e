import Foundation
import Notifications
import Wire
import Testing
@testable import Backend

/// Devices and the outbox (docs/delivery.md): every push that goes out is one entry per
/// device, written in the same transaction as its row.
@Suite("Devices and the outbox")
struct OutboxTests {
    func world() throws -> World {
        let w = try World()
        try w.users("o", "a", "b", "c", "f")
        try w.journey("j", owner: "o")
        try w.step("s", journey: "j")
        return w
    }

    /// Every entry of the devices these tests register, in the order they were written.
    func entries(_ w: World) throws -> [(row: Int, token: String, silent: Bool, state: String)] {
        try ["apns-1", "fcm-1", "a-phone", "c-phone", "gone"].flatMap { try w.store.outbox.entries(ofDevice: $0) }
            .sorted { $0.id < $1.id }.map { (row: $0.row, token: $0.token, silent: $0.silent, state: $0.state.rawValue) }
    }

    @Test("a sent row writes one entry per live device of its recipient; a withheld push writes none")
    func perDevice() throws {
        let w = try world()
        let o = try w.record("o")
        try w.store.devices.register("apns-1", platform: .apns, environment: .production, for: o, at: w.clock)
        try w.store.devices.register("fcm-1", platform: .fcm, environment: .production, for: o, at: w.clock)
        let heart = try w.interact("heart", "a", "s")
        let row = try #require(heart.writtenRows.first)
        #expect(try entries(w).map(\.token).sorted() == ["apns-1", "fcm-1"])
        #expect(try entries(w).allSatisfy { $0.row == row.id && !$0.silent && $0.state == "due" })
        // A step-with push expires when the step's window closes.
        let published = try #require(try w.store.step("s")?.publishedAt)
        #expect(try w.store.outbox.entries(ofRow: row.id).allSatisfy { $0.expiresAt == published + Timestamp.day })
        try w.event("preferences", [("user", "o"), ("engagement", false)])
        try w.interact("share", "b", "s", at: w.clock + 2 * Timestamp.day)  // after the window: engagement, off
        #expect(try entries(w).count == 2)
    }

    @Test("a batch's replacement supersedes its entries not yet gone; its one sound rides with the newest card until one has gone")
    func batchSupersedes() throws {
        let w = try world()
        try w.store.devices.register("apns-1", platform: .apns, environment: .production, for: try w.record("o"), at: w.clock)
        try w.interact("heart", "a", "s")
        try w.interact("heart", "b", "s")
        try w.interact("heart", "c", "s")
        var all = try entries(w)
        #expect(all.map(\.state) == ["superseded", "superseded", "due"])
        // Nothing went yet: the sound was never heard, so the newest card carries it.
        #expect(all.map(\.silent) == [false, false, false])
        #expect(Set(all.map(\.row)).count == 1)
        // Once the sound has gone, the next change is silent.
        for entry in try w.store.outbox.claimDue(worker: "test", now: w.clock, lease: 60_000, limit: 10) {
            try w.store.outbox.settle(entry, attempt: DeliveryAttempt(at: w.clock, status: 200, reason: nil, providerId: "p", latencyMs: 1),
                                      next: .sent)
        }
        try w.interact("heart", "f", "s")
        all = try entries(w)
        #expect(all.map(\.state) == ["superseded", "superseded", "sent", "due"])
        #expect(all.last?.silent == true)
    }

    @Test("a fan-out writes its entries set-based: only its sent rows, only live devices")
    func fanout() throws {
        let w = try world()
        for fan in ["a", "b", "c"] { try w.follow(fan, "o") }
        try w.event("preferences", [("user", "c"), ("journeys", false)])
        try w.store.devices.register("a-phone", platform: .apns, environment: .production, for: try w.record("a"), at: w.clock)
        try w.store.devices.register("c-phone", platform: .fcm, environment: .production, for: try w.record("c"), at: w.clock)
        try w.store.devices.register("gone", platform: .fcm, environment: .production, for: try w.record("b"), at: w.clock)
        try w.store.outbox.disableDevice("gone", since: w.clock, at: w.clock)
        try w.step("s2", journey: "j")
        #expect(try entries(w).map(\.token) == ["a-phone"])
        let row = try #require(try w.activity("a").first)
        #expect(try entries(w).first?.row == row.id)
    }

    @Test("a token registered again moves to its new owner, live again; a user removes only their own")
    func tokens() throws {
        let w = try world()
        let (a, b) = (try w.record("a"), try w.record("b"))
        try w.store.devices.register("t1", platform: .apns, environment: .sandbox, for: a, at: 1)
        try w.store.outbox.disableDevice("t1", since: 1, at: 2)
        #expect(try w.store.devices.list(of: a).first?.disabledAt == 2)
        try w.store.devices.register("t1", platform: .apns, environment: .production, for: b, at: 3)
        #expect(try w.store.devices.list(of: a).isEmpty)
        #expect(try w.store.devices.list(of: b).map(\.token) == ["t1"])
        #expect(try w.store.devices.list(of: b).first?.disabledAt == nil)
        #expect(try !w.store.devices.remove("t1", of: a))
        #expect(try w.store.devices.remove("t1", of: b))
    }
}
