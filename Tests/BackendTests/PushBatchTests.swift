import Foundation
import Notifications
import Storage
import Testing
import TestSupport
@testable import Backend

/// The push worker judges a claimed batch from one gather (`Outbox.pushContents(for:)`) and
/// records its answers in one write (`Outbox.settle(_:)`); one entry at a time, every fact is
/// its own query and every answer its own statements. The two are one rule in two places:
/// these tests hold them equal over seeded streams of every event type, with the world
/// changing after the pushes were queued (blocks, bans, accounts gone private, deletions,
/// switches turned off, devices moved to other people).
@Suite("The push worker's batch: one gather and one write agree with an entry at a time")
struct PushBatchTests {
    static let events = 2_500

    /// A world from `seed`: the stream's people each with an iPhone and an Android phone from
    /// the start, the stream applied in two halves, and between them a few phones moved to
    /// someone else behind the store's back (as another program sharing the database would),
    /// so the send-time device rule has work too.
    static func world(seed: UInt64) throws -> World {
        let w = try World()
        let stream = RandomStream(seed: seed, events: events)
        let ingestor = Ingestor(store: w.store)
        func apply(_ lines: ArraySlice<String>) throws {
            for line in lines { _ = try? ingestor.apply(Data(line.utf8)) }  // the stream's bad lines are refused
        }
        let people = 24
        try apply(stream.lines[0..<people])
        for i in 0..<people {
            // (A repeated event id in the stream can leave a person out.)
            guard let user = try w.store.user("p\(i)") else { continue }
            try w.store.devices.register("apns-p\(i)", platform: .apns, environment: .production, for: user, at: w.clock)
            try w.store.devices.register("fcm-p\(i)", platform: .fcm, environment: .production, for: user, at: w.clock)
        }
        let half = stream.lines.count / 2
        try apply(stream.lines[people..<half])
        for i in stride(from: 1, to: people, by: 5) {
            guard let other = try w.store.user("p\((i + 1) % people)") else { continue }
            try w.store.db.run("UPDATE devices SET user = ? WHERE token = ?", other.key, "fcm-p\(i)")
        }
        try apply(stream.lines[half...])
        return w
    }

    /// What a judgement comes to, in words that differ when anything in it differs.
    static func described(_ result: Result<PushContent, Error>) -> String {
        switch result {
        case .success(let content): return "push \(content)"
        case .failure(let error): return "none \(error)"
        }
    }

    @Test("a batch judged from one gather, in batches of 1, 7 and 512, draws every entry as it is drawn alone: the same copy, mask, badge and drop",
          arguments: [7, 19] as [UInt64])
    func judgedAlike(seed: UInt64) throws {
        let w = try Self.world(seed: seed)
        let entries = try w.store.outbox.due(now: Int64.max / 2, limit: 1_000_000)
        let alone = try entries.map { entry in
            try w.store.transaction { Self.described(Result { try w.store.outbox.pushContent(for: entry) }) }
        }
        // The stream exercises the rules: pushes go, and some are dropped for each cause.
        var drops = Set<String>()
        for text in alone where text.hasPrefix("none") {
            for cause in ["blocked", "actorInactive", "recipientInactive", "deleted", "deviceChanged"] where text.contains(cause) { drops.insert(cause) }
        }
        #expect(alone.filter { $0.hasPrefix("push") }.count > entries.count / 4, "\(entries.count) entries")
        #expect(drops.isSuperset(of: ["blocked", "deviceChanged"]), "\(drops)")
        for size in [1, 7, 512] {
            var batched: [String] = []
            for start in stride(from: 0, to: entries.count, by: size) {
                let chunk = Array(entries[start..<min(start + size, entries.count)])
                batched += try w.store.transaction { try w.store.outbox.pushContents(for: chunk) }.map(Self.described)
            }
            let first = zip(alone, batched).enumerated().first { $0.element.0 != $0.element.1 }
            #expect(batched.count == alone.count && first == nil, """
                batches of \(size) differ at entry \(first?.offset ?? -1) of \(entries.count):
                  alone: \(first?.element.0 ?? "")
                  batch: \(first?.element.1 ?? "")
                """)
        }
    }

    @Test("answers recorded in one write leave the outbox, the attempts and the trust budget's counters as one answer at a time leaves them")
    func settledAlike() throws {
        let seed: UInt64 = 31
        let one = try Self.world(seed: seed), each = try Self.world(seed: seed)
        let entries = try one.store.outbox.due(now: Int64.max / 2, limit: 1_000_000)
        let twin = try each.store.outbox.due(now: Int64.max / 2, limit: 1_000_000)
        #expect(entries.count > 100 && entries.map(\.id) == twin.map(\.id))
        let judged = try one.store.transaction { try one.store.outbox.pushContents(for: entries) }
        var settlements: [Outbox.Settlement] = []
        for (index, (entry, result)) in zip(entries, judged).enumerated() {
            let at = one.clock + Int64(index)
            func attempt(_ status: Int?, _ reason: String?, _ id: String? = nil) -> DeliveryAttempt {
                DeliveryAttempt(at: at, status: status, reason: reason, providerId: id, latencyMs: index % 40)
            }
            switch result {
            case .success where index % 9 == 0:
                settlements.append(Outbox.Settlement(entry, attempt: attempt(503, "Unavailable"), next: .due, retryAt: at + 60_000))
            case .success where index % 13 == 0:
                settlements.append(Outbox.Settlement(entry, attempt: attempt(400, "BadDeviceToken"), next: .dead))
            case .success:
                settlements.append(Outbox.Settlement(entry, attempt: attempt(200, nil, "id-\(entry.id)"), next: .sent))
            case .failure(let error as PushUnavailable) where error.dropReason != nil:
                settlements.append(Outbox.Settlement(entry, attempt: attempt(nil, error.dropReason), next: .dropped))
            case .failure(let error):
                settlements.append(Outbox.Settlement(entry, attempt: attempt(nil, "\(error)"), next: .dead))
            }
        }
        #expect(Set(settlements.map(\.next)) == [.sent, .due, .dead, .dropped])
        for start in stride(from: 0, to: settlements.count, by: 64) {
            try one.store.transaction { try one.store.outbox.settle(Array(settlements[start..<min(start + 64, settlements.count)])) }
        }
        for settlement in settlements {
            try each.store.outbox.settle(settlement.entry, attempt: settlement.attempt, next: settlement.next, retryAt: settlement.retryAt)
        }
        // The two stores applied one stream, but which row a fan-out's entry points at can
        // differ between them on PostgreSQL (the order a fan-out's entries were numbered in):
        // compared is what the settlements wrote — each entry's state, attempts and retry time,
        // the attempts, and the counters by outcome (their hour and answer bucket follow the
        // row's time).
        for (table, columns) in [("outbox", "id, state, CASE WHEN state = 'due' THEN due_at END, attempts, claimed_by, claimed_until"),
                                 ("delivery_attempts", "entry, at, status, reason, provider_id, latency_ms"),
                                 ("stats_delivery", "outcome, sum(n)")] {
            // A counter is spread over slots on PostgreSQL (each store's its own): summed here.
            let grouped = table == "stats_delivery" ? " GROUP BY outcome" : ""
            func dump(_ store: Store) throws -> [String] {
                try store.db.query("SELECT \(columns) FROM \(table)\(grouped)") { row in
                    (0..<columns.split(separator: ",").count).map { "\(row.value($0))" }.joined(separator: "|")
                }.sorted()
            }
            let (left, right) = (try dump(one.store), try dump(each.store))
            #expect(!left.isEmpty && left == right, "\(table): \(left.count) and \(right.count) rows, first difference \(zip(left, right).first { $0 != $1 }.map { "\($0) / \($1)" } ?? "in length")")
        }
        // And what each records is what it said: a retry is due when it asked, an answer's
        // attempt carries its status.
        for settlement in settlements.prefix(200) {
            let stored = try #require(try one.store.outbox.entries(ofRow: settlement.entry.row).first { $0.id == settlement.entry.id })
            #expect(stored.state == settlement.next && stored.attempts == settlement.entry.attempts + 1)
            if let retryAt = settlement.retryAt { #expect(stored.dueAt == retryAt) }
            #expect(try one.store.outbox.attempts(of: settlement.entry.id).last == settlement.attempt)
        }
        // Retried entries are counted as retried when they settle again.
        let retried = settlements.filter { $0.next == .due }.map { entry -> Outbox.Settlement in
            var again = entry
            again.entry.attempts += 1
            again.attempt.at += 120_000
            again.next = .sent
            again.retryAt = nil
            return again
        }
        try one.store.transaction { try one.store.outbox.settle(retried) }
        for settlement in retried { try each.store.outbox.settle(settlement.entry, attempt: settlement.attempt, next: .sent) }
        let counted = { (store: Store) in try store.db.query("SELECT outcome, sum(n) FROM stats_delivery GROUP BY outcome ORDER BY outcome") { "\($0.string(0))=\($0.int(1))" } }
        #expect(try counted(one.store) == (try counted(each.store)))
        #expect(try counted(one.store).contains("retried=\(retried.count)"))
    }
}
