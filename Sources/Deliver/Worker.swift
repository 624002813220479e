import Backend
import Foundation
import Notifications

/// Claims due outbox entries and sends them through the providers; records every attempt and
/// settles each entry: sent, due again later (backoff with jitter, the provider's Retry-After
/// honoured), or dead (refused for good, too many attempts, past its expiry). docs/delivery.md.
public final class DeliveryWorker {
    public let store: Store
    public let name: String
    private let providers: [DeviceRecord.Platform: PushProvider]
    public var maxAttempts = 8
    public var batch = 100
    /// How long a claim holds: a worker that dies mid-send lets its entries go after this.
    public var lease: Int64 = 60_000
    private var breakers: [DeviceRecord.Platform: Breaker] = [:]
    private var random = SystemRandomNumberGenerator()

    /// After `threshold` transient failures in a row, a provider rests for `rest`: its entries
    /// wait instead of piling onto a service that is down.
    struct Breaker {
        static let threshold = 5
        static let rest: Int64 = 30_000
        var failures = 0
        var openUntil: Int64 = 0
    }

    public init(store: Store, providers: [PushProvider], name: String = "worker-\(getpid())") {
        self.store = store
        self.name = name
        var byPlatform: [DeviceRecord.Platform: PushProvider] = [:]
        for provider in providers { byPlatform[provider.platform] = provider }
        self.providers = byPlatform
    }

    /// What one pass did.
    public struct Pass: Equatable, Sendable {
        public var sent = 0, retried = 0, dead = 0, gone = 0, waited = 0
        public var total: Int { sent + retried + dead + gone + waited }
    }

    /// One pass: claims up to `batch` due entries of the configured providers and settles
    /// each. `now` is read at each step (tests may pin it).
    @discardableResult
    public func runOnce(now: () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) throws -> Pass {
        var pass = Pass()
        let entries = try store.claimDue(worker: name, now: now(), lease: lease, limit: batch,
                                         platforms: Array(providers.keys))
        for entry in entries {
            let at = now()
            if let expires = entry.expiresAt, expires <= at {
                try store.abandon(entry, reason: "expired", at: at)
                pass.dead += 1
                continue
            }
            guard let provider = providers[entry.platform] else { continue }
            if let breaker = breakers[entry.platform], breaker.openUntil > at {
                try store.release(entry, dueAt: breaker.openUntil)
                pass.waited += 1
                continue
            }
            var content: PushContent
            do {
                content = try store.pushContent(row: entry.row)
            } catch {
                try store.abandon(entry, reason: "\(error)", at: at)
                pass.dead += 1
                continue
            }
            content.silent = entry.silent
            content.expiresAt = entry.expiresAt
            content.ttlSeconds = entry.expiresAt.map { Int(max(0, $0 - at) / 1000) }
            let started = DispatchTime.now()
            let (result, status) = provider.send(content, to: entry.token, now: at)
            let latency = Int((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000)
            func attempt(_ reason: String?, _ id: String? = nil) -> DeliveryAttempt {
                DeliveryAttempt(at: at, status: status, reason: reason, providerId: id, latencyMs: latency)
            }
            switch result {
            case .sent(let id):
                breakers[entry.platform] = Breaker()
                try store.settle(entry, attempt: attempt(nil, id), next: .sent)
                pass.sent += 1
            case let .gone(since, reason):
                breakers[entry.platform] = Breaker()
                if entry.platform == .apns {
                    try store.disableDevice(entry.token, since: since, at: at)
                } else {
                    try store.forgetDevice(entry.token)  // FCM UNREGISTERED: the token is deleted
                }
                try store.settle(entry, attempt: attempt(reason), next: .dead)
                pass.gone += 1
            case .permanent(let reason):
                try store.settle(entry, attempt: attempt(reason), next: .dead)
                pass.dead += 1
            case let .retry(after, reason):
                var breaker = breakers[entry.platform] ?? Breaker()
                breaker.failures += 1
                if breaker.failures >= Breaker.threshold { breaker.openUntil = at + Breaker.rest }
                breakers[entry.platform] = breaker
                if entry.attempts + 1 >= maxAttempts {
                    try store.settle(entry, attempt: attempt(reason), next: .dead)
                    pass.dead += 1
                } else {
                    try store.settle(entry, attempt: attempt(reason), next: .due,
                                     retryAt: at + DeliveryWorker.backoff(attempt: entry.attempts, after: after, using: &random))
                    pass.retried += 1
                }
            }
        }
        return pass
    }

    /// The wait before the next try, in milliseconds: 1 s doubling with each attempt up to 15
    /// minutes, ±20% jitter so a crowd of retries spreads out, and never sooner than the
    /// provider asked.
    static func backoff(attempt: Int, after: Double?, using random: inout SystemRandomNumberGenerator) -> Int64 {
        let base = min(900.0, pow(2.0, Double(attempt)))
        let jittered = base * Double.random(in: 0.8...1.2, using: &random)
        return Int64(max(jittered, after ?? 0) * 1000)
    }
}
