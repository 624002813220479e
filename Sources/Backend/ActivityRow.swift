import Notifications
import SQLite

/// One notification row as the recipient's Activity shows it and the contract prints it.
public struct ActivityRow: Sendable {
    public var id: Int
    public var event: String
    public var recipient: String
    public var kind: Kind
    public var actor: String?
    public var title: String
    public var body: String
    public var media: Media
    /// The tap destination as stored: contract JSON text.
    public var tapJSON: String
    public var thread: String
    public var push: PushStatus
    public var createdAt: Int64
    public var version: Int
    public var seenAt: Int64?
    public var readAt: Int64?
    public var deleted: Bool

    /// A content column: the row's own, or its fan-out event's when the row shares it.
    static func content(_ column: String) -> String {
        "CASE WHEN n.title IS NULL THEN e.\(column) ELSE n.\(column) END"
    }

    static let select = """
        SELECT n.id, e.ext, r.ext, n.kind, a.ext,
               \(ActivityRow.content("title")), \(ActivityRow.content("body")), \(ActivityRow.content("face")),
               \(ActivityRow.content("image")), \(ActivityRow.content("tap")), \(ActivityRow.content("thread")), n.push,
               n.created_at, n.version, n.seen_at, n.read_at, n.deleted
        FROM notifications AS n JOIN events AS e ON e.id = n.event JOIN users AS r ON r.id = n.recipient
             LEFT JOIN users AS a ON a.id = n.actor
        """

    init(id: Int, event: String, recipient: String, kind: Kind, actor: String?, title: String, body: String,
         media: Media, tapJSON: String, thread: String, push: PushStatus, createdAt: Int64, version: Int,
         seenAt: Int64?, readAt: Int64?, deleted: Bool) {
        self.id = id
        self.event = event
        self.recipient = recipient
        self.kind = kind
        self.actor = actor
        self.title = title
        self.body = body
        self.media = media
        self.tapJSON = tapJSON
        self.thread = thread
        self.push = push
        self.createdAt = createdAt
        self.version = version
        self.seenAt = seenAt
        self.readAt = readAt
        self.deleted = deleted
    }

    init(_ row: Row) {
        id = row.int(0)
        event = row.string(1)
        recipient = row.string(2)
        kind = Kind(rawValue: row.string(3)) ?? .announcement
        actor = row.optionalString(4)
        title = row.string(5)
        body = row.string(6)
        media = Media(face: row.optionalString(7), image: row.optionalString(8))
        tapJSON = row.string(9)
        thread = row.string(10)
        push = PushStatus(row.string(11)) ?? .sent
        createdAt = row.int64(12)
        version = row.int(13)
        seenAt = row.optionalInt64(14)
        readAt = row.optionalInt64(15)
        deleted = row.bool(16)
    }

    /// Where a tap lands (the stored JSON, decoded).
    public var tap: Tap {
        (try? JSON.parse(tapJSON)).flatMap(Tap.init(json:)) ?? .link(Tap.feedLink)
    }

    /// The `stepo ingest` line: exactly the contract's keys, in its order.
    public var contractJSON: JSON {
        .members([
            ("event", .string(event)), ("id", .int(id)), ("recipient", .string(recipient)),
            ("kind", .string(kind.rawValue)), ("category", .string(kind.category.rawValue)),
            ("priority", .string(kind.priority.rawValue)), ("actor", actor.map(JSON.string)),
            ("title", .string(title)), ("body", .string(body)), ("media", media.json), ("tap", .fragment(tapJSON)),
            ("thread", .string(thread)), ("push", .string(push.description)),
        ])
    }

    /// The contract's keys plus the row's state, as the activity listing and sync carry it.
    public var json: JSON {
        guard case .object(var members) = contractJSON else { return contractJSON }
        members += [
            ("version", .int(version)), ("createdAt", .string(Timestamp.format(createdAt))),
            ("seenAt", seenAt.map { .string(Timestamp.format($0)) } ?? .null),
            ("readAt", readAt.map { .string(Timestamp.format($0)) } ?? .null),
            ("deleted", .bool(deleted)),
        ]
        return .object(members)
    }
}

/// The two numbers every state change answers with. The badge is `unseen`.
public struct Counts: Equatable, Sendable {
    public var unseen: Int
    public var unread: Int

    public init(unseen: Int, unread: Int) {
        self.unseen = unseen
        self.unread = unread
    }

    public var json: JSON { .object([("unseen", .int(unseen)), ("unread", .int(unread))]) }
}
