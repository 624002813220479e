import Foundation
import Notifications
import Storage

/// What one prune removed.
public struct PruneReport: Equatable, Sendable {
    /// Rows older than this were asked to go; events older than it are refused from now on.
    public var horizon: Int64 = 0
    /// People whose oldest rows went.
    public var recipients = 0
    public var rows = 0
    /// Outbox entries (and their attempts) of the rows that went.
    public var entries = 0
    /// Why-not records (`suppressions`) of events older than the horizon.
    public var suppressions = 0
    /// Events removed from the oldest part of the log, with the preference changes they made.
    public var events = 0
    /// The store had never taken an event: nothing was done, and no horizon was set.
    public var empty = false
    /// Transactions the prune committed: each removed at most one chunk.
    public var transactions = 0
    /// The longest any one of them held the store, in milliseconds.
    public var longestMilliseconds = 0.0
}

/// The store's retention: how far back it keeps rows, and the prune that removes the older.
///
/// A recipient's rows go as a prefix of their inbox (their `ord`s 1…P), where P is the last
/// row before the first one newer than the horizon: a row is pruned once it and every row
/// before it in the inbox are older. One short transaction per recipient first counts the
/// prefix out of unseen and unread, as a mark would (`inboxes.pruned_ord`, the prune mark);
/// the rows then go in chunks, each its own transaction, and no chunk changes a count. A prune
/// stopped anywhere (kill -9) leaves counts exact and is finished by the next.
extension Store {
    /// The time before which the store keeps nothing: events older are refused. Nil while it
    /// keeps everything (no prune ever ran).
    public func keptSince() throws -> Int64? {
        try db.cached("SELECT value FROM settings WHERE key = 'kept_since'").bind([]).first { Int64($0.string(0)) } ?? nil
    }

    /// Reads `keptSince` for the transaction that is starting: the apply paths ask it once a
    /// transaction and refuse what is older (`refusesAsPruned`).
    func refreshKeptSince() throws {
        keptSinceNow = try keptSince()
    }

    /// Why `event` may not be applied: its time is before what the store keeps, so its id may
    /// have been forgotten with it, and applying it could repeat an event applied long ago.
    func prunedRefusal(_ event: Event) -> String? {
        guard let kept = keptSinceNow, event.at < kept else { return nil }
        return "older than the store keeps: its at \(Timestamp.format(event.at)) is before \(Timestamp.format(kept)) (stepo prune)"
    }

    /// The number of rows one chunk removes at most.
    public static let pruneChunk = 1_000

    /// Removes every row older than `horizon` that is part of its recipient's oldest rows, and
    /// what only those rows reference: their outbox entries and delivery attempts, their batch
    /// records; and the why-not records of events older than `horizon`. Unseen and unread fall
    /// with the rows; the trust budget's counters stay (they are aggregates, caught up first).
    /// "Started following you" and the request pings are remembered (`pings`) before their rows
    /// go: one ping per person, ever, outlives the row. From now on, events older than
    /// `horizon` are refused. Never moves the horizon back.
    @discardableResult
    public func prune(before horizon: Int64, chunk: Int = Store.pruneChunk,
                      progress: (PruneReport) -> Void = { _ in }) throws -> PruneReport {
        var report = PruneReport()
        let kept = max(horizon, try keptSince() ?? Int64.min)
        report.horizon = kept
        // A store that never had an event has nothing to forget, and no horizon yet: the first
        // stream it takes (the demo's sample, two weeks long) is taken whole.
        guard try db.scalar("SELECT EXISTS (SELECT 1 FROM events)") == 1 else {
            report.empty = true
            return report
        }
        func timed<T>(_ body: () throws -> T) throws -> T {
            let start = DispatchTime.now().uptimeNanoseconds
            defer {
                report.transactions += 1
                report.longestMilliseconds = max(report.longestMilliseconds, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            }
            return try db.transaction(body)
        }
        try timed {
            try db.run("INSERT INTO settings(key, value) VALUES ('kept_since', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                       String(kept))
        }
        // Counted before the rows go: a mark not yet counted would find fewer rows to count, and
        // a switch turned off within a day of the horizon would find fewer pushes before it.
        report.longestMilliseconds = try stats.catchUpStamps()
        try stats.freezeMutes(before: kept + Timestamp.day)
        // The newest row stays whatever its age: row ids are taken after the largest there is.
        let newest = try db.scalar("SELECT coalesce(max(id), 0) FROM notifications") ?? 0
        // The oldest event a kept row names: the event log goes no further than it.
        var eventsKeptFrom = Int.max
        var after = Int.min
        while true {
            let people = try db.query("SELECT user, pruned_ord FROM inboxes WHERE user > ? ORDER BY user LIMIT 500", [after]) {
                (user: $0.int(0), pruned: $0.int(1))
            }
            guard let last = people.last else { break }
            after = last.user
            for person in people {
                let (found, keptFrom) = try pruneReach(of: person.user, before: kept, newest: newest)
                if let keptFrom { eventsKeptFrom = min(eventsKeptFrom, keptFrom) }
                guard let reach = found else { continue }
                // The mark moves `chunk` rows at a time, and the rows it passed go in the same
                // transaction: each is short whoever is pruned, and the counts are exact at
                // every commit. Rows a stopped prune marked and left go first.
                var mark = person.pruned
                var removed = 0
                while true {
                    let step = min(reach, mark + chunk)
                    let gone = try timed {
                        if step > mark { try markPruned(person.user, through: step) }
                        return try removePruned(of: person.user, limit: chunk, &report)
                    }
                    mark = max(mark, step)
                    removed += gone
                    if mark >= reach && gone < chunk { break }
                    if removed % (chunk * 100) < gone { progress(report) }
                }
                if removed > 0 { report.recipients += 1 }
            }
        }
        // One version for the whole prune: pages written before it are not served again from a
        // cache or answered 304, so each reader's next pull says how far their rows were pruned.
        if report.rows > 0 { try timed { _ = try stampVersion("prune", at: kept) } }
        report.suppressions = try pruneSuppressions(before: kept, chunk: chunk, timed: timed)
        report.events = try pruneEvents(before: kept, keptFrom: eventsKeptFrom, chunk: chunk, timed: timed)
        return report
    }

    /// Removes the oldest part of the event log: the events, in the order they arrived, before
    /// the first as new as `before`, the first a kept row names (`keptFrom`), the first whose
    /// counts the trust budget has yet to take, and the newest event from outside (what says the
    /// store is not empty) — the last event of all stays too (SQLite takes the next version after
    /// it). With them go the preference changes they made. Their ids may be forgotten: an event
    /// older than the horizon is refused (`prunedRefusal`), so none of them can apply again.
    ///
    /// The log is also the store's history (`historyMark`): the mark of every version below the
    /// first event kept becomes one mark, the one of the last version removed, recorded first
    /// (`history_floor`). A replica whose version is older than that was away longer than the
    /// store keeps, and is told to start again (`409 historyDiverged`); every newer version keeps
    /// its mark.
    private func pruneEvents(before: Int64, keptFrom: Int, chunk: Int, timed: (() throws -> Int) throws -> Int) throws -> Int {
        var bound = keptFrom
        bound = min(bound, try db.scalar("SELECT coalesce(max(id), 0) FROM events") ?? 0)
        bound = min(bound, try db.scalar("SELECT coalesce(max(id), 0) FROM events WHERE ext IS NOT NULL") ?? 0)
        if let pending = try db.scalar("SELECT min(event) FROM stats_pending") { bound = min(bound, pending) }
        // On PostgreSQL a version still in flight may be below events already committed.
        bound = min(bound, try horizon())
        let floor = try historyFloor()
        guard bound > floor.below else { return 0 }
        // The first event, in arrival order, that is as new as the horizon: read from the floor
        // up, a page at a time — what arrived since the last prune.
        var after = floor.below - 1
        walk: while after < bound - 1 {
            let page = try db.query("SELECT id, at FROM events WHERE id > ? AND id < ? ORDER BY id LIMIT 1000", [after, bound]) {
                (id: $0.int(0), at: $0.int64(1))
            }
            guard let end = page.last else { break }
            for event in page where event.at >= before {
                bound = event.id
                break walk
            }
            after = end.id
        }
        guard bound > floor.below else { return 0 }
        // The floor first: from this commit on, a version below the bound has one mark.
        let mark = try historyNonce(at: bound - 1)
        _ = try timed {
            try db.run("INSERT INTO settings(key, value) VALUES ('history_floor', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                       "\(bound) \(mark)")
            return 0
        }
        var removed = 0
        for table in ["preference_changes", "suppressions"] {
            while try timed({
                try db.run("DELETE FROM \(table) WHERE \(address) IN (SELECT \(address) FROM \(table) WHERE event < ? LIMIT ?)", bound, chunk)
                return db.changes
            }) == chunk {}
        }
        // A quarter of a chunk at a time: producers' ids are in no order, so each event removed
        // rewrites a page of the id index of its own (1,000 made a transaction of 70 ms).
        let events = max(1, chunk / 4)
        while true {
            let gone = try timed {
                try db.run("DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id < ? ORDER BY id LIMIT ?)", bound, events)
                return db.changes
            }
            removed += gone
            if gone < events { break }
        }
        return removed
    }

    /// A row's own address in a table without a key: SQLite's rowid, PostgreSQL's ctid.
    private var address: String { db.dialect.writersSideBySide ? "ctid" : "rowid" }

    /// The store's history floor: versions below `below` all have the mark `mark` (the last
    /// one removed with the oldest events); nothing below 1 before any was.
    func historyFloor() throws -> (below: Int, mark: Int64) {
        let text = try db.cached("SELECT value FROM settings WHERE key = 'history_floor'").bind([]).first { $0.string(0) } ?? nil
        let parts = text?.split(separator: " ").compactMap { Int64($0) } ?? []
        guard parts.count == 2 else { return (1, 0) }
        return (Int(parts[0]), parts[1])
    }

    /// The history mark's number at `version`: the nonce of the newest change at or below it, or
    /// below the history floor, the floor's (0 before the first change).
    func historyNonce(at version: Int) throws -> Int64 {
        let floor = try historyFloor()
        if version < floor.below { return floor.mark }
        return try db.cached("SELECT coalesce(nonce, 0) FROM events WHERE id <= ? ORDER BY id DESC LIMIT 1")
            .bind([version]).first { $0.int64(0) } ?? 0
    }

    /// Removes the why-not records of events older than `before`: the events that have any are
    /// found through the records' index, a page at a time, and each event's records go `chunk`
    /// at a time (a publish to a million people can leave a million), each in a transaction of
    /// its own.
    private func pruneSuppressions(before: Int64, chunk: Int, timed: (() throws -> Int) throws -> Int) throws -> Int {
        var removed = 0
        var after = Int.min
        while true {
            let events = try db.query("""
                SELECT DISTINCT s.event FROM suppressions AS s JOIN events AS e ON e.id = s.event
                WHERE s.event > ? AND e.at < ? ORDER BY s.event LIMIT 500
                """, [after, before]) { $0.int(0) }
            guard let end = events.last else { return removed }
            after = end
            for event in events {
                while true {
                    let gone = try timed {
                        try db.run("""
                            DELETE FROM suppressions WHERE \(address) IN (SELECT \(address) FROM suppressions WHERE event = ? LIMIT ?)
                            """, event, chunk)
                        return db.changes
                    }
                    removed += gone
                    if gone < chunk { break }
                }
            }
        }
    }

    /// The ord of the last row of `user`'s prefix of rows older than `before`, or nil.
    /// Read in the order rows arrived, which is the inbox's order (ord) but for writers side by
    /// side on PostgreSQL, where two servers' rows for one person may take their ids out of
    /// turn: the rows just past the first newer one are read too, and the prefix ends before
    /// the lowest ord among the newer. Reads the old rows and a few more, nothing else.
    ///
    /// Also the event of the first row kept (`keptFrom`, nil when none is): rows are read in
    /// event order, so it is the first newer row's event, or the first row's when none goes.
    private func pruneReach(of user: Int, before: Int64, newest: Int) throws -> (reach: Int?, keptFrom: Int?) {
        var last: Int?
        var firstNew = Int.max
        var pastNew = 0
        var firstEvent: Int?, firstNewEvent: Int?
        try db.cached("SELECT ord, id, created_at, event FROM notifications WHERE recipient = ? ORDER BY event, id")
            .bind([user]).forEach(while: { row in
                let ord = row.int(0), id = row.int(1)
                if firstEvent == nil { firstEvent = row.int(3) }
                if row.int64(2) >= before || id >= newest {
                    firstNew = min(firstNew, ord)
                    if firstNewEvent == nil { firstNewEvent = row.int(3) }
                    pastNew += 1
                } else if pastNew == 0, ord > (last ?? 0) {
                    last = ord
                }
                return pastNew < 64
            })
        guard let last, last < firstNew else { return (nil, firstEvent) }
        return (last, firstNewEvent)
    }

    /// Counts `user`'s rows through `reach` out of unseen and unread, as a mark through them
    /// would (rows stamped one by one there leave the counts of stamped rows above the marks),
    /// and records the prune mark. After this no row at or below it changes a count, whether
    /// it is still there or gone.
    private func markPruned(_ user: Int, through ord: Int) throws {
        var c = try countersForChange(of: user)
        if ord > c.seenOrd {
            c.seenAbove -= try stampedCount("seen_at", of: user, after: c.seenOrd, through: ord)
            c.seenOrd = ord
        }
        if ord > c.readOrd {
            c.readAbove -= try stampedCount("read_at", of: user, after: c.readOrd, through: ord)
            c.readOrd = ord
        }
        try db.run("""
            UPDATE inboxes SET seen_ord = ?, seen_above = ?, read_ord = ?, read_above = ?, pruned_ord = ?
            WHERE user = ? AND pruned_ord < ?
            """, c.seenOrd, c.seenAbove, c.readOrd, c.readAbove, ord, user, ord)
        // The trust budget counts a row seen when a mark first covers it: these rows never will be.
        try db.run("""
            INSERT INTO stats_reach(user, seen_ord, read_ord) VALUES (?, ?, ?)
            ON CONFLICT (user) DO UPDATE SET
                seen_ord = CASE WHEN stats_reach.seen_ord > excluded.seen_ord THEN stats_reach.seen_ord ELSE excluded.seen_ord END,
                read_ord = CASE WHEN stats_reach.read_ord > excluded.read_ord THEN stats_reach.read_ord ELSE excluded.read_ord END
            """, user, ord, ord)
    }

    private func stampedCount(_ column: String, of user: Int, after: Int, through: Int) throws -> Int {
        try db.scalar("SELECT count(*) FROM notifications WHERE recipient = ? AND \(column) IS NOT NULL AND ord > ? AND ord <= ?",
                      user, after, through) ?? 0
    }

    /// Removes up to `limit` of `user`'s rows at or below their prune mark, with what only they
    /// reference; returns how many went.
    private func removePruned(of user: Int, limit: Int, _ report: inout PruneReport) throws -> Int {
        // In the order rows arrived, from the oldest, until `limit` are found or the rows past the
        // mark have been read a little way (see `pruneReach`): never a scan of the rows kept.
        guard let mark = try db.scalar("SELECT pruned_ord FROM inboxes WHERE user = ?", user), mark > 0 else { return 0 }
        var ids: [Int] = []
        var past = 0
        try db.cached("SELECT id, ord FROM notifications WHERE recipient = ? ORDER BY event, id").bind([user]).forEach(while: { row in
            if row.int(1) <= mark { ids.append(row.int(0)) } else { past += 1 }
            return ids.count < limit && past < 64
        })
        guard !ids.isEmpty else { return 0 }
        // By id alone on SQLite: given the recipient too, it read all of a person's rows through
        // their index for each chunk (a prune of 800,000 rows took ten times as long at 4×).
        // PostgreSQL is given the recipient, which names the one partition to look in.
        let owner = db.dialect.writersSideBySide ? "recipient = ? AND " : ""
        let leading: [SQLBindable] = db.dialect.writersSideBySide ? [user] : []
        try db.runKeyed("""
            INSERT INTO pings(recipient, actor, kind)
            SELECT recipient, actor, kind FROM notifications WHERE \(owner)id IN (%)
               AND kind IN ('newFollower', 'followRequest', 'followRequestAccepted') AND actor IS NOT NULL
            ON CONFLICT DO NOTHING
            """, ids, leading: leading)
        try db.runKeyed("DELETE FROM delivery_attempts WHERE entry IN (SELECT id FROM outbox WHERE row IN (%))", ids)
        try db.runKeyed("DELETE FROM outbox WHERE row IN (%)", ids)
        report.entries += db.changes
        try db.runKeyed("DELETE FROM batch_members WHERE row IN (%)", ids)
        try db.runKeyed("DELETE FROM batches WHERE row IN (%)", ids)
        try db.runKeyed("DELETE FROM notifications WHERE \(owner)id IN (%)", ids, leading: leading)
        report.rows += db.changes
        // The last row gone, for what replicas are told to drop.
        try db.run("UPDATE inboxes SET pruned_row = ? WHERE user = ? AND pruned_row < ?", ids.max() ?? 0, user, ids.max() ?? 0)
        return ids.count
    }
}
