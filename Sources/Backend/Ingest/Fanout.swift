import Notifications
import Storage

/// Set-based fan-out: one notification to many recipients in a few SQL statements, so a step
/// published to 100,000 followers never makes 100,000 trips through Swift. The content is
/// stored once, on the event; each row holds only its recipient and state.
///
/// The quiet rules here are the engine's (`QuietRules.decide`) written as SQL, in the same
/// order; tests check that both paths agree.
struct Fanout {
    /// A SELECT whose column `u` lists the candidate recipients' keys, each once, best in key
    /// order (rows then go into the recipient indexes in order; follows and UNION give it). It may use
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

    /// The push status of a kept row: preferences, then (with `ceiling`) the daily ceiling,
    /// the same SQL test a single candidate gets (`Store.ceilingTest`).
    private func pushExpression(ceiling: Bool) -> String {
        """
        CASE WHEN u.pref_all = 0 OR \(preferenceTest) THEN 'suppressed:preferences'
             \(ceiling ? "WHEN \(Store.ceilingTest(recipient: "u.id")) THEN 'suppressed:dailyCeiling'" : "")
             ELSE 'sent'
        END
        """
    }

    /// Whether the candidate's own setting withholds the push, the master switch aside: the
    /// custom follow alert when one applies (`u.alert`), else the kind's category.
    private var preferenceTest: String {
        "(u.alert IS NOT DISTINCT FROM 'off' OR (u.alert IS NULL AND \(Fanout.preferenceColumn(for: notification.kind)) = 0))"
    }

    /// For a journey update, the candidate's custom follow alert: the journey's, then the
    /// person's, looked up only for the users who have any. NULL otherwise.
    private var alertExpression: String {
        guard notification.kind.isJourneyUpdate else { return "NULL" }
        return """
            CASE WHEN u.alerts = 0 THEN NULL
                 ELSE coalesce((SELECT mode FROM journey_alerts WHERE user = u.id AND journey = :journey),
                               (SELECT mode FROM person_alerts WHERE user = u.id AND person = :actor)) END
            """
    }

    /// The values every statement of this fan-out may name.
    private func baseValues(_ delivery: Delivery) -> [String: SQLBindable] {
        let n = notification
        let at = delivery.event.at
        var values: [String: SQLBindable] = [
            ":event": delivery.key, ":kind": n.kind.rawValue, ":actor": actor?.key, ":title": n.title,
            ":body": n.body, ":pushBody": n.pushBody == n.body ? nil : n.pushBody, ":pushImage": n.pushImage, ":face": n.media.face,
            ":image": n.media.image, ":step": refs.step, ":comment": refs.comment, ":journey": refs.journey, ":tier": refs.tier,
            ":tap": n.tap.jsonText, ":thread": n.thread, ":at": at,
            ":since": at - QuietRules.ceilingWindow, ":until": at + QuietRules.ceilingWindow,
            ":actorActive": actor?.isActive ?? true,
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
            var values = baseValues(delivery)
            values[":hour"] = StatsCounters.hour(of: delivery.event.at)
            values[":slot"] = delivery.store.slot
            try db.cached("""
                INSERT INTO stats_withheld(hour, kind, reason, slot, n)
                SELECT :hour, :kind, r, :slot, count(*) FROM (
                    SELECT coalesce(\(reasonExpression), '\(reason.rawValue)') AS r
                    FROM (\(candidates)) AS c JOIN users AS u ON u.id = c.u) AS w
                WHERE true GROUP BY r
                \(StatsCounters.upsertWithheld)
                """).bind(named: values).run()
            return
        }
        let version = delivery.changeVersion()
        var values = baseValues(delivery)
        values[":version"] = version
        // Decide every candidate once, in memory; then write rows and suppressions from it.
        // `quiet`: the candidate's quiet hours, kept for the entries (`enqueueFanoutPushes`).
        try db.execute("CREATE TEMP TABLE IF NOT EXISTS fanout (u INTEGER PRIMARY KEY, reason TEXT, push TEXT, quiet TEXT); DELETE FROM fanout")
        // On SQLite (one writer) the ceiling is judged in the same pass. On PostgreSQL other
        // writers may be pushing to the same people: each recipient the push would reach is
        // locked first (its inbox row, in key order, as every fan-out takes them), and the
        // ceiling is judged after, by a statement that sees what they committed.
        let inline = !db.dialect.writersSideBySide
        try db.cached("""
            INSERT INTO fanout(u, reason, push, quiet)
            SELECT u.id, reason, CASE WHEN reason IS NULL THEN \(pushExpression(ceiling: inline)) END, u.quiet_hours
            FROM (SELECT u.id AS id, u.pref_all, u.pref_stepWith, u.pref_social, u.pref_engagement, u.pref_journeys, u.quiet_hours,
                         \(alertExpression) AS alert, \(reasonExpression) AS reason
                  FROM (\(candidates)) AS c JOIN users AS u ON u.id = c.u) AS u
            """).bind(named: values).run()
        if !inline {
            try db.cached("""
                SELECT count(*) FROM (SELECT 1 FROM inboxes WHERE user IN (SELECT u FROM fanout WHERE push = 'sent')
                                      ORDER BY user FOR UPDATE) AS locked
                """).bind([]).run()
            try db.cached("""
                UPDATE fanout SET push = 'suppressed:dailyCeiling' WHERE push = 'sent' AND \(Store.ceilingTest(recipient: "fanout.u"))
                """).bind(named: values).run()
        }
        // The content once, on the event; the rows point at it.
        try db.cached("""
            UPDATE events SET title = :title, body = :body, push_body = :pushBody, push_image = :pushImage,
                              face = :face, image = :image, tap = :tap, thread = :thread
            WHERE id = :event
            """).bind(named: values).run()
        // Each row takes its recipient's next ord, and every recipient's count moves by one.
        let insert = """
            INSERT INTO notifications(event, recipient, ord, kind, actor, step, comment, journey, tier, push, created_at, version)
            SELECT :event, d.u, i.total + 1, :kind, :actor, :step, :comment, :journey, :tier, d.push, :at, :version
            FROM fanout AS d JOIN inboxes AS i ON i.user = d.u WHERE d.reason IS NULL ORDER BY d.u
            """
        let inserted: Int
        let first: Int, last: Int
        if db.dialect.insertedIdsAreContiguous {
            try db.cached(insert).bind(named: values).run()
            inserted = db.changes
            last = try db.lastInsertedID("notifications")
            first = last - inserted + 1
        } else {
            // Other writers' rows may take ids among these: the range and the count, as made.
            (inserted, first, last) = try db.cached("WITH made AS (\(insert) RETURNING id) SELECT count(*), min(id), max(id) FROM made")
                .bind(named: values).first { ($0.int(0), $0.int(1), $0.int(2)) } ?? (0, 0, 0)
        }
        // Every recipient's count moves by one, and a sent push is counted by its day (`PushDays`).
        values[":pushDay"] = PushDays.day(of: delivery.event.at)
        try db.cached("""
            UPDATE inboxes SET total = total + 1, \(PushDays.count(day: ":pushDay", when: "d.push = 'sent'"))
            FROM fanout AS d WHERE inboxes.user = d.u AND d.reason IS NULL
            """).bind(named: values).run()
        if inserted > 0 {
            delivery.noteRows(first...last, count: inserted)
            try delivery.store.enqueueFanoutPushes(event: delivery.key, kind: notification.kind, at: delivery.event.at, step: refs.step)
        }
        try db.cached("""
            INSERT INTO suppressions(event, recipient, kind, reason)
            SELECT :event, d.u, :kind, d.reason FROM fanout AS d WHERE d.reason IS NOT NULL
            """).bind(named: values).run()
        try countFanout(db, values, at: delivery.event.at, slot: delivery.store.slot)
        try db.execute("DELETE FROM fanout")
    }

    /// The trust budget's counters for the whole fan-out, from its decisions: a few grouped
    /// writes, and a note that its people's load entries are still to count.
    private func countFanout(_ db: Connection, _ values: [String: SQLBindable], at: Int64, slot: Int) throws {
        var values = values
        values[":hour"] = StatsCounters.hour(of: at)
        values[":day"] = StatsCounters.hour(of: at) / 24
        values[":category"] = notification.kind.category.rawValue
        values[":slot"] = slot
        try db.cached("""
            INSERT INTO stats_rows(hour, kind, category, push, slot, n)
            SELECT :hour, :kind, :category, push, :slot, count(*) FROM fanout WHERE reason IS NULL GROUP BY push
            \(StatsCounters.upsertRows)
            """).bind(named: values).run()
        // Each person's load entry is counted later, from the rows (see `catchUpStamps`): here,
        // one line, so a publish to a million costs one write more, not a million.
        try db.cached("INSERT INTO stats_pending(event, hour) VALUES (:event, :hour) ON CONFLICT (event) DO NOTHING")
            .bind(named: values).run()
        try db.cached("""
            INSERT INTO stats_withheld(hour, kind, reason, slot, n)
            SELECT :hour, :kind, reason, :slot, count(*) FROM fanout WHERE reason IS NOT NULL GROUP BY reason
            \(StatsCounters.upsertWithheld)
            """).bind(named: values).run()
    }
}
