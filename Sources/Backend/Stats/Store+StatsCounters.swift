import Foundation
import Notifications
import Storage

/// The trust budget's counters, kept as rows are written, stamped and withheld, in the same
/// transaction as the change they count — so `stepo stats` over a span reads a few hundred
/// counter rows per day of it, however many notification rows the store holds.
///
/// Four of them are shared by every writer and split into slots, one per connection (see
/// `Schema.statsSlots`): readers sum the slots.
///
/// - `stats_rows(hour, kind, category, push, n)`: rows made, by the UTC hour of their event
///   time, their kind (a batch row counts under its members' kind), category and push state.
/// - `stats_withheld(hour, kind, reason, n)`: candidates given no row, by reason.
/// - `stats_stamps(hour, kind, category, stamp, bucket, n)`: rows seen and read, by the hour
///   the row was made and how long after (`StampBuckets`). A row read by itself is counted at
///   once; the rows a mark covers, by `catchUpStamps` before the figures are read.
/// - `push_load(hour, user, category, sent, held)` and `push_daily(day, …)`: per person and
///   hour (and UTC day), pushes sent and held by the daily ceiling: the distinct people pushed
///   to and the load per person per day. Whole days of a span read the daily entries; only
///   its partial first and last days read the hourly ones.
///
/// `Stats.recount` rebuilds all four from the rows themselves; tests hold the two equal.
enum StatsCounters {
    static let hour: Int64 = 3_600_000

    static func hour(of at: Int64) -> Int64 { floorDiv(at, hour) }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

    /// The kind a row is counted under: its own, or for a batch, its members' (`action`).
    static func countedKind(_ kind: Kind, action: String?) -> Kind {
        kind == .batch ? action.flatMap(Kind.init(rawValue:)) ?? .steppedWithHeart : kind
    }

    /// The time of the first mark of row `n`'s recipient that covers it (any mark; only read
    /// marks for `read`).
    static func firstMarkSQL(read: Bool) -> String {
        "(SELECT min(m.at) FROM marks AS m WHERE m.user = n.recipient\(read ? " AND m.kind = 'read'" : "") AND m.through_ord >= n.ord)"
    }

    /// Outbox entry `o`'s last attempt: its reason, and when its answer came (start + latency).
    static let lastReasonSQL = "(SELECT a.reason FROM delivery_attempts AS a WHERE a.entry = o.id ORDER BY a.at DESC LIMIT 1)"
    static let lastAnswerSQL = """
        (SELECT a.at + coalesce(a.latency_ms, 0) FROM delivery_attempts AS a WHERE a.entry = o.id ORDER BY a.at DESC LIMIT 1)
        """

    /// The kind a row is counted under, in SQL over row `n`.
    static func kindSQL(_ n: String) -> String { "CASE WHEN \(n).kind = 'batch' THEN \(n).action ELSE \(n).kind END" }

    /// The category of the kind `kind` (an SQL expression naming a kind, not `batch`).
    static func categorySQL(_ kind: String) -> String {
        let arms = Kind.allCases.filter { $0 != .batch }.map { "WHEN '\($0.rawValue)' THEN '\($0.category.rawValue)'" }
        return "CASE \(kind) \(arms.joined(separator: " ")) ELSE 'stepWith' END"
    }

    static let upsertRows = """
        ON CONFLICT (hour, kind, category, push, slot) DO UPDATE SET n = stats_rows.n + excluded.n
        """
    static let upsertLoad = """
        ON CONFLICT (hour, user, category) DO UPDATE SET sent = push_load.sent + excluded.sent, held = push_load.held + excluded.held
        """
    static let upsertDaily = """
        ON CONFLICT (day, user, category) DO UPDATE SET sent = push_daily.sent + excluded.sent, held = push_daily.held + excluded.held
        """
    static let upsertDelivery = "ON CONFLICT (hour, outcome, reason, slot) DO UPDATE SET n = stats_delivery.n + excluded.n"
    static let upsertWithheld = "ON CONFLICT (hour, kind, reason, slot) DO UPDATE SET n = stats_withheld.n + excluded.n"
    static let upsertStamps = "ON CONFLICT (hour, kind, category, stamp, bucket, slot) DO UPDATE SET n = stats_stamps.n + excluded.n"

    /// Whether a push state weighs on a person's load: sent, or held by the ceiling.
    static func loads(_ push: PushStatus) -> (sent: Int, held: Int)? {
        switch push {
        case .sent: return (1, 0)
        case .suppressed(.dailyCeiling): return (0, 1)
        case .updated, .suppressed: return nil
        }
    }
}

/// How long after its making a row was seen or read, in buckets a person reads easily:
/// bucket `i` holds durations below `edges[i]` (and at or above the edge before); the last,
/// everything from 30 days on. A median is reported as its bucket's upper edge.
public enum StampBuckets {
    public static let edges: [Int64] = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1800, 2700, 3600, 5400, 7200,
                                        10_800, 14_400, 21_600, 28_800, 43_200, 57_600, 72_000, 86_400, 129_600, 172_800,
                                        259_200, 432_000, 604_800, 1_209_600, 2_592_000].map { $0 * 1000 }

    public static func bucket(_ ms: Int64) -> Int {
        edges.firstIndex { ms < $0 } ?? edges.count
    }

    /// The bucket's upper edge (milliseconds); its lower edge for the last, open bucket.
    public static func upper(_ bucket: Int) -> Int64 { bucket < edges.count ? edges[bucket] : edges[edges.count - 1] }

    /// `bucket` as SQL, for a duration expression in milliseconds.
    static func sql(_ duration: String) -> String {
        let arms = edges.enumerated().map { "WHEN \(duration) < \($0.element) THEN \($0.offset)" }
        return "CASE \(arms.joined(separator: " ")) ELSE \(edges.count) END"
    }
}

extension Store {
    // Each counter's statement, made once: built per call, the text cost an ingest a tenth of
    // its time before the statement cache had even found it.
    private static let countRowSQL = "INSERT INTO stats_rows(hour, kind, category, push, slot, n) VALUES (?, ?, ?, ?, ?, ?) \(StatsCounters.upsertRows)"
    private static let countLoadSQL = "INSERT INTO push_load(hour, user, category, sent, held) VALUES (?, ?, ?, ?, ?) \(StatsCounters.upsertLoad)"
    private static let countDailySQL = "INSERT INTO push_daily(day, user, category, sent, held) VALUES (?, ?, ?, ?, ?) \(StatsCounters.upsertDaily)"
    private static let countWithheldSQL = "INSERT INTO stats_withheld(hour, kind, reason, slot, n) VALUES (?, ?, ?, ?, 1) \(StatsCounters.upsertWithheld)"
    private static let countDeliveriesSQL = "INSERT INTO stats_delivery(hour, outcome, reason, slot, n) VALUES (?, ?, ?, ?, ?) \(StatsCounters.upsertDelivery)"

    /// Counts one row made (`delta` 1) or one taken back (−1) under its push state.
    func countRow(kind: Kind, push: PushStatus, recipient: Int, at: Int64, delta: Int = 1) throws {
        let hour = StatsCounters.hour(of: at)
        let category = kind.category.rawValue
        try db.cached(Store.countRowSQL)
            .bind([hour, kind.rawValue, category, push.description, slot, delta]).run()
        if let load = StatsCounters.loads(push) {
            try db.cached(Store.countLoadSQL)
                .bind([hour, recipient, category, load.sent * delta, load.held * delta]).run()
            try db.cached(Store.countDailySQL)
                .bind([hour / 24, recipient, category, load.sent * delta, load.held * delta]).run()
        }
    }

    func countWithheld(kind: Kind, reason: Reason, at: Int64) throws {
        try db.cached(Store.countWithheldSQL)
            .bind([StatsCounters.hour(of: at), kind.rawValue, reason.rawValue, slot]).run()
    }

    /// Counts the rows of `user` with ord in (`after`, `through`] not yet stamped `column`
    /// (`seen_at`, `read_at`) as stamped `stamp` at `at`: a mark passing over them.
    func countStamps(_ stamp: String, column: String, user: Int, after: Int, through: Int, at: Int64) throws {
        guard through > after else { return }
        try db.cached("""
            INSERT INTO stats_stamps(hour, kind, category, stamp, bucket, slot, n)
            SELECT hour, kind, \(StatsCounters.categorySQL("kind")), ?, \(StampBuckets.sql("d")), ?, count(*) FROM (
                SELECT n.created_at / \(StatsCounters.hour) AS hour, \(StatsCounters.kindSQL("n")) AS kind, ? - n.created_at AS d
                FROM notifications AS n WHERE n.recipient = ? AND n.ord > ? AND n.ord <= ? AND n.\(column) IS NULL) AS r
            WHERE true GROUP BY hour, kind, \(StampBuckets.sql("d"))
            \(StatsCounters.upsertStamps)
            """).bind([stamp, slot, at, user, after, through]).run()
    }

    /// Counts how an outbox entry ended, when this attempt ends it: its outcome (a drop with
    /// its reason), whether it took more than one attempt, and for a sent one, how long from
    /// its row to the provider's answer.
    func countSettled(_ settlements: [Outbox.Settlement]) throws {
        let rows = settlements.filter { [.sent, .dead, .dropped, .superseded].contains($0.next) }.map(\.entry.row)
        guard !rows.isEmpty else { return }
        var madeAt: [Int: Int64] = [:]
        for row in rows { if let known = recordMemo?.pushes[row] ?? nil { madeAt[row] = known.createdAt } }
        let unknown = rows.filter { madeAt[$0] == nil }
        for (row, at) in try db.keyed("SELECT id, created_at FROM notifications WHERE id IN (%)", unknown, { ($0.int(0), $0.int64(1)) }) {
            madeAt[row] = at
        }
        struct Key: Hashable { var hour: Int64, outcome: String, reason: String }
        var counts: [Key: Int] = [:]
        for settlement in settlements {
            let (entry, attempt, next) = (settlement.entry, settlement.attempt, settlement.next)
            let outcome: String
            switch next {
            case .sent: outcome = "sent"
            case .dead: outcome = "dead"
            case .dropped: outcome = "dropped"
            case .superseded: outcome = "superseded"  // a held push a newer one of its thread stood for
            case .due, .claimed: continue
            }
            guard let rowAt = madeAt[entry.row] else { continue }
            let hour = StatsCounters.hour(of: rowAt)
            counts[Key(hour: hour, outcome: outcome, reason: next == .dropped ? attempt.reason ?? "unknown" : ""), default: 0] += 1
            if entry.attempts >= 1, next != .superseded { counts[Key(hour: hour, outcome: "retried", reason: ""), default: 0] += 1 }
            if next == .sent, entry.held {
                // Held by quiet hours: how long from its row to the end of the hours.
                counts[Key(hour: hour, outcome: "quietHeld", reason: String(StampBuckets.bucket(max(0, entry.dueAt - rowAt)))), default: 0] += 1
            }
            if next == .sent {
                let answered = String(StampBuckets.bucket(max(0, attempt.at + Int64(attempt.latencyMs ?? 0) - rowAt)))
                counts[Key(hour: hour, outcome: "answered", reason: answered), default: 0] += 1
            }
        }
        // In key order, so writers on PostgreSQL meet on a counter in one order.
        for (key, n) in counts.sorted(by: { ($0.key.hour, $0.key.outcome, $0.key.reason) < ($1.key.hour, $1.key.outcome, $1.key.reason) }) {
            try db.cached(Store.countDeliveriesSQL).bind([key.hour, key.outcome, key.reason, slot, n]).run()
        }
    }

    /// Counts one row stamped `stamp` at `at` by its own stamp.
    func countStamp(_ stamp: String, row: Int, user: Int, at: Int64) throws {
        try db.cached("""
            INSERT INTO stats_stamps(hour, kind, category, stamp, bucket, slot, n)
            SELECT hour, kind, \(StatsCounters.categorySQL("kind")), ?, \(StampBuckets.sql("d")), ?, 1 FROM (
                SELECT n.created_at / \(StatsCounters.hour) AS hour, \(StatsCounters.kindSQL("n")) AS kind, ? - n.created_at AS d
                FROM notifications AS n WHERE n.id = ? AND n.recipient = ?) AS r
            WHERE true
            \(StatsCounters.upsertStamps)
            """).bind([stamp, slot, at, row, user]).run()
    }

    // MARK: The full recount

}

extension Stats {
    /// Counts the rows the marks made since the last count passed over (`stats_reach` says how
    /// far each person's are counted): a mark is one write when Activity opens, and the rows
    /// it covers are counted here, once each, before the trust budget is read. Marks are taken
    /// in version order, up to the horizon (on PostgreSQL a mark may still be committing
    /// below a later one); one count at a time (the watermark's row is locked).
    ///
    /// A transaction counts at most `rowsPerTransaction` rows' places: a mark over a million
    /// rows is counted a slice at a time, each slice remembered in `stats_reach`, so writers
    /// wait for one slice, not for everything uncounted (a prune begins here: counted in one
    /// transaction, a store of 134,000 rows held a writer for 0.7 s).
    /// Returns the longest any of its transactions took, in milliseconds.
    @discardableResult
    public func catchUpStamps(rowsPerTransaction: Int = 5_000) throws -> Double {
        let horizon = try store.horizon()
        var longest = 0.0
        func timed(_ body: () throws -> Bool) rethrows -> Bool {
            let start = DispatchTime.now().uptimeNanoseconds
            defer { longest = max(longest, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6) }
            return try body()
        }
        while try timed({ try catchUpSomeStamps(below: horizon, budget: rowsPerTransaction) }) {}
        try catchUpFanouts { body in _ = try timed { try body(); return false } }
        return longest
    }

    /// One transaction of `catchUpStamps`: whether there is more to count.
    private func catchUpSomeStamps(below horizon: Int, budget: Int) throws -> Bool {
        try db.transaction {
            try db.run("INSERT INTO settings(key, value) VALUES ('stats_marks_through', '0') ON CONFLICT (key) DO NOTHING")
            try db.run("UPDATE settings SET value = value WHERE key = 'stats_marks_through'")
            let through = Int(try db.first("SELECT value FROM settings WHERE key = 'stats_marks_through'") { $0.string(0) } ?? "0") ?? 0
            var reach: [Int: (seen: Int, read: Int)] = [:]
            var last = through
            let page = 500
            let marks = try db.query("""
                SELECT user, kind, through_ord, at, version FROM marks WHERE version > ? AND version < ? ORDER BY version LIMIT \(page)
                """, [through, horizon]) { (user: $0.int(0), kind: $0.string(1), ord: $0.int(2), at: $0.int64(3), version: $0.int(4)) }
            var left = budget
            var more = marks.count == page
            for mark in marks {
                var r: (seen: Int, read: Int)
                if let known = reach[mark.user] {
                    r = known
                } else {
                    r = try db.first("SELECT seen_ord, read_ord FROM stats_reach WHERE user = ?", [mark.user]) { ($0.int(0), $0.int(1)) } ?? (0, 0)
                }
                if mark.ord > r.seen, left > 0 {
                    let upTo = min(mark.ord, r.seen + left)
                    try store.countStamps("seen", column: "seen_at", user: mark.user, after: r.seen, through: upTo, at: mark.at)
                    left -= upTo - r.seen
                    r.seen = upTo
                }
                if mark.kind == "read", mark.ord > r.read, left > 0 {
                    let upTo = min(mark.ord, r.read + left)
                    try store.countStamps("read", column: "read_at", user: mark.user, after: r.read, through: upTo, at: mark.at)
                    left -= upTo - r.read
                    r.read = upTo
                }
                reach[mark.user] = r
                // A mark counted only in part is taken again by the next transaction, from
                // where its person's reach now stands.
                guard mark.ord <= r.seen, mark.kind != "read" || mark.ord <= r.read else {
                    more = true
                    break
                }
                last = mark.version
                if left <= 0 {
                    more = true
                    break
                }
            }
            for (user, r) in reach {
                try db.run("""
                    INSERT INTO stats_reach(user, seen_ord, read_ord) VALUES (?, ?, ?)
                    ON CONFLICT (user) DO UPDATE SET seen_ord = excluded.seen_ord, read_ord = excluded.read_ord
                    """, user, r.seen, r.read)
            }
            if last != through { try db.run("UPDATE settings SET value = ? WHERE key = 'stats_marks_through'", String(last)) }
            return more
        }
    }

    /// The fan-outs' load entries, each from its event's rows (its id range), a fan-out a
    /// transaction.
    private func catchUpFanouts(timed: (() throws -> Void) throws -> Void) throws {
        let pending = try db.query("SELECT event, hour FROM stats_pending ORDER BY event") { (event: $0.int(0), hour: $0.int64(1)) }
        for fanout in pending {
            try timed { try db.transaction {
                // One count at a time (the watermark's row locked); counted by another reader
                // meanwhile, there is nothing to add.
                try db.run("UPDATE settings SET value = value WHERE key = 'stats_marks_through'")
                guard try db.scalar("SELECT count(*) FROM stats_pending WHERE event = ?", fanout.event) == 1 else { return }
                for (table, slot, upsert) in [("push_load", "?", StatsCounters.upsertLoad), ("push_daily", "? / 24", StatsCounters.upsertDaily)] {
                    let column = table == "push_load" ? "hour" : "day"
                    try db.cached("""
                        INSERT INTO \(table)(\(column), user, category, sent, held)
                        SELECT \(slot), n.recipient, \(StatsCounters.categorySQL(StatsCounters.kindSQL("n"))),
                               sum(CASE WHEN n.push = 'sent' THEN 1 ELSE 0 END), sum(CASE WHEN n.push = 'sent' THEN 0 ELSE 1 END)
                        FROM events AS e CROSS JOIN notifications AS n
                        WHERE e.id = ? AND n.id >= e.first_row AND n.id <= e.last_row AND +n.event = e.id
                          AND n.push IN ('sent', 'suppressed:dailyCeiling')
                        GROUP BY n.recipient, \(StatsCounters.categorySQL(StatsCounters.kindSQL("n")))
                        \(upsert)
                        """).bind([fanout.hour, fanout.event]).run()
                }
                try db.run("DELETE FROM stats_pending WHERE event = ?", fanout.event)
            } }
        }
    }

    /// The counters as the rows, suppressions and stamps say they should be, into tables named
    /// with `prefix` (`""` rebuilds the store's own; tests recount into `recount_` and compare).
    public func recount(into prefix: String = "") throws {
        let kind = StatsCounters.kindSQL("n")
        let category = StatsCounters.categorySQL(kind)
        let hour = "n.created_at / \(StatsCounters.hour)"
        let earliestMark = StatsCounters.firstMarkSQL(read: false), earliestRead = StatsCounters.firstMarkSQL(read: true)
        func earliest(_ a: String, _ b: String) -> String {
            "CASE WHEN \(a) IS NULL THEN \(b) WHEN \(b) IS NULL THEN \(a) WHEN \(a) < \(b) THEN \(a) ELSE \(b) END"
        }
        // Each row's stamps, the marks looked up once per row (materialized: an expression
        // naming them several times must not run the lookups again).
        let stamped = """
            WITH marked AS MATERIALIZED (
                SELECT \(hour) AS hour, \(kind) AS kind, n.created_at, n.seen_at, n.read_at,
                       \(earliestMark) AS mark_seen, \(earliestRead) AS mark_read
                FROM notifications AS n),
            times AS MATERIALIZED (
                SELECT hour, kind, created_at, \(earliest("read_at", "mark_read")) AS read_time,
                       \(earliest("seen_at", "mark_seen")) AS seen_time FROM marked),
            stamps AS MATERIALIZED (
                SELECT hour, kind, 'read' AS stamp, read_time - created_at AS d FROM times WHERE read_time IS NOT NULL
                UNION ALL
                SELECT hour, kind, 'seen', \(earliest("seen_time", "read_time")) - created_at FROM times
                WHERE seen_time IS NOT NULL OR read_time IS NOT NULL)
            """
        try db.transaction {
            for table in ["stats_rows", "stats_withheld", "stats_stamps", "push_load", "push_daily", "stats_delivery"] {
                if !prefix.isEmpty {
                    try db.execute("DROP TABLE IF EXISTS \(prefix)\(table)")
                    try db.execute("CREATE TABLE \(prefix)\(table) AS SELECT * FROM \(table) WHERE false")
                } else {
                    try db.execute("DELETE FROM \(table)")
                }
            }
            if prefix.isEmpty {
                // Every mark and fan-out is counted by the recount: the next catch-up starts after them.
                try db.execute("DELETE FROM stats_pending")
                try db.execute("DELETE FROM stats_reach")
                try db.run("""
                    INSERT INTO stats_reach(user, seen_ord, read_ord)
                    SELECT user, seen_ord, read_ord FROM inboxes WHERE seen_ord > 0 OR read_ord > 0
                    """)
                try db.run("""
                    INSERT INTO settings(key, value) VALUES ('stats_marks_through', ?)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """, String(try db.scalar("SELECT coalesce(max(version), 0) FROM marks") ?? 0))
            }
            try db.run("""
                INSERT INTO \(prefix)stats_rows(hour, kind, category, push, n)
                SELECT \(hour), \(kind), \(category), n.push, count(*) FROM notifications AS n
                GROUP BY \(hour), \(kind), \(category), n.push
                """)
            try db.run("""
                INSERT INTO \(prefix)push_load(hour, user, category, sent, held)
                SELECT \(hour), n.recipient, \(category), sum(CASE WHEN n.push = 'sent' THEN 1 ELSE 0 END),
                       sum(CASE WHEN n.push = 'sent' THEN 0 ELSE 1 END)
                FROM notifications AS n WHERE n.push IN ('sent', 'suppressed:dailyCeiling')
                GROUP BY \(hour), n.recipient, \(category)
                """)
            try db.run("""
                INSERT INTO \(prefix)push_daily(day, user, category, sent, held)
                SELECT hour / 24, user, category, sum(sent), sum(held) FROM \(prefix)push_load GROUP BY hour / 24, user, category
                """)
            try db.run("""
                INSERT INTO \(prefix)stats_withheld(hour, kind, reason, n)
                SELECT e.at / \(StatsCounters.hour), s.kind, s.reason, count(*) FROM suppressions AS s JOIN events AS e ON e.id = s.event
                GROUP BY e.at / \(StatsCounters.hour), s.kind, s.reason
                """)
            // Each entry: made; how it ended; retried; and a sent one's time to its answer (its
            // last attempt's start and latency).
            let entries = """
                SELECT n.created_at / \(StatsCounters.hour) AS hour, o.state, o.attempts,
                       \(StatsCounters.lastReasonSQL) AS reason, \(StatsCounters.lastAnswerSQL) - n.created_at AS d,
                       CASE WHEN o.held = 1 THEN o.due_at - n.created_at END AS h
                FROM outbox AS o JOIN notifications AS n ON n.id = o.row
                """
            try db.run("""
                INSERT INTO \(prefix)stats_delivery(hour, outcome, reason, n)
                SELECT hour, outcome, reason, count(*) FROM (
                    SELECT hour, 'entries' AS outcome, '' AS reason FROM (\(entries)) AS e
                    UNION ALL SELECT hour, CASE state WHEN 'dropped' THEN 'dropped' WHEN 'dead' THEN 'dead'
                                                      WHEN 'superseded' THEN 'superseded' ELSE 'sent' END,
                                     CASE state WHEN 'dropped' THEN coalesce(reason, 'unknown') ELSE '' END
                              FROM (\(entries)) AS e WHERE state IN ('sent', 'dead', 'dropped', 'superseded')
                    UNION ALL SELECT hour, 'retried', '' FROM (\(entries)) AS e
                              WHERE attempts > 1 AND state IN ('sent', 'dead', 'dropped')
                    UNION ALL SELECT hour, 'answered', CAST(\(StampBuckets.sql("(CASE WHEN d < 0 THEN 0 ELSE d END)")) AS TEXT)
                              FROM (\(entries)) AS e WHERE state = 'sent' AND d IS NOT NULL
                    UNION ALL SELECT hour, 'quietHeld', CAST(\(StampBuckets.sql("(CASE WHEN h < 0 THEN 0 ELSE h END)")) AS TEXT)
                              FROM (\(entries)) AS e WHERE state = 'sent' AND h IS NOT NULL) AS x
                GROUP BY hour, outcome, reason
                """)
            try db.run("""
                \(stamped)
                INSERT INTO \(prefix)stats_stamps(hour, kind, category, stamp, bucket, n)
                SELECT hour, kind, \(StatsCounters.categorySQL("kind")), stamp, \(StampBuckets.sql("d")), count(*) FROM stamps
                GROUP BY hour, kind, stamp, \(StampBuckets.sql("d"))
                """)
        }
    }
}
