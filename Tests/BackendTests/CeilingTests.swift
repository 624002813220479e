import Foundation
import Notifications
import Wire
import Testing
import TestSupport
@_spi(Bench) @testable import Backend

/// The daily ceiling as DESIGN.md states it: no 24-hour span of `at` times ever holds more than
/// 100 sent pushes for one recipient — whatever order events arrive in, however many writers
/// run at once, on either engine.
@Suite("The daily ceiling holds")
struct CeilingTests {
    /// The most sent pushes any 24-hour span holds for `recipient`.
    static func fullestDay(_ store: Store, _ recipient: String) throws -> Int {
        let times = try sentTimes(store, try store.user(recipient))
        var most = 0
        var start = 0
        for end in times.indices {
            while times[end] - times[start] >= QuietRules.ceilingWindow { start += 1 }
            most = max(most, end - start + 1)
        }
        return most
    }

    /// Every person's push counters (`PushDays`) against their sent rows: no sent row lies past
    /// the newest day counted, and each of the three days counted holds at most (`exact`:
    /// exactly) as many sent rows as its count. Returns how many people have any counted.
    @discardableResult
    static func countersHold(_ store: Store, exact: Bool, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        // The counters are the store's cache, not part of its API: read from their table.
        let inboxes = try store.connection.query("SELECT user, push_day, pushes_0, pushes_1, pushes_2 FROM inboxes") {
            (user: $0.int(0), newest: $0.int64(1), counts: [$0.int(2), $0.int(3), $0.int(4)])
        }
        var counted = 0
        for inbox in inboxes {
            let days = try sentTimes(store, try store.user(key: inbox.user)).map(PushDays.day(of:))
            #expect(days.allSatisfy { $0 <= inbox.newest }, "person \(inbox.user): a sent row after day \(inbox.newest)",
                    sourceLocation: sourceLocation)
            for back in 0..<3 {
                let rows = days.filter { $0 == inbox.newest - Int64(back) }.count
                #expect(exact ? inbox.counts[back] == rows : inbox.counts[back] >= rows,
                        "person \(inbox.user), day \(inbox.newest - Int64(back)): counted \(inbox.counts[back]), \(rows) sent rows",
                        sourceLocation: sourceLocation)
            }
            if inbox.counts.contains(where: { $0 > 0 }) { counted += 1 }
        }
        return counted
    }

    static func sent(_ store: Store, _ recipient: String) throws -> Int {
        try sentTimes(store, try store.user(recipient)).count
    }

    /// When each of `user`'s rows that sounded was made, oldest first.
    static func sentTimes(_ store: Store, _ user: UserRecord?) throws -> [Int64] {
        guard let user else { return [] }
        return try store.inboxes.activity(of: user, limit: Int.max).filter { $0.push == .sent }.map(\.createdAt).sorted()
    }

    @Test("100 follows at 10:00, then 50 stamped 09:59: the late 50 are held by the ceiling")
    func lateFollows() throws {
        let w = try World()
        try w.user("r")
        for i in 0..<150 { try w.user("f\(i)") }
        let ten = Timestamp.parse("2026-11-05T10:00:00Z")!
        for i in 0..<100 { try w.follow("f\(i)", "r", at: ten + Int64(i) * 1000) }
        for i in 100..<150 {
            let late = try w.follow("f\(i)", "r", at: ten - 60_000 + Int64(i - 100) * 100)
            #expect(try w.explain(late) == ["r": "newFollower suppressed:dailyCeiling"])
        }
        #expect(try Self.sent(w.store, "r") == 100)
        #expect(try Self.fullestDay(w.store, "r") == 100)
        #expect(try Self.countersHold(w.store, exact: true) == 1)
        // A day after the 10:00 pushes began, room comes back: once the first of them is out of every span.
        let later = try w.follow("f0", "r", at: ten + Timestamp.day + 100 * 1000)
        _ = later
    }

    /// Three seeds on SQLite; one on PostgreSQL, where each event is a round trip of its own
    /// (the differential test runs long streams against it too).
    @Test("seeded streams in random order: hearts, follows and fan-outs never put more than 100 in a day",
          arguments: TestEngine.isPostgres ? [11] : [11, 12, 13] as [UInt64])
    func randomOrder(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        let w = try World()
        try w.user("r")
        try w.journey("jr", owner: "r")
        let people = 160
        for i in 0..<people { try w.user("p\(i)") }
        // r follows five accounts whose steps fan out to everyone who follows them.
        for k in 0..<5 {
            try w.journey("jp\(k)", owner: "p\(k)")
            try w.follow("r", "p\(k)")
        }
        let base = Timestamp.parse("2026-11-05T00:00:00Z")!
        // r's steps, published early, so interactions at any time of the next days are valid.
        for s in 0..<8 { try w.step("rs\(s)", journey: "jr", at: base - Timestamp.hour) }
        var stepsMade = 0
        for n in 0..<420 {
            // Times spread over 40 hours, in random order.
            let at = base + Int64(random.below(40 * 60)) * 60_000 + Int64(n % 60)
            switch random.below(10) {
            case 0..<5:
                // 30 minutes apart per step would batch; a person's heart each on a random step.
                _ = try? w.interact(random.below(2) == 0 ? "heart" : "share", "p\(random.below(people))",
                                "rs\(random.below(8))", at: at)
            case 5..<8:
                _ = try? w.follow("p\(random.below(people))", "r", at: at)
            default:
                stepsMade += 1
                let owner = random.below(5)
                try w.step("ps\(stepsMade)", journey: "jp\(owner)", at: at)
            }
        }
        #expect(try Self.fullestDay(w.store, "r") <= QuietRules.dailyCeiling)
        #expect(try Self.sent(w.store, "r") > QuietRules.dailyCeiling)  // the stream did press against it
        // The counters that settle most ceiling questions without reading rows count every
        // sent push, late ones and fan-outs' included, on the day it belongs to.
        #expect(try Self.countersHold(w.store, exact: true) > 5)
    }

    @Test("eight writers at once, each with its own connection, send one person at most 100 pushes")
    func concurrentWriters() throws {
        let w = try World()
        try w.user("r")
        for i in 0..<200 { try w.user("f\(i)") }
        let at = Timestamp.parse("2026-11-05T10:00:00Z")!
        let location = w.path
        let failures = Failures()
        let group = DispatchGroup()
        for writer in 0..<8 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let store = try Store(location: location)
                    let ingestor = Ingestor(store: store)
                    for k in 0..<25 {
                        let i = writer * 25 + k
                        let line = #"{"id":"w\#(i)","type":"follow","at":"\#(Timestamp.format(at + Int64(i) * 10))","actor":"f\#(i)","target":"r"}"#
                        _ = try ingestor.apply(Data(line.utf8))
                    }
                } catch {
                    failures.add("writer \(writer): \(error)")
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success, "the writers did not finish within 60 s")
        #expect(failures.all.isEmpty, "\(failures.all)")
        #expect(try Self.sent(w.store, "r") == QuietRules.dailyCeiling)
        #expect(try w.activity("r").count == 200)
        #expect(try Self.countersHold(w.store, exact: true) == 1)
    }
}

@Suite("Push counters by day")
struct PushDaysTests {
    static let day = PushDays.day

    @Test("the bound sums the three days around a moment, and says nothing past the days it keeps")
    func bound() {
        let newest: Int64 = 20_000
        let counts = [40, 30, 20]  // days 20000, 19999, 19998
        let noon = { (d: Int64) in d * Self.day + Self.day / 2 }
        #expect(PushDays.bound(at: noon(20_000), newest: newest, counts: counts) == 70)  // 19999 + 20000
        #expect(PushDays.bound(at: noon(19_999), newest: newest, counts: counts) == 90)  // all three
        #expect(PushDays.bound(at: noon(20_001), newest: newest, counts: counts) == 40)  // 20000; 20001–2 hold none
        #expect(PushDays.bound(at: noon(20_005), newest: newest, counts: counts) == 0)
        #expect(PushDays.bound(at: noon(19_998), newest: newest, counts: counts) == nil)  // 19997 is not kept
        #expect(PushDays.bound(at: 20_000 * Self.day, newest: newest, counts: counts) == 70)  // the day's first moment
        #expect(PushDays.bound(at: 20_001 * Self.day - 1, newest: newest, counts: counts) == 70)  // its last
    }
}
