import Notifications
import Storage
import Wire

/// A recipient's counters: how many rows, and how far the seen and read marks reach.
@_spi(Bench) public struct InboxCounters {
    public var total: Int
    var seenOrd: Int
    var readOrd: Int
    var seenAbove: Int
    var readAbove: Int

    var counts: Counts {
        Counts(unseen: total - seenOrd - seenAbove, unread: total - readOrd - readAbove)
    }
}

/// Seen, read and the badge, as O(1) arithmetic on a recipient's counters.
///
/// Every row has `ord`, its place among the recipient's rows. Opening Activity writes one
/// *mark* ("seen through ord N, at T") instead of stamping a million rows; a read of one row
/// stamps that row. A row's `seenAt` is its own stamp or the time of the first mark covering
/// it, whichever is earlier; nothing is ever unset.
extension Store {
    @_spi(Bench) public func counters(of userKey: Int) throws -> InboxCounters {
        if let known = recordMemo?.counters[userKey] { return known }
        return try counters(of: userKey, sql: Store.countersSQL)
    }

    /// The counters of `userKey`, held until the transaction ends, for a change computed from
    /// them: on PostgreSQL two devices stamping at once would otherwise both start from the
    /// same counters and one's change would be lost. (SQLite runs one writer at a time.)
    func countersForChange(of userKey: Int) throws -> InboxCounters {
        try counters(of: userKey, sql: Store.countersSQL + db.dialect.lockingRead)
    }

    private static let countersSQL = "SELECT total, seen_ord, read_ord, seen_above, read_above FROM inboxes WHERE user = ?"

    /// The counters of every user in `keys` (those with none have zeros), in one statement.
    func counters(ofEach keys: [Int]) throws -> [Int: InboxCounters] {
        var found: [Int: InboxCounters] = [:]
        for (user, counters) in try db.keyed("SELECT user, total, seen_ord, read_ord, seen_above, read_above FROM inboxes WHERE user IN (%)", keys, { r in
            (r.int(0), InboxCounters(total: r.int(1), seenOrd: r.int(2), readOrd: r.int(3), seenAbove: r.int(4), readAbove: r.int(5)))
        }) { found[user] = counters }
        for key in keys where found[key] == nil { found[key] = InboxCounters(total: 0, seenOrd: 0, readOrd: 0, seenAbove: 0, readAbove: 0) }
        return found
    }

    private func counters(of userKey: Int, sql: String) throws -> InboxCounters {
        try db.cached(sql).bind([userKey])
            .first { InboxCounters(total: $0.int(0), seenOrd: $0.int(1), readOrd: $0.int(2), seenAbove: $0.int(3), readAbove: $0.int(4)) }
            ?? InboxCounters(total: 0, seenOrd: 0, readOrd: 0, seenAbove: 0, readAbove: 0)
    }

    /// Unseen and unread counted the slow way, row by row, from the stamps and marks: what the
    /// counters must always equal. Rows at or below the prune mark count as gone (a prune
    /// stopped between its chunks leaves some there). For tests and checks, never a hot path.
    func recount(for userKey: Int) throws -> Counts {
        let unseen = try db.scalar("""
            SELECT count(*) FROM notifications AS n WHERE n.recipient = ? AND n.seen_at IS NULL
               AND NOT EXISTS (SELECT 1 FROM marks AS m WHERE m.user = n.recipient AND m.through_ord >= n.ord)
               AND NOT EXISTS (SELECT 1 FROM inboxes AS i WHERE i.user = n.recipient AND i.pruned_ord >= n.ord)
            """, userKey) ?? -1
        let unread = try db.scalar("""
            SELECT count(*) FROM notifications AS n WHERE n.recipient = ? AND n.read_at IS NULL
               AND NOT EXISTS (SELECT 1 FROM marks AS m WHERE m.user = n.recipient AND m.kind = 'read' AND m.through_ord >= n.ord)
               AND NOT EXISTS (SELECT 1 FROM inboxes AS i WHERE i.user = n.recipient AND i.pruned_ord >= n.ord)
            """, userKey) ?? -1
        return Counts(unseen: unseen, unread: unread)
    }

    /// The next ord of a recipient, taken (the counter moves): one row is being written for them.
    ///
    /// Two plain statements, not one `UPDATE … RETURNING`: SQLite runs RETURNING through a
    /// temporary table, and on ingest's path that cost three times the update itself.
    func takeOrd(for userKey: Int) throws -> Int {
        try db.run("UPDATE inboxes SET total = total + 1 WHERE user = ?", userKey)
        guard db.changes == 1 else {
            try db.run("INSERT INTO inboxes(user, total) VALUES (?, 1)", userKey)
            return 1
        }
        return try db.scalar("SELECT total FROM inboxes WHERE user = ?", userKey) ?? 1
    }

    /// The newest row of `userKey` made at or before version `upTo` (clamped to now): what a
    /// reader who synced through `upTo` has been shown. Rows made later are not covered, even
    /// when a change after `upTo` touched older ones: seen is what was shown.
    private func lastRow(of userKey: Int, through upTo: Int) throws -> (id: Int, ord: Int)? {
        try db.cached("""
            SELECT id, ord FROM notifications WHERE recipient = ? AND event <= ? ORDER BY event DESC, id DESC LIMIT 1
            """).bind([userKey, upTo]).first { ($0.int(0), $0.int(1)) }
    }

    /// Stamped rows (`column` is `seen_at` or `read_at`) with ord in (`after`, `through`]: what a
    /// mark passing over them takes off the count of rows stamped one by one.
    private func stampedRows(_ column: String, of userKey: Int, after: Int, through: Int) throws -> Int {
        try db.scalar("SELECT count(*) FROM notifications WHERE recipient = ? AND \(column) IS NOT NULL AND ord > ? AND ord <= ?",
                      userKey, after, through) ?? 0
    }

    func mark(_ kind: Mark.Kind, _ user: UserRecord, upTo: Int?, at: Int64) throws -> Counts {
        try db.transaction {
            var c = try countersForChange(of: user.key)
            let reach = min(upTo ?? Int.max, try currentVersion())
            guard let last = try lastRow(of: user.key, through: reach),
                  last.ord > (kind == .seen ? c.seenOrd : c.readOrd) else { return c.counts }
            if last.ord > c.seenOrd {
                c.seenAbove -= try stampedRows("seen_at", of: user.key, after: c.seenOrd, through: last.ord)
                c.seenOrd = last.ord
            }
            if kind == .read {
                c.readAbove -= try stampedRows("read_at", of: user.key, after: c.readOrd, through: last.ord)
                c.readOrd = last.ord
            }
            let version = try stampVersion(kind.rawValue, at: at)
            try db.run("INSERT INTO marks(user, version, kind, through_ord, through_row, at) VALUES (?, ?, ?, ?, ?, ?)",
                       user.key, version, kind.rawValue, last.ord, last.id, at)
            try db.run("UPDATE inboxes SET seen_ord = ?, seen_above = ?, read_ord = ?, read_above = ? WHERE user = ?",
                       c.seenOrd, c.seenAbove, c.readOrd, c.readAbove, user.key)
            return c.counts
        }
    }

    /// The marks of `userKey` made after version `after` and up to `through`, oldest first.
    func marks(of userKey: Int, after: Int, through: Int) throws -> [Mark] {
        try db.query("""
            SELECT kind, through_row, at, version FROM marks WHERE user = ? AND version > ? AND version <= ? ORDER BY version
            """, [userKey, after, through]) { row in
            Mark(kind: try row.decoded(0, table: "marks", column: "kind", Mark.Kind.init(rawValue:)), throughRow: row.int(1), at: row.int64(2), version: row.int(3))
        }
    }

    /// Fills each row's `seenAt` and `readAt` from its own stamps and the recipient's marks:
    /// the earliest stamp that covers it wins.
    ///
    /// Seen marks only ever reach further, as do read marks among themselves; a read mark may
    /// reach less far than an earlier seen mark (it then changed no row's `seenAt`). So the
    /// earliest mark covering a row is found among the marks from the lowest row of the page
    /// up to the first seen mark past the highest, and the first read mark past it.
    func applyMarks(to rows: inout [StoredRow], of userKey: Int) throws {
        guard let lowest = rows.map(\.ord).min(), let highest = rows.map(\.ord).max() else { return }
        let c = try counters(of: userKey)
        guard lowest <= c.seenOrd else { return }  // no mark reaches these rows
        var reaching: [(kind: Mark.Kind, ord: Int, at: Int64)] = []
        var done = false
        try db.cached("SELECT kind, through_ord, at FROM marks WHERE user = ? AND through_ord >= ? ORDER BY through_ord, version")
            .bind([userKey, lowest]).forEach { row in
                guard !done else { return }
                let mark = (kind: try row.decoded(0, table: "marks", column: "kind", Mark.Kind.init(rawValue:)), ord: row.int(1), at: row.int64(2))
                reaching.append(mark)
                done = mark.kind == .seen && mark.ord >= highest
            }
        var reads = reaching.filter { $0.kind == .read }
        if reads.last.map({ $0.ord < highest }) ?? true, c.readOrd >= highest,
           let beyond = try db.cached("""
               SELECT through_ord, at FROM marks WHERE user = ? AND kind = 'read' AND through_ord >= ? ORDER BY through_ord LIMIT 1
               """).bind([userKey, highest]).first({ (kind: Mark.Kind.read, ord: $0.int(0), at: $0.int64(1)) }) {
            reads.append(beyond)
        }
        // The earliest time among the marks from each one onwards (all of which reach further).
        var earliestFrom = reaching.map(\.at)
        for index in earliestFrom.indices.reversed().dropFirst() {
            earliestFrom[index] = min(earliestFrom[index], earliestFrom[index + 1])
        }
        /// The index of the first mark of `marks` (ordered by reach) that reaches `ord`.
        func firstReaching(_ marks: [(kind: Mark.Kind, ord: Int, at: Int64)], _ ord: Int) -> Int? {
            var low = 0, high = marks.count
            while low < high {
                let middle = (low + high) / 2
                if marks[middle].ord >= ord { high = middle } else { low = middle + 1 }
            }
            return low < marks.count ? low : nil
        }
        for index in rows.indices {
            let ord = rows[index].ord
            rows[index].row.seenAt = earliest(rows[index].ownSeenAt, firstReaching(reaching, ord).map { earliestFrom[$0] })
            rows[index].row.readAt = earliest(rows[index].ownReadAt, firstReaching(reads, ord).map { reads[$0].at })
        }
    }

    private func earliest(_ a: Int64?, _ b: Int64?) -> Int64? {
        switch (a, b) {
        case let (a?, b?): return min(a, b)
        default: return a ?? b
        }
    }
}

extension Inboxes {
    /// Unseen (the badge) and unread: O(1), from the counters.
    public func counts(for userKey: Int) throws -> Counts {
        try store.counters(of: userKey).counts
    }

    /// Marks every row `user` was shown up to version `upTo` (all rows when nil) seen: one mark,
    /// O(1) rows written. Returns fresh counts.
    @discardableResult
    public func markSeen(_ user: UserRecord, upTo: Int? = nil, at: Int64) throws -> Counts {
        try store.mark(.seen, user, upTo: upTo, at: at)
    }

    /// Marks every row `user` was shown up to version `upTo` (all when nil) read, and so seen.
    @discardableResult
    public func markAllRead(_ user: UserRecord, upTo: Int? = nil, at: Int64) throws -> Counts {
        try store.mark(.read, user, upTo: upTo, at: at)
    }

    /// Stamps row `id` read (and seen, if it was not). Returns nil when the row is not the user's.
    public func markRead(_ user: UserRecord, row id: Int, at: Int64) throws -> Counts? {
        try db.transaction {
            // The counters first, held: every writer that changes both a person's counters and
            // their rows takes the counters first (a push's ceiling check, then the batch it joins),
            // and a stamp changes only what the counters guard, so the row needs no lock of its own.
            var c = try store.countersForChange(of: user.key)
            guard let row = try db.first("SELECT ord, seen_at, read_at FROM notifications WHERE id = ? AND recipient = ?",
                                         [id, user.key], { (ord: $0.int(0), seen: $0.optionalInt64(1), read: $0.optionalInt64(2)) })
            else { return nil }
            guard row.read == nil, row.ord > c.readOrd else { return c.counts }
            let wasSeen = row.seen != nil || row.ord <= c.seenOrd
            try db.run("UPDATE notifications SET read_at = ?, seen_at = ?, version = ? WHERE id = ? AND recipient = ?",
                       at, wasSeen ? row.seen : at, try store.stampVersion("read", at: at), id, user.key)
            c.readAbove += 1
            try store.countStamp("read", row: id, user: user.key, at: at)
            if !wasSeen {
                c.seenAbove += 1
                try store.countStamp("seen", row: id, user: user.key, at: at)
            }
            try db.run("UPDATE inboxes SET seen_above = ?, read_above = ? WHERE user = ?", c.seenAbove, c.readAbove, user.key)
            return c.counts
        }
    }
}
