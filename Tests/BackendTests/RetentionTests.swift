import Foundation
import Synchronization
import Notifications
import Testing
import BenchSupport
import HTTPClient
import TestSupport
@_spi(Bench) @testable import Backend

/// `Store.prune` and `stepo prune`: each person's oldest rows go, counts stay exact, and what
/// the store no longer keeps can never be applied again. Both engines.
@Suite("Retention: prune")
struct RetentionTests {
    let folder = NSTemporaryDirectory() + "stepo-prune-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    static func ingest(_ lines: [String], into store: Store) throws -> [String] {
        var rejected: [String] = []
        _ = try Ingestor(store: store).ingest(LineReader(data: Data((lines.joined(separator: "\n") + "\n").utf8)),
                                              onRow: { _ in }, onReject: { line, reason in rejected.append("\(line): \(reason)") })
        return rejected
    }

    /// Every person's counters against a recount row by row, and what the prune left: no row
    /// at or below a prune mark, and no row older than the horizon before a newer one.
    static func checkPruned(_ store: Store, horizon: Int64) throws -> (kept: Int, olderKept: Int) {
        let db = store.connection
        var kept = 0, olderKept = 0
        let newest = try db.scalar("SELECT max(id) FROM notifications") ?? 0
        for (user, pruned) in try db.query("SELECT user, pruned_ord FROM inboxes ORDER BY user", [], { ($0.int(0), $0.int(1)) }) {
            #expect(try store.inboxes.counts(for: user) == store.recount(for: user), "user \(user)")
            let rows = try db.query("SELECT ord, created_at, id FROM notifications WHERE recipient = ? ORDER BY ord", [user]) {
                (ord: $0.int(0), at: $0.int64(1), id: $0.int(2))
            }
            #expect(rows.allSatisfy { $0.ord > pruned }, "user \(user) keeps rows at or below their prune mark \(pruned)")
            if let first = rows.first {
                #expect(first.at >= horizon || first.id == newest, "user \(user)'s oldest row kept is older than the horizon")
            }
            kept += rows.count
            olderKept += rows.filter { $0.at < horizon }.count
        }
        return (kept, olderKept)
    }

    @Test("a seeded stream with marks and stamps, pruned in chunks of seven: counts equal a recount, the store is sound, a second prune removes nothing",
          arguments: [11, 12] as [UInt64])
    func seeded(seed: UInt64) throws {
        let store = try Store(location: try TestEngine.location(folder, "seeded-\(seed).db"))
        let stream = RandomStream(seed: seed, events: 2_400)
        let half = stream.lines.count / 2
        _ = try Self.ingest(Array(stream.lines.prefix(half)), into: store)
        for i in 0..<24 {
            guard let user = try store.user("p\(i)") else { continue }
            try store.devices.register("phone-\(i)", platform: .apns, environment: .production, for: user, at: 0)
        }
        var random = SplitMix(seed: seed)
        func stampSome(at: Int64) throws {
            for i in 0..<24 {
                guard let user = try store.user("p\(i)") else { continue }
                switch random.below(4) {
                case 0: try store.inboxes.markSeen(user, at: at)
                case 1: try store.inboxes.markAllRead(user, at: at)
                default:
                    let rows = try store.connection.query("SELECT id FROM notifications WHERE recipient = ?", [user.key]) { $0.int(0) }
                    for row in rows where random.below(5) == 0 { _ = try store.inboxes.markRead(user, row: row, at: at) }
                }
            }
        }
        let start = Timestamp.parse("2026-11-02T08:00:00Z")!
        try stampSome(at: start + 20 * 3_600_000)
        _ = try Self.ingest(Array(stream.lines.dropFirst(half)), into: store)
        try stampSome(at: start + 50 * 3_600_000)

        let horizon = start + 24 * 3_600_000
        let before = try store.connection.scalar("SELECT count(*) FROM notifications") ?? 0
        let entriesBefore = try store.connection.scalar("SELECT count(*) FROM outbox") ?? 0
        let whyNot = "SELECT count(*) FROM suppressions AS s JOIN events AS e ON e.id = s.event WHERE e.at "
        let olderWhyNot = try store.connection.scalar(whyNot + "< ?", horizon) ?? 0
        let newerWhyNot = try store.connection.scalar(whyNot + ">= ?", horizon) ?? 0
        let report = try store.prune(before: horizon, chunk: 7)
        #expect(report.rows > before / 5 && report.rows < before, "removed \(report.rows) of \(before)")
        #expect(olderWhyNot > 7 && report.suppressions == olderWhyNot, "\(report.suppressions) of \(olderWhyNot) why-not records")
        #expect(try store.connection.scalar(whyNot + "< ?", horizon) == 0)
        #expect(try store.connection.scalar(whyNot + ">= ?", horizon) == newerWhyNot)
        #expect(report.entries > 0 && report.entries < entriesBefore)
        #expect(report.transactions > report.rows / 7)
        let (kept, olderKept) = try Self.checkPruned(store, horizon: horizon)
        #expect(kept + report.rows == before)
        // Late rows (an event's `at` up to 36 hours back) may wait behind newer ones.
        #expect(olderKept < kept / 4, "\(olderKept) rows older than the horizon kept of \(kept)")
        #expect(try store.audit.problems() == [])
        #expect(try store.keptSince() == horizon)

        let again = try store.prune(before: horizon, chunk: 7)
        #expect(again.rows == 0 && again.entries == 0)
        // A horizon earlier than the one kept does not move it back.
        #expect(try store.prune(before: horizon - 3_600_000).horizon == horizon)

        // Marks and stamps after the prune keep the counts exact.
        try stampSome(at: start + 60 * 3_600_000)
        _ = try Self.checkPruned(store, horizon: horizon)
    }

    @Test("three prunes at once, each on a connection of its own, while events arrive: counts exact and the store sound throughout; one more prune leaves it as a prune alone would")
    func sideBySide() throws {
        let location = try TestEngine.location(folder, "side.db")
        let store = try Store(location: location)
        let stream = RandomStream(seed: 21, events: 2_400)
        let cut = stream.lines.count * 3 / 4
        _ = try Self.ingest(Array(stream.lines.prefix(cut)), into: store)
        let start = Timestamp.parse("2026-11-02T08:00:00Z")!
        let horizon = start + 24 * 3_600_000
        let failures = Failures()
        let group = DispatchGroup()
        let reports = Mutex<[PruneReport]>([])
        for k in 0..<3 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let report = try Store(location: location).prune(before: horizon, chunk: 5)
                    reports.withLock { $0.append(report) }
                } catch { failures.add("prune \(k): \(error)") }
            }.start()
        }
        // The rest of the stream arrives meanwhile: its lines newer than the horizon (an older
        // one could be applied before the horizon is set and be left for the next prune).
        let newer = stream.lines.dropFirst(cut).filter { line in
            ((try? JSON.parse(Data(line.utf8)))?["at"]?.string).flatMap(Timestamp.parse).map { $0 >= horizon } ?? false
        }
        _ = try Self.ingest(Array(newer), into: try Store(location: location))
        #expect(group.wait(timeout: .now() + 300) == .success)
        #expect(failures.all.isEmpty, "\(failures.all)")
        let removed = reports.withLock { $0.map(\.rows).reduce(0, +) }
        #expect(removed > 100, "removed \(removed)")
        // Counts are exact and the store sound at once; a row a concurrent event moved on in the
        // log (a step-with upgraded by a later heart) may wait for the next prune, which leaves
        // the store as a prune alone would.
        for user in try store.connection.query("SELECT user FROM inboxes", [], { $0.int(0) }) {
            #expect(try store.inboxes.counts(for: user) == store.recount(for: user), "user \(user)")
        }
        #expect(try store.audit.problems() == [])
        _ = try store.prune(before: horizon)
        _ = try Self.checkPruned(store, horizon: horizon)
        let last = try store.prune(before: horizon)
        #expect(last.rows == 0 && last.events == 0, "\(last)")
    }

    @Test("the trust budget reads the same after a prune: mutes of switches turned off near or before the horizon included")
    func trustBudgetStays() throws {
        let store = try Store(location: try TestEngine.location(folder, "budget.db"))
        _ = try Ingestor(store: store).ingest(LineReader(data: try Data(contentsOf: URL(fileURLWithPath: Stepo.sampleEvents))),
                                              onRow: { _ in }, onReject: { _, _ in })
        let since = Timestamp.parse("2026-11-14T00:00:00Z")!, until = Timestamp.parse("2026-11-29T13:00:00Z")! - 1
        let before = try store.stats.trustBudget(since: since, until: until)
        #expect(before.mutes == 4, "the sample's mutes: \(before.mutes)")
        for horizon in ["2026-11-23T12:00:00Z", "2026-11-27T00:00:00Z"] {
            try store.prune(before: Timestamp.parse(horizon)!)
            let after = try store.stats.trustBudget(since: since, until: until)
            #expect(after.mutes == before.mutes, "pruned before \(horizon)")
            #expect(after == before, "pruned before \(horizon)")
        }
        #expect(try store.connection.scalar("SELECT count(*) FROM preference_changes WHERE at < ?", Timestamp.parse("2026-11-20T00:00:00Z")!) == 0)
        // A first pull's `total` is what it will receive: the rows the prune left.
        for name in ["chaucao", "sofia"] {
            let user = try #require(try store.user(name))
            let kept = try store.connection.scalar("SELECT count(*) FROM notifications WHERE recipient = ?", user.key) ?? -1
            #expect(try store.sync.page(for: user, after: 0, limit: 10).total == kept, "\(name)")
        }
    }

    @Test("the event log goes as a prefix: what kept rows name stays, recent history marks stand, a replica older than the floor is told to start over")
    func eventLog() throws {
        let store = try Store(location: try TestEngine.location(folder, "log.db"))
        let db = store.connection
        var lines = ["a", "b", "c", "d"].map {
            #"{"id":"u-\#($0)","type":"user","at":"2026-10-01T00:00:00Z","user":{"id":"\#($0)","username":"\#($0)","name":"\#($0.uppercased())"}}"#
        }
        lines += [#"{"id":"f1","type":"follow","at":"2026-10-02T00:00:00Z","actor":"b","target":"a"}"#,
                  #"{"id":"p1","type":"preferences","at":"2026-10-02T01:00:00Z","user":"a","social":false}"#,
                  #"{"id":"f2","type":"follow","at":"2026-10-03T00:00:00Z","actor":"a","target":"d"}"#]
        #expect(try Self.ingest(Array(lines.prefix(4)), into: store) == [])
        let oldVersion = try store.currentVersion()
        let oldMark = try store.sync.historyMark(at: oldVersion)
        #expect(try Self.ingest(Array(lines.dropFirst(4)), into: store) == [])
        #expect(try Self.ingest([#"{"id":"f3","type":"follow","at":"2026-10-20T00:00:00Z","actor":"c","target":"a"}"#,
                                 #"{"id":"f4","type":"follow","at":"2026-10-21T00:00:00Z","actor":"d","target":"b"}"#], into: store) == [])
        let newVersion = try store.currentVersion()
        let newMark = try store.sync.historyMark(at: newVersion)
        let eventsBefore = try db.scalar("SELECT count(*) FROM events") ?? 0

        let report = try store.prune(before: Timestamp.parse("2026-10-10T00:00:00Z")!)
        #expect(report.rows == 2 && report.events > 0, "\(report)")
        // (The prune takes a version of its own, so replicas hear of it.)
        #expect(try db.scalar("SELECT count(*) FROM events") == eventsBefore - report.events + 1)
        #expect(try db.scalar("SELECT count(*) FROM preference_changes") == 0)
        // Every kept row's event is there (the audit reads each reference), and explain finds it.
        #expect(try store.audit.problems() == [])
        #expect(try store.explanations.event("f3") != nil)
        #expect(try store.explanations.event("f1") == nil)
        // Recent history stands; a version older than the floor has one mark, not its own.
        try store.sync.requireHistory(newMark, at: newVersion)
        #expect(throws: HistoryDiverged.self) { try store.sync.requireHistory(oldMark, at: oldVersion) }
        let floorMark = try store.sync.historyMark(at: oldVersion)
        try store.sync.requireHistory(floorMark, at: oldVersion)
        #expect(try store.sync.historyMark(at: 1) == floorMark)
        // A second prune finds nothing more; new events take versions after the newest.
        #expect(try store.prune(before: Timestamp.parse("2026-10-10T00:00:00Z")!).events == 0)
        #expect(try Self.ingest([#"{"id":"f5","type":"follow","at":"2026-10-22T00:00:00Z","actor":"b","target":"c"}"#], into: store) == [])
        #expect(try store.currentVersion() > newVersion)
        try store.sync.requireHistory(newMark, at: newVersion)

        // A store where everything is old: its newest row stays, and the event it names with it.
        let idle = try Store(location: try TestEngine.location(folder, "idle.db"))
        #expect(try Self.ingest(Array(lines.prefix(4)) + [lines[4], lines[6]], into: idle) == [])
        let pruned = try idle.prune(before: Timestamp.parse("2026-10-10T00:00:00Z")!)
        #expect(pruned.rows == 1 && pruned.events > 0, "\(pruned)")
        #expect(try idle.explanations.event("f2") != nil)
        #expect(try idle.audit.problems() == [])
    }

    @Test("an event older than what the store keeps is refused with its line; newer ones apply; a repeat of a kept one is a repeat")
    func olderRefused() throws {
        let store = try Store(location: try TestEngine.location(folder, "refused.db"))
        let people = ["a", "b", "c"].map {
            #"{"id":"u-\#($0)","type":"user","at":"2026-10-01T00:00:00Z","user":{"id":"\#($0)","username":"\#($0)","name":"\#($0.uppercased())"}}"#
        }
        #expect(try Self.ingest(people + [#"{"id":"f1","type":"follow","at":"2026-10-02T00:00:00Z","actor":"b","target":"a"}"#,
                                          #"{"id":"f2","type":"follow","at":"2026-10-20T00:00:00Z","actor":"c","target":"a"}"#], into: store) == [])
        let horizon = Timestamp.parse("2026-10-10T00:00:00Z")!
        let report = try store.prune(before: horizon)
        #expect(report.rows == 1)
        let rejected = try Self.ingest([
            #"{"id":"late","type":"follow","at":"2026-10-09T23:59:59Z","actor":"a","target":"b"}"#,
            #"{"id":"f1","type":"follow","at":"2026-10-02T00:00:00Z","actor":"b","target":"a"}"#,
            #"{"id":"f2","type":"follow","at":"2026-10-20T00:00:00Z","actor":"c","target":"a"}"#,
            #"{"id":"fresh","type":"follow","at":"2026-10-10T00:00:00Z","actor":"a","target":"c"}"#,
        ], into: store)
        #expect(rejected.count == 2)
        #expect(rejected.allSatisfy { $0.contains("older than the store keeps") }, "\(rejected)")
        #expect(rejected.first?.hasPrefix("1: ") == true && rejected.last?.hasPrefix("2: ") == true)
        // One event at a time (the path of a device's mutation) refuses it too.
        #expect(throws: EventError.self) { try store.apply(Event(json: try JSON.parse(Data(#"{"id":"late2","type":"unfollow","at":"2026-10-01T00:00:00Z","actor":"b","target":"a"}"#.utf8)))) }
        // The log keeps f2 and fresh: the users' events and f1 went with the prune.
        #expect(try store.audit.eventsApplied() == 2)
        #expect(try store.explanations.event("fresh") != nil)
    }

    @Test("\"started following you\" stays one ping per person, ever, after its row was pruned")
    func pingOutlivesItsRow() throws {
        func run(pruned: Bool) throws -> Int {
            let store = try Store(location: try TestEngine.location(folder, "ping-\(pruned).db"))
            let people = ["a", "b", "c"].map {
                #"{"id":"u-\#($0)","type":"user","at":"2026-10-01T00:00:00Z","user":{"id":"\#($0)","username":"\#($0)","name":"\#($0.uppercased())"}}"#
            }
            #expect(try Self.ingest(people + [#"{"id":"f1","type":"follow","at":"2026-10-02T00:00:00Z","actor":"b","target":"a"}"#,
                                              #"{"id":"f2","type":"follow","at":"2026-10-20T00:00:00Z","actor":"c","target":"a"}"#], into: store) == [])
            if pruned { #expect(try store.prune(before: Timestamp.parse("2026-10-10T00:00:00Z")!).rows == 1) }
            #expect(try Self.ingest([#"{"id":"u1","type":"unfollow","at":"2026-10-21T00:00:00Z","actor":"b","target":"a"}"#,
                                     #"{"id":"f3","type":"follow","at":"2026-10-22T00:00:00Z","actor":"b","target":"a"}"#], into: store) == [])
            return try store.connection.scalar("""
                SELECT count(*) FROM notifications AS n JOIN users AS u ON u.id = n.actor WHERE n.kind = 'newFollower' AND u.ext = 'b'
                """) ?? -1
        }
        #expect(try run(pruned: false) == 1)
        #expect(try run(pruned: true) == 0)
    }

    @Test("stepo prune killed with SIGKILL between its chunks: the store is sound, counts equal a recount, and a second run finishes it")
    func killedMidPrune() throws {
        let location = try TestEngine.location(folder, "killed.db")
        let store = try Store(location: location)
        let bulk = BulkWorld(store)
        let newest = Timestamp.parse("2026-11-29T00:00:00Z")!
        try bulk.build {
            try bulk.addUsers(1...201)
            try bulk.addJourneys(10, owners: 1)
            try bulk.addSteps(20, journeys: 10, publishedAt: Timestamp.parse("2026-11-01T00:00:00Z")!)
            // Four days of rows a second apart, most unseen, a third read one by one.
            try bulk.addRows(recipient: 1, count: 150_000, newest: newest, spacing: 2_000, actors: 2...201, steps: 20,
                             unseen: 100_000, readEvery: 3)
            try bulk.addRows(recipient: 2, count: 20_000, newest: newest, spacing: 15_000, actors: 3...201, steps: 20, readEvery: 5)
        }
        let total = try store.connection.scalar("SELECT count(*) FROM notifications") ?? 0
        let horizon = newest - 2 * 86_400_000
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Stepo.binary)
        process.arguments = ["prune"] + TestEngine.storeArguments(location) + ["--before", Timestamp.format(horizon), "--quiet"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let watcher = try Store(location: location)
        let deadline = Date().addingTimeInterval(60)
        var gone = 0
        while Date() < deadline && process.isRunning {
            gone = total - (try watcher.connection.scalar("SELECT count(*) FROM notifications") ?? total)
            if gone >= 20_000 { break }
            usleep(5_000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "the prune ended before it was killed (\(gone) rows gone)")
        let partway = total - (try watcher.connection.scalar("SELECT count(*) FROM notifications") ?? 0)
        #expect(partway > 0 && partway < 86_400, "killed after \(partway) rows")
        for user in [1, 2] { #expect(try watcher.inboxes.counts(for: user) == watcher.recount(for: user)) }
        let check = try Stepo.run(["check"] + TestEngine.storeArguments(location))
        #expect(check.status == 0 && check.stdout.contains("sound"), "\(check.stdout)\(check.stderr)")

        let again = try Stepo.run(["prune"] + TestEngine.storeArguments(location) + ["--before", Timestamp.format(horizon)])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("kept since \(Timestamp.format(horizon))"), "\(again.stdout)")
        let after = try Store(location: location)
        let (kept, olderKept) = try Self.checkPruned(after, horizon: horizon)
        #expect(olderKept == 0)
        // Rows every two seconds and every fifteen up to `newest`: the last two days of each
        // are kept, the row made at the horizon itself with them.
        #expect(kept == 86_401 + 11_521, "\(kept) rows kept")
        let counts = try after.inboxes.counts(for: 1)
        #expect(counts == (try after.recount(for: 1)) && counts.unseen > 50_000 && counts.unseen < 86_400, "\(counts)")
    }

    @Test("stepo serve --keep-days 2 prunes at start; a post of an event older than it keeps is 422 with the reason, and stepo prune refuses bad input with exit 2")
    func servedRetention() throws {
        let location = try TestEngine.location(folder, "served.db")
        let ingest = try Stepo.run(["ingest"] + TestEngine.storeArguments(location) + ["--quiet", Stepo.sampleEvents])
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let token = try Stepo.run(["token"] + TestEngine.storeArguments(location) + ["--admin"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let store = try Store(location: location)
        let before = try store.connection.scalar("SELECT count(*) FROM notifications") ?? 0
        #expect(before > 1_000)
        let (server, address) = try Stepo.serve(location, log: folder + "/serve.log", ["--keep-days", "2"])
        defer { server.stop() }
        // The sample world's rows are all from November 2026: every person's go but the newest.
        let deadline = Date().addingTimeInterval(30)
        var left = before
        while Date() < deadline {
            left = try store.connection.scalar("SELECT count(*) FROM notifications") ?? before
            if left == 1 { break }
            usleep(50_000)
        }
        #expect(left == 1, "\(left) rows left of \(before)")
        for user in try store.connection.query("SELECT user FROM inboxes", [], { $0.int(0) }) {
            #expect(try store.inboxes.counts(for: user) == store.recount(for: user))
        }
        let line = #"{"id":"too-old","type":"follow","at":"2026-11-29T13:00:00Z","actor":"maya","target":"chaucao"}"#
        let answer = try HTTPClient().perform(method: "POST", url: address + "/v1/events", headers: [("Authorization", "Bearer \(token)")],
                                              body: Data((line + "\n").utf8), timeout: 30)
        #expect(answer.status == 422)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("older than the store keeps"), "\(String(decoding: answer.body, as: UTF8.self))")

        for bad in [["--keep-days", "1"], ["--keep-days", "x"], ["--before", "yesterday"], [], ["--keep-days", "3", "--before", "2026-01-01T00:00:00Z"],
                    ["--before", Timestamp.format(Int64(Date().timeIntervalSince1970 * 1000))]] {
            let run = try Stepo.run(["prune"] + TestEngine.storeArguments(location) + bad)
            #expect(run.status == 2 && run.stderr.contains("stepo prune"), "\(bad): \(run.status) \(run.stderr)")
        }
        let refused = try Stepo.run(["serve"] + TestEngine.storeArguments(location) + ["--port", "0", "--keep-days", "1"])
        #expect(refused.status == 2 && refused.stderr.contains("--keep-days is at least 2"), "\(refused.stderr)")
    }
}
