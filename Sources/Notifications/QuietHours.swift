import Foundation

/// A person's quiet hours: a window of local time, in their own time zone, when pushes wait.
///
/// A push decided inside the window is held: its row reaches the inbox at once, its push goes
/// out when the window ends, judged again then. The window may cross midnight (`22:00`–`07:00`)
/// or not (`13:00`–`15:00`); its start and end differ. Local times follow the zone's rules on
/// the day they fall on, daylight saving included: an end that does not exist that day (the
/// clock jumps over it) or exists twice (the clock goes back over it) is the earliest instant
/// that is valid, `QuietHours.instant(localDay:minute:in:)`.
public struct QuietHours: Equatable, Hashable, Sendable {
    /// The start and the end, in minutes after local midnight (0–1439).
    public let from: Int
    public let to: Int
    /// The IANA name of the zone (`Europe/Paris`).
    public let zone: String
    private let timeZone: TimeZone

    /// Throws with a reason, for the person who sent it, when a field is not what the
    /// contract names.
    public init(from: String, to: String, zone: String) throws {
        guard let start = QuietHours.minutes(from) else { throw EventError("quietHours.from must be a time HH:MM (00:00–23:59): \(Fields.quoted(from))") }
        guard let end = QuietHours.minutes(to) else { throw EventError("quietHours.to must be a time HH:MM (00:00–23:59): \(Fields.quoted(to))") }
        guard start != end else { throw EventError("quietHours.from and quietHours.to are the same time: a window of no length") }
        guard zone.utf8.count <= 64, zone.utf8.allSatisfy({ $0 > 32 && $0 < 127 }), zone.contains("/") || zone == "UTC",
              let timeZone = TimeZone(identifier: zone) else {
            throw EventError("quietHours.zone is not an IANA time zone name (Europe/Paris): \(Fields.quoted(zone))")
        }
        self.from = start
        self.to = end
        self.zone = zone
        self.timeZone = timeZone
    }

    public static func == (a: QuietHours, b: QuietHours) -> Bool { a.from == b.from && a.to == b.to && a.zone == b.zone }
    public func hash(into hasher: inout Hasher) { hasher.combine(from); hasher.combine(to); hasher.combine(zone) }

    /// `HH:MM` of a minute of the day.
    public static func clock(_ minute: Int) -> String {
        let h = minute / 60, m = minute % 60
        return (h < 10 ? "0" : "") + String(h) + ":" + (m < 10 ? "0" : "") + String(m)
    }

    /// The start as written (`22:00`).
    public var fromText: String { QuietHours.clock(from) }
    /// The end as written (`07:00`).
    public var toText: String { QuietHours.clock(to) }

    /// As events, mutations and the API write it: `{"from": "22:00", "to": "07:00", "zone": "Europe/Paris"}`.
    public var json: JSON { .object([("from", .string(fromText)), ("to", .string(toText)), ("zone", .string(zone))]) }

    /// How the store keeps it, in one column: `22:00-07:00 Europe/Paris`.
    public var stored: String { "\(fromText)-\(toText) \(zone)" }

    /// Reads the stored form back; nil for anything else (a zone the machine no longer knows
    /// reads as no quiet hours, rather than refusing the person's pushes).
    public init?(stored: String) {
        guard let value = try? QuietHours(text: stored) else { return nil }
        self = value
    }

    /// Reads `FROM-TO ZONE` as a person types it (`22:00-07:00 Europe/Paris`, an en dash
    /// allowed between the times).
    public init(text: String) throws {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        let times = parts.first?.split(whereSeparator: { $0 == "-" || $0 == "–" }) ?? []
        guard parts.count == 2, times.count == 2 else {
            throw EventError("quiet hours are FROM-TO ZONE, as 22:00-07:00 Europe/Paris: \(Fields.quoted(text))")
        }
        try self.init(from: String(times[0]), to: String(times[1]), zone: String(parts[1]))
    }

    /// Whether `at` falls inside the window, and if so the instant it ends (the push's due
    /// time); nil when `at` is outside it.
    public func heldUntil(_ at: Int64) -> Int64? {
        let seconds = Timestamp.floorDiv(at, Timestamp.second)
        let offset = Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(seconds))))
        let local = seconds + offset
        let localDay = Timestamp.floorDiv(local, 86_400)
        let minute = Int((local - localDay * 86_400) / 60)
        let endDay: Int64
        if from < to {
            guard minute >= from && minute < to else { return nil }
            endDay = localDay
        } else if minute >= from {
            endDay = localDay + 1
        } else if minute < to {
            endDay = localDay
        } else {
            return nil
        }
        let end = QuietHours.instant(localDay: endDay, minute: to, in: timeZone)
        // A jump forward can put the end's instant at or before `at` (the window's last local
        // minutes never happened that night): then the window is already over.
        return end > at ? end : nil
    }

    /// The instant (ms) of local time `minute` on local day `localDay` (days since 1970-01-01)
    /// in `zone`. A time the clock jumped over resolves to the jump (the first valid instant
    /// after it); a time the clock passed twice, to the first pass.
    static func instant(localDay: Int64, minute: Int, in zone: TimeZone) -> Int64 {
        let wall = localDay * 86_400 + Int64(minute) * 60
        func offset(_ s: Int64) -> Int64 { Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(s)))) }
        // Every zone's offset lies within a day of UTC, and no zone changes it twice in two days.
        let offsets = Set([offset(wall - 86_400), offset(wall), offset(wall + 86_400)])
        let valid = offsets.map { wall - $0 }.filter { offset($0) == wall - $0 }
        if let first = valid.min() { return first * Timestamp.second }
        // In a gap: the first instant after it, the transition itself.
        let before = offsets.map { wall - $0 }.min()!
        let jump = zone.nextDaylightSavingTimeTransition(after: Date(timeIntervalSince1970: TimeInterval(before)))
        return Int64((jump?.timeIntervalSince1970 ?? TimeInterval(before)).rounded()) * Timestamp.second
    }

    /// `HH:MM` to minutes after midnight; nil for anything else.
    static func minutes(_ text: String) -> Int? {
        let b = Array(text.utf8)
        guard b.count == 5, b[2] == 58 else { return nil }
        let digits = [b[0], b[1], b[3], b[4]]
        guard digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        let h = Int(digits[0] - 48) * 10 + Int(digits[1] - 48)
        let m = Int(digits[2] - 48) * 10 + Int(digits[3] - 48)
        guard h < 24, m < 60 else { return nil }
        return h * 60 + m
    }
}

/// What a `preferences` event or mutation does to quiet hours: sets them, or turns them off.
public enum QuietHoursChange: Equatable, Sendable {
    case off
    case set(QuietHours)

    /// `quietHours` of an event, a mutation or the preferences document (`value`): an object
    /// `{from, to, zone}` sets them, `null` turns them off; nil when the field is absent.
    public init?(json value: JSON?) throws {
        guard let value else { return nil }
        if value.isNull { self = .off; return }
        guard case .object = value else { throw EventError("field 'quietHours' must be an object {from, to, zone} or null") }
        func text(_ key: String) throws -> String {
            guard let text = value[key]?.string else { throw EventError("field 'quietHours.\(key)' must be a string") }
            return text
        }
        self = .set(try QuietHours(from: try text("from"), to: try text("to"), zone: try text("zone")))
    }

    /// The quiet hours after the change.
    public var value: QuietHours? {
        if case .set(let q) = self { return q }
        return nil
    }
}
