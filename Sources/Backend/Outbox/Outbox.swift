import Notifications
import Storage
import Wire

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
    /// Made inside its recipient's quiet hours, and due when they ended: with the other held
    /// entries of its device and thread, one card goes (see `DeliveryWorker`).
    public var held = false
}

extension Store {
    /// The outbox the rows' pushes are written to, and the push worker's side of it.
    public var outbox: Outbox { Outbox(store: self) }
}

/// The outbox (docs/delivery.md): one entry per push and live device, written in the same
/// transaction as its row (`Store.enqueuePushes`); workers claim the due entries, send them,
/// and record each provider's answer here.
public struct Outbox {
    let store: Store
    var db: Connection { store.db }

    /// Entries waiting to go at `now`, oldest due first.
    public func due(now: Int64, limit: Int) throws -> [OutboxEntry] {
        try db.query("""
            SELECT \(Outbox.entryColumns) FROM outbox
            WHERE state IN ('due', 'claimed') AND due_at <= ? AND (state = 'due' OR claimed_until < ?)
            ORDER BY due_at, id LIMIT ?
            """, [now, now, limit], Outbox.entry)
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
    public func isBusy() throws -> Bool {
        try db.cached("SELECT EXISTS (SELECT 1 FROM outbox WHERE state IN ('due', 'claimed'))").bind([]).first { $0.bool(0) } ?? false
    }

    /// How many entries are in each state.
    public func counts() throws -> [OutboxEntry.State: Int] {
        var counts: [OutboxEntry.State: Int] = [:]
        for (state, count) in try db.query("SELECT state, count(*) FROM outbox GROUP BY state", [], { ($0.string(0), $0.int(1)) }) {
            if let state = OutboxEntry.State(rawValue: state) { counts[state] = count }
        }
        return counts
    }

    /// Every entry of row `id`, with its state: what `stepo explain ROW` shows.
    public func entries(ofRow id: Int) throws -> [OutboxEntry] {
        try db.query("""
            SELECT \(Outbox.entryColumns) FROM outbox WHERE row = ? ORDER BY id
            """, [id], Outbox.entry)
    }

    /// Every entry for device `token`, oldest first: where its pushes stand.
    public func entries(ofDevice token: String) throws -> [OutboxEntry] {
        try db.query("""
            SELECT \(Outbox.entryColumns) FROM outbox WHERE token = ? ORDER BY id
            """, [token], Outbox.entry)
    }

    static let entryColumns = "id, row, token, platform, silent, state, due_at, expires_at, attempts, held"

    static func entry(_ r: Row) throws -> OutboxEntry {
        OutboxEntry(id: r.int(0), row: r.int(1), token: r.string(2),
                    platform: try r.decoded(3, table: "outbox", column: "platform", DeviceRecord.Platform.init(rawValue:)),
                    silent: r.bool(4), state: try r.decoded(5, table: "outbox", column: "state", OutboxEntry.State.init(rawValue:)), dueAt: r.int64(6),
                    expiresAt: r.optionalInt64(7), attempts: r.int(8), held: r.bool(9))
    }

    // What a worker does with the entries it claims.

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
            let claimed = try db.query("""
                UPDATE outbox SET state = 'claimed', claimed_by = ?, claimed_until = ?
                WHERE id IN (SELECT id FROM outbox
                             WHERE state IN ('due', 'claimed') AND due_at <= ? AND (state = 'due' OR claimed_until < ?)
                               AND platform IN (\(wanted))
                             ORDER BY due_at, id LIMIT ?\(skipLocked))
                RETURNING \(Outbox.entryColumns)
                """, [worker, now + lease, now, now, limit], Outbox.entry)
            // A held entry comes with every other held entry of its device that is due, so the
            // worker sees a thread's held pushes together, whatever the limit cut.
            let heldTokens = claimed.filter(\.held).map(\.token)
            guard !heldTokens.isEmpty else { return claimed }
            return claimed + (try db.keyed("""
                UPDATE outbox SET state = 'claimed', claimed_by = ?, claimed_until = ?
                WHERE state = 'due' AND held = 1 AND due_at <= ? AND token IN (%)
                RETURNING \(Outbox.entryColumns)
                """, heldTokens, leading: [worker, now + lease, now], Outbox.entry))
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
        try settle([Settlement(entry, attempt: attempt, next: next, retryAt: retryAt)])
    }

    /// One attempt at an entry and what follows from it, waiting to be recorded.
    public struct Settlement: Sendable {
        public var entry: OutboxEntry
        public var attempt: DeliveryAttempt
        public var next: OutboxEntry.State
        public var retryAt: Int64?

        public init(_ entry: OutboxEntry, attempt: DeliveryAttempt, next: OutboxEntry.State, retryAt: Int64? = nil) {
            self.entry = entry
            self.attempt = attempt
            self.next = next
            self.retryAt = retryAt
        }
    }

    /// Records attempts and what follows each, in one transaction and a few set statements
    /// whatever their number: the attempts in one insert, the entries in one update, the trust
    /// budget's counters summed per key and written once each. `settle(_:attempt:next:)` is
    /// this with one.
    public func settle(_ settlements: [Settlement]) throws {
        guard !settlements.isEmpty else { return }
        try db.transaction {
            try store.countSettled(settlements)
            _ = try db.matching("k(e, a, s, r, p, l)", ["BIGINT", "BIGINT", "BIGINT", "TEXT", "TEXT", "BIGINT"],
                                settlements.map { s in [s.entry.id, s.attempt.at, s.attempt.status, s.attempt.reason, s.attempt.providerId,
                                                        s.attempt.latencyMs] as [SQLBindable] },
                                "INSERT INTO delivery_attempts(entry, at, status, reason, provider_id, latency_ms) SELECT e, a, s, r, p, l FROM k",
                                { _ in () })
            _ = try db.matching("k(i, s, d)", ["BIGINT", "TEXT", "BIGINT"],
                                settlements.map { s in [s.entry.id, s.next.rawValue, s.retryAt] as [SQLBindable] },
                                """
                                UPDATE outbox SET state = k.s, attempts = outbox.attempts + 1, due_at = coalesce(k.d, outbox.due_at),
                                    claimed_by = NULL, claimed_until = NULL FROM k WHERE outbox.id = k.i
                                """, { _ in () })
        }
    }

    /// An entry given up without an attempt (past its expiry, or its row gone).
    public func abandon(_ entry: OutboxEntry, reason: String, at: Int64) throws {
        try settle(entry, attempt: DeliveryAttempt(at: at, status: nil, reason: reason, providerId: nil, latencyMs: nil), next: .dead)
    }

    /// An entry the rules, judged again now, forbid (a block, an inactive account, a deletion,
    /// a switch turned off since, a device no longer its recipient's): dropped unsent, its
    /// reason (`PushUnavailable.dropReason`) recorded as its attempt's.
    public func drop(_ entry: OutboxEntry, reason: String, at: Int64) throws {
        try settle(entry, attempt: DeliveryAttempt(at: at, status: nil, reason: reason, providerId: nil, latencyMs: nil),
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

    /// Runs `body` as one transaction; with `memo`, the records its reads share are read once.
    public func inTransaction<T>(memo: Bool, _ body: () throws -> T) throws -> T {
        try store.transaction { memo ? try store.withRecordMemo(body) : try body() }
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
