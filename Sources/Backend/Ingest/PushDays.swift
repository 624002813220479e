import Notifications
import Storage

/// Each person's sent pushes by UTC day, on their inbox row: the newest day that has any
/// (`push_day`) and the counts of that day and the two before it (`pushes_0`, `pushes_1`,
/// `pushes_2`).
///
/// They answer the daily ceiling's common case without reading any notification: every
/// 24-hour span holding a moment lies within the three UTC days around it, so when those days
/// hold fewer than `QuietRules.dailyCeiling` sent pushes in all, no span can be full. Only
/// when they hold as many (or a day is older than the counters reach) is the exact test run
/// (`Store.ceilingReached`). The counts are an upper bound, never less than the truth: every
/// write that makes a row `sent` counts it, and nothing takes a count back (a deleted row
/// leaves it high, which only sends the decision to the exact test).
///
/// Under load the exact test was the costliest statement on PostgreSQL (0.29 ms, 43 index
/// and heap pages an event); the inbox row is read anyway, locked, before a push is judged.
enum PushDays {
    static let day: Int64 = 86_400_000

    static func day(of at: Int64) -> Int64 { StatsCounters.floorDiv(at, day) }

    /// `column = expression` for each counter, counting one sent push on day `p` (an SQL
    /// value); with `when`, only where that condition holds (the others keep their value).
    /// Every expression reads the columns as they were before the update, as SQL does.
    static func count(day p: String, when condition: String? = nil) -> String {
        let assignments = [
            ("pushes_2", "CASE WHEN \(p) > push_day THEN CASE \(p) - push_day WHEN 1 THEN pushes_1 WHEN 2 THEN pushes_0 ELSE 0 END "
                + "WHEN \(p) = push_day - 2 THEN pushes_2 + 1 ELSE pushes_2 END"),
            ("pushes_1", "CASE WHEN \(p) > push_day THEN CASE \(p) - push_day WHEN 1 THEN pushes_0 ELSE 0 END "
                + "WHEN \(p) = push_day - 1 THEN pushes_1 + 1 ELSE pushes_1 END"),
            ("pushes_0", "CASE WHEN \(p) > push_day THEN 1 WHEN \(p) = push_day THEN pushes_0 + 1 ELSE pushes_0 END"),
            ("push_day", "CASE WHEN \(p) > push_day THEN \(p) ELSE push_day END"),
        ]
        return assignments.map { column, expression in
            "\(column) = " + (condition.map { "CASE WHEN \($0) THEN \(expression) ELSE \(column) END" } ?? expression)
        }.joined(separator: ", ")
    }

    /// At most how many sent pushes a 24-hour span holding `at` can hold, from the counters
    /// (`newest`: push_day; `counts`: pushes_0, pushes_1, pushes_2); nil when the span reaches
    /// a day older than they keep.
    static func bound(at: Int64, newest: Int64, counts: [Int]) -> Int? {
        let a = day(of: at)
        guard a - 1 >= newest - 2 else { return nil }
        var total = 0
        for d in (a - 1)...(a + 1) where d <= newest { total += counts[Int(newest - d)] }
        return total
    }

    /// The counters recounted from the rows (`user` is how the engine writes that column):
    /// for a store that had rows before the counters, and for worlds written in bulk.
    static func recountSQL(user: String) -> String {
        let floorDay = "CASE WHEN n.created_at >= 0 THEN n.created_at / \(day) ELSE -((\(day) - 1 - n.created_at) / \(day)) END"
        func count(_ back: Int) -> String {
            """
            pushes_\(back) = (SELECT count(*) FROM notifications AS n WHERE n.recipient = inboxes.\(user) AND n.push = 'sent'
                             AND \(floorDay) = inboxes.push_day - \(back))
            """
        }
        return """
            UPDATE inboxes SET push_day = coalesce((SELECT max(\(floorDay)) FROM notifications AS n
                                                    WHERE n.recipient = inboxes.\(user) AND n.push = 'sent'), 0);
            UPDATE inboxes SET \(count(0)), \(count(1)), \(count(2));
            """
    }

    static func migration(user: String) -> String {
        """
        ALTER TABLE inboxes ADD COLUMN push_day BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE inboxes ADD COLUMN pushes_0 BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE inboxes ADD COLUMN pushes_1 BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE inboxes ADD COLUMN pushes_2 BIGINT NOT NULL DEFAULT 0;
        \(recountSQL(user: user))
        """
    }
}

extension Store {
    /// Counts one sent push of `recipient` made at `at` (see `PushDays`).
    func countPush(recipient: Int, at: Int64) throws {
        try db.cached(Store.countPushSQL)
            .bind(named: [":day": PushDays.day(of: at), ":user": recipient]).run()
    }

    private static let countPushSQL = "UPDATE inboxes SET \(PushDays.count(day: ":day")) WHERE user = :user"

    /// Recounts every person's sent pushes by day from the rows (a world written in bulk).
    public func recountPushDays() throws {
        try db.execute(PushDays.recountSQL(user: "user"))
    }
}
