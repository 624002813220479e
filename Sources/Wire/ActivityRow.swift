import Foundation
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
    /// A batch: the distinct people counted in it.
    public var members: Int?
    /// A batch: what its members did (`steppedWithHeart`, `heart`, `share` …); the row's
    /// category and priority are the action's.
    public var action: Kind?

    public init(id: Int, event: String, recipient: String, kind: Kind, actor: String?, title: String, body: String,
                media: Media, tap: Tap, thread: String, push: PushStatus, subject: RowSubject = RowSubject(),
                createdAt: Int64, version: Int, seenAt: Int64? = nil, readAt: Int64? = nil, deleted: Bool = false,
                withheld: Bool = false, members: Int? = nil, action: Kind? = nil) {
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
        self.members = members
        self.action = action
    }

    /// The kind whose category and priority the row has: a batch's action, else its own.
    public var effectiveKind: Kind { action ?? kind }

    /// This row with its quoted content taken out: the verb alone, no photo — and, when its
    /// actor is someone the reader may no longer see at all, no face either, and the row is
    /// withheld whatever its kind (a new follower out of reach offers no follow back). The
    /// name stays: the row is the record of what happened.
    public func withholding(face: Bool = false) -> ActivityRow {
        var row = self
        if face { row.media.face = nil; row.media.facepile = nil; row.withheld = true }
        guard Copy.quotesContent(kind) else { return row }
        // A batch quotes nothing but the step's photo: its body is the verb already.
        if kind != .batch { row.body = Copy.withheld(kind, tier: subject.tier) }
        row.media.image = nil
        row.withheld = true
        return row
    }

    /// The `stepo ingest` line: exactly the contract's keys, in its order.
    public var contractJSON: JSON {
        var writer = JSONWriter(capacity: 512)
        write(to: &writer, state: false)
        return .fragment(writer.text)
    }

    /// The contract's keys plus the row's state, as the activity listing and sync carry it.
    public var json: JSON {
        var writer = JSONWriter(capacity: 640)
        write(to: &writer, state: true)
        return .fragment(writer.text)
    }

    /// Writes the row as one object: the contract's keys in its order, then (with `state`) the
    /// version, times, flags and subject. The only writer of a row: a sync page of two
    /// thousand is written straight into its bytes.
    public func write(to w: inout JSONWriter, state: Bool) {
        w.beginObject()
        w.key("event"); w.string(event)
        w.key("id"); w.int(id)
        w.key("recipient"); w.string(recipient)
        w.key("kind"); w.string(kind.rawValue)
        w.key("category"); w.string(effectiveKind.category.rawValue)
        w.key("priority"); w.string(effectiveKind.priority.rawValue)
        if let actor { w.key("actor"); w.string(actor) }
        w.key("title"); w.string(title)
        w.key("body"); w.string(body)
        w.key("media")
        w.beginObject()
        if let face = media.face { w.key("face"); w.string(face) }
        if let image = media.image { w.key("image"); w.string(image) }
        if let facepile = media.facepile {
            w.key("facepile")
            w.beginArray()
            for face in facepile { w.string(face) }
            w.endArray()
        }
        w.endObject()
        w.key("tap"); tap.write(to: &w)
        w.key("thread"); w.string(thread)
        w.key("push"); w.string(push.description)
        if let members { w.key("members"); w.int(members) }
        if let action { w.key("action"); w.string(action.rawValue) }
        if state {
            w.key("version"); w.int(version)
            w.key("createdAt"); w.string(Timestamp.format(createdAt))
            w.key("seenAt"); if let seenAt { w.string(Timestamp.format(seenAt)) } else { w.null() }
            w.key("readAt"); if let readAt { w.string(Timestamp.format(readAt)) } else { w.null() }
            w.key("deleted"); w.bool(deleted)
            if !subject.isEmpty {
                w.key("subject")
                w.beginObject()
                if let step = subject.step { w.key("step"); w.string(step) }
                if let journey = subject.journey { w.key("journey"); w.string(journey) }
                if let comment = subject.comment { w.key("comment"); w.string(comment) }
                if let tier = subject.tier { w.key("tier"); w.string(tier) }
                w.endObject()
            }
            if withheld { w.key("withheld"); w.bool(true) }
        }
        w.endObject()
    }

    /// Reads a row of the sync shape; throws `WireError` naming what is wrong.
    public init(json: JSON) throws {
        let text = Data(json.serialized.utf8)
        self = try JSONReader.read(text) { try ActivityRow(reading: &$0) }
    }

    /// Reads a row of the sync shape where `reader` stands, in one pass over its members (a
    /// sync reads a million of these). Throws `WireError` naming what is wrong.
    public init(reading r: inout JSONReader) throws {
        var id: Int?, event: String?, recipient: String?, kind: Kind?, actor: String?, title: String?, body: String?
        var media = Media(), tap: Tap?, thread: String?, push: PushStatus?, subject = RowSubject()
        var createdAt: Int64?, version: Int?, seenAt: Int64?, readAt: Int64?, deleted = false, withheld = false
        var members: Int?, action: Kind?
        func time(_ r: inout JSONReader, _ name: String) throws -> Int64? {
            guard let text = try r.optionalString() else { return nil }
            guard let at = Timestamp.parse(text) else { throw WireError("row.\(name) must be an RFC 3339 time") }
            return at
        }
        func text(_ r: inout JSONReader, _ name: String) throws -> String? {
            do { return try r.optionalString() } catch { throw WireError("row.\(name) must be a string") }
        }
        guard (try? r.beginObject()) != nil else { throw WireError("row must be an object") }
        while let key = try r.nextKey() {
            switch key {
            case "id": id = try? r.int()
            case "event": event = try text(&r, key)
            case "recipient": recipient = try text(&r, key)
            case "kind":
                guard let name = try text(&r, key), let known = Kind(rawValue: name) else { throw WireError("row.kind is not a kind") }
                kind = known
            case "actor": actor = try text(&r, key)
            case "title": title = try text(&r, key)
            case "body": body = try text(&r, key)
            case "media":
                let m = try Members(try r.value(), "row.media")
                media = Media(face: try m.optionalString("face"), image: try m.optionalString("image"),
                              facepile: try m.present("facepile").map { _ in try m.strings("facepile") })
            case "tap":
                guard let parsed = Tap(json: try r.value()) else { throw WireError("row.tap is not a tap") }
                tap = parsed
            case "thread": thread = try text(&r, key)
            case "push":
                guard let name = try text(&r, key), let status = PushStatus(name) else { throw WireError("row.push is not a push state") }
                push = status
            case "subject": subject = try RowSubject(json: try r.value())
            case "createdAt": createdAt = try time(&r, key)
            case "version": version = try? r.int()
            case "seenAt": seenAt = try time(&r, key)
            case "readAt": readAt = try time(&r, key)
            case "deleted": deleted = (try? r.bool()) ?? false
            case "withheld": withheld = (try? r.bool()) ?? false
            case "members":
                guard let count = try? r.int(), count >= 1 else { throw WireError("row.members must be a count of people") }
                members = count
            case "action":
                guard let name = try text(&r, key), let known = Kind(rawValue: name) else { throw WireError("row.action is not a kind") }
                action = known
            default: _ = try r.value()
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
                  seenAt: seenAt, readAt: readAt, deleted: deleted, withheld: withheld, members: members, action: action)
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
