import Notifications
import Storage
import Wire

/// A device a user registered for pushes.
public struct DeviceRecord: Equatable, Sendable {
    public enum Platform: String, Sendable, CaseIterable { case apns, fcm }
    public enum Environment: String, Sendable, CaseIterable { case sandbox, production }

    public var token: String
    public var user: String
    public var platform: Platform
    public var environment: Environment
    public var registeredAt: Int64
    public var disabledAt: Int64?

    public var json: JSON {
        .members([("token", .string(token)), ("platform", .string(platform.rawValue)),
                  ("environment", .string(environment.rawValue)), ("registeredAt", .string(Timestamp.format(registeredAt))),
                  ("disabledAt", disabledAt.map { .string(Timestamp.format($0)) })])
    }
}

/// One push waiting in (or gone from) the outbox.
public struct OutboxEntry: Equatable, Sendable {
    /// `dropped`: the rules, judged again when it was claimed, forbade it (see `drop`).
    public enum State: String, Sendable, CaseIterable { case due, claimed, sent, dead, superseded, dropped }

    public var id: Int
    public var row: Int
    public var token: String
    public var platform: DeviceRecord.Platform
    public var silent: Bool
    public var state: State
    public var dueAt: Int64
    public var expiresAt: Int64?
    public var attempts: Int
}

/// Devices, and the outbox the rows' pushes are written to (docs/delivery.md).
extension Store {
    /// The longest token a provider issues is 200 bytes (FCM's); a little room beyond.
    public static let longestDeviceToken = 512

    /// Whether `token` can be a device token: 1–512 printable ASCII characters, no space and
    /// no '/' (it travels in a URL path).
    public static func isValidDeviceToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= longestDeviceToken
            && token.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value < 0x7F && $0 != "/" }
    }

    /// Registers `token` for `user`. A token registered again moves to its new owner, and a
    /// token the provider had given up on is live again.
    public func registerDevice(_ token: String, platform: DeviceRecord.Platform, environment: DeviceRecord.Environment,
                               for user: UserRecord, at: Int64) throws {
        try db.run("""
            INSERT INTO devices(token, user, platform, environment, registered_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (token) DO UPDATE SET user = excluded.user, platform = excluded.platform,
                environment = excluded.environment, registered_at = excluded.registered_at, disabled_at = NULL
            """, token, user.key, platform.rawValue, environment.rawValue, at)
    }

    /// Removes one of `user`'s own tokens; false when it is not theirs (or not there).
    public func removeDevice(_ token: String, of user: UserRecord) throws -> Bool {
        try db.run("DELETE FROM devices WHERE token = ? AND user = ?", token, user.key)
        return db.changes > 0
    }

    /// `user`'s devices, newest registration first.
    public func devices(of user: UserRecord) throws -> [DeviceRecord] {
        try db.query("""
            SELECT token, platform, environment, registered_at, disabled_at FROM devices WHERE user = ?
            ORDER BY registered_at DESC, token
            """, [user.key]) { r in
            DeviceRecord(token: r.string(0), user: user.id, platform: DeviceRecord.Platform(rawValue: r.string(1)) ?? .apns,
                         environment: DeviceRecord.Environment(rawValue: r.string(2)) ?? .production,
                         registeredAt: r.int64(3), disabledAt: r.optionalInt64(4))
        }
    }

    /// When a push of `kind` stops being worth delivering: a step-with push when its step's
    /// 24-hour window closes (the opening it announces is gone), any other a day after it was
    /// made.
    func pushExpiry(kind: Kind, at: Int64, step: Int?) throws -> Int64 {
        if kind.category == .stepWith, let step,
           let published = try db.cached("SELECT published_at FROM steps WHERE id = ?").bind([step]).first({ $0.optionalInt64(0) }) ?? nil {
            return published + StepWindow.length
        }
        return at + Timestamp.day
    }

    /// Writes one outbox entry per live device of `recipient` for row `row`, in the caller's
    /// transaction. A silent replacement supersedes the row's entries that have not gone yet:
    /// only the newest state of a batch is worth sending — with its sound, when the sound it
    /// replaces never went (a batch that grew before its first push left makes its one sound
    /// with the newer card).
    func enqueuePushes(row: Int, recipient: Int, kind: Kind, silent: Bool, at: Int64, step: Int?, rowAt: Int64? = nil) throws {
        let hour = StatsCounters.hour(of: rowAt ?? at)
        if !silent {
            // One statement that reads nothing back (sent ahead on PostgreSQL): no device, no entry;
            // a push about a step window expires with the window (`pushExpiry`, in SQL).
            try db.cached("""
                INSERT INTO outbox(row, token, platform, silent, created_at, due_at, expires_at)
                SELECT ?1, token, platform, 0, ?2, ?2, coalesce((SELECT published_at + ?3 FROM steps WHERE id = ?4), ?5)
                FROM devices WHERE user = ?6 AND disabled_at IS NULL
                """).bind([row, at, StepWindow.length, kind.category == .stepWith ? step : nil, at + Timestamp.day, recipient]).run()
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
        let expires = try pushExpiry(kind: kind, at: at, step: step)
        try db.cached("""
            INSERT INTO outbox(row, token, platform, silent, created_at, due_at, expires_at)
            SELECT ?, token, platform, ?, ?, ?, ? FROM devices WHERE user = ? AND disabled_at IS NULL
            """).bind([row, silent, at, at, expires, recipient]).run()
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
    /// to do while no one has registered a device.
    func enqueueFanoutPushes(event: Int, kind: Kind, at: Int64, step: Int?) throws {
        guard try db.scalar("SELECT EXISTS (SELECT 1 FROM devices WHERE disabled_at IS NULL)") == 1 else { return }
        let expires = try pushExpiry(kind: kind, at: at, step: step)
        try db.run("""
            INSERT INTO outbox(row, token, platform, silent, created_at, due_at, expires_at)
            SELECT n.id, dv.token, dv.platform, 0, ?, ?, ?
            FROM fanout AS d JOIN devices AS dv ON dv.user = d.u AND dv.disabled_at IS NULL
                 JOIN notifications AS n ON n.recipient = d.u AND n.event = ?
            WHERE d.reason IS NULL AND d.push = 'sent'
            """, at, at, expires, event)
        try countEntries(hour: StatsCounters.hour(of: at), """
            FROM fanout AS d JOIN devices AS dv ON dv.user = d.u AND dv.disabled_at IS NULL WHERE d.reason IS NULL AND d.push = 'sent'
            """, [])
    }

    /// Entries waiting to go at `now`, oldest due first.
    public func dueEntries(now: Int64, limit: Int) throws -> [OutboxEntry] {
        try db.query("""
            SELECT id, row, token, platform, silent, state, due_at, expires_at, attempts FROM outbox
            WHERE state IN ('due', 'claimed') AND due_at <= ? AND (state = 'due' OR claimed_until < ?)
            ORDER BY due_at, id LIMIT ?
            """, [now, now, limit], Store.entry)
    }

    /// Whether an entry is waiting to go at `now` (or its claim lapsed): a worker's idle look.
    public func anythingDue(now: Int64) throws -> Bool {
        try db.cached("""
            SELECT EXISTS (SELECT 1 FROM outbox WHERE state IN ('due', 'claimed') AND due_at <= ?
                           AND (state = 'due' OR claimed_until < ?))
            """).bind([now, now]).first { $0.bool(0) } ?? false
    }

    /// Whether any entry is still due or claimed (a bench's look at a draining outbox; one
    /// probe of the due index).
    public func outboxBusy() throws -> Bool {
        try db.cached("SELECT EXISTS (SELECT 1 FROM outbox WHERE state IN ('due', 'claimed'))").bind([]).first { $0.bool(0) } ?? false
    }

    /// How many entries are in each state.
    public func outboxCounts() throws -> [OutboxEntry.State: Int] {
        var counts: [OutboxEntry.State: Int] = [:]
        for (state, count) in try db.query("SELECT state, count(*) FROM outbox GROUP BY state", [], { ($0.string(0), $0.int(1)) }) {
            if let state = OutboxEntry.State(rawValue: state) { counts[state] = count }
        }
        return counts
    }

    /// Every entry of row `id`, with its state: what `stepo explain ROW` shows.
    public func deliveries(ofRow id: Int) throws -> [OutboxEntry] {
        try db.query("""
            SELECT id, row, token, platform, silent, state, due_at, expires_at, attempts FROM outbox WHERE row = ? ORDER BY id
            """, [id], Store.entry)
    }

    static func entry(_ r: Row) -> OutboxEntry {
        OutboxEntry(id: r.int(0), row: r.int(1), token: r.string(2), platform: DeviceRecord.Platform(rawValue: r.string(3)) ?? .apns,
                    silent: r.bool(4), state: OutboxEntry.State(rawValue: r.string(5)) ?? .due, dueAt: r.int64(6),
                    expiresAt: r.optionalInt64(7), attempts: r.int(8))
    }
}

/// What a worker does with the entries it claims.
extension Store {
    /// Claims up to `limit` entries due at `now` for `worker` until `now + lease`: one
    /// statement, so two workers on one store never hold the same entry. An entry whose claim
    /// lapsed (its worker died) is due again.
    public func claimDue(worker: String, now: Int64, lease: Int64, limit: Int,
                         platforms: [DeviceRecord.Platform] = DeviceRecord.Platform.allCases) throws -> [OutboxEntry] {
        let wanted = platforms.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        guard !wanted.isEmpty else { return [] }
        // On PostgreSQL several workers claim at once: each skips the rows another is claiming.
        let skipLocked = db.dialect.lockingReadSkippingLocked
        return try db.transaction(.concurrent) {
            try db.query("""
                UPDATE outbox SET state = 'claimed', claimed_by = ?, claimed_until = ?
                WHERE id IN (SELECT id FROM outbox
                             WHERE state IN ('due', 'claimed') AND due_at <= ? AND (state = 'due' OR claimed_until < ?)
                               AND platform IN (\(wanted))
                             ORDER BY due_at, id LIMIT ?\(skipLocked))
                RETURNING id, row, token, platform, silent, state, due_at, expires_at, attempts
                """, [worker, now + lease, now, now, limit], Store.entry)
        }
    }

    /// Gives a claimed entry back, due at `dueAt`, without counting an attempt (its provider
    /// is resting).
    public func release(_ entry: OutboxEntry, dueAt: Int64) throws {
        try db.run("UPDATE outbox SET state = 'due', due_at = ?, claimed_by = NULL, claimed_until = NULL WHERE id = ?",
                   dueAt, entry.id)
    }

    /// Deletes a token whoever holds it (FCM said UNREGISTERED).
    public func forgetDevice(_ token: String) throws {
        try db.run("DELETE FROM devices WHERE token = ?", token)
    }

    /// Records one attempt at `entry` and what follows from it, in one transaction: sent, dead,
    /// or due again at `retryAt`.
    public func settle(_ entry: OutboxEntry, attempt: DeliveryAttempt, next: OutboxEntry.State, retryAt: Int64? = nil) throws {
        try db.transaction {
            try countSettled(entry, attempt: attempt, next: next)
            try db.cached("""
                INSERT INTO delivery_attempts(entry, at, status, reason, provider_id, latency_ms) VALUES (?, ?, ?, ?, ?, ?)
                """).bind([entry.id, attempt.at, attempt.status, attempt.reason, attempt.providerId, attempt.latencyMs]).run()
            try db.cached("""
                UPDATE outbox SET state = ?, attempts = attempts + 1, due_at = coalesce(?, due_at), claimed_by = NULL,
                    claimed_until = NULL WHERE id = ?
                """).bind([next.rawValue, retryAt, entry.id]).run()
        }
    }

    /// An entry given up without an attempt (past its expiry, or its row gone).
    public func abandon(_ entry: OutboxEntry, reason: String, at: Int64) throws {
        try settle(entry, attempt: DeliveryAttempt(at: at, status: nil, reason: reason, providerId: nil, latencyMs: nil), next: .dead)
    }

    /// An entry the rules, judged again now, forbid (a block, an inactive account, a deletion,
    /// a switch turned off since): dropped unsent, its reason recorded as its attempt's.
    public func drop(_ entry: OutboxEntry, reason: Reason, at: Int64) throws {
        try settle(entry, attempt: DeliveryAttempt(at: at, status: nil, reason: reason.rawValue, providerId: nil, latencyMs: nil),
                   next: .dropped)
    }

    /// The provider said `token` is gone as of `since`: disabled, unless it was registered
    /// again after that (a newer registration outranks an older answer).
    public func disableDevice(_ token: String, since: Int64, at: Int64) throws {
        try db.run("UPDATE devices SET disabled_at = ? WHERE token = ? AND registered_at <= ? AND disabled_at IS NULL",
                   at, token, since)
    }

    /// The attempts at `entry`, oldest first.
    public func attempts(of entry: Int) throws -> [DeliveryAttempt] {
        try db.query("SELECT at, status, reason, provider_id, latency_ms FROM delivery_attempts WHERE entry = ? ORDER BY rowid",
                     [entry]) { r in
            DeliveryAttempt(at: r.int64(0), status: r.optionalInt(1), reason: r.optionalString(2), providerId: r.optionalString(3),
                            latencyMs: r.optionalInt(4))
        }
    }
}

/// One try at sending an entry: what came back, and how long it took.
public struct DeliveryAttempt: Equatable, Sendable {
    public var at: Int64
    public var status: Int?
    public var reason: String?
    public var providerId: String?
    public var latencyMs: Int?

    public init(at: Int64, status: Int?, reason: String?, providerId: String?, latencyMs: Int?) {
        self.at = at
        self.status = status
        self.reason = reason
        self.providerId = providerId
        self.latencyMs = latencyMs
    }
}
