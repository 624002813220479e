import Foundation
import Notifications

/// The demo world's event stream, moved in time.
public enum SampleStream {
    /// `data` (NDJSON events) with every event's `at` moved forward by the whole days that bring
    /// its newest event within the 24 hours before `now`. Every interval inside the stream (the
    /// 24-hour windows, the rolling ceiling) stays as written, and so does each time of day. A
    /// stream already that recent, or a clock behind it, leaves it as it is.
    public static func movedToToday(_ data: Data, now: Int64) throws -> Data {
        var events: [JSON] = []
        var newest: Int64 = 0
        for (index, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated()
        where !line.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) {
            let event: JSON
            do { event = try JSON.parse(Data(line)) } catch { throw EventError("line \(index + 1): \(error)") }
            events.append(event)
            if let at = event["at"]?.string.flatMap(Timestamp.parse) { newest = max(newest, at) }
        }
        let days = max(0, (now - newest) / Timestamp.day)
        guard days > 0 else { return data }
        var out = Data()
        for event in events {
            var moved = event
            if case .object(var members) = event, let index = members.firstIndex(where: { $0.0 == "at" }),
               let at = members[index].1.string.flatMap(Timestamp.parse) {
                members[index].1 = .string(Timestamp.format(at + days * Timestamp.day))
                moved = .object(members)
            }
            out.append(contentsOf: moved.serialized.utf8)
            out.append(UInt8(ascii: "\n"))
        }
        return out
    }
}
