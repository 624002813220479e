import Foundation
import Notifications
import Testing
import TestSupport
@testable import Backend
@testable import Deliver

/// The daily ceiling counted twice: by the events' times when a push is decided, and by send
/// times when it leaves (`SendCeiling`). The real worker sends to the HTTP/2 stand-in.
///
/// One seeded stream of follows presses one person's ceiling for three and a half days. Sent
/// as it comes, the two counts agree: the worker withholds nothing the decision let through.
/// Sent late — the worker down for hours, quiet hours set, moved and turned off — pushes
/// decided more than a day apart leave together, and the count by send time holds the phone to
/// 100 a day, withholding a push only when 100 went in the 24 hours before.
@Suite("The daily ceiling at send time", .serialized)
final class SendCeilingTests {
    let folder = NSTemporaryDirectory() + "stepo-send-ceiling-" + UUID().uuidString
    let standin: Spawn.Background
    let url: String

    init() throws {
        (standin, url) = try PushDeliveryTests.startStandIn(in: folder)
    }

    deinit {
        standin.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    static let base = Timestamp.parse("2026-11-02T00:00:00Z")!

    /// The follows of the stream, in time order: about 170 a day for three and a half days, at
    /// uneven gaps and in bursts, each from a new follower of `r`.
    static func follows(seed: UInt64) -> [(line: String, at: Int64)] {
        var random = SplitMix(seed: seed)
        var at = base
        var lines: [(String, Int64)] = []
        var fan = 0
        while at < base + Timestamp.day * 7 / 2 {
            let burst = random.below(12) == 0 ? 10 + random.below(20) : 1
            for _ in 0..<burst {
                at += burst > 1 ? 30_000 : Int64(1 + random.below(16)) * 60_000
                lines.append((#"{"id":"f-\#(fan)","type":"follow","at":"\#(Timestamp.format(at))","actor":"f\#(fan)","target":"r"}"#, at))
                fan += 1
            }
        }
        return lines
    }

    struct Run {
        /// r's rows, each "actor push", in the order they were made.
        var rows: [String] = []
        /// The rows r's phone was sent, each with when its push went.
        var sends: [(row: Int, at: Int64)] = []
        /// When the worker withheld a push for the ceiling.
        var drops: [Int64] = []
        var sentRows: Set<Int> = []
    }

    /// The stream into a fresh store, the worker sending after each event at the event's time;
    /// with `late`, the worker is down for hours at random and r's quiet hours change at random
    /// (a generator of their own: the stream's events are the same either way).
    func run(seed: UInt64, late: Bool, name: String) throws -> Run {
        let store = try Store(location: try TestEngine.location(folder, name))
        let follows = Self.follows(seed: seed)
        var setup = [#"{"id":"u-r","type":"user","at":"\#(Timestamp.format(Self.base - 7_200_000))","user":{"id":"r","username":"r","name":"Rae"}}"#]
        for fan in follows.indices {
            setup.append(#"{"id":"u-\#(fan)","type":"user","at":"\#(Timestamp.format(Self.base - 3_600_000))","user":{"id":"f\#(fan)","username":"f\#(fan)","name":"Fan \#(fan)"}}"#)
        }
        let ingestor = Ingestor(store: store)
        _ = try ingestor.ingest(LineReader(data: Data((setup.joined(separator: "\n") + "\n").utf8)), onRow: { _ in }, onReject: { _, _ in })
        try store.devices.register("apns-r", platform: .apns, environment: .production, for: try #require(try store.user("r")), at: Self.base - 3_600_000)
        let worker = try self.worker(store, name: "ceiling-\(seed)")
        var random = SplitMix(seed: seed &+ 1_000)
        var downUntil = Int64.min
        for (index, follow) in follows.enumerated() {
            if late, index % 30 == 0 {
                let from = random.below(1440)
                let hours = random.below(4) == 0 ? "null"
                    : #"{"from":"\#(QuietHours.clock(from))","to":"\#(QuietHours.clock((from + 60 + random.below(600)) % 1440))","zone":"UTC"}"#
                _ = try ingestor.apply(Data(#"{"id":"q-\#(index)","type":"preferences","at":"\#(Timestamp.format(follow.at))","user":"r","quietHours":\#(hours)}"#.utf8))
            }
            _ = try ingestor.apply(Data(follow.line.utf8))
            if late, follow.at >= downUntil, random.below(60) == 0 {
                downUntil = follow.at + Int64(6 + random.below(16)) * Timestamp.hour
            }
            if follow.at >= downUntil { try worker.runOnce(now: { follow.at }, refill: true) }
        }
        let end = (follows.last?.at ?? Self.base) + 60_000
        try worker.runOnce(now: { end }, refill: true)

        var result = Run()
        let r = try #require(try store.user("r"))
        let rows = try store.inboxes.activity(of: r, limit: Int.max).sorted { $0.id < $1.id }
        result.rows = rows.map { "\($0.title) \($0.push)" }
        for entry in try store.outbox.entries(ofDevice: "apns-r") {
            let attempts = try store.outbox.attempts(of: entry.id)
            switch entry.state {
            case .sent:
                result.sends.append((entry.row, try #require(attempts.first?.at)))
                result.sentRows.insert(entry.row)
            case .dropped where attempts.last?.reason == Reason.dailyCeiling.rawValue:
                result.drops.append(try #require(attempts.last?.at))
            default: break
            }
        }
        #expect(try store.outbox.counts()[.due] == nil, "every entry was settled")
        return result
    }

    /// A worker on `store` sending to the stand-in.
    func worker(_ store: Store, name: String) throws -> DeliveryWorker {
        let pem = String(decoding: FileManager.default.contents(atPath: folder + "/apns.p8")!, as: UTF8.self)
        let apns = try APNsProvider(settings: .init(url: url, keyPEM: pem, keyId: "KEY1234567", teamId: "TEAM123456", caFile: folder + "/cert.pem"))
        return DeliveryWorker(queue: store.outbox, providers: [apns], name: name)
    }

    /// The most sends any 24 hours of send times holds.
    static func fullestDay(_ times: [Int64]) -> Int {
        let times = times.sorted()
        var most = 0, start = 0
        for end in times.indices {
            while times[end] - times[start] >= QuietRules.ceilingWindow { start += 1 }
            most = max(most, end - start + 1)
        }
        return most
    }

    @Test("sent as decided, the counts agree; sent late, the phone still gets at most 100 a day, withheld only at 100",
          arguments: TestEngine.isPostgres ? [31] : [31, 32] as [UInt64])
    func seeded(seed: UInt64) throws {
        let plain = try run(seed: seed, late: false, name: "plain-\(seed).db")
        let late = try run(seed: seed, late: true, name: "late-\(seed).db")
        // The stream pressed the decision's ceiling: some rows were held by it.
        #expect(plain.rows.contains { $0.hasSuffix("suppressed:dailyCeiling") })
        #expect(plain.rows.filter { $0.hasSuffix(" sent") }.count > 200)
        // Sent as decided: nothing withheld at send time, every row decided sent was sent, and
        // so no day of send times held more than 100.
        #expect(plain.drops.isEmpty, "withheld at send time: \(plain.drops.count)")
        #expect(plain.sends.count == plain.rows.filter { $0.hasSuffix(" sent") }.count)
        #expect(Self.fullestDay(plain.sends.map(\.at)) <= QuietRules.dailyCeiling)
        // Sent late: the same rows (neither the worker nor quiet hours make or change one) ...
        #expect(late.rows == plain.rows)
        // ... the ceiling by send time was met and held ...
        #expect(!late.drops.isEmpty, "the late run never pressed the ceiling by send time")
        #expect(Self.fullestDay(late.sends.map(\.at)) <= QuietRules.dailyCeiling)
        // ... and a push was withheld only when 100 had gone in the 24 hours before it.
        for drop in late.drops {
            let before = late.sends.filter { $0.at > drop - QuietRules.ceilingWindow && $0.at <= drop }.count
            #expect(before == QuietRules.dailyCeiling, "withheld at \(Timestamp.format(drop)) with \(before) sent that day")
        }
    }

    @Test("two workers at once, ten pushes below the ceiling by send time: together they send at most ten")
    func twoWorkers() throws {
        let store = try Store(location: try TestEngine.location(folder, "two.db"))
        let fans = 110
        var lines = [#"{"id":"u-r","type":"user","at":"\#(Timestamp.format(Self.base - 7_200_000))","user":{"id":"r","username":"r","name":"Rae"}}"#]
        for fan in 0..<fans {
            lines.append(#"{"id":"u-\#(fan)","type":"user","at":"\#(Timestamp.format(Self.base - 3_600_000))","user":{"id":"f\#(fan)","username":"f\#(fan)","name":"Fan \#(fan)"}}"#)
        }
        let follow = { (fan: Int, at: Int64) in #"{"id":"f-\#(fan)","type":"follow","at":"\#(Timestamp.format(at))","actor":"f\#(fan)","target":"r"}"# }
        _ = try Ingestor(store: store).ingest(LineReader(data: Data((lines.joined(separator: "\n") + "\n").utf8)), onRow: { _ in }, onReject: { _, _ in })
        try store.devices.register("apns-r", platform: .apns, environment: .production, for: try #require(try store.user("r")), at: Self.base - 3_600_000)
        // 90 follows now, 20 more a day and a minute later: the decision lets every one through.
        let first = (0..<90).map { follow($0, Self.base + Int64($0) * 1_000) }
        _ = try Ingestor(store: store).ingest(LineReader(data: Data((first.joined(separator: "\n") + "\n").utf8)), onRow: { _ in }, onReject: { _, _ in })
        // The first 90 go late, just before they expire (a worker that was down all day) ...
        let late = Self.base + 23 * Timestamp.hour
        #expect(try worker(store, name: "late").runOnce(now: { late }, refill: true).sent == 90)
        let second = Self.base + Timestamp.day + 60_000
        let more = (90..<fans).map { follow($0, second + Int64($0) * 1_000) }
        _ = try Ingestor(store: store).ingest(LineReader(data: Data((more.joined(separator: "\n") + "\n").utf8)), onRow: { _ in }, onReject: { _, _ in })
        // ... and the next 20, sent as they come, meet them within 24 hours of send times: two
        // workers on connections of their own, claiming a few at a time, race for the ten left.
        let now = second + Int64(fans) * 1_000
        let workers = try (0..<2).map { try worker(try Store(location: try TestEngine.location(folder, "two.db")), name: "w\($0)") }
        for w in workers { w.batch = 3 }
        let failures = Failures()
        let group = DispatchGroup()
        for w in workers {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    while try w.runOnce(now: { now }).total > 0 {}
                } catch { failures.add("\(error)") }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(failures.all.isEmpty, "\(failures.all)")
        let entries = try store.outbox.entries(ofDevice: "apns-r")
        let sentLater = entries.filter { $0.state == .sent }.count - 90
        let dropped = entries.filter { $0.state == .dropped }.count
        #expect(sentLater <= 10 && sentLater >= 1, "sent \(sentLater) of the ten left")
        #expect(sentLater + dropped == 20)
    }
}
