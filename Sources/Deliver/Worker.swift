import Backend
import Foundation
import HTTPClient
import Notifications

/// Claims due outbox entries and sends them through the providers; records every attempt and
/// settles each entry: sent, due again later (backoff with jitter, the provider's Retry-After
/// honoured), or dead (refused for good, too many attempts, past its expiry). docs/delivery.md.
public final class DeliveryWorker: @unchecked Sendable {  // owns a store connection and provider clients: one thread at a time, handed over whole
    public let queue: any PushQueue
    public let name: String
    private let providers: [DeviceRecord.Platform: PushProvider]
    public var maxAttempts = 8
    /// How many entries one pass claims; they go out together, as streams of one HTTP/2
    /// connection per provider.
    public var batch = 256
    /// The most `--batch` and `--streams` may ask: entries a pass, and streams open at once on
    /// a provider's connection (APNs allows a few hundred; beyond these, memory, not speed, grows).
    public static let largestBatch = 10_000, mostStreams = 1_000
    /// How long a claim holds: a worker that dies mid-send lets its entries go after this.
    public var lease: Int64 = 60_000
    private var breakers: [DeviceRecord.Platform: Breaker] = [:]
    /// When each provider's credential was last renewed after a refusal: requests sent with
    /// the older one are sent again with the new one, not renewed once each.
    private var renewedAt: [DeviceRecord.Platform: Int64] = [:]
    private var random = SystemRandomNumberGenerator()
    private let connection: HTTP2Multiplexer

    /// After `threshold` transient failures in a row, a provider rests for `rest`: its entries
    /// wait instead of piling onto a service that is down.
    struct Breaker {
        static let threshold = 5
        static let rest: Int64 = 30_000
        /// A provider that refused the credential rests longer: it takes a person to mend it.
        static let credentialRest: Int64 = 300_000
        var failures = 0
        var openUntil: Int64 = 0
    }

    /// `streams`: how many requests share one provider's connection at once.
    public init(queue: any PushQueue, providers: [PushProvider], name: String = "worker-\(getpid())", streams: Int = 128) {
        self.queue = queue
        self.name = name
        var byPlatform: [DeviceRecord.Platform: PushProvider] = [:]
        for provider in providers { byPlatform[provider.platform] = provider }
        self.providers = byPlatform
        connection = HTTP2Multiplexer(largestBody: 64 << 10, streams: streams, timeout: 15)
    }

    /// What one pass did.
    public struct Pass: Equatable, Sendable {
        public var sent = 0, retried = 0, dead = 0, gone = 0, waited = 0
        /// Entries the rules, judged again at claim, no longer allow.
        public var dropped = 0
        /// Held entries that a newer one of their device and thread stood for.
        public var superseded = 0
        /// Why pushes could not go out this pass (a refused credential, the network's words for
        /// a failed connection), each once, in the order met: what an operator needs to read.
        public var problems: [String] = []

        mutating func note(_ problem: String) {
            if !problems.contains(problem), problems.count < 5 { problems.append(problem) }
        }
        public var total: Int { sent + retried + dead + gone + waited + dropped + superseded }
    }

    /// One claimed entry on its way to its provider.
    private struct Flight {
        let entry: OutboxEntry
        let provider: PushProvider
        let content: PushContent
        /// When it was first sent (Unix ms): the attempt's time, and its expiry's reference.
        let at: Int64
        var sentAt: Int64
        let started: DispatchTime
        var renewed = false
    }

    public static func clock() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// One pass: claims up to `batch` due entries of the configured providers, sends them all
    /// at once, and settles each as its answer comes (the answers of one moment in one
    /// transaction). With `refill`, it claims more whenever half the batch has been answered,
    /// so the connection never runs dry while entries are due, and returns once none are left.
    /// `now` is read at each step (tests may pin it).
    @discardableResult
    public func runOnce(now: () -> Int64 = DeliveryWorker.clock, refill: Bool = false) throws -> Pass {
        var pass = Pass()
        var flights: [Int: Flight] = [:]
        var nextTag = 0
        var more = try launch(limit: batch, now: now, flights: &flights, nextTag: &nextTag, pass: &pass)
        while connection.inFlight > 0 {
            let answers = connection.poll(wait: 0.05)
            if !answers.isEmpty {
                try queue.inTransaction(memo: false) {
                    var settled: [Outbox.Settlement] = []
                    for answer in answers {
                        guard var flight = flights.removeValue(forKey: answer.tag) else { continue }
                        let at = now()
                        let outcome: (result: SendResult, status: Int?)?
                        switch answer.result {
                        case .failure(let error): outcome = (.unanswered(error), nil)
                        case .success(let reply): outcome = flight.provider.outcome(of: reply, now: at, renewed: flight.renewed)
                        }
                        if let (result, status) = outcome {
                            try settle(flight, result, status: status, at: at, pass: &pass, into: &settled)
                            continue
                        }
                        // The provider refused our credential: once more with a fresh one
                        // (renewed once for all the requests that carried the old one).
                        let platform = flight.entry.platform
                        let renew = (renewedAt[platform] ?? .min) < flight.sentAt
                        if renew { renewedAt[platform] = at }
                        flight.renewed = true
                        flight.sentAt = at
                        if let refused = send(flight, tag: answer.tag, renew: renew) {
                            try settle(flight, refused.result, status: refused.status, at: at, pass: &pass, into: &settled)
                        } else {
                            flights[answer.tag] = flight
                        }
                    }
                    try queue.settle(settled)
                }
            }
            if refill, more, connection.inFlight <= batch / 2 {
                more = try launch(limit: batch - connection.inFlight, now: now, flights: &flights, nextTag: &nextTag, pass: &pass)
            }
        }
        return pass
    }

    /// Claims up to `limit` due entries and starts their requests (settling at once those that
    /// are past their expiry, wait for a resting provider, or lost their row); whether it
    /// claimed as many as it could (more may be due).
    private func launch(limit: Int, now: () -> Int64, flights: inout [Int: Flight], nextTag: inout Int, pass: inout Pass) throws -> Bool {
        let entries = try queue.claimDue(worker: name, now: now(), lease: lease, limit: limit, platforms: Array(providers.keys))
        guard !entries.isEmpty else { return false }
        // A provider fetching its credential takes its entries back later, without an attempt.
        // Asked before the transaction: a first FCM grant waits on Google's token endpoint, and
        // the store's writers must not wait with it.
        var readiness: [DeviceRecord.Platform: ProviderReadiness] = [:]
        for platform in Set(entries.map(\.platform)) {
            let at = now()
            guard let provider = providers[platform], (breakers[platform]?.openUntil ?? 0) <= at else { continue }
            readiness[platform] = provider.readiness(now: at)
        }
        // One transaction, and everything the rules ask of the batch read in a few set
        // statements first: the batch is judged as the store stands at this moment.
        try queue.inTransaction(memo: false) {
            var settled: [Outbox.Settlement] = []
            var judging: [OutboxEntry] = []
            for entry in entries {
                let at = now()
                if let expires = entry.expiresAt, expires <= at {
                    settled.append(.abandoned(entry, reason: "expired", at: at))
                    pass.dead += 1
                    continue
                }
                guard providers[entry.platform] != nil else { continue }
                if let breaker = breakers[entry.platform], breaker.openUntil > at {
                    try queue.release(entry, dueAt: breaker.openUntil)
                    pass.waited += 1
                    continue
                }
                if case .waiting(let until)? = readiness[entry.platform] {
                    try queue.release(entry, dueAt: until)
                    pass.waited += 1
                    continue
                }
                judging.append(entry)
            }
            // The rules judged again, now: what they forbid since the row was made is dropped;
            // of what quiet hours held, one push a device and thread; and the daily ceiling,
            // counted by send time (`SendJudgement`).
            let verdicts = try SendJudgement.judge(judging, queue: queue, now: now())
            for (entry, verdict) in zip(judging, verdicts) {
                let at = now()
                guard let provider = providers[entry.platform] else { continue }
                var content: PushContent
                switch verdict {
                case .send(let found): content = found
                case .superseded:
                    settled.append(.superseded(entry, at: at))
                    pass.superseded += 1
                    continue
                case .dropped(let reason, _):
                    settled.append(.dropped(entry, reason: reason, at: at))
                    pass.dropped += 1
                    continue
                case .abandoned(let reason):
                    settled.append(.abandoned(entry, reason: reason, at: at))
                    pass.dead += 1
                    continue
                }
                content.expiresAt = entry.expiresAt
                content.ttlSeconds = entry.expiresAt.map { Int(max(0, $0 - at) / 1000) }
                let flight = Flight(entry: entry, provider: provider, content: content, at: at, sentAt: at, started: .now())
                if let refused = send(flight, tag: nextTag, renew: false) {
                    try settle(flight, refused.result, status: refused.status, at: at, pass: &pass, into: &settled)
                } else {
                    flights[nextTag] = flight
                    nextTag += 1
                }
            }
            try queue.settle(settled)
        }
        return entries.count == limit
    }

    /// Returns once an entry is due, or after `seconds`: looks every 5 ms, a read of the
    /// outbox's due index.
    public func waitForWork(upTo seconds: Double) {
        let deadline = DispatchTime.now() + seconds
        while DispatchTime.now() < deadline {
            if (try? queue.anythingDue(now: DeliveryWorker.clock())) == true { return }
            usleep(5_000)
        }
    }

    /// Starts `flight`'s request; what came of it when it could not even be made (a
    /// credential that cannot be had just now is worth a later try).
    private func send(_ flight: Flight, tag: Int, renew: Bool) -> (result: SendResult, status: Int?)? {
        do {
            let request = try flight.provider.request(for: flight.content, to: flight.entry.token, now: flight.sentAt, renew: renew)
            connection.start(request, tag: tag, version: flight.provider.version, caFile: flight.provider.caFile)
            return nil
        } catch let error as HTTPFailure {
            return (.unanswered(error), nil)
        } catch {
            return (.retry(after: nil, reason: "\(error)"), nil)
        }
    }

    /// Records what came of `flight` and what follows (sent, the token gone, dead, or due
    /// again after a backoff) in `settled`, written with the rest of its moment.
    private func settle(_ flight: Flight, _ result: SendResult, status: Int?, at: Int64, pass: inout Pass, into settled: inout [Outbox.Settlement]) throws {
        let entry = flight.entry
        let latency = Int((DispatchTime.now().uptimeNanoseconds - flight.started.uptimeNanoseconds) / 1_000_000)
        func attempt(_ reason: String?, _ id: String? = nil) -> DeliveryAttempt {
            DeliveryAttempt(at: flight.at, status: status, reason: reason, providerId: id, latencyMs: latency)
        }
        switch result {
        case .sent(let id):
            breakers[entry.platform] = Breaker()
            settled.append(Outbox.Settlement(entry, attempt: attempt(nil, id), next: .sent))
            pass.sent += 1
        case let .gone(since, reason):
            breakers[entry.platform] = Breaker()
            if entry.platform == .apns {
                try queue.disableDevice(entry.token, since: since, at: at)
            } else {
                try queue.forgetDevice(entry.token)  // FCM UNREGISTERED: the token is deleted
            }
            settled.append(Outbox.Settlement(entry, attempt: attempt(reason), next: .dead))
            pass.gone += 1
        case .permanent(let reason):
            settled.append(Outbox.Settlement(entry, attempt: attempt(reason), next: .dead))
            pass.dead += 1
        case .credentialRefused(let reason):
            var breaker = breakers[entry.platform] ?? Breaker()
            breaker.openUntil = max(breaker.openUntil, at + Breaker.credentialRest)
            breakers[entry.platform] = breaker
            try queue.release(entry, dueAt: breaker.openUntil)
            pass.waited += 1
            pass.note(reason)
        case let .retry(after, reason):
            pass.note(reason)
            var breaker = breakers[entry.platform] ?? Breaker()
            breaker.failures += 1
            if breaker.failures >= Breaker.threshold { breaker.openUntil = at + Breaker.rest }
            breakers[entry.platform] = breaker
            if entry.attempts + 1 >= maxAttempts {
                settled.append(Outbox.Settlement(entry, attempt: attempt(reason), next: .dead))
                pass.dead += 1
            } else {
                settled.append(Outbox.Settlement(entry, attempt: attempt(reason), next: .due,
                                                 retryAt: at + DeliveryWorker.backoff(attempt: entry.attempts, after: after, using: &random)))
                pass.retried += 1
            }
        }
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
