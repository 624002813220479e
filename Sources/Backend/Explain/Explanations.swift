import Notifications
import Wire
import Storage

/// One candidate of an event: the row it got, or the reason it got none.
public struct Explanation: Sendable {
    public var recipient: String
    public var name: String
    public var kind: Kind
    public var rowId: Int?
    public var push: PushStatus?
    public var reason: Reason?
    public var deletedSince: Bool
    /// The custom follow alert that decided a journey update's push, as `journey:ID all`.
    public var alert: String?
    /// When a sent row's push waits for its recipient's quiet hours to end: the end.
    public var heldUntil: Int64?

    /// What holds the push, as `explain` writes it: `held:quietHours until T`.
    public var held: String? { heldUntil.map { "held:quietHours until \(Timestamp.format($0))" } }

    public var json: JSON {
        .members([
            ("recipient", .string(recipient)), ("kind", .string(kind.rawValue)),
            ("row", rowId.map(JSON.int)), ("push", push.map { .string($0.description) }),
            ("reason", reason.map { .string($0.rawValue) }),
            ("deleted", deletedSince ? .bool(true) : nil),
            ("alert", alert.map(JSON.string)),
            ("held", heldUntil.map { _ in .string("quietHours") }), ("heldUntil", heldUntil.map { .string(Timestamp.format($0)) }),
        ])
    }
}

/// What `stepo explain` shows for one event.
public struct EventReport: Sendable {
    public var id: String
    public var type: String
    public var at: Int64
    public var note: String?
    public var candidates: [Explanation]
}

extension Store {
    /// Why each candidate of an event got its row, or did not.
    public var explanations: Explanations { Explanations(store: self) }
}

/// `stepo explain`: what became of an applied event, candidate by candidate.
public struct Explanations {
    let store: Store
    var db: Connection { store.db }

    /// Every candidate recipient of an applied event, with its row or its reason; nil when
    /// the event was never applied.
    public func event(_ eventId: String) throws -> EventReport? {
        guard let header = try db.first("SELECT type, at, note, first_row, last_row, id FROM events WHERE ext = ?", [eventId], {
            (type: $0.string(0), at: $0.int64(1), note: $0.optionalString(2), first: $0.optionalInt(3), last: $0.optionalInt(4),
             key: $0.int(5))
        }) else { return nil }
        var candidates = try db.query("""
            SELECT u.ext, u.name, s.kind, s.reason FROM suppressions AS s JOIN users AS u ON u.id = s.recipient
            WHERE s.event = ? ORDER BY u.ext
            """, [header.key]) { row in
            Explanation(recipient: row.string(0), name: row.string(1), kind: try row.decoded(2, table: "suppressions", column: "kind", Kind.init(rawValue:)),
                        rowId: nil, push: nil, reason: try row.decoded(3, table: "suppressions", column: "reason", Reason.init(rawValue:)),
                        deletedSince: false)
        }
        if let first = header.first, let last = header.last {
            candidates += try db.query("""
                SELECT u.ext, u.name, n.kind, n.id, n.push, n.deleted, n.recipient, n.actor, n.journey, u.alerts,
                       (SELECT max(o.due_at) FROM outbox AS o WHERE o.row = n.id AND o.held = 1 AND o.state IN ('due', 'claimed'))
                FROM notifications AS n JOIN users AS u ON u.id = n.recipient
                WHERE n.id BETWEEN ? AND ? AND n.event = ? ORDER BY u.ext
                """, [first, last, header.key]) { row in
                let push: PushStatus? = try row.decoded(4, table: "notifications", column: "push", PushStatus.init)
                var reason: Reason?
                if case .suppressed(let r)? = push { reason = r }
                let kind = try row.decoded(2, table: "notifications", column: "kind", Kind.init(rawValue:))
                var explanation = Explanation(recipient: row.string(0), name: row.string(1), kind: kind,
                                              rowId: row.int(3), push: push, reason: reason, deletedSince: row.bool(5))
                explanation.heldUntil = row.optionalInt64(10)
                // The override that decided, for a journey update (only users with any are asked).
                if kind.isJourneyUpdate, row.int(9) > 0,
                   let found = try store.alert(for: row.int(6), person: row.optionalInt(7), journey: row.optionalInt(8)), let from = found.from {
                    explanation.alert = "\(from.key) \(found.mode.rawValue)"
                }
                return explanation
            }
        }
        candidates.sort { $0.recipient < $1.recipient }
        return EventReport(id: eventId, type: header.type, at: header.at, note: header.note, candidates: candidates)
    }
}
