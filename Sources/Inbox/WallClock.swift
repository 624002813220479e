import Foundation
import Notifications

/// The clock the inbox draws ages against, in Unix milliseconds.
///
/// `STEPO_CLOCK` (an RFC 3339 instant) starts it at that instant instead of now, and it runs on
/// from there. The demo world is seeded relative to it too, so a screen drawn under a pinned
/// clock is the same on any day: that is how docs/screens.md is regenerated and checked. Nothing
/// else reads it; stamps, tokens, the sync status line and the server keep real time, and the
/// engine takes its time from events only.
public enum WallClock {
    public static var now: Int64 { realNow + offset }

    public static var realNow: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    private static let offset: Int64 = {
        guard let text = ProcessInfo.processInfo.environment["STEPO_CLOCK"], let pinned = Timestamp.parse(text) else { return 0 }
        return pinned - realNow
    }()
}
