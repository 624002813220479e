import Foundation
import Notifications
import SQLite
import Wire

/// One card of the Activity list: a step's rows of one day stacked, or a row alone.
public struct ListCard: Equatable, Sendable {
    public var key: String
    public var newest: ActivityRow
    public var rows: Int
    /// Distinct people among the card's rows.
    public var people: Int
    /// The names of up to four of them, newest first: the facepile.
    public var faces: [String]
    /// The step's caption, for a step's thread (from the step, or the newest row's copy).
    public var caption: String?
    /// Rows that arrived after `newAbove` (counted up to `ListCard.newRowsCounted`).
    public var newRows: Int
    public var allDeleted: Bool
    /// Rows not read yet (counted up to `ListCard.newRowsCounted`): the card stands unread
    /// while it holds one, collapsed or not.
    public var unreadRows: Int
    /// Whether one of the unread rows arrived after `newAbove`: the card carries the dot.
    public var newUnread: Bool

    public var isThread: Bool { rows > 1 }

    public init(key: String, newest: ActivityRow, rows: Int, people: Int, faces: [String], caption: String?, newRows: Int,
                allDeleted: Bool, unreadRows: Int? = nil, newUnread: Bool? = nil) {
        self.unreadRows = unreadRows ?? (newest.readAt == nil ? 1 : 0)
        self.newUnread = newUnread ?? (newest.readAt == nil && newRows > 0)
        self.key = key
        self.newest = newest
        self.rows = rows
        self.people = people
        self.faces = faces
        self.caption = caption
        self.newRows = newRows
        self.allDeleted = allDeleted
    }

    /// A row of a filtered list, standing alone.
    public init(single row: ActivityRow, newAbove: Int) {
        self.init(key: "row:\(row.id)", newest: row, rows: 1, people: 1, faces: [row.title], caption: nil,
                  newRows: row.id > newAbove ? 1 : 0, allDeleted: row.deleted)
    }

    /// New rows counted at most, per card: "999+ new" is as telling as an exact count.
    public static let newRowsCounted = 999
}

/// Reading the replica: typed rows, cards a page at a time, entities.
extension Replica {
    static let rowColumns = """
        id, version, event, created_at, kind, actor, title, body, face, image, facepile, tap, thread, push,
        step, journey, comment, tier, seen_at, read_at, deleted, withheld, members, action
        """

    /// Reads a stored row; its seen and read state comes from its own stamps and `marks`.
    static func row(_ r: Row, recipient: String, marks: MarkIndex) -> ActivityRow {
        let id = r.int(0)
        let tap = (try? JSON.parse(r.string(11))).flatMap(Tap.init(json:)) ?? .link(Tap.feedLink)
        let facepile = r.optionalString(10).map { $0.split(separator: "\n").map(String.init) }
        return ActivityRow(
            id: id, event: r.string(2), recipient: recipient, kind: Kind(rawValue: r.string(4)) ?? .announcement,
            actor: r.optionalString(5), title: r.string(6), body: r.string(7),
            media: Media(face: r.optionalString(8), image: r.optionalString(9), facepile: facepile), tap: tap,
            thread: r.string(12), push: PushStatus(r.string(13)) ?? .sent,
            subject: RowSubject(step: r.optionalString(14), journey: r.optionalString(15), comment: r.optionalString(16),
                                tier: r.optionalString(17)),
            createdAt: r.int64(3), version: r.int(1),
            seenAt: MarkIndex.earliest(r.optionalInt64(18), marks.seen(id)),
            readAt: MarkIndex.earliest(r.optionalInt64(19), marks.read(id)),
            deleted: r.bool(20), withheld: r.bool(21), members: r.optionalInt(22),
            action: r.optionalString(23).flatMap(Kind.init(rawValue:)))
    }

    func query(_ sql: String, _ values: [SQLBindable]) throws -> [ActivityRow] {
        let marks = try markIndex()
        let recipient = try meta("user") ?? ""
        return try db.query(sql, values) { Replica.row($0, recipient: recipient, marks: marks) }
    }

    /// The newest rows first (in the order they arrived).
    public func rows(limit: Int = 500) throws -> [ActivityRow] {
        try locked { try query("SELECT \(Replica.rowColumns) FROM rows ORDER BY id DESC LIMIT ?", [limit]) }
    }

    public func row(_ id: Int) throws -> ActivityRow? {
        try locked { try query("SELECT \(Replica.rowColumns) FROM rows WHERE id = ?", [id]).first }
    }

    /// The newest row's id (0 when there is none): rows past the marks arrived since.
    public var newestRow: Int { get throws { try locked { try db.scalar("SELECT max(id) FROM rows") ?? 0 } } }

    /// How many rows a card holds.
    public func rowCount(inCard key: String) throws -> Int {
        try locked { try db.scalar("SELECT rows FROM cards WHERE key = ?", key) ?? 0 }
    }

    /// The newest rows of a push thread (`step:ID`, `user:ID`, …), newest first.
    public func rows(inThread thread: String, limit: Int) throws -> [ActivityRow] {
        try locked {
            if thread.hasPrefix("step:") {
                return try query("SELECT \(Replica.rowColumns) FROM rows WHERE step = ? AND thread = ? ORDER BY id DESC LIMIT ?",
                                 [String(thread.dropFirst(5)), thread, limit])
            }
            return try query("SELECT \(Replica.rowColumns) FROM rows WHERE thread = ? ORDER BY id DESC LIMIT ?", [thread, limit])
        }
    }

    /// The rows of one card, newest first (at most `limit`).
    public func rows(inCard key: String, limit: Int = 500) throws -> [ActivityRow] {
        try locked { try query("SELECT \(Replica.rowColumns) FROM rows WHERE card = ? ORDER BY id DESC LIMIT ?", [key, limit]) }
    }

    /// The rows the filter lets through, newest first, older than row `before` when given.
    public func rows(matching filter: RowFilter, before: Int? = nil, limit: Int) throws -> [ActivityRow] {
        try locked {
            let (condition, values) = filter.condition(readThrough: try markIndex().readThrough)
            return try query("SELECT \(Replica.rowColumns) FROM rows WHERE id < ? AND \(condition) ORDER BY id DESC LIMIT ?",
                             [before ?? Int.max] + values + [limit])
        }
    }

    /// The hearts and shares on a step that reached the reader as rows, newest first: the
    /// people behind a stacked "and 12 others".
    public func interactions(onStep step: String, limit: Int = 500) throws -> [ActivityRow] {
        try locked {
            try query("""
                SELECT \(Replica.rowColumns) FROM rows
                WHERE step = ? AND kind IN ('heart', 'share', 'steppedWithHeart', 'steppedWithShare', 'batch')
                ORDER BY id DESC LIMIT ?
                """, [step, limit])
        }
    }

    /// The reader's custom follow alert for a person or a journey (`default` when none).
    public func alert(for target: AlertTarget) throws -> AlertMode {
        try locked {
            try db.first("SELECT mode FROM alerts WHERE target = ?", [target.key]) { AlertMode(rawValue: $0.string(0)) }
        }.flatMap { $0 } ?? .default
    }

    // MARK: Cards, a page at a time

    /// Cards older than `before` (a row id; the newest when nil), newest first.
    public func cards(before: Int? = nil, limit: Int, newAbove: Int) throws -> [ListCard] {
        try locked {
            let found = try db.query("SELECT key, newest, oldest, rows, people FROM cards WHERE newest < ? ORDER BY newest DESC LIMIT ?",
                                     [before ?? Int.max, limit]) { ($0.string(0), $0.int(1), $0.int(2), $0.int(3), $0.int(4)) }
            return try found.compactMap { try card($0, newAbove: newAbove) }
        }
    }

    /// Cards newer than `after` (a row id), oldest first: the cards just above a page.
    public func cards(after: Int, limit: Int, newAbove: Int) throws -> [ListCard] {
        try locked {
            let found = try db.query("SELECT key, newest, oldest, rows, people FROM cards WHERE newest > ? ORDER BY newest LIMIT ?",
                                     [after, limit]) { ($0.string(0), $0.int(1), $0.int(2), $0.int(3), $0.int(4)) }
            return try found.compactMap { try card($0, newAbove: newAbove) }
        }
    }

    /// The card a row belongs to: its key and its newest row.
    public func card(holding row: Int) throws -> (key: String, newest: Int)? {
        try locked {
            try db.first("SELECT c.key, c.newest FROM rows AS r JOIN cards AS c ON c.key = r.card WHERE r.id = ?", [row]) {
                ($0.string(0), $0.int(1))
            }
        }
    }

    /// How many cards stand above the card whose newest row is `newest` (counted up to `limit`).
    public func cardsAbove(_ newest: Int, limit: Int) throws -> Int {
        try locked {
            try db.scalar("SELECT count(*) FROM (SELECT 1 FROM cards WHERE newest > ? LIMIT ?)", newest, limit) ?? 0
        }
    }

    /// Unread rows per category, each counted up to `limit` (a batch by what its people did):
    /// the tabs' counts.
    public func unreadCounts(upTo limit: Int) throws -> [Category: Int] {
        try locked {
            let through = try markIndex().readThrough
            var counts: [Category: Int] = [:]
            for category in Category.allCases where !RowFilter.kinds(of: category).isEmpty {
                let names = RowFilter.kinds(of: category).map(\.rawValue)
                let marks = names.map { _ in "?" }.joined(separator: ", ")
                let rows = try db.first("""
                    SELECT count(*) FROM (SELECT 1 FROM rows WHERE kind IN (\(marks)) AND id > ? AND read_at IS NULL LIMIT ?)
                    """, names + [through, limit]) { $0.int(0) } ?? 0
                let batches = try db.first("""
                    SELECT count(*) FROM (SELECT 1 FROM rows WHERE kind = 'batch' AND action IN (\(marks)) AND id > ? AND read_at IS NULL LIMIT ?)
                    """, names + [through, limit]) { $0.int(0) } ?? 0
                counts[category] = min(limit, rows + batches)
            }
            return counts
        }
    }

    /// How many cards the list has: a count of an index, for the position shown beside the list.
    public func cardCount() throws -> Int {
        try locked { try db.scalar("SELECT count(*) FROM cards") ?? 0 }
    }

    private func card(_ found: (key: String, newest: Int, oldest: Int, rows: Int, people: Int), newAbove: Int) throws -> ListCard? {
        guard let newest = try query("SELECT \(Replica.rowColumns) FROM rows WHERE id = ?", [found.newest]).first else { return nil }
        var faces: [String] = []
        var caption: String?
        var newRows = 0
        var allDeleted = newest.deleted
        var unreadRows = 0
        var newUnread = false
        if found.rows > 1 {
            // The newest distinct people, from the newest rows (a person may have many): read
            // until four are found, so a card of a million rows costs what a card of ten does.
            try db.cached("SELECT title FROM rows WHERE card = ? ORDER BY id DESC LIMIT 200").bind([found.key]).forEach { row in
                let name = row.string(0)
                if !faces.contains(name) { faces.append(name) }
                return faces.count < 4
            }
            if let step = newest.subject.step ?? newest.tap.stepId {
                caption = try db.first("SELECT caption FROM steps WHERE id = ?", [step]) { $0.string(0) }
            }
            if found.oldest > newAbove {
                newRows = min(found.rows, ListCard.newRowsCounted)  // all of it arrived since
            } else if found.newest > newAbove {
                newRows = try db.scalar("SELECT count(*) FROM (SELECT 1 FROM rows WHERE card = ? AND id > ? LIMIT ?)",
                                        found.key, newAbove, ListCard.newRowsCounted) ?? 0
            }
            allDeleted = try db.scalar("SELECT NOT EXISTS (SELECT 1 FROM rows WHERE card = ? AND deleted = 0)", found.key) == 1
            // Unread: no stamp of its own and past every read mark.
            let readThrough = try markIndex().readThrough
            unreadRows = try db.scalar("""
                SELECT count(*) FROM (SELECT 1 FROM rows WHERE card = ? AND id > ? AND read_at IS NULL LIMIT ?)
                """, found.key, readThrough, ListCard.newRowsCounted) ?? 0
            if unreadRows > 0, found.newest > newAbove {
                newUnread = try db.scalar("SELECT EXISTS (SELECT 1 FROM rows WHERE card = ? AND id > ? AND read_at IS NULL)",
                                          found.key, max(readThrough, newAbove)) == 1
            }
        } else {
            faces = [newest.title]
            newRows = newest.id > newAbove ? 1 : 0
            unreadRows = newest.readAt == nil ? 1 : 0
            newUnread = unreadRows > 0 && newRows > 0
        }
        return ListCard(key: found.key, newest: newest, rows: found.rows, people: found.people, faces: faces,
                        caption: caption, newRows: newRows, allDeleted: allDeleted, unreadRows: unreadRows, newUnread: newUnread)
    }

    // MARK: Entities

    public func person(_ id: String) throws -> PersonEntity? {
        try locked {
            try db.first("""
                SELECT id, username, name, avatar_url, private, state, following, follows_you, requested, requested_you
                FROM users WHERE id = ?
                """, [id]) { r in
                PersonEntity(id: r.string(0), username: r.string(1), name: r.string(2), avatarUrl: r.optionalString(3),
                             isPrivate: r.bool(4), state: Event.AccountState(rawValue: r.string(5)) ?? .active,
                             relationship: Relationship(following: r.bool(6), followsYou: r.bool(7), requested: r.bool(8),
                                                        requestedYou: r.bool(9)))
            }
        }
    }

    public func step(_ id: String) throws -> StepEntity? {
        try locked {
            try db.first("""
                SELECT id, journey, journey_title, owner, caption, photo_url, final, published_at, deleted, hearts, shares
                FROM steps WHERE id = ?
                """, [id]) { r in
                StepEntity(id: r.string(0), journey: r.string(1), journeyTitle: r.string(2), owner: r.string(3),
                           caption: r.string(4), photoUrl: r.optionalString(5), isFinal: r.bool(6),
                           publishedAt: r.optionalInt64(7), deleted: r.bool(8), hearts: r.int(9), shares: r.int(10))
            }
        }
    }

    /// A step's comments as last synced, oldest first.
    public func comments(ofStep step: String) throws -> [CommentEntity] {
        try locked {
            try db.query("SELECT id, step, author, text, parent, at, deleted FROM comments WHERE step = ? ORDER BY at, id", [step]) { r in
                CommentEntity(id: r.string(0), step: r.string(1), author: r.string(2), text: r.optionalString(3),
                              parent: r.optionalString(4), at: r.int64(5), deleted: r.bool(6))
            }
        }
    }

    /// A journey with its steps (captions from the steps held) and people panel.
    public func journey(_ id: String) throws -> JourneyEntity? {
        try locked {
            guard let head = try db.first("SELECT title, owner FROM journeys WHERE id = ?", [id], { ($0.string(0), $0.string(1)) })
            else { return nil }
            let steps = try db.query("""
                SELECT j.step, j.final, j.published_at, s.caption, s.photo_url FROM journey_steps AS j
                LEFT JOIN steps AS s ON s.id = j.step WHERE j.journey = ? ORDER BY j.position
                """, [id]) { r in
                JourneyEntity.Step(id: r.string(0), isFinal: r.bool(1), publishedAt: r.optionalInt64(2),
                                   caption: r.optionalString(3), photoUrl: r.optionalString(4))
            }
            let people = try db.query("SELECT user, tier, at FROM supporters WHERE journey = ? ORDER BY position", [id]) { r in
                JourneyEntity.Supporter(user: r.string(0), tier: r.string(1), at: r.int64(2))
            }
            return JourneyEntity(id: id, title: head.0, owner: head.1, steps: steps, people: people)
        }
    }
}
