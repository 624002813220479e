import Notifications
import Storage
import Wire

/// The write side of the outbox, inside an event's transaction: the entries of a new row's push.
extension Store {
    /// When a push of `kind` stops being worth delivering: a step-with push when its step's
    /// 24-hour window closes (the opening it announces is gone), any other a day after it was
    /// made, or a day after its quiet hours end (`due`) when it was held.
    func pushExpiry(kind: Kind, at: Int64, due: Int64? = nil, step: Int?) throws -> Int64 {
        if kind.category == .stepWith, let step,
           let published = try db.cached("SELECT published_at FROM steps WHERE id = ?").bind([step]).first({ $0.optionalInt64(0) }) ?? nil {
            return published + StepWindow.length
        }
        return (due ?? at) + Timestamp.day
    }

    /// Writes one outbox entry per live device of `recipient` for row `row`, in the caller's
    /// transaction. A silent replacement supersedes the row's entries that have not gone yet:
    /// only the newest state of a batch is worth sending — with its sound, when the sound it
    /// replaces never went (a batch that grew before its first push left makes its one sound
    /// with the newer card).
    ///
    /// Made inside the recipient's `quiet` hours, the entries are held: due when the hours end
    /// (`QuietHours.heldUntil`), judged again then like any other.
    func enqueuePushes(row: Int, recipient: Int, kind: Kind, silent: Bool, at: Int64, step: Int?, rowAt: Int64? = nil,
                       quiet: QuietHours?) throws {
        let hour = StatsCounters.hour(of: rowAt ?? at)
        let heldUntil = quiet?.heldUntil(at)
        let due = heldUntil ?? at
        if !silent {
            // One statement that reads nothing back (sent ahead on PostgreSQL): no device, no entry;
            // a push about a step window expires with the window (`pushExpiry`, in SQL).
            try db.cached("""
                INSERT INTO outbox(row, token, platform, silent, created_at, due_at, expires_at, held)
                SELECT ?1, token, platform, 0, ?2, ?7, coalesce((SELECT published_at + ?3 FROM steps WHERE id = ?4), ?5), ?8
                FROM devices WHERE user = ?6 AND disabled_at IS NULL
                """).bind([row, at, StepWindow.length, kind.category == .stepWith ? step : nil, due + Timestamp.day, recipient,
                           due, heldUntil != nil]).run()
            try countEntries(hour: hour, "FROM devices WHERE user = ? AND disabled_at IS NULL", [recipient])
            return
        }
        guard try db.cached("SELECT EXISTS (SELECT 1 FROM devices WHERE user = ? AND disabled_at IS NULL)")
            .bind([recipient]).first({ $0.bool(0) }) == true else { return }
        var silent = silent
        if silent {
            let soundWaiting = try db.cached("SELECT EXISTS (SELECT 1 FROM outbox WHERE row = ? AND state = 'due' AND silent = 0)")
                .bind([row]).first { $0.bool(0) } ?? false
            try countEntries(hour: hour, outcome: "superseded", "FROM outbox WHERE row = ? AND state = 'due'", [row])
            try db.cached("UPDATE outbox SET state = 'superseded' WHERE row = ? AND state = 'due'").bind([row]).run()
            if soundWaiting { silent = false }
        }
        let expires = try pushExpiry(kind: kind, at: at, due: due, step: step)
        try db.cached("""
            INSERT INTO outbox(row, token, platform, silent, created_at, due_at, expires_at, held)
            SELECT ?, token, platform, ?, ?, ?, ?, ? FROM devices WHERE user = ? AND disabled_at IS NULL
            """).bind([row, silent, at, due, expires, heldUntil != nil, recipient]).run()
        try countEntries(hour: hour, "FROM devices WHERE user = ? AND disabled_at IS NULL", [recipient])
    }

    /// Adds to the delivery counter `outcome` of `hour` the rows of `from` (a FROM clause and
    /// its values): one statement that reads nothing back.
    func countEntries(hour: Int64, outcome: String = "entries", _ from: String, _ values: [SQLBindable]) throws {
        try db.cached("""
            INSERT INTO stats_delivery(hour, outcome, reason, slot, n) SELECT ?, ?, '', ?, count(*) \(from) HAVING count(*) > 0
            \(StatsCounters.upsertDelivery)
            """).bind([hour, outcome, slot] + values).run()
    }

    /// The entries of a fan-out's sent rows, written set-based after its rows: nothing at all
    /// to do while no one has registered a device. Those of everyone inside their quiet hours
    /// are written held, due when their hours end, in the same statement: the settings that
    /// hold now are few (people share a handful of windows and zones; the fan-out kept each
    /// candidate's), each becomes a branch of a CASE, and no one's entry is written twice.
    /// (Held entries were first written due and then moved, one UPDATE a setting, with the
    /// settings found through `users`: a publish to 400,000 phones, half of them held, took 8%
    /// more CPU than without quiet hours; written once, 5–7%, the held entries' own index.)
    func enqueueFanoutPushes(event: Int, kind: Kind, at: Int64, step: Int?) throws {
        guard try db.scalar("SELECT EXISTS (SELECT 1 FROM devices WHERE disabled_at IS NULL)") == 1 else { return }
        let expires = try pushExpiry(kind: kind, at: at, step: step)
        // The settings among those pushed to (the fan-out kept each one's), each with when it
        // ends if it holds now.
        var held: [(stored: String, due: Int64, expires: Int64)] = []
        for stored in try db.query("""
            SELECT DISTINCT quiet FROM fanout WHERE quiet IS NOT NULL AND reason IS NULL AND push = 'sent'
            """, [], { $0.string(0) }) {
            guard let due = QuietHours(stored: stored)?.heldUntil(at) else { continue }
            held.append((stored, due, try pushExpiry(kind: kind, at: at, due: due, step: step)))
        }
        let from = """
            FROM fanout AS d JOIN devices AS dv ON dv.user = d.u AND dv.disabled_at IS NULL
                 JOIN notifications AS n ON n.recipient = d.u AND n.event = ?
            """
        if held.isEmpty {
            try db.run("""
                INSERT INTO outbox(row, token, platform, silent, created_at, due_at, expires_at)
                SELECT n.id, dv.token, dv.platform, 0, ?, ?, ? \(from)
                WHERE d.reason IS NULL AND d.push = 'sent'
                """, at, at, expires, event)
        } else {
            func branches(_ value: (Int) -> SQLBindable, otherwise: SQLBindable) -> (String, [SQLBindable]) {
                let text = "CASE d.quiet " + held.map { _ in "WHEN CAST(? AS TEXT) THEN CAST(? AS BIGINT) " }.joined() + "ELSE CAST(? AS BIGINT) END"
                return (text, held.indices.flatMap { [held[$0].stored, value($0)] as [SQLBindable] } + [otherwise])
            }
            let (due, dueValues) = branches({ held[$0].due }, otherwise: at)
            let (expiry, expiryValues) = branches({ held[$0].expires }, otherwise: expires)
            let (isHeld, heldValues) = branches({ _ in 1 }, otherwise: 0)
            try db.run("""
                INSERT INTO outbox(row, token, platform, silent, created_at, due_at, expires_at, held)
                SELECT n.id, dv.token, dv.platform, 0, ?, \(due), \(expiry), \(isHeld) \(from)
                WHERE d.reason IS NULL AND d.push = 'sent'
                """, binding: [at] + dueValues + expiryValues + heldValues + [event])
        }
        try countEntries(hour: StatsCounters.hour(of: at), """
            FROM fanout AS d JOIN devices AS dv ON dv.user = d.u AND dv.disabled_at IS NULL WHERE d.reason IS NULL AND d.push = 'sent'
            """, [])
    }
}
