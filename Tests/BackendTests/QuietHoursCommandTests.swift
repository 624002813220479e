import Foundation
import Notifications
import Testing
import TestSupport
@testable import Backend

/// Quiet hours as the real binary shows them: `deliver --dry-run` lists a held push only once
/// its hours are over, one a thread; `explain --row` says until when it is held.
@Suite("Quiet hours, through the command line")
struct QuietHoursCommandTests {
    let folder = NSTemporaryDirectory() + "stepo-quietcli-" + UUID().uuidString

    static func world(at t: (Int64) -> String, hours: String) -> String {
        """
        {"id":"u1","type":"user","at":"\(t(-10))","user":{"id":"alice","username":"alice","name":"Alice Ames"}}
        {"id":"u2","type":"user","at":"\(t(-10))","user":{"id":"bob","username":"bob","name":"Bob Brandt"}}
        {"id":"j1","type":"journey","at":"\(t(-9))","journey":{"id":"ja","owner":"alice","title":"Garden"}}
        {"id":"s1","type":"step","at":"\(t(-9))","step":{"id":"sa","journey":"ja","caption":"tomatoes"}}
        {"id":"m1","type":"mediaReady","at":"\(t(-8))","step":"sa"}
        {"id":"q1","type":"preferences","at":"\(t(-7))","user":"alice","quietHours":\(hours)}
        {"id":"e1","type":"heart","at":"\(t(-6))","actor":"bob","step":"sa"}
        {"id":"e2","type":"comment","at":"\(t(-5))","actor":"bob","step":"sa","comment":{"id":"c1","text":"lovely"}}

        """
    }

    /// A store at `name` where alice has a phone, fed `lines` (`world`): its people and step
    /// first, the phone, then the rest.
    func store(_ name: String, _ lines: String) throws -> String {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let location = try TestEngine.location(folder, name)
        let all = lines.split(separator: "\n").map(String.init)
        let first = try Stepo.run(["ingest"] + TestEngine.storeArguments(location) + ["--quiet", "-"],
                                  stdin: Data((all.prefix(5).joined(separator: "\n") + "\n").utf8))
        #expect(first.status == 0, "\(first.stderr)")
        let phone = try Stepo.run(["devices"] + TestEngine.storeArguments(location) + ["--user", "alice", "--add", "alice-phone", "--platform", "apns"])
        #expect(phone.status == 0, "\(phone.stderr)")
        let rest = try Stepo.run(["ingest"] + TestEngine.storeArguments(location) + ["--quiet", "-"],
                                 stdin: Data((all.dropFirst(5).joined(separator: "\n") + "\n").utf8))
        #expect(rest.status == 0, "\(rest.stderr)")
        return location
    }

    @Test("held now, until two hours from now: deliver --dry-run lists nothing, explain --row says held:quietHours until then")
    func heldNow() throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000) / 60_000 * 60_000
        let minute: Int64 = 60_000
        let clock = { (ms: Int64) in QuietHours.clock(Int(ms / minute % 1440)) }
        let hours = #"{"from":"\#(clock(now - 120 * minute))","to":"\#(clock(now + 120 * minute))","zone":"UTC"}"#
        let location = try store("now.db", Self.world(at: { Timestamp.format(now + $0 * minute) }, hours: hours))
        let dry = try Stepo.run(["deliver"] + TestEngine.storeArguments(location) + ["--dry-run"])
        #expect(dry.status == 0 && dry.lines.isEmpty, "\(dry.stdout)\(dry.stderr)")
        let store = try Store(location: location)
        let rows = try store.inboxes.rows(afterRow: 0, limit: 100).filter { [.steppedWithHeart, .steppedWithComment].contains($0.kind) }
        #expect(rows.count == 2)
        for row in rows {
            let explain = try Stepo.run(["explain"] + TestEngine.storeArguments(location) + ["--row", String(row.id)])
            #expect(explain.stdout.contains("held:quietHours until \(Timestamp.format(now + 120 * minute))"), "\(explain.stdout)\(explain.stderr)")
        }
    }

    @Test("hours long over: deliver --dry-run lists the thread's newest push once, marked held, with the sound")
    func heldThenDue() throws {
        let start = Timestamp.parse("2026-11-20T23:00:00Z")!
        let hours = #"{"from":"22:00","to":"07:00","zone":"Europe/Paris"}"#
        let location = try store("past.db", Self.world(at: { Timestamp.format(start + $0 * 60_000) }, hours: hours))
        let dry = try Stepo.run(["deliver"] + TestEngine.storeArguments(location) + ["--dry-run"])
        #expect(dry.status == 0)
        #expect(dry.lines.count == 1, "\(dry.stdout)\(dry.stderr)")
        let line = try JSON.parse(Data((dry.lines.first ?? "{}").utf8))
        #expect(line["held"]?.string == "quietHours" && line["silent"]?.bool == false, "\(dry.stdout)")
        #expect(dry.stderr.contains("was held by quiet hours: a newer push of its thread goes instead"), "\(dry.stderr)")
    }
}
