import Notifications
import SQLite

/// Reading a recipient's activity and stamping it seen and read.
extension Store {
    /// The rows created by one applied event, in id order.
    public func rows(ofEvent outcome: EventOutcome) throws -> [ActivityRow] {
        guard let first = outcome.firstRow, let last = outcome.lastRow else { return [] }
        return try db.query(Store.rowsOfEventSQL, [first, last, outcome.eventKey], ActivityRow.init)
    }

    /// Calls `body` with each row of one applied event, in id order, without holding a
    /// fan-out's rows in memory.
    public func forEachRow(ofEvent outcome: EventOutcome, _ body: (ActivityRow) throws -> Void) throws {
        if outcome.writtenRows.count == outcome.rowCount {
            for row in outcome.writtenRows { try body(row) }
            return
        }
        try Store.forEachRow(ofEvent: outcome, in: db, body)
    }

    /// Reads an event's rows through `db` (any connection to the store's file).
    static func forEachRow(ofEvent outcome: EventOutcome, in db: Database, _ body: (ActivityRow) throws -> Void) throws {
        guard let first = outcome.firstRow, let last = outcome.lastRow else { return }
        try db.cached(rowsOfEventSQL).bind([first, last, outcome.eventKey]).forEach { try body(ActivityRow($0)) }
    }

    static let rowsOfEventSQL = "\(ActivityRow.select) WHERE n.id BETWEEN ? AND ? AND n.event = ? ORDER BY n.id"

    /// A user's rows, newest first.
    public func activity(of user: UserRecord, limit: Int = 500, before: Int64? = nil) throws -> [ActivityRow] {
        try db.query("""
            \(ActivityRow.select) WHERE n.recipient = ? AND n.created_at < ?
            ORDER BY n.created_at DESC, n.id DESC LIMIT ?
            """, [user.key, before ?? Int64.max, limit], ActivityRow.init)
    }

    public func row(_ id: Int) throws -> ActivityRow? {
        try db.first("\(ActivityRow.select) WHERE n.id = ?", [id], ActivityRow.init)
    }

    /// The recipient's row `id`, or nil when there is none or it is someone else's.
    public func row(_ id: Int, of user: UserRecord) throws -> ActivityRow? {
        try db.first("\(ActivityRow.select) WHERE n.id = ? AND n.recipient = ?", [id, user.key], ActivityRow.init)
    }

    /// Unseen and unread, counted fresh from the rows. Both read one partial index, of unread
    /// rows: read implies seen, so the unseen rows are the unread ones without a seen_at, a
    /// range at the front of the recipient's entries. Two range counts beat one pass that
    /// tests every entry.
    public func counts(for userKey: Int) throws -> Counts {
        let unseen = try db.scalar("SELECT count(*) FROM notifications WHERE recipient = ? AND read_at IS NULL AND seen_at IS NULL", userKey) ?? 0
        let unread = try db.scalar("SELECT count(*) FROM notifications WHERE recipient = ? AND read_at IS NULL", userKey) ?? 0
        return Counts(unseen: unseen, unread: unread)
    }

    /// Stamps seen every row of the user's up to `upTo` (a version; all rows when nil) that
    /// is not seen yet. The earliest stamp wins; nothing is ever unset.
    @discardableResult
    public func markSeen(_ user: UserRecord, upTo: Int? = nil, at: Int64) throws -> Counts {
        try db.transaction {
            let pending = try db.scalar("""
                SELECT EXISTS (SELECT 1 FROM notifications WHERE recipient = ? AND seen_at IS NULL AND version <= ?)
                """, user.key, upTo ?? Int.max) == 1
            if pending {
                try db.run("""
                    UPDATE notifications SET seen_at = ?, version = ?
                    WHERE recipient = ? AND seen_at IS NULL AND version <= ?
                    """, at, try stampVersion("seen", at: at), user.key, upTo ?? Int.max)
            }
            return try counts(for: user.key)
        }
    }

    /// Stamps row `id` read (and seen, if it was not). Returns nil when the row is not the user's.
    public func markRead(_ user: UserRecord, row id: Int, at: Int64) throws -> Counts? {
        try db.transaction {
            guard let row = try row(id, of: user) else { return nil }
            if row.readAt == nil {
                try db.run("UPDATE notifications SET read_at = ?, seen_at = coalesce(seen_at, ?), version = ? WHERE id = ?",
                           at, at, try stampVersion("read", at: at), id)
            }
            return try counts(for: user.key)
        }
    }
}
