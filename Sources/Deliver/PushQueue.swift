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
    /// The push of an entry as it would go now to its device (the rules asked again at send
    /// time, the device still its recipient's).
    func pushContent(for entry: OutboxEntry) throws -> PushContent
    /// The provider's answer to an entry, and what becomes of the entry.
    func settle(_ entry: OutboxEntry, attempt: DeliveryAttempt, next: OutboxEntry.State, retryAt: Int64?) throws
    /// An entry given back unsent, due again at `dueAt`.
    func release(_ entry: OutboxEntry, dueAt: Int64) throws
    /// An entry that cannot go (expired, its content unavailable).
    func abandon(_ entry: OutboxEntry, reason: String, at: Int64) throws
    /// An entry the rules withhold at send time, with `PushUnavailable.dropReason`.
    func drop(_ entry: OutboxEntry, reason: String, at: Int64) throws
    /// A device the provider says is gone since `since`, or (FCM) whose token is unregistered.
    func disableDevice(_ token: String, since: Int64, at: Int64) throws
    func forgetDevice(_ token: String) throws
    /// Runs `body` as one transaction; `memo`: the records its reads share are read once.
    func inTransaction<T>(memo: Bool, _ body: () throws -> T) throws -> T
}

extension Backend.Outbox: PushQueue {}

extension PushQueue {
    /// An entry settled with nothing to retry.
    func settle(_ entry: OutboxEntry, attempt: DeliveryAttempt, next: OutboxEntry.State) throws {
        try settle(entry, attempt: attempt, next: next, retryAt: nil)
    }
}
