import Notifications
import Storage
import Wire

/// A row as stored: the row, and what the store keeps beside it.
struct StoredRow {
    var row: ActivityRow
    /// The row's place among its recipient's rows (see `inboxes`).
    var ord: Int
    /// Stamps made on this row alone; marks add to them (see `Store.applyMarks`).
    var ownSeenAt: Int64?
    var ownReadAt: Int64?
    var recipientKey: Int
    var actorKey: Int?
    var stepKey: Int?
    var journeyKey: Int?
    var commentKey: Int?
}

/// Reads stored rows into `StoredRow`s. A fan-out's rows share their event's content, so the
/// tap of the last row read is kept: a run of a million rows parses it once.
struct RowReader {
    private var lastTapText = ""
    private var lastTap = Tap.link(Tap.feedLink)

    /// A content column: the row's own, or its fan-out event's when the row shares it.
    static func content(_ column: String) -> String {
        "CASE WHEN n.title IS NULL THEN e.\(column) ELSE n.\(column) END"
    }

    static let select = """
        SELECT n.id, e.ext, r.ext, n.kind, a.ext,
               \(content("title")), \(content("body")), \(content("face")), \(content("image")), \(content("tap")),
               \(content("thread")), n.push, n.created_at, n.version, n.seen_at, n.read_at, n.deleted, n.ord,
               s.ext, j.ext, c.ext, n.tier, n.recipient, n.actor, n.step, n.journey, n.comment,
               n.members, n.action, n.facepile
        FROM notifications AS n JOIN events AS e ON e.id = n.event JOIN users AS r ON r.id = n.recipient
             LEFT JOIN users AS a ON a.id = n.actor LEFT JOIN steps AS s ON s.id = n.step
             LEFT JOIN journeys AS j ON j.id = n.journey LEFT JOIN comments AS c ON c.id = n.comment
        """

    mutating func read(_ r: Row) throws -> StoredRow {
        let tapText = r.string(9)
        if tapText != lastTapText {
            lastTapText = tapText
            lastTap = (try? JSON.parse(tapText)).flatMap(Tap.init(json:)) ?? .link(Tap.feedLink)
        }
        let row = ActivityRow(
            id: r.int(0), event: r.string(1), recipient: r.string(2), kind: try r.decoded(3, table: "notifications", column: "kind", Kind.init(rawValue:)),
            actor: r.optionalString(4), title: r.string(5), body: r.string(6),
            media: Media(face: r.optionalString(7), image: r.optionalString(8),
                         facepile: r.optionalString(29).map { $0.split(separator: "\n").map(String.init) }),
            tap: lastTap, thread: r.string(10),
            push: try r.decoded(11, table: "notifications", column: "push", PushStatus.init),
            subject: RowSubject(step: r.optionalString(18), journey: r.optionalString(19), comment: r.optionalString(20),
                                tier: r.optionalString(21)),
            createdAt: r.int64(12), version: r.int(13), seenAt: r.optionalInt64(14), readAt: r.optionalInt64(15),
            deleted: r.bool(16), members: r.optionalInt(27), action: r.optionalString(28).flatMap(Kind.init(rawValue:)))
        return StoredRow(row: row, ord: r.int(17), ownSeenAt: row.seenAt, ownReadAt: row.readAt, recipientKey: r.int(22),
                         actorKey: r.optionalInt(23), stepKey: r.optionalInt(24), journeyKey: r.optionalInt(25),
                         commentKey: r.optionalInt(26))
    }
}

/// Reading rows: by event, by id, a recipient's newest first.
extension Store {
    /// Reads an event's rows through `db` (any connection to the store's file), at most `limit`.
    static func forEachRow(ofEvent outcome: EventOutcome, in db: Connection, limit: Int? = nil,
                           _ body: (ActivityRow) throws -> Void) throws {
        guard let first = outcome.firstRow, let last = outcome.lastRow, limit ?? 1 > 0 else { return }
        var reader = RowReader()
        let statement = try limit.map { try db.cached(rowsOfEventSQL + " LIMIT ?").bind([first, last, outcome.eventKey, $0]) }
            ?? db.cached(rowsOfEventSQL).bind([first, last, outcome.eventKey])
        try statement.stream { try body(try reader.read($0).row) }
    }

    static let rowsOfEventSQL = "\(RowReader.select) WHERE n.id BETWEEN ? AND ? AND n.event = ? ORDER BY n.id"

    func storedActivity(of user: UserRecord, limit: Int, before: Int?) throws -> [StoredRow] {
        var reader = RowReader()
        var stored: [StoredRow]
        if let before, let start = try db.first("SELECT event FROM notifications WHERE id = ? AND recipient = ?",
                                                 [before, user.key], { $0.int(0) }) {
            stored = try db.query("""
                \(RowReader.select) WHERE n.recipient = ? AND (n.event < ? OR (n.event = ? AND n.id < ?))
                ORDER BY n.event DESC, n.id DESC LIMIT ?
                """, [user.key, start, start, before, limit]) { try reader.read($0) }
        } else {
            stored = try db.query("\(RowReader.select) WHERE n.recipient = ? ORDER BY n.event DESC, n.id DESC LIMIT ?",
                                  [user.key, limit]) { try reader.read($0) }
        }
        try applyMarks(to: &stored, of: user.key)
        return stored
    }

    func storedRow(_ id: Int) throws -> StoredRow? {
        var reader = RowReader()
        guard var stored = try db.first("\(RowReader.select) WHERE n.id = ?", [id], { try reader.read($0) }) else { return nil }
        var one = [stored]
        try applyMarks(to: &one, of: stored.recipientKey)
        stored = one[0]
        return stored
    }
}

extension Store {
    /// Each user's inbox: its rows, counts and stamps.
    public var inboxes: Inboxes { Inboxes(store: self) }
}

/// Each user's inbox, as a reader and its devices meet it: its rows, the badge's counts, and
/// the seen and read stamps.
public struct Inboxes {
    let store: Store
    var db: Connection { store.db }

    /// The rows created by one applied event, in id order.
    public func rows(ofEvent outcome: EventOutcome) throws -> [ActivityRow] {
        var rows: [ActivityRow] = []
        try forEachRow(ofEvent: outcome) { rows.append($0) }
        return rows
    }

    /// Calls `body` with each row of one applied event, in id order, without holding a
    /// fan-out's rows in memory; with `limit`, with the first `limit` rows only (a fan-out reads
    /// no more than those).
    public func forEachRow(ofEvent outcome: EventOutcome, limit: Int? = nil, _ body: (ActivityRow) throws -> Void) throws {
        // Rows written one by one (and batch changes) are kept; a fan-out's are read by range.
        if !outcome.writtenRows.isEmpty || outcome.rowCount == 0 {
            for row in outcome.writtenRows.prefix(limit ?? Int.max) { try body(row) }
            return
        }
        try Store.forEachRow(ofEvent: outcome, in: db, limit: limit, body)
    }

    /// Rows after `afterRow` (a row id), oldest first, at most `limit`: every row of the store,
    /// in the shape `stepo ingest` printed them, for a consumer resuming where it stopped.
    public func rows(afterRow: Int, limit: Int) throws -> [ActivityRow] {
        var reader = RowReader()
        return try db.query("\(RowReader.select) WHERE n.id > ? ORDER BY n.id LIMIT ?", [afterRow, limit]) { try reader.read($0).row }
    }

    /// A user's rows, newest first (in the order they arrived), with their seen and read
    /// state; `before` a row id to page on. As stored: what an operator inspects.
    public func activity(of user: UserRecord, limit: Int = 500, before: Int? = nil) throws -> [ActivityRow] {
        try store.storedActivity(of: user, limit: limit, before: before).map(\.row)
    }

    /// A user's rows as they may see them now: a row whose content they may no longer see (a
    /// block, a deletion, an account gone private or inactive) comes withheld, and a person
    /// out of sight leaves no face — the same rule a sync applies (see `SyncPages.page`).
    public func activityAsSeen(by user: UserRecord, limit: Int = 500) throws -> [ActivityRow] {
        let visibility = Visibility(store: store, viewer: user)
        return try store.storedActivity(of: user, limit: limit, before: nil).map { stored in
            let actorVisible = try visibility.canSeeActor(stored)
            if actorVisible, try visibility.canQuote(stored) { return stored.row }
            return stored.row.withholding(face: !actorVisible)
        }
    }

    /// The row `id` with its seen and read state, or nil.
    public func row(_ id: Int) throws -> ActivityRow? {
        try store.storedRow(id).map(\.row)
    }

    /// The recipient's row `id`, or nil when there is none or it is someone else's.
    public func row(_ id: Int, of user: UserRecord) throws -> ActivityRow? {
        guard let stored = try store.storedRow(id), stored.recipientKey == user.key else { return nil }
        return stored.row
    }
}
