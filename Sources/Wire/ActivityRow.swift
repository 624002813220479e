import Notifications

/// What a row is about, beyond its tap: the step, journey and comment its copy may quote,
/// and a recognition's tier. A change of visibility finds the rows to mask by these.
public struct RowSubject: Equatable, Sendable {
    public var step: String?
    public var journey: String?
    public var comment: String?
    public var tier: String?

    public init(step: String? = nil, journey: String? = nil, comment: String? = nil, tier: String? = nil) {
        self.step = step
        self.journey = journey
        self.comment = comment
        self.tier = tier
    }

    public var isEmpty: Bool { step == nil && journey == nil && comment == nil && tier == nil }

    public var json: JSON {
        .members([("step", step.map(JSON.string)), ("journey", journey.map(JSON.string)),
                  ("comment", comment.map(JSON.string)), ("tier", tier.map(JSON.string))])
    }

    init(json: JSON?) throws {
        guard let json, !json.isNull else { self.init(); return }
        let m = try Members(json, "row.subject")
        self.init(step: try m.optionalString("step"), journey: try m.optionalString("journey"),
                  comment: try m.optionalString("comment"), tier: try m.optionalString("tier"))
    }
}

/// One notification row as its recipient's Activity shows it and the contract prints it.
public struct ActivityRow: Equatable, Sendable {
    public var id: Int
    public var event: String
    public var recipient: String
    public var kind: Kind
    public var actor: String?
    public var title: String
    public var body: String
    public var media: Media
    public var tap: Tap
    public var thread: String
    public var push: PushStatus
    public var subject: RowSubject
    public var createdAt: Int64
    public var version: Int
    public var seenAt: Int64?
    public var readAt: Int64?
    public var deleted: Bool
    /// The copy no longer quotes its content for this reader (deleted, or behind a block, a
    /// private or an inactive account): the body is `Copy.withheld`, the photo gone.
    public var withheld: Bool

    public init(id: Int, event: String, recipient: String, kind: Kind, actor: String?, title: String, body: String,
                media: Media, tap: Tap, thread: String, push: PushStatus, subject: RowSubject = RowSubject(),
                createdAt: Int64, version: Int, seenAt: Int64? = nil, readAt: Int64? = nil, deleted: Bool = false,
                withheld: Bool = false) {
        self.id = id
        self.event = event
        self.recipient = recipient
        self.kind = kind
        self.actor = actor
        self.title = title
        self.body = body
        self.media = media
        self.tap = tap
        self.thread = thread
        self.push = push
        self.subject = subject
        self.createdAt = createdAt
        self.version = version
        self.seenAt = seenAt
        self.readAt = readAt
        self.deleted = deleted
        self.withheld = withheld
    }

    /// This row with its quoted content taken out: the verb alone, no photo — and, when its
    /// actor is someone the reader may no longer see at all, no face either. The name stays:
    /// the row is the record of what happened.
    public func withholding(face: Bool = false) -> ActivityRow {
        var row = self
        if face { row.media.face = nil; row.media.facepile = nil }
        guard Copy.quotesContent(kind) else { return row }
        row.body = Copy.withheld(kind, tier: subject.tier)
        row.media.image = nil
        row.withheld = true
        return row
    }

    /// The `stepo ingest` line: exactly the contract's keys, in its order.
    public var contractJSON: JSON {
        .object(contractMembers)
    }

    private var contractMembers: [(String, JSON)] {
        var members: [(String, JSON)] = [
            ("event", .string(event)), ("id", .int(id)), ("recipient", .string(recipient)),
            ("kind", .string(kind.rawValue)), ("category", .string(kind.category.rawValue)),
            ("priority", .string(kind.priority.rawValue)),
        ]
        if let actor { members.append(("actor", .string(actor))) }
        members += [
            ("title", .string(title)), ("body", .string(body)), ("media", media.json), ("tap", .fragment(tap.jsonText)),
            ("thread", .string(thread)), ("push", .string(push.description)),
        ]
        return members
    }

    /// The contract's keys plus the row's state, as the activity listing and sync carry it.
    public var json: JSON {
        var members = contractMembers
        members += [
            ("version", .int(version)), ("createdAt", .string(Timestamp.format(createdAt))),
            ("seenAt", seenAt.timeJSON), ("readAt", readAt.timeJSON), ("deleted", .bool(deleted)),
        ]
        if !subject.isEmpty { members.append(("subject", subject.json)) }
        if withheld { members.append(("withheld", true)) }
        return .object(members)
    }

    /// Reads a row of the sync shape; throws `WireError` naming what is wrong.
    ///
    /// One pass over the members (a sync reads a million of these): each key is matched once
    /// rather than looked up by name among twenty.
    public init(json: JSON) throws {
        guard case .object(let members) = json else { throw WireError("row must be an object") }
        var id: Int?, event: String?, recipient: String?, kind: Kind?, actor: String?, title: String?, body: String?
        var media = Media(), tap: Tap?, thread: String?, push: PushStatus?, subject = RowSubject()
        var createdAt: Int64?, version: Int?, seenAt: Int64?, readAt: Int64?, deleted = false, withheld = false
        func time(_ value: JSON, _ name: String) throws -> Int64? {
            if value.isNull { return nil }
            guard let text = value.string, let at = Timestamp.parse(text) else { throw WireError("row.\(name) must be an RFC 3339 time") }
            return at
        }
        for (key, value) in members {
            switch key {
            case "id": id = value.int
            case "event": event = value.string
            case "recipient": recipient = value.string
            case "kind":
                guard let name = value.string, let known = Kind(rawValue: name) else { throw WireError("row.kind is not a kind") }
                kind = known
            case "actor": actor = value.string
            case "title": title = value.string
            case "body": body = value.string
            case "media":
                let m = try Members(value, "row.media")
                media = Media(face: try m.optionalString("face"), image: try m.optionalString("image"),
                              facepile: try m.present("facepile").map { _ in try m.strings("facepile") })
            case "tap":
                guard let parsed = Tap(json: value) else { throw WireError("row.tap is not a tap") }
                tap = parsed
            case "thread": thread = value.string
            case "push":
                guard let name = value.string, let status = PushStatus(name) else { throw WireError("row.push is not a push state") }
                push = status
            case "subject": subject = try RowSubject(json: value)
            case "createdAt": createdAt = try time(value, key)
            case "version": version = value.int
            case "seenAt": seenAt = try time(value, key)
            case "readAt": readAt = try time(value, key)
            case "deleted": deleted = value.bool ?? false
            case "withheld": withheld = value.bool ?? false
            default: break
            }
        }
        guard let id else { throw WireError("row.id must be a whole number") }
        guard let event, let recipient, let title, let body, let thread else {
            throw WireError("row \(id) lacks one of event, recipient, title, body, thread")
        }
        guard let kind, let tap, let push, let createdAt, let version else {
            throw WireError("row \(id) lacks one of kind, tap, push, createdAt, version")
        }
        self.init(id: id, event: event, recipient: recipient, kind: kind, actor: actor, title: title, body: body, media: media,
                  tap: tap, thread: thread, push: push, subject: subject, createdAt: createdAt, version: version,
                  seenAt: seenAt, readAt: readAt, deleted: deleted, withheld: withheld)
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

    public init(json: JSON) throws {
        let m = try Members(json, "counts")
        self.init(unseen: try m.int("unseen"), unread: try m.int("unread"))
    }
}
