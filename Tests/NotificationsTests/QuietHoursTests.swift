import Foundation
import Notifications
import Testing

/// Quiet hours: when a push decided at an instant waits, and until when, in the person's own
/// zone — daylight saving and zones far from UTC included.
@Suite("Quiet hours")
struct QuietHoursTests {
    static func at(_ text: String) -> Int64 { Timestamp.parse(text)! }

    static func until(_ window: (String, String, String), _ at: String) throws -> String? {
        try QuietHours(from: window.0, to: window.1, zone: window.2).heldUntil(QuietHoursTests.at(at)).map(Timestamp.format)
    }

    @Test("a push inside a window that crosses midnight waits for its end, the next morning in the person's zone")
    func overnight() throws {
        let paris = ("22:00", "07:00", "Europe/Paris")
        // November: Paris is UTC+1. 23:30 local is 22:30 UTC; 07:00 the next morning is 06:00 UTC.
        #expect(try Self.until(paris, "2026-11-10T22:30:00Z") == "2026-11-11T06:00:00Z")
        // After midnight, the same morning's end.
        #expect(try Self.until(paris, "2026-11-11T03:00:00Z") == "2026-11-11T06:00:00Z")
        // The start is inside, the end is not.
        #expect(try Self.until(paris, "2026-11-10T21:00:00Z") == "2026-11-11T06:00:00Z")
        #expect(try Self.until(paris, "2026-11-11T06:00:00Z") == nil)
        #expect(try Self.until(paris, "2026-11-11T12:00:00Z") == nil)
        #expect(try Self.until(paris, "2026-11-10T20:59:59Z") == nil)
    }

    @Test("a window inside one day holds only between its start and end")
    func daytime() throws {
        let nap = ("13:00", "15:00", "UTC")
        #expect(try Self.until(nap, "2026-11-10T14:10:00Z") == "2026-11-10T15:00:00Z")
        #expect(try Self.until(nap, "2026-11-10T12:59:00Z") == nil)
        #expect(try Self.until(nap, "2026-11-10T15:00:00Z") == nil)
        #expect(try Self.until(nap, "2026-11-10T23:00:00Z") == nil)
    }

    @Test("across daylight saving: an end the clock jumps over is the jump; an end the clock passes twice is its first pass")
    func daylightSaving() throws {
        // 2027-03-28, Paris: 02:00 CET becomes 03:00 CEST (01:00 UTC). 02:30 never happens.
        #expect(try Self.until(("22:00", "02:30", "Europe/Paris"), "2027-03-27T23:00:00Z") == "2027-03-28T01:00:00Z")
        // The usual end, 07:00, is in summer time that morning: 05:00 UTC, not 06:00.
        #expect(try Self.until(("22:00", "07:00", "Europe/Paris"), "2027-03-27T23:00:00Z") == "2027-03-28T05:00:00Z")
        // 2026-10-25, Paris: 03:00 CEST becomes 02:00 CET (01:00 UTC). 02:30 happens twice:
        // 00:30 UTC in summer time, then 01:30 UTC. The first.
        #expect(try Self.until(("22:00", "02:30", "Europe/Paris"), "2026-10-24T21:00:00Z") == "2026-10-25T00:30:00Z")
        // And 07:00 that morning is in winter time: 06:00 UTC.
        #expect(try Self.until(("22:00", "07:00", "Europe/Paris"), "2026-10-24T21:00:00Z") == "2026-10-25T06:00:00Z")
        // New York, 2027-03-14: 02:00 EST becomes 03:00 EDT (07:00 UTC); a window ending 02:15.
        #expect(try Self.until(("23:00", "02:15", "America/New_York"), "2027-03-14T05:00:00Z") == "2027-03-14T07:00:00Z")
    }

    @Test("zones far from UTC: the window is the person's night, on their calendar day")
    func farZones() throws {
        // 09:00 UTC on 1 November is 23:00 in Kiritimati (UTC+14, already 1 November) and
        // 22:00 in Pago Pago (UTC-11, still 31 October).
        #expect(try Self.until(("22:00", "07:00", "Pacific/Kiritimati"), "2026-11-01T09:00:00Z") == "2026-11-01T17:00:00Z")
        #expect(try Self.until(("22:00", "07:00", "Pacific/Pago_Pago"), "2026-11-01T09:00:00Z") == "2026-11-01T18:00:00Z")
        // Kathmandu is UTC+5:45: its 07:00 is 01:15 UTC.
        #expect(try Self.until(("22:00", "07:00", "Asia/Kathmandu"), "2026-11-01T20:00:00Z") == "2026-11-02T01:15:00Z")
    }

    @Test("what a person may set: HH:MM times that differ, an IANA zone; anything else says which field is wrong")
    func badInput() {
        func error(_ from: String, _ to: String, _ zone: String) -> String? {
            do { _ = try QuietHours(from: from, to: to, zone: zone); return nil } catch { return "\(error)" }
        }
        #expect(error("22:00", "07:00", "Europe/Paris") == nil)
        #expect(error("25:00", "07:00", "Europe/Paris")?.contains("quietHours.from") == true)
        #expect(error("22:00", "7:00", "Europe/Paris")?.contains("quietHours.to") == true)
        #expect(error("22:00", "22:00", "Europe/Paris")?.contains("no length") == true)
        #expect(error("22:00", "07:00", "Mars/Olympus_Mons")?.contains("quietHours.zone") == true)
        #expect(error("22:00", "07:00", "../../etc/passwd")?.contains("quietHours.zone") == true)
        #expect(error("22:00", "07:00", "")?.contains("quietHours.zone") == true)
    }

    @Test("the stored form reads back as what was set")
    func stored() throws {
        let q = try QuietHours(from: "22:15", to: "06:45", zone: "Asia/Kathmandu")
        #expect(q.stored == "22:15-06:45 Asia/Kathmandu")
        #expect(QuietHours(stored: q.stored) == q)
        #expect(QuietHours(stored: "nonsense") == nil)
        #expect(q.json.serialized == #"{"from":"22:15","to":"06:45","zone":"Asia/Kathmandu"}"#)
    }

    @Test("a preferences event sets quiet hours, turns them off with null, and may set nothing else")
    func event() throws {
        func parse(_ text: String) throws -> Event { try Event(json: try JSON.parse(Data(text.utf8))) }
        let set = try parse(#"{"id":"p","type":"preferences","at":"2026-11-01T00:00:00Z","user":"u","quietHours":{"from":"22:00","to":"07:00","zone":"Europe/Paris"}}"#)
        guard case let .preferences(_, changes, quiet) = set.body else { Issue.record("not preferences"); return }
        #expect(changes.isEmpty)
        #expect(quiet == .set(try QuietHours(from: "22:00", to: "07:00", zone: "Europe/Paris")))
        let off = try parse(#"{"id":"p","type":"preferences","at":"2026-11-01T00:00:00Z","user":"u","quietHours":null,"social":false}"#)
        guard case let .preferences(_, offChanges, offQuiet) = off.body else { Issue.record("not preferences"); return }
        #expect(offQuiet == .off && offChanges.count == 1)
        #expect(throws: EventError.self) {
            try parse(#"{"id":"p","type":"preferences","at":"2026-11-01T00:00:00Z","user":"u","quietHours":{"from":"22:00","to":"07:00","zone":"Nowhere/Town"}}"#)
        }
        #expect(throws: EventError.self) {
            try parse(#"{"id":"p","type":"preferences","at":"2026-11-01T00:00:00Z","user":"u","quietHours":"22:00-07:00"}"#)
        }
    }
}
