import Notifications
import Wire
import Storage

/// Why a row has no push to render.
public enum PushUnavailable: Error, CustomStringConvertible {
    case noSuchRow(Int)
    case deleted(Int)

    public var description: String {
        switch self {
        case .noSuchRow(let id): return "no notification row \(id)"
        case .deleted(let id): return "row \(id) is suppressed:deleted — its content was deleted, so no push goes out"
        }
    }
}

extension Store {
    /// The push of row `id` as it goes out now: masked copy for a private actor, and the
    /// recipient's fresh unseen count as the absolute badge.
    public func pushContent(row id: Int) throws -> PushContent {
        guard let stored = try db.first("""
            SELECT n.kind, \(RowReader.content("title")),
                   CASE WHEN n.title IS NULL THEN coalesce(e.push_body, e.body) ELSE coalesce(n.push_body, n.body) END,
                   \(RowReader.content("push_image")), \(RowReader.content("face")), \(RowReader.content("thread")),
                   \(RowReader.content("tap")), n.recipient, n.deleted, n.action
            FROM notifications AS n JOIN events AS e ON e.id = n.event WHERE n.id = ?
            """, [id], { row in
                (kind: Kind(rawValue: row.string(0)) ?? .announcement, title: row.string(1), body: row.string(2),
                 image: row.optionalString(3), face: row.optionalString(4), thread: row.string(5),
                 tap: row.string(6), recipient: row.int(7), deleted: row.bool(8),
                 action: row.optionalString(9).flatMap(Kind.init(rawValue:)))
            }) else { throw PushUnavailable.noSuchRow(id) }
        guard !stored.deleted else { throw PushUnavailable.deleted(id) }
        let tap = (try? JSON.parse(stored.tap)).flatMap(Tap.init(json:)) ?? .link(Tap.feedLink)
        return PushContent(rowId: id, kind: stored.kind, title: stored.title, body: stored.body, image: stored.image,
                           face: stored.face, thread: stored.thread, deepLink: tap.deepLink,
                           badge: try counts(for: stored.recipient).unseen, action: stored.action)
    }
}
