import Foundation
import Notifications
import Wire
import Testing
import TestSupport
@testable import Backend

/// Batches (docs/board.md, "Batches"): several people doing the same thing to one step within
/// 30 minutes become one row, with one sound.
@Suite("Batches")
struct BatchTests {
    func world(fans: Int = 8) throws -> World {
        let w = try World()
        try w.users("o")
        for i in 1...fans { try w.user("f\(i)", name: "Fan \(i)") }
        try w.journey("j", owner: "o")
        try w.step("s", journey: "j")
        return w
    }

    @Test("a second person within 30 minutes turns the first row into the batch: same id, one sound, then silent replacements")
    func becomesBatch() throws {
        let w = try world()
        let first = try w.interact("heart", "f1", "s")
        let row = try #require(first.writtenRows.first)
        #expect(row.kind == .steppedWithHeart && row.push == .sent)
        var lines: [ActivityRow] = []
        for fan in ["f2", "f3", "f4", "f5", "f6", "f7"] { lines += try w.interact("heart", fan, "s").writtenRows }
        #expect(lines.map(\.id) == Array(repeating: row.id, count: 6))
        #expect(lines.allSatisfy { $0.push == .updated && $0.kind == .batch })
        let batch = try #require(lines.last)
        #expect(batch.title == "Fan 7 and 6 others")
        #expect(batch.body == "Stepped with you by heart")
        #expect(batch.members == 7 && batch.action == .steppedWithHeart)
        #expect(batch.media.facepile == ["https://cdn/f7.jpg", "https://cdn/f6.jpg", "https://cdn/f5.jpg", "https://cdn/f4.jpg"])
        #expect(batch.media.image == "https://cdn/s.jpg" && batch.media.face == nil)
        #expect(batch.tap == .interactions("s"))
        // The contract line: the action's category and priority, and the people counted.
        let line = try JSON.parse(Data(batch.contractJSON.serialized.utf8))
        #expect(line["category"]?.string == "stepWith" && line["priority"]?.string == "immediate")
        #expect(line["members"]?.int == 7 && line["push"]?.string == "updated")
        // One row in the owner's activity; two people make "and 1 other".
        #expect(try w.activity("o").count == 1)
        #expect(Batching.title(latest: "Jules", people: 2) == "Jules and 1 other")
    }

    @Test("explain names the batch a heart joined, with its people; push renders the audible and the silent form")
    func explainAndPush() throws {
        let w = try world()
        let first = try w.interact("heart", "f1", "s")
        try w.interact("heart", "f2", "s")
        let third = try w.interact("heart", "f3", "s")
        let report = try #require(try w.store.explanations.event(third.eventId))
        let id = try #require(first.writtenRows.first?.id)
        #expect(report.note == "joined batch \(id) (now 3 people)")
        var content = try w.store.outbox.pushContent(row: id)
        let audible = Payload.apns(content)
        #expect(audible["payload"]?["aps"]?["sound"]?.string == "default")
        #expect(audible["headers"]?["apns-priority"]?.string == "10")
        content.silent = true
        let silent = Payload.apns(content)
        #expect(silent["payload"]?["aps"]?["sound"] == nil)
        #expect(silent["headers"]?["apns-priority"]?.string == "5")
        #expect(silent["headers"]?["apns-collapse-id"] == audible["headers"]?["apns-collapse-id"])
        let fcm = Payload.fcm(content)
        #expect(fcm["message"]?["android"]?["notification"]?["default_sound"] == .bool(false))
        #expect(fcm["message"]?["android"]?["notification"]?["tag"]?.string == "step:s")
    }

    @Test("a batch's push carries its facepile: FCM's data as a JSON array in a string, APNs's payload as an array; the preview draws it")
    func facepile() throws {
        let w = try world()
        let first = try w.interact("heart", "f1", "s")
        try w.interact("heart", "f2", "s")
        try w.interact("heart", "f3", "s")
        let id = try #require(first.writtenRows.first?.id)
        let row = try #require(try w.activity("o").first { $0.id == id })
        let faces = try #require(row.media.facepile)
        #expect(faces.count == 3)
        let content = try w.store.outbox.pushContent(row: id)
        #expect(content.facepile == faces)
        let fcm = Payload.fcm(content)
        let carried = try #require(fcm["message"]?["data"]?["facepileUrls"]?.string)
        #expect(try JSON.parse(carried).array?.compactMap(\.string) == faces)
        #expect(Payload.apns(content)["payload"]?["facepile"]?.array?.compactMap(\.string) == faces)
        // What a preview reads back from the requests, and draws.
        #expect(try PushPreview(platform: .fcm, request: fcm).facepile == faces)
        #expect(try PushPreview(platform: .apns, request: Payload.apns(content)).facepile == faces)
        // A row alone carries none.
        let single = try w.comment("f1", on: "s", "c1", "lovely")
        let alone = try w.store.outbox.pushContent(row: try #require(single.writtenRows.first?.id))
        #expect(alone.facepile == nil && Payload.fcm(alone)["message"]?["data"]?["facepileUrls"] == nil)
    }

    @Test("after 30 minutes a new batch opens; another action, or another step, is another row")
    func windows() throws {
        let w = try world()
        let a = try w.interact("heart", "f1", "s")
        try w.interact("heart", "f2", "s", at: w.clock + Batching.window - 120_000)  // inside: joins
        let late = try w.interact("heart", "f3", "s", at: a.writtenRows[0].createdAt + Batching.window)
        #expect(late.writtenRows.first?.id != a.writtenRows.first?.id)
        #expect(late.writtenRows.first?.kind == .steppedWithHeart)
        let share = try w.interact("share", "f4", "s")
        #expect(share.writtenRows.first?.kind == .steppedWithShare)
        try w.step("s2", journey: "j")
        let other = try w.interact("heart", "f5", "s2")
        #expect(other.writtenRows.first?.kind == .steppedWithHeart)
        #expect(try w.activity("o").count == 4)
    }

    @Test("the window is exactly 30 minutes: a second before it joins, at 30:00 a new batch opens")
    func thirtyMinutes() throws {
        let w = try world()
        let first = try w.interact("heart", "f1", "s")
        let opened = try #require(first.writtenRows.first)
        let inside = try w.interact("heart", "f2", "s", at: opened.createdAt + 30 * 60_000 - 1_000)
        #expect(inside.writtenRows.first?.id == opened.id)
        let outside = try w.interact("heart", "f3", "s", at: opened.createdAt + 30 * 60_000)
        #expect(outside.writtenRows.first?.id != opened.id && outside.writtenRows.first?.kind == .steppedWithHeart)
    }

    @Test("each member passes the quiet rules alone: a blocked or banned person never joins, and a withheld push stays withheld")
    func quietRules() throws {
        let w = try world()
        try w.interact("heart", "f1", "s")
        try w.relation("block", "o", "f2")
        let blocked = try w.interact("heart", "f2", "s")
        #expect(blocked.writtenRows.isEmpty)
        try w.event("account", [("user", "f3"), ("state", "banned")])
        #expect(try w.interact("heart", "f3", "s").writtenRows.isEmpty)
        try w.event("preferences", [("user", "o"), ("stepWith", false)])
        let muted = try w.interact("heart", "f4", "s")
        #expect(muted.writtenRows.first?.push == .suppressed(.preferences))
        #expect(muted.writtenRows.first?.members == 2)
        let row = try #require(try w.activity("o").first)
        #expect(row.members == 2 && row.title == "Fan 4 and 1 other")
    }

    @Test("a member later blocked, or banned, leaves the batch: counted again, named no more, the card replaced silently")
    func leaving() throws {
        let w = try world()
        for fan in ["f1", "f2", "f3", "f4"] { try w.interact("heart", fan, "s") }
        try w.relation("block", "o", "f4")
        var row = try #require(try w.activity("o").first)
        #expect(row.members == 3 && row.title == "Fan 3 and 2 others")
        #expect(row.media.facepile == ["https://cdn/f3.jpg", "https://cdn/f2.jpg", "https://cdn/f1.jpg"])
        let ban = try w.event("account", [("user", "f3"), ("state", "banned")])
        let line = try #require(ban.writtenRows.first)
        #expect(line.push == .updated && line.members == 2 && line.title == "Fan 2 and 1 other")
        #expect(line.version == ban.eventKey)
        try w.relation("block", "f2", "o")
        row = try #require(try w.activity("o").first)
        #expect(row.members == 1 && row.title == "Fan 1" && row.media.facepile == ["https://cdn/f1.jpg"])
        // The badge did not move: leaving changes a row, it adds none.
        #expect(try w.store.inboxes.counts(for: try w.record("o").key).unseen == 1)
    }

    @Test("a private member is masked as the copy rules say: no photo in the push while they are the newest")
    func privateMember() throws {
        let w = try world()
        try w.user("p", name: "Pat", private: true)
        let first = try w.interact("heart", "f1", "s")
        let id = try #require(first.writtenRows.first?.id)
        try w.interact("heart", "p", "s")
        var push = try w.store.outbox.pushContent(row: id)
        #expect(push.title == "Pat and 1 other" && push.body == "Stepped with you by heart" && push.image == nil)
        try w.interact("heart", "f2", "s")
        push = try w.store.outbox.pushContent(row: id)
        #expect(push.title == "Fan 2 and 2 others" && push.image == "https://cdn/s.jpg")
    }

    @Test("a batch whose first push was withheld sounds once, when a member's push may go")
    func soundsOnceLater() throws {
        let w = try world()
        try w.event("preferences", [("user", "o"), ("stepWith", false)])
        let first = try w.interact("heart", "f1", "s")
        #expect(first.writtenRows.first?.push == .suppressed(.preferences))
        try w.event("preferences", [("user", "o"), ("stepWith", true)])
        let second = try w.interact("heart", "f2", "s")
        let third = try w.interact("heart", "f3", "s")
        #expect(second.writtenRows.first?.push == .sent)
        #expect(third.writtenRows.first?.push == .updated)
    }

    /// A seeded stream of hearts and shares from many people on a few steps, with blocks and
    /// bans along the way; checked against a model of the stream without batches.
    @Test("over random streams: no row sounds twice, every person the unbatched stream notifies is counted once, the badge is the count",
          arguments: [1, 2, 3, 4, 5])
    func invariants(seed: UInt64) throws {
        var rng = SplitMix(seed: seed)
        let fans = 30
        let w = try world(fans: fans)
        try w.step("s2", journey: "j")
        try w.step("s3", journey: "j")
        var blocked: Set<String> = [], banned: Set<String> = []
        var done: Set<String> = []            // (step, type, actor) already made: a repeat is a duplicate
        var expected: [String: Int] = [:]     // "step type" → people notified without batching
        var notifiedFans: [String: [String]] = [:]
        var lines: [ActivityRow] = []
        for _ in 0..<400 {
            let fan = "f\(rng.below(fans) + 1)"
            switch rng.below(40) {
            case 0:
                try w.relation("block", "o", fan); blocked.insert(fan)
            case 1:
                try w.event("account", [("user", .string(fan)), ("state", "banned")]); banned.insert(fan)
            default:
                let step = ["s", "s2", "s3"][rng.below(3)]
                let type = rng.below(3) == 0 ? "share" : "heart"
                // Minutes to hours apart: batches open, grow and close.
                let outcome = try w.interact(type, fan, step, at: w.clock + Int64(rng.below(12)) * 60_000 + 1_000)
                lines += outcome.writtenRows
                let key = "\(step) \(type) \(fan)"
                if !blocked.contains(fan), !banned.contains(fan), !done.contains(key) {
                    expected["\(step) \(type)", default: 0] += 1
                    notifiedFans["\(step) \(type)", default: []].append(fan)
                }
                done.insert(key)
            }
        }
        // No row id carries `sent` twice.
        var sent: [Int: Int] = [:]
        for line in lines where line.push == .sent { sent[line.id, default: 0] += 1 }
        #expect(sent.values.allSatisfy { $0 == 1 })
        // Every line's row is the owner's, and a batch's members never shrink.
        var last: [Int: Int] = [:]
        for line in lines {
            #expect((line.members ?? 1) >= (last[line.id] ?? 0))
            last[line.id] = line.members ?? 1
        }
        // The people counted across the rows are the people the unbatched stream notifies, less
        // those who left a batch (blocked or banned later): a row they made alone stays theirs,
        // as does a batch they were the last to leave.
        var counted: [String: Int] = [:]
        var stillCounted: [String: Int] = [:]
        for (key, fans) in notifiedFans {
            stillCounted[key] = fans.filter { !blocked.contains($0) && !banned.contains($0) }.count
        }
        for row in try w.activity("o") {
            let action = row.action ?? row.kind
            let type = (action == .share || action == .steppedWithShare) ? "share" : "heart"
            let key = "\(row.subject.step ?? row.tap.stepId ?? "") \(type)"
            counted[key, default: 0] += row.members ?? 1
            if let actor = row.actor, blocked.contains(actor) || banned.contains(actor) {
                #expect((row.members ?? 1) == 1, "a batch names someone who left it")
                stillCounted[key, default: 0] += 1
            }
        }
        #expect(counted == stillCounted.filter { $0.value > 0 })
        // The badge is the server's count of unseen rows.
        let o = try w.record("o")
        #expect(try w.store.inboxes.counts(for: o.key) == (try w.store.recount(for: o.key)))
        #expect(try w.store.inboxes.counts(for: o.key).unseen == (try w.activity("o").count))
    }
}
