import Notifications
import SQLite

/// Set-based fan-out: one notification to many recipients as two SQL statements, so a step
/// published to 100,000 followers never makes 100,000 trips through Swift.
///
/// The quiet rules here are the engine's (`QuietRules.decide`) written as SQL, in the same
/// order; tests check that both paths agree.
struct Fanout {
    /// A SELECT whose column `u` lists the candidate recipients' keys, each once. It may use
    /// the named parameters in `arguments`, and `:actor`.
    var candidates: String
    var arguments: [String: SQLBindable]
    var notification: Notification
    var actor: UserRecord?
    var refs: RowRefs
    /// When set, no candidate gets a row: each is suppressed by the first rule that applies,
    /// else by this reason (the ladder's "outside this rung's audience").
    var onlySuppress: Reason? = nil

    /// The preference column that gates the push of `kind`.
    static func preferenceColumn(for kind: Kind) -> String {
        switch kind.category {
        case .stepWith: return "u.pref_stepWith"
        case .social: return "u.pref_social"
        case .engagement: return "u.pref_engagement"
        case .journeys: return "u.pref_journeys"
        case .customFollow, .announcement: return "1"
        }
    }

    /// The first row-less rule that applies to candidate `u`, or NULL when it gets a row.
    private var reasonExpression: String {
        """
        CASE WHEN u.id = :actor THEN 'self'
             WHEN u.id IN (SELECT blocked FROM blocks WHERE blocker = :actor
                           UNION ALL SELECT blocker FROM blocks WHERE blocked = :actor) THEN 'blocked'
             WHEN :actorActive = 0 THEN 'actorInactive'
             WHEN u.state <> 'active' THEN 'recipientInactive'
        END
        """
    }

    /// The push status of a kept row: preferences, then the rolling daily ceiling (does a
    /// 100th push exist in the last 24 hours? — never counting further than that).
    private var pushExpression: String {
        """
        CASE WHEN u.pref_all = 0 OR \(Fanout.preferenceColumn(for: notification.kind)) = 0 THEN 'suppressed:preferences'
             WHEN EXISTS (SELECT 1 FROM notifications n
                          WHERE n.recipient = u.id AND n.created_at > :since AND n.created_at <= :at AND n.push = 'sent'
                          LIMIT 1 OFFSET \(QuietRules.dailyCeiling - 1)) THEN 'suppressed:dailyCeiling'
             ELSE 'sent'
        END
        """
    }

    /// The values every statement of this fan-out may name.
    private func baseValues(_ delivery: Delivery) -> [String: SQLBindable] {
        let n = notification
        let at = delivery.event.at
        var values: [String: SQLBindable] = [
            ":event": delivery.key, ":kind": n.kind.rawValue, ":actor": actor?.key, ":title": n.title,
            ":body": n.body, ":pushBody": n.pushBody == n.body ? nil : n.pushBody, ":pushImage": n.pushImage, ":face": n.media.face,
            ":image": n.media.image, ":step": refs.step, ":comment": refs.comment, ":journey": refs.journey,
            ":tap": n.tap.jsonText, ":thread": n.thread, ":at": at,
            ":since": at - QuietRules.ceilingWindow, ":actorActive": actor?.isActive ?? true,
        ]
        values.merge(arguments) { _, argument in argument }
        return values
    }

    func run(in delivery: Delivery) throws {
        let db = delivery.store.db
        if let reason = onlySuppress {
            try db.cached("""
                INSERT INTO suppressions(event, recipient, kind, reason)
                SELECT :event, u.id, :kind, coalesce(\(reasonExpression), '\(reason.rawValue)')
                FROM (\(candidates)) AS c JOIN users AS u ON u.id = c.u
                """).bind(named: baseValues(delivery)).run()
            return
        }
        let version = try delivery.changeVersion()
        let rowsSQL = """
            INSERT INTO notifications(event, recipient, kind, actor, title, body, push_body, push_image, face, image,
                                      step, comment, journey, tap, thread, push, created_at, version)
            SELECT :event, u.id, :kind, :actor, :title, :body, :pushBody, :pushImage, :face, :image,
                   :step, :comment, :journey, :tap, :thread, \(pushExpression), :at, :version
            FROM (\(candidates)) AS c JOIN users AS u ON u.id = c.u
            WHERE (\(reasonExpression)) IS NULL
            ORDER BY u.id
            """
        let before = db.lastInsertRowID
        var named = baseValues(delivery)
        named[":version"] = version
        let rows = try db.cached(rowsSQL).bind(named: named)
        try rows.run()
        let inserted = db.changes
        if inserted > 0 {
            let last = Int(db.lastInsertRowID)
            precondition(last > before, "fan-out rows must take fresh ids")
            delivery.noteRows((last - inserted + 1)...last)
        }

        let suppressed = try db.cached("""
            INSERT INTO suppressions(event, recipient, kind, reason)
            SELECT :event, u.id, :kind, \(reasonExpression)
            FROM (\(candidates)) AS c JOIN users AS u ON u.id = c.u
            WHERE (\(reasonExpression)) IS NOT NULL
            """)
        try suppressed.bind(named: named)
        try suppressed.run()
    }
}
