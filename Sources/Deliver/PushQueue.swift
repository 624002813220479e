import Backend
import Notifications

/// What the push worker needs of the store, and nothing more: claim the pushes that are due,
/// draw a push's content as the rules stand now, and record what each provider answered. The
/// worker depends on this, not on the store; the store's `Outbox` is the one implementation.
public protocol PushQueue {
    /// Claims up to `limit` due entries for `worker` (held for `lease` ms) on `platforms`.
    func claimDue(worker: String, now: Int64, lease: Int64, limit: Int, platforms: [DeviceRecord.Platform]) throws -> [OutboxEntry]
    /// Whether anything is due (or claimed and its lease run out) at `now`.
    func anythingDue(now: Int64) throws -> Bool
    /// The pushes of entries as they would go now to their devices (the rules asked again at
    /// send time, each device still its recipient's), in their order: a content, or why none.
    func pushContents(for entries: [OutboxEntry]) throws -> [Result<PushContent, Error>]
    /// Of entries about to go at `now`, those the daily ceiling withholds, counted by send time
    /// (`SendCeiling`); `launching`: every entry held for this moment, those among them.
    func ceilingAtSend(_ entries: [OutboxEntry], launching: [OutboxEntry], now: Int64) throws -> Set<Int>
    /// The providers' answers to entries, and what becomes of each: one write for them all.
    func settle(_ settlements: [Outbox.Settlement]) throws
    /// An entry given back unsent, due again at `dueAt`.
    func release(_ entry: OutboxEntry, dueAt: Int64) throws
    /// A device the provider says is gone since `since`, or (FCM) whose token is unregistered.
    func disableDevice(_ token: String, since: Int64, at: Int64) throws
    func forgetDevice(_ token: String) throws
    /// Runs `body` as one transaction; `memo`: the records its reads share are read once.
    func inTransaction<T>(memo: Bool, _ body: () throws -> T) throws -> T
}

extension Backend.Outbox: PushQueue {}

extension Outbox.Settlement {
    /// An entry that cannot go (expired, its content unavailable): dead without an attempt.
    static func abandoned(_ entry: OutboxEntry, reason: String, at: Int64) -> Outbox.Settlement {
        Outbox.Settlement(entry, attempt: DeliveryAttempt(at: at, status: nil, reason: reason, providerId: nil, latencyMs: nil), next: .dead)
    }

    /// An entry the rules withhold at send time, with `PushUnavailable.dropReason`.
    static func dropped(_ entry: OutboxEntry, reason: String, at: Int64) -> Outbox.Settlement {
        Outbox.Settlement(entry, attempt: DeliveryAttempt(at: at, status: nil, reason: reason, providerId: nil, latencyMs: nil), next: .dropped)
    }

    /// A held entry a newer one of its device and thread stands for (`HeldPushes`).
    static func superseded(_ entry: OutboxEntry, at: Int64) -> Outbox.Settlement {
        Outbox.Settlement(entry, attempt: DeliveryAttempt(at: at, status: nil, reason: "quietHours: a newer push of its thread went instead",
                                                          providerId: nil, latencyMs: nil), next: .superseded)
    }
}
