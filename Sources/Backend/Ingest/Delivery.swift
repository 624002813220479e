import Notifications
import Storage
import Wire

/// What applying one event produced: the rows it created (an id range) and a note for `explain`.
public struct EventOutcome: Sendable {
    public var eventId: String
    /// The event's integer key in the store (0 for a repeat, which was not applied again).
    public var eventKey = 0
    public var firstRow: Int?
    public var lastRow: Int?
    public var note: String?
    /// True when the event id had been applied before: nothing was done.
    public var repeated = false
    /// The rows created one by one, and the batch rows changed, kept as written so they need
    /// not be read back. A fan-out's rows are not here: read them by the id range.
    public var writtenRows: [ActivityRow] = []
    /// The rows it created or changed. On SQLite they fill its id range; on PostgreSQL,
    /// where writers run side by side, another event's rows may fall inside the range, so
    /// whoever reads an event's rows by its range also asks for its key.
    public var rowCount = 0
}

/// An open batch's row, as a join needs it.
struct OpenBatch {
    var row: Int
    var members: Int
    var push: PushStatus
    /// Newest first: the facepile, or the first member's face while the row is still single.
    var faces: [String]
    var event: String
    var createdAt: Int64
    var image: String?
    var thread: String
}

/// What a row points at: the integer keys (for deletion and visibility), a recognition's tier,
/// and the same as producer ids (the row's `subject`).
struct RowRefs {
    var step: Int?
    var comment: Int?
    var journey: Int?
    var tier: String?
    var subject = RowSubject()
}

/// The state of one event being applied: its version (taken once, when a row first changes)
/// and the rows it created.
final class Delivery {
    let store: Store
    let event: Event
    /// The event's row in `events` (its integer key).
    let key: Int
    var outcome: EventOutcome

    init(store: Store, event: Event, key: Int) {
        self.store = store
        self.event = event
        self.key = key
        self.outcome = EventOutcome(eventId: event.id, eventKey: key)
    }

    /// The version of every row this event writes or changes: the event's own id.
    func changeVersion() -> Int { key }

    func noteRows(_ range: ClosedRange<Int>, count: Int? = nil) {
        outcome.firstRow = min(outcome.firstRow ?? range.lowerBound, range.lowerBound)
        outcome.lastRow = max(outcome.lastRow ?? range.upperBound, range.upperBound)
        outcome.rowCount += count ?? range.count
    }

    /// Decides one candidate through the quiet rules and writes a row or a suppression.
    /// `blocked`: whether a block stands between actor and recipient, when the caller has just
    /// checked (it is not asked again).
    func deliver(_ notification: Notification, to recipient: UserRecord, actor: UserRecord?, refs: RowRefs,
                 duplicate: Bool = false, visible: Bool = true, blocked: Bool? = nil) throws {
        let isSelf = actor?.key == recipient.key
        let decision = try Delivery.decide(
            notification.kind, to: recipient, actor: actor, visible: visible, duplicate: duplicate,
            blocked: try !isSelf && store.blockedBetween(actor: actor?.key, recipient: recipient.key, known: blocked),
            ceiling: { try store.ceilingReachedLocking(recipient.key, at: event.at) })
        switch decision {
        case .noRow(let reason):
            try suppress(recipient: recipient.key, kind: notification.kind, reason: reason)
        case .row(let push):
            let batchable = notification.kind.batches && refs.step != nil && actor != nil
            if batchable, let step = refs.step, let actor,
               let open = try store.openBatch(recipient: recipient.key, step: step, action: notification.kind, at: event.at) {
                try join(open, notification, actor: actor, recipientId: recipient.id, recipientKey: recipient.key,
                         quiet: recipient.preferences.quietHours, stepKey: step,
                         push: push)
                return
            }
            let version = changeVersion()
            let id = try insertRow(notification, recipient: recipient.key, actor: actor?.key, refs: refs,
                                   push: push, version: version)
            noteRows(id...id)
            try store.countRow(kind: notification.kind, push: push, recipient: recipient.key, at: event.at)
            if push == .sent {
                try store.enqueuePushes(row: id, recipient: recipient.key, kind: notification.kind, silent: false,
                                        at: event.at, step: refs.step, quiet: recipient.preferences.quietHours)
            }
            if batchable, let step = refs.step, let actor {
                try store.db.run("INSERT INTO batches(row, recipient, step, action, opened_at) VALUES (?, ?, ?, ?, ?)",
                                 id, recipient.key, step, notification.kind.rawValue, event.at)
                try store.db.run("INSERT INTO batch_members(row, person, at, face) VALUES (?, ?, ?, ?)",
                                 id, actor.key, event.at, notification.media.face)
            }
            outcome.writtenRows.append(ActivityRow(
                single: notification, id: id, event: event.id, recipient: recipient.id, actor: actor?.id, push: push,
                subject: refs.subject, at: event.at, version: version))
        }
    }

    /// Counts `actor` into the open batch `row`, which becomes (or stays) the batch as
    /// `BatchJoin` decides, at this event's version.
    private func join(_ current: OpenBatch, _ n: Notification, actor: UserRecord, recipientId: String, recipientKey: Int, quiet: QuietHours?,
                      stepKey: Int, push: PushStatus) throws {
        let row = current.row
        try store.db.run("INSERT INTO batch_members(row, person, at, face) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                         row, actor.key, event.at, n.media.face)
        guard store.db.changes == 1 else {
            outcome.note = "already counted in batch \(row)"
            return
        }
        // Its one sound, late, counts at the row's own time: a span full there keeps it quiet.
        let joined = try BatchJoin(current, n, push: push, ceilingAtRow: { try store.ceilingReachedLocking(recipientKey, at: current.createdAt) })
        let (members, faces, stored, title) = (joined.members, joined.faces, joined.stored, joined.title)
        let version = changeVersion()
        if current.members == 1 || stored != current.push {
            // The row becomes the batch (or makes its one sound late): every column it changes.
            try store.db.run("""
                UPDATE notifications SET kind = 'batch', action = ?, members = ?, facepile = ?, actor = ?, title = ?, body = ?,
                    push_body = NULL, push_image = ?, face = NULL, tap = ?, push = ?, version = ? WHERE id = ? AND recipient = ?
                """, n.kind.rawValue, members, faces.joined(separator: "\n"), actor.key, title, joined.body, n.pushImage,
                joined.tap.jsonText, stored.description, version, row, recipientKey)
        } else {
            // A batch growing: only what a new member changes. (The recipient, though the id
            // alone finds the row: on PostgreSQL it names the one partition to look in.)
            try store.db.run("""
                UPDATE notifications SET members = ?, facepile = ?, actor = ?, title = ?, push_image = ?, version = ? WHERE id = ? AND recipient = ?
                """, members, faces.joined(separator: "\n"), actor.key, title, n.pushImage, version, row, recipientKey)
        }
        noteRows(row...row)
        if stored != current.push {
            // The row's one sound, late: counted on its own day, and it leaves the count of
            // what it was withheld by.
            try store.countPush(recipient: recipientKey, at: current.createdAt)
            try store.countRow(kind: n.kind, push: current.push, recipient: recipientKey, at: current.createdAt, delta: -1)
            try store.countRow(kind: n.kind, push: stored, recipient: recipientKey, at: current.createdAt)
        }
        if joined.line.reachesDevice {
            try store.enqueuePushes(row: row, recipient: recipientKey, kind: n.kind, silent: joined.line == .updated,
                                    at: event.at, step: stepKey, rowAt: current.createdAt, quiet: quiet)
        }
        outcome.note = "joined batch \(row) (now \(members) people)"
        // The line names the event that changed the row (the row itself belongs to its first).
        outcome.writtenRows.append(joined.row(current, n, event: event.id, recipient: recipientId, actor: actor.id, version: version))
    }

    func suppress(recipient: Int, kind: Kind, reason: Reason) throws {
        try store.db.run("INSERT INTO suppressions(event, recipient, kind, reason) VALUES (?, ?, ?, ?)",
                         key, recipient, kind.rawValue, reason.rawValue)
        try store.countWithheld(kind: kind, reason: reason, at: event.at)
    }

    private static let insertSQL = """
        INSERT INTO notifications(event, recipient, ord, kind, actor, title, body, push_body, push_image, face, image,
                                  step, comment, journey, tier, tap, thread, push, created_at, version)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        RETURNING id
        """

    /// On PostgreSQL the recipient's counter moves and the row is written in one statement
    /// (one round trip): the row's `ord` is the counter's new value; a sent push is counted
    /// by its day in the same update (`PushDays`, the day as ?20).
    private static let insertTakingOrdSQL = insertTakingOrd(counting: "")
    private static let insertSentTakingOrdSQL = insertTakingOrd(counting: ", " + PushDays.count(day: "?20"))

    private static func insertTakingOrd(counting: String) -> String {
        """
        WITH o AS (UPDATE inboxes SET total = total + 1\(counting) WHERE user = ?2 RETURNING total)
        INSERT INTO notifications(event, recipient, ord, kind, actor, title, body, push_body, push_image, face, image,
                                  step, comment, journey, tier, tap, thread, push, created_at, version)
        SELECT ?1, ?2, o.total, ?3, CAST(?4 AS BIGINT), ?5, ?6, ?7, ?8, ?9, ?10, CAST(?11 AS BIGINT), CAST(?12 AS BIGINT),
               CAST(?13 AS BIGINT), ?14, ?15, ?16, ?17, ?18, ?19
        FROM o
        RETURNING id
        """
    }

    private func insertRow(_ n: Notification, recipient: Int, actor: Int?, refs: RowRefs, push: PushStatus,
                           version: Int) throws -> Int {
        if store.db.dialect.writersSideBySide {
            var values: [SQLBindable] = [key, recipient] + Delivery.columns(n, actor: actor, refs: refs, push: push, at: event.at, version: version)
            if push == .sent { values.append(PushDays.day(of: event.at)) }
            if let id = try store.db.first(push == .sent ? Delivery.insertSentTakingOrdSQL : Delivery.insertTakingOrdSQL, values,
                                           { $0.int(0) }) { return id }
            // No counter yet (a user made before inboxes were kept): `takeOrd` makes it, below.
        }
        let ord = try store.takeOrd(for: recipient)
        if push == .sent { try store.countPush(recipient: recipient, at: event.at) }
        let values: [SQLBindable] = [key, recipient, ord] + Delivery.columns(n, actor: actor, refs: refs, push: push, at: event.at, version: version)
        return try store.db.first(Delivery.insertSQL, values) { $0.int(0) } ?? 0
    }
}

// MARK: What both paths decide alike

extension Delivery {
    /// A candidate through the quiet rules. The ceiling is the last rule: asked (`ceiling`)
    /// only of a push that every other rule lets go — under the recipient's lock where other
    /// writers run beside this one. The one-event path and `EventSet` both decide here.
    static func decide(_ kind: Kind, to recipient: UserRecord, actor: UserRecord?, visible: Bool, duplicate: Bool, blocked: Bool,
                       ceiling: () throws -> Bool) rethrows -> Decision {
        var candidate = Candidate()
        candidate.isSelf = actor?.key == recipient.key
        candidate.blocked = blocked
        candidate.actorActive = actor?.isActive ?? true
        candidate.recipientActive = recipient.isActive
        candidate.visible = visible
        candidate.duplicate = duplicate
        candidate.preferences = recipient.preferences
        if QuietRules.decide(kind, for: candidate) == .row(.sent) {
            candidate.ceilingReached = try ceiling()
        }
        return QuietRules.decide(kind, for: candidate)
    }

    /// A new row's columns from `kind` to `version`, in `notifications`' order (the insert
    /// puts its keys before them).
    static func columns(_ n: Notification, actor: Int?, refs: RowRefs, push: PushStatus, at: Int64, version: Int) -> [SQLBindable] {
        [n.kind.rawValue, actor, n.title, n.body, n.pushBody == n.body ? nil : n.pushBody, n.pushImage,
         n.media.face, n.media.image, refs.step, refs.comment, refs.journey, refs.tier, n.tap.jsonText, n.thread,
         push.description, at, version]
    }
}

/// A member joining an open batch, decided: the people counted, the newest faces first, the
/// title naming the newest, and the push. One sound per batch, ever: once its push went, a
/// change is a silent replacement (`updated`); a member whose own push a rule withholds
/// changes the row without any push; a row still quiet makes its one sound late unless the
/// ceiling at the row's own time holds it (`ceilingAtRow`).
struct BatchJoin {
    let members: Int
    let faces: [String]
    /// What this change's line says of the push.
    let line: PushStatus
    /// The push state the row keeps.
    let stored: PushStatus
    let tap: Tap
    let title: String
    let body: String

    init(_ current: OpenBatch, _ n: Notification, push: PushStatus, ceilingAtRow: () throws -> Bool) rethrows {
        members = current.members + 1
        faces = Array(((n.media.face.map { [$0] } ?? []) + current.faces).prefix(Batching.faces))
        var stored = current.push
        switch push {
        case .suppressed: line = push
        case .sent, .updated:
            if current.push.reachesDevice {
                line = .updated
            } else if try ceilingAtRow() {
                line = .suppressed(.dailyCeiling)
            } else {
                line = .sent
                stored = .sent
            }
        }
        self.stored = stored
        tap = Tap.interactions(n.tap.stepId ?? "")
        title = Batching.title(latest: n.title, people: members)
        body = Batching.body(n.kind)
    }

    /// The row as the change leaves it; the line names the event that changed it (the row
    /// itself belongs to its first).
    func row(_ current: OpenBatch, _ n: Notification, event: String, recipient: String, actor: String, version: Int) -> ActivityRow {
        ActivityRow(
            id: current.row, event: event, recipient: recipient, kind: .batch, actor: actor, title: title, body: body,
            media: Media(image: current.image, facepile: faces), tap: tap, thread: current.thread, push: line,
            subject: RowSubject(step: n.tap.stepId), createdAt: current.createdAt, version: version,
            members: members, action: n.kind)
    }
}

extension ActivityRow {
    /// A new row, as written, of one notification.
    init(single n: Notification, id: Int, event: String, recipient: String, actor: String?, push: PushStatus, subject: RowSubject,
         at: Int64, version: Int) {
        self.init(id: id, event: event, recipient: recipient, kind: n.kind, actor: actor, title: n.title, body: n.body,
                  media: n.media, tap: n.tap, thread: n.thread, push: push, subject: subject, createdAt: at, version: version)
    }
}
