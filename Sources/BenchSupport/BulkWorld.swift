@_spi(Bench) import Backend
import Foundation
import Notifications
import SQLite
import Storage

/// Large worlds for benchmarks and tests, written set-based: a million rows in seconds instead
/// of a million events. They keep every invariant the store relies on (each user has an inbox,
/// each row its ord and the counters their sums), so what runs on them afterwards — events,
/// pulls, counts — runs as on a world made by events. Users are `u1` … `uN` with keys 1 … N.
public struct BulkWorld {
    let store: Store
    private var db: Connection { store.connection }

    public init(_ store: Store) { self.store = store }

    /// Runs `body` in one transaction.
    public func build(_ body: () throws -> Void) throws {
        try db.transaction(body)
        // Rows written here bypassed the trust budget's counters: count them from the rows.
        try store.stats.recount()
        try store.recountPushDays()
        switch db.engine {
        case .sqlite: try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        case .postgresql:
            // The keys written here were chosen, not drawn: move each key sequence past them.
            for table in ["users", "journeys", "steps", "events", "notifications", "outbox"] {
                try db.execute("""
                    SELECT setval(pg_get_serial_sequence('\(table)', 'id'), coalesce(max(id), 0) + 1, false) FROM \(table)
                    """)
            }
            // Statistics for the tables the world filled; the ones it left (nearly) empty, such as
            // `events`, which the load fills, keep none: PostgreSQL then assumes a table of some
            // size. Statistics taken of an empty `events` made every cached plan look an event up
            // by scanning the whole table, which grew as the load ran (1.2 ms a lookup after 20 s).
            let tables = try db.query("""
                SELECT c.relname FROM pg_class AS c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
                   AND NOT c.relispartition
                """) { $0.string(0) }
            for table in tables where try db.scalar("SELECT count(*) FROM (SELECT 1 FROM \(table) LIMIT 1000) AS t") ?? 0 >= 1000 {
                try db.execute("ANALYZE \(table)")
            }
        }
    }

    /// The floor an ingest is measured against: `count` rows shaped like a heart's row (the same
    /// table, columns and indexes), each inserted by one prepared statement through the same
    /// connection an ingest uses, `perTransaction` to a commit (as many as an ingest's batch, to
    /// compare with one: a commit rewrites every page it touched), for recipients drawn from
    /// `recipients`. Returns the rows inserted a second. Nothing else is written: no event, no
    /// counter, no decision — what is left of an event when every rule is taken away.
    public func rawInsertRate(_ count: Int, recipients: ClosedRange<Int>, perTransaction: Int) throws -> Double {
        let base = (try db.scalar("SELECT coalesce(max(id), 0) FROM notifications") ?? 0) + 1
        var random = SystemRandomNumberGenerator()
        // The log is emptied as an ingest empties it: past its bound, not every thousand pages.
        let sqlite = db.engine == .sqlite
        if sqlite { try db.execute("PRAGMA wal_autocheckpoint = 0") }
        defer { if sqlite { try? db.execute("PRAGMA wal_autocheckpoint = \(Checkpointer.defaultAutocheckpoint)") } }
        let begin = DispatchTime.now()
        var done = 0
        while done < count {
            if sqlite && Checkpointer.logSize(db.path) > Ingestor.largestLog { try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
            try db.transaction {
                for _ in 0..<min(perTransaction, count - done) {
                    let i = base + done
                    let recipient = Int.random(in: recipients, using: &random)
                    try db.cached("""
                        INSERT INTO notifications(event, recipient, ord, kind, actor, title, body, push_body, push_image, face, image,
                                                  step, comment, journey, tier, tap, thread, push, created_at, version)
                        VALUES (?, ?, ?, 'steppedWithHeart', ?, ?, 'Stepped with you by heart: a caption of a step', NULL,
                                'https://cdn.stepo.app/steps/s1.jpg', 'https://cdn.stepo.app/avatars/u1.jpg',
                                'https://cdn.stepo.app/steps/s1.jpg', ?, NULL, NULL, NULL, '{"screen":"step","step":"s1"}',
                                'step:s1', 'sent', ?, ?)
                        """).bind([i, recipient, 1_000_000 + i, recipient, "User \(i)", i % 20_000 + 1, 1_700_000_000 + i, i]).run()
                    done += 1
                }
            }
        }
        return Double(count) / max(Double(DispatchTime.now().uptimeNanoseconds - begin.uptimeNanoseconds) / 1e9, 1e-9)
    }

    /// A CTE `n(i)` of the numbers 1 … `count`.
    private func numbers(_ count: Int) -> String {
        switch db.engine {
        case .sqlite: return "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(max(1, count)))"
        case .postgresql: return "WITH n(i) AS (SELECT generate_series(1, \(max(1, count)))::bigint)"
        }
    }

    /// Users u`first` … u`last`, with keys `first` … `last` and empty inboxes.
    public func addUsers(_ keys: ClosedRange<Int>) throws {
        try db.run("""
            \(numbers(keys.count))
            INSERT INTO users(id, ext, username, name, avatar_url, created_at)
            SELECT \(keys.lowerBound - 1) + i, 'u' || (\(keys.lowerBound - 1) + i), 'u' || (\(keys.lowerBound - 1) + i),
                   'User ' || (\(keys.lowerBound - 1) + i), 'https://cdn.stepo.app/avatars/u' || (\(keys.lowerBound - 1) + i) || '.jpg', 0
            FROM n
            """)
        try db.run("INSERT INTO inboxes(user) SELECT id FROM users WHERE id BETWEEN ? AND ?", keys.lowerBound, keys.upperBound)
    }

    /// Every user of `followers` whose key is `remainder` modulo `modulus` follows `followee`.
    public func addFollowers(of followee: Int, _ followers: ClosedRange<Int>, modulus: Int = 1, remainder: Int = 0) throws {
        try db.run("""
            INSERT INTO follows(followee, follower, created_at)
            SELECT ?, id, 0 FROM users WHERE id BETWEEN ? AND ? AND id % ? = ? AND id <> ?
            ON CONFLICT DO NOTHING
            """, followee, followers.lowerBound, followers.upperBound, modulus, remainder, followee)
    }

    /// Among the followers of `owner`, those with key ≡ `remainder` (mod `modulus`) block the
    /// owner (`theyBlock`) or are blocked by them.
    public func addBlocks(around owner: Int, modulus: Int, remainder: Int, theyBlock: Bool) throws {
        if theyBlock {
            try db.run("INSERT INTO blocks(blocker, blocked) SELECT follower, ? FROM follows WHERE followee = ? AND follower % ? = ? ON CONFLICT DO NOTHING",
                       owner, owner, modulus, remainder)
        } else {
            try db.run("INSERT INTO blocks(blocker, blocked) SELECT ?, follower FROM follows WHERE followee = ? AND follower % ? = ? ON CONFLICT DO NOTHING",
                       owner, owner, modulus, remainder)
        }
    }

    /// Users of `keys` with key ≡ `remainder` (mod `modulus`) turn the category off.
    public func turnOff(_ category: Category, _ keys: ClosedRange<Int>, modulus: Int, remainder: Int) throws {
        try db.run("UPDATE users SET \(Store.preferenceColumn(category)) = 0 WHERE id BETWEEN ? AND ? AND id % ? = ?",
                   keys.lowerBound, keys.upperBound, modulus, remainder)
    }

    /// Users of `keys` with key ≡ `remainder` (mod `modulus`) set a custom follow alert on
    /// `person`: alternately all and off.
    public func addAlerts(on person: Int, _ keys: ClosedRange<Int>, modulus: Int, remainder: Int) throws {
        try db.run("""
            INSERT INTO person_alerts(user, person, mode)
            SELECT id, ?, CASE WHEN (id / ?) % 2 = 0 THEN 'all' ELSE 'off' END FROM users
            WHERE id BETWEEN ? AND ? AND id % ? = ?
            """, person, modulus, keys.lowerBound, keys.upperBound, modulus, remainder)
        try db.run("UPDATE users SET alerts = alerts + 1 WHERE id BETWEEN ? AND ? AND id % ? = ?",
                   keys.lowerBound, keys.upperBound, modulus, remainder)
    }

    /// Users of `keys` with key ≡ `remainder` (mod `modulus`) set quiet hours (`QuietHours.stored`).
    public func setQuietHours(_ stored: String, _ keys: ClosedRange<Int>, modulus: Int, remainder: Int) throws {
        try db.run("UPDATE users SET quiet_hours = ? WHERE id BETWEEN ? AND ? AND id % ? = ?",
                   stored, keys.lowerBound, keys.upperBound, modulus, remainder)
    }

    /// Users of `keys` with key ≡ `remainder` (mod `modulus`) are deactivated.
    public func deactivate(_ keys: ClosedRange<Int>, modulus: Int, remainder: Int) throws {
        try db.run("UPDATE users SET state = 'deactivated' WHERE id BETWEEN ? AND ? AND id % ? = ?",
                   keys.lowerBound, keys.upperBound, modulus, remainder)
    }

    /// Journeys j1 … j`count`, journey i owned by user 1 + (i - 1) % `owners`.
    public func addJourneys(_ count: Int, owners: Int) throws {
        try db.run("""
            \(numbers(count))
            INSERT INTO journeys(id, ext, owner, title, created_at) SELECT i, 'j' || i, 1 + (i - 1) % ?, 'Journey ' || i, 0 FROM n
            """, owners)
    }

    /// `count` of the followers of journey 1's owner (every `modulus`-th) also follow journey 1.
    public func addJourneyFollowers(journey: Int, amongFollowersOf owner: Int, modulus: Int, count: Int) throws {
        try db.run("""
            INSERT INTO journey_follows(journey, follower, created_at)
            SELECT ?, follower, 0 FROM follows WHERE followee = ? AND follower % ? = 1 LIMIT ?
            ON CONFLICT DO NOTHING
            """, journey, owner, modulus, count)
    }

    /// Published steps s1 … s`count`, step i in journey 1 + i % `journeys` (and owned by its owner).
    public func addSteps(_ count: Int, journeys: Int, publishedAt: Int64) throws {
        try db.run("""
            \(numbers(count))
            INSERT INTO steps(id, ext, journey, owner, caption, photo_url, created_at, published_at)
            SELECT i, 's' || i, 1 + i % ?, (SELECT owner FROM journeys WHERE id = 1 + i % ?),
                   'Step ' || i || ': a morning run up the ridge and back', 'https://cdn.stepo.app/steps/s' || i || '.jpg', 0, ?
            FROM n
            """, journeys, journeys, publishedAt)
    }

    /// `count` heart rows for `recipient`, one a `spacing` apart ending at `newest`, from
    /// actors among `actors` on steps among `steps` (the owner's); the last `unseen` unseen,
    /// every third read. The counters and ords are kept right; one event carries them all.
    public func addRows(recipient: Int, count: Int, newest: Int64, spacing: Int64, actors: ClosedRange<Int>,
                        steps: Int = 1, unseen: Int? = nil, readEvery: Int = 0, eventEach: Bool = false) throws {
        // With `eventEach`, each row has an event of its own, at its time and in its order, as
        // hearts arrive (made before the rows' version, so it is the newest); otherwise they
        // share that version's.
        var firstEvent = 0
        if eventEach {
            // Ids from producers are in no order: the id index is written all over, as it is.
            let before = try db.scalar("SELECT coalesce(max(id), 0) FROM events") ?? 0
            try db.run("""
                \(numbers(count))
                INSERT INTO events(ext, type, at)
                SELECT 'h' || ((i * 2654435761) % 1000000007) || '-' || i, 'heart', :newest - (:count - i) * :spacing FROM n ORDER BY i
                """, named: [":newest": newest, ":count": count, ":spacing": spacing])
            firstEvent = try db.scalar("SELECT min(id) FROM events WHERE id > ?", before) ?? 0
        }
        let event = try store.stampVersion("bulk", at: newest)
        let ordBase = try store.counters(of: recipient).total
        let seenThrough = unseen.map { count - $0 } ?? 0
        try db.run("""
            \(numbers(count))
            INSERT INTO notifications(event, recipient, ord, kind, actor, title, body, face, image, step, journey, tap, thread,
                                      push, created_at, version, read_at, seen_at)
            SELECT CASE WHEN :eventEach = 1 THEN :firstEvent + i - 1 ELSE :event END, :recipient, :ordBase + i, 'heart', :first + i % :actorCount, 'User ' || (:first + i % :actorCount),
                   'Hearted your step: ' || (SELECT caption FROM steps WHERE id = 1 + i % :steps),
                   'https://cdn.stepo.app/avatars/u' || (:first + i % :actorCount) || '.jpg',
                   'https://cdn.stepo.app/steps/s' || (1 + i % :steps) || '.jpg',
                   1 + i % :steps, (SELECT journey FROM steps WHERE id = 1 + i % :steps),
                   '{"screen":"step","step":"s' || (1 + i % :steps) || '","comments":"closed"}', 'step:s' || (1 + i % :steps),
                   'sent', :newest - (:count - i) * :spacing, :event,
                   CASE WHEN :readEvery > 0 AND i % :readEvery = 0 THEN :newest END,
                   CASE WHEN :readEvery > 0 AND i % :readEvery = 0 THEN :newest END
            FROM n
            """, named: [":event": event, ":eventEach": eventEach ? 1 : 0, ":firstEvent": firstEvent, ":recipient": recipient, ":ordBase": ordBase, ":first": actors.lowerBound,
                         ":actorCount": actors.count, ":steps": steps, ":newest": newest, ":count": count, ":spacing": spacing,
                         ":readEvery": readEvery])
        let read = readEvery > 0 ? count / readEvery : 0
        try db.run("UPDATE inboxes SET total = total + ?, read_above = read_above + ?, seen_above = seen_above + ? WHERE user = ?",
                   count, read, read, recipient)
        if seenThrough > 0 {
            let last = try db.first("SELECT id, ord FROM notifications WHERE recipient = ? AND ord = ?", [recipient, ordBase + seenThrough]) {
                ($0.int(0), $0.int(1))
            }
            if let last {
                let stamped = try db.scalar("""
                    SELECT count(*) FROM notifications WHERE recipient = ? AND seen_at IS NOT NULL AND ord <= ?
                    """, recipient, last.1) ?? 0
                let version = try store.stampVersion("seen", at: newest)
                try db.run("INSERT INTO marks(user, version, kind, through_ord, through_row, at) VALUES (?, ?, 'seen', ?, ?, ?)",
                           recipient, version, last.1, last.0, newest)
                try db.run("UPDATE inboxes SET seen_ord = ?, seen_above = seen_above - ? WHERE user = ?", last.1, stamped, recipient)
            }
        }
    }

    /// `count` rows spread over users `recipients`, for a store that holds a lot beside the
    /// rows being measured.
    public func addBackgroundRows(_ count: Int, recipients: ClosedRange<Int>, newest: Int64) throws {
        let event = try store.stampVersion("bulk", at: newest)
        try db.run("""
            \(numbers(count))
            INSERT INTO notifications(event, recipient, ord, kind, actor, title, body, tap, thread, push, created_at, version)
            SELECT :event, r, (SELECT total FROM inboxes WHERE user = r) + row_number() OVER (PARTITION BY r ORDER BY i),
                   'heart', 1, 'User 1', 'Hearted your step: a caption', '{"screen":"step","step":"s0","comments":"closed"}',
                   'step:s0', 'sent', :newest - (i * 1209) % 1209600000, :event
            FROM (SELECT i, :first + (i * 7919) % :spread AS r FROM n) AS spread
            """, named: [":event": event, ":newest": newest, ":first": recipients.lowerBound, ":spread": recipients.count])
        try db.run("""
            UPDATE inboxes SET total = total + (SELECT count(*) FROM notifications AS n WHERE n.recipient = inboxes.user AND n.event = ?)
            WHERE user BETWEEN ? AND ?
            """, event, recipients.lowerBound, recipients.upperBound)
    }

    /// `count` heart rows to users `recipients`, made by one producer event per hour for
    /// `hours` hours up to `newest` (each event's rows contiguous, made at its time, its range
    /// recorded): a history the trust budget can read both from its counters and row by row.
    public func addHourlyRows(_ count: Int, recipients: ClosedRange<Int>, newest: Int64, hours: Int) throws {
        let hour: Int64 = 3_600_000
        var first = 0
        for h in 0..<hours {
            let id = try db.first("INSERT INTO events(\(store.versionColumn)ext, type, at) VALUES (\(store.versionValue)?, 'heart', ?) RETURNING id",
                                  ["bulk-hour-\(h)", newest - Int64(hours - 1 - h) * hour]) { $0.int(0) } ?? 0
            if h == 0 { first = id }
        }
        try db.run("""
            \(numbers(count))
            INSERT INTO notifications(event, recipient, ord, kind, actor, title, body, tap, thread, push, created_at, version)
            SELECT :first + h, r, (SELECT total FROM inboxes WHERE user = r) + row_number() OVER (PARTITION BY r ORDER BY i),
                   'heart', 1, 'User 1', 'Hearted your step: a caption', '{"screen":"step","step":"s0","comments":"closed"}',
                   'step:s0', 'sent', :newest - (:hours - 1 - h) * :hour, :first + h
            FROM (SELECT i, (i - 1) * :hours / :count AS h, :low + (i * 7919) % :spread AS r FROM n) AS spread
            ORDER BY i
            """, named: [":first": first, ":newest": newest, ":hours": hours, ":hour": hour, ":count": count,
                         ":low": recipients.lowerBound, ":spread": recipients.count])
        // Rows were written in the order of i, so their ids are consecutive: event h holds the
        // i whose block is h, from ⌈h·count/hours⌉ + 1 on.
        let last = try db.scalar("SELECT max(id) FROM notifications") ?? 0
        let base = last - count + 1
        func firstI(_ h: Int) -> Int { (h * count + hours - 1) / hours + 1 }
        for h in 0..<hours where firstI(h) <= firstI(h + 1) - 1 {
            try db.run("UPDATE events SET first_row = ?, last_row = ? WHERE id = ?",
                       base + firstI(h) - 1, base + firstI(h + 1) - 2, first + h)
        }
        try db.run("""
            UPDATE inboxes SET total = (SELECT count(*) FROM notifications AS n WHERE n.recipient = inboxes.user)
            WHERE user BETWEEN ? AND ?
            """, recipients.lowerBound, recipients.upperBound)
    }

    /// Times inserting again, in one raw INSERT … SELECT, the rows an event made (the
    /// fan-out's yardstick); the copies are then removed. Returns seconds.
    public func timeRawInsert(sameRowsAs outcome: EventOutcome) throws -> Double {
        guard let first = outcome.firstRow, let last = outcome.lastRow else { return 0 }
        try db.execute("""
            DROP TABLE IF EXISTS same_rows;
            CREATE TEMP TABLE same_rows AS SELECT recipient, event, ord, kind, actor, step, journey FROM notifications
            WHERE id BETWEEN \(first) AND \(last)
            """)
        let start = DispatchTime.now()
        var copies: (Int, Int) = (0, 0)
        try db.transaction {
            try db.run("""
                INSERT INTO notifications(event, recipient, ord, kind, actor, step, journey, push, created_at, version)
                SELECT event, recipient, ord, kind, actor, step, journey, 'sent', 0, event FROM same_rows
                """)
            let last = try db.lastInsertedID("notifications")
            copies = (last - db.changes + 1, last)
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        try db.run("DELETE FROM notifications WHERE id BETWEEN ? AND ?", copies.0, copies.1)
        return elapsed
    }

    /// Each user of `keys` has one phone, token `PREFIX` + key: an iPhone (APNs) for even keys,
    /// an Android (FCM) for odd ones.
    public func addDevices(_ keys: ClosedRange<Int>, prefix: String, registeredAt: Int64) throws {
        try db.run("""
            INSERT INTO devices(token, user, platform, environment, registered_at)
            SELECT ? || id, id, CASE WHEN id % 2 = 0 THEN 'apns' ELSE 'fcm' END, 'production', ?
            FROM users WHERE id BETWEEN ? AND ?
            """, prefix, registeredAt, keys.lowerBound, keys.upperBound)
    }

    /// Reads the store's tables once, as a running server has them in memory.
    public func warm() throws {
        let index = db.engine == .sqlite ? "INDEXED BY notifications_by_recipient" : ""
        _ = try db.scalar("SELECT count(*) FROM notifications \(index) WHERE recipient > 0")
        _ = try db.scalar("SELECT count(*) FROM users")
        _ = try db.scalar("SELECT count(*) FROM inboxes")
    }
}

extension Connection {
    /// Runs `sql` with named values bound, ignoring results.
    func run(_ sql: String, named values: [String: SQLBindable]) throws {
        try cached(sql).bind(named: values).run()
    }
}

extension BulkWorld {
    /// A store where u1 has `rows` unseen hearts, a second apart, from `people` others (u2 …)
    /// on its `steps` steps in 10 journeys: one person with a lot, for the benches and the
    /// tests that need many rows fast.
    public static func popularReader(_ path: String, rows: Int, people: Int = 1000, steps: Int = 100) throws -> Store {
        let store = try Store(path: path)
        let bulk = BulkWorld(store)
        try bulk.build {
            try bulk.addUsers(1...(people + 1))
            try bulk.addJourneys(10, owners: 1)
            try bulk.addSteps(steps, journeys: 10, publishedAt: Timestamp.parse("2026-11-01T00:00:00Z")!)
            try bulk.addRows(recipient: 1, count: rows, newest: Timestamp.parse("2026-11-29T00:00:00Z")!, spacing: 1000,
                             actors: 2...(people + 1), steps: steps)
        }
        return store
    }
}
