import Foundation
import Notifications
import SQLite
import Wire

/// Reading the replica: typed rows, cards a page at a time, entities.
extension Replica {
    static let rowColumns = """
        id, version, event, created_at, kind, actor, title, body, face, image, facepile, tap, thread, push,
        step, journey, comment, tier, seen_at, read_at, deleted, withheld, members, action
        """

    /// Reads a stored row; its seen and read state comes from its own stamps and `marks`.
    static func row(_ r: Row, recipient: String, marks: MarkIndex) throws -> ActivityRow {
        let id = r.int(0)
        let tap = (try? JSON.parse(r.string(11))).flatMap(Tap.init(json:)) ?? .link(Tap.feedLink)
        let facepile = r.optionalString(10).map { $0.split(separator: "\n").map(String.init) }
        return ActivityRow(
            id: id, event: r.string(2), recipient: recipient, kind: try r.decoded(4, table: "rows", column: "kind", Kind.init(rawValue:)),
            actor: r.optionalString(5), title: r.string(6), body: r.string(7),
            media: Media(face: r.optionalString(8), image: r.optionalString(9), facepile: facepile), tap: tap,
            thread: r.string(12), push: try r.decoded(13, table: "rows", column: "push", PushStatus.init),
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
        return try db.query(sql, values) { try Replica.row($0, recipient: recipient, marks: marks) }
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

    /// The rows the filter lets through, newest first, older than row `before` when given.
    public func rows(matching filter: RowFilter, before: Int? = nil, limit: Int) throws -> [ActivityRow] {
        try locked {
            let (condition, values) = filter.condition(readThrough: try markIndex().readThrough)
            return try query("SELECT \(Replica.rowColumns) FROM rows WHERE id < ? AND \(condition) ORDER BY id DESC LIMIT ?",
                             [before ?? Int.max] + values + [limit])
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
            try db.first("SELECT mode FROM alerts WHERE target = ?", [target.key]) {
                try $0.decoded(0, table: "alerts", column: "mode", AlertMode.init(rawValue:))
            }
        } ?? .default
    }

    // MARK: Entities

    public func person(_ id: String) throws -> PersonEntity? {
        try locked {
            try db.first("""
                SELECT id, username, name, avatar_url, private, state, following, follows_you, requested, requested_you
                FROM users WHERE id = ?
                """, [id]) { r in
                PersonEntity(id: r.string(0), username: r.string(1), name: r.string(2), avatarUrl: r.optionalString(3),
                             isPrivate: r.bool(4), state: try r.decoded(5, table: "people", column: "state", Event.AccountState.init(rawValue:)),
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
