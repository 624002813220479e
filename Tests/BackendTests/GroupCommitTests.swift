import Foundation
import Synchronization
import HTTPClient
import Notifications
import Testing
import TestSupport
@testable import Backend

/// Group commit: `POST /v1/events` requests that arrive together are written in one
/// transaction, in arrival order, as if posted one after another. Through the real `stepo
/// serve`, eight posters at once; the store they leave is compared, table for table, with one
/// `stepo ingest` of the same events in the order the server applied them.
@Suite("Group commit: concurrent POST /v1/events", .enabled(if: !TestEngine.isPostgres))
struct GroupCommitTests {
    let folder = NSTemporaryDirectory() + "stepo-groups-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// A store at `path` with `people` people (u0 …), a published step `s1` of u0's, and an
    /// admin token: the step the posts heart and comment on.
    func oneStep(_ path: String, people: Int) throws -> (path: String, token: String) {
        let token = try Stepo.run(["token", "--db", path, "--admin"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        var world = (0..<people).map { i in
            #"{"id":"user-\#(i)","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"u\#(i)","username":"u\#(i)","name":"U \#(i)"}}"#
        }
        world.append(#"{"id":"j","type":"journey","at":"2026-11-20T08:01:00Z","journey":{"id":"j1","owner":"u0","title":"Walk"}}"#)
        world.append(#"{"id":"s","type":"step","at":"2026-11-20T08:02:00Z","step":{"id":"s1","journey":"j1","caption":"Day 1"}}"#)
        world.append(#"{"id":"m","type":"mediaReady","at":"2026-11-20T08:03:00Z","step":"s1"}"#)
        let setUp = try Stepo.run(["ingest", "--db", path, "--quiet", "-"], stdin: Data((world.joined(separator: "\n") + "\n").utf8))
        #expect(setUp.status == 0, "\(setUp.stderr)")
        return (path, token)
    }

    /// u`poster` hearts s1, through the server at `address`: its answer, or nil for none.
    static func heart(from poster: Int, to address: String, token: String) -> HTTPAnswer? {
        let line = #"{"id":"h\#(poster)","type":"heart","at":"2026-11-20T09:0\#(poster):00Z","actor":"u\#(poster)","step":"s1"}"#
        return try? HTTPClient().perform(method: "POST", url: address + "/v1/events", headers: [("Authorization", "Bearer \(token)")],
                                         body: Data((line + "\n").utf8), timeout: 30)
    }

    /// A stream's lines with each event id kept once (the first): which of two lines with one
    /// id wins depends on arrival order, which eight posters do not keep.
    static func distinct(_ lines: [String]) -> [(id: String, line: String)] {
        var seen = Set<String>()
        return lines.compactMap { line in
            guard case .object(let fields)? = try? JSON.parse(Data(line.utf8)),
                  let id = fields.first(where: { $0.0 == "id" })?.1.string, seen.insert(id).inserted else { return nil }
            return (id, line)
        }
    }

    /// Posts `events` through the server at `address` from eight posters at once, in blocks of
    /// 20 (poster p posts blocks p, p + 8, p + 16, … in order), each with a blank line at 3 and
    /// a line that is not JSON at 7. Checks each answer — its own counts and line numbers, and
    /// every line it did not refuse already in the store at `store` — and returns how many
    /// requests were made.
    static func post(_ events: [(id: String, line: String)], to address: String, token: String, store served: String) -> Int {
        // Blocks of 20 events, each with a blank line at 3 and a line that is not JSON at 7;
        // poster p posts blocks p, p + 8, p + 16, … in order.
        let blocks = stride(from: 0, to: events.count, by: 20).map { Array(events[$0..<min($0 + 20, events.count)]) }
        let failures = Failures()
        let group = DispatchGroup()
        for poster in 0..<8 {
            group.enter()
            Thread {
                defer { group.leave() }
                let client = HTTPClient()
                guard let reader = try? Store(location: served) else { return failures.add("poster \(poster): no store") }
                for index in stride(from: poster, to: blocks.count, by: 8) {
                    var lines = blocks[index].map(\.line)
                    lines.insert("", at: min(2, lines.count))
                    lines.insert("this is not JSON", at: min(6, lines.count))
                    let body = Data((lines.joined(separator: "\n") + "\n").utf8)
                    guard let answer = try? client.perform(method: "POST", url: address + "/v1/events",
                                                           headers: [("Authorization", "Bearer \(token)")], body: body, timeout: 60),
                          case .object(let report)? = try? JSON.parse(answer.body) else {
                        return failures.add("block \(index): no answer")
                    }
                    let field = { (name: String) in report.first { $0.0 == name }?.1 }
                    let applied = field("applied")?.int ?? -1, repeated = field("repeated")?.int ?? -1
                    guard case .array(let rejected)? = field("rejected") else { return failures.add("block \(index): no rejected") }
                    let refused = rejected.compactMap { entry -> (Int, String)? in
                        guard case .object(let f) = entry, let line = f.first(where: { $0.0 == "line" })?.1.int,
                              let reason = f.first(where: { $0.0 == "reason" })?.1.string else { return nil }
                        return (line, reason)
                    }
                    // Its own counts and its own line numbers, whoever it was grouped with.
                    if applied + repeated + refused.count != lines.count - 1 {
                        failures.add("block \(index): \(applied) + \(repeated) + \(refused.count) for \(lines.count - 1) lines")
                    }
                    if repeated != 0 { failures.add("block \(index): \(repeated) repeated") }
                    let junk = lines.firstIndex(of: "this is not JSON")! + 1, blank = lines.firstIndex(of: "")! + 1
                    if !refused.contains(where: { $0.0 == junk && $0.1 == "malformed JSON" }) || refused.contains(where: { $0.0 == blank || $0.0 > lines.count }) {
                        failures.add("block \(index): refused \(refused)")
                    }
                    // Answered once committed: every line it did not refuse is in the store.
                    let kept = lines.enumerated().filter { line in !line.element.isEmpty && !refused.contains { $0.0 == line.offset + 1 } }
                    let ids = kept.compactMap { line in events.first { $0.line == line.element }?.id }
                    let stored = ids.isEmpty ? 0 : (try? reader.db.query("SELECT count(*) FROM events WHERE ext IN (\(ids.map { "'\($0)'" }.joined(separator: ",")))") { $0.int(0) }.first) ?? -1
                    if stored != ids.count { failures.add("block \(index): \(stored) of \(ids.count) applied events stored when answered") }
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 240) == .success, "the posters did not finish")
        #expect(failures.all.isEmpty, "\(failures.all.prefix(5))")
        return blocks.count
    }

    @Test("eight posters at once: requests join groups, each answered after its events committed with its own report and line numbers, and the store equals one ingest of the events in the order they were applied",
          arguments: [909, 1010] as [UInt64])
    func eightPosters(seed: UInt64) throws {
        // One seed as long as the differential test's long stream, the other shorter.
        let events = Self.distinct(RandomStream(seed: seed, events: seed == 909 ? DifferentialTests.longEvents : max(3_000, DifferentialTests.events)).lines)
        let byId = Dictionary(uniqueKeysWithValues: events.map { ($0.id, $0.line) })
        let served = folder + "/served-\(seed).db"
        let token = try Stepo.run(["token", "--db", served, "--admin"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.hasPrefix("stp_"))
        let (server, address) = try Stepo.serve(served, log: folder + "/serve-\(seed).log")
        defer { server.stop() }

        let blocks = Self.post(events, to: address, token: token, store: served)

        // How the requests met (how many joined depends on timing: the next test makes them).
        let health = try HTTPClient().perform(method: "GET", url: address + "/v1/health", headers: [("Authorization", "Bearer \(token)")], timeout: 10)
        guard case .object(let fields)? = try? JSON.parse(health.body), case .object(let counts)? = fields.first(where: { $0.0 == "eventGroups" })?.1 else {
            Issue.record("no eventGroups in \(String(decoding: health.body, as: UTF8.self))")
            return
        }
        let count = { (name: String) in counts.first { $0.0 == name }?.1.int ?? -1 }
        print("group commit, seed \(seed): \(count("requests")) requests in \(count("groups")) groups, the largest \(count("largest"))")
        #expect(count("requests") == blocks && count("groups") <= count("requests") && count("largest") >= 1)
        // Not for anyone without the admin token.
        let anonymous = try HTTPClient().perform(method: "GET", url: address + "/v1/health", timeout: 10)
        #expect(!String(decoding: anonymous.body, as: UTF8.self).contains("eventGroups"))
        server.stop()

        // The same events, one ingest, in the order the server applied them.
        let store = try Store(location: served)
        let order = try store.db.query("SELECT ext FROM events WHERE ext IS NOT NULL ORDER BY id") { $0.string(0) }
        // Posted out of order, many refer to what is not there yet and are refused; enough stay.
        #expect(order.count > events.count / 5, "only \(order.count) of \(events.count) applied")
        let acts = order.filter { byId[$0].map(DifferentialTests.isAct) ?? false }.count
        let joined = try store.db.query("SELECT count(*) FROM batch_members") { $0.int(0) }.first ?? 0
        print("group commit, seed \(seed): \(order.count) events applied, \(acts) of them hearts, shares and comments; \(joined) batch members")
        #expect(acts > 100)
        let replay = folder + "/replay-\(seed).ndjson"
        try (order.compactMap { byId[$0] }.joined(separator: "\n") + "\n").write(toFile: replay, atomically: true, encoding: .utf8)
        #expect(try Stepo.run(["ingest", "--db", folder + "/replayed-\(seed).db", "--quiet", replay]).status == 0)
        let expected = try DifferentialTests.tables(try Store(location: folder + "/replayed-\(seed).db"))
        let tables = try DifferentialTests.tables(store)
        for (table, rows) in expected.sorted(by: { $0.key < $1.key }) where tables[table] != rows {
            let other = tables[table] ?? []
            let index = zip(rows, other).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(rows.count, other.count)
            Issue.record("""
                table \(table) differs first at \(index) (of \(rows.count) and \(other.count)):
                  one ingest: \(index < rows.count ? rows[index] : "(none)")
                  the server: \(index < other.count ? other[index] : "(none)")
                """)
        }
    }

    @Test("on PostgreSQL too: eight posters through a server, and the rows, their state and every explanation equal one ingest of the events in the order they were applied",
          .enabled(if: PostgresCluster.available))
    func eightPostersOnPostgres() throws {
        let stream = RandomStream(seed: 1111, events: 2_000)
        let events = Self.distinct(stream.lines)
        let byId = Dictionary(uniqueKeysWithValues: events.map { ($0.id, $0.line) })
        let url = try PostgresCluster.shared().newDatabase()
        let token = try Stepo.run(["token", "--database", url, "--admin"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.hasPrefix("stp_"))
        let (server, address) = try Stepo.serve(url, log: folder + "/serve-pg.log")
        defer { server.stop() }
        _ = Self.post(events, to: address, token: token, store: url)
        server.stop()

        // One server writes one group at a time, so the ids say the order it applied them in.
        let store = try Store(location: url)
        let order = try store.db.query("SELECT ext FROM events WHERE ext IS NOT NULL ORDER BY id") { $0.string(0) }
        #expect(order.count > events.count / 5, "only \(order.count) of \(events.count) applied")
        let replay = folder + "/replay-pg.ndjson"
        try (order.compactMap { byId[$0] }.joined(separator: "\n") + "\n").write(toFile: replay, atomically: true, encoding: .utf8)
        let again = try PostgresCluster.shared().newDatabase()
        #expect(try Stepo.run(["ingest", "--database", again, "--quiet", replay]).status == 0)
        // Row ids on PostgreSQL say only order (a set takes them ahead): rows compared renumbered.
        var served = DifferentialTests.Result(), replayed = DifferentialTests.Result()
        try DifferentialTests.finalState(store, stream, DifferentialTests.Renumber(), into: &served)
        try DifferentialTests.finalState(try Store(location: again), stream, DifferentialTests.Renumber(), into: &replayed)
        print("group commit on PostgreSQL: \(order.count) events applied, \(served.rows.count) rows, \(served.suppressions.count) suppressions")
        #expect(served.rows.count > order.count / 2)
        DifferentialTests.compare(served, replayed, "the server's groups vs one ingest in the same order")
    }

    @Test("requests that arrive while a group waits for the store are written together, one transaction, and none is answered before it commits")
    func joined() throws {
        let (served, token) = try oneStep(folder + "/joined.db", people: 9)
        // A request waiting for its group holds no thread: the default four serve all eight.
        let (server, address) = try Stepo.serve(served, log: folder + "/joined.log")
        defer { server.stop() }

        // Another writer holds the store's write lock (as a `stepo ingest` on the file would):
        // the first request's group waits for it, and the seven behind it gather.
        let holder = try Store(location: served)
        try holder.db.execute("BEGIN IMMEDIATE")
        let released = Mutex<Date?>(nil)
        let answers = Mutex<[(Int, Date, String)]>([])
        let group = DispatchGroup()
        // One post first (its group waits for the lock), then seven behind it.
        func post(_ poster: Int) {
            group.enter()
            Thread {
                defer { group.leave() }
                let answer = GroupCommitTests.heart(from: poster, to: address, token: token)
                answers.withLock { $0.append((answer?.status ?? 0, Date(), answer.map { String(decoding: $0.body, as: UTF8.self) } ?? "")) }
            }.start()
        }
        post(1)
        Thread.sleep(forTimeInterval: 0.3)
        for poster in 2...8 { post(poster) }
        Thread.sleep(forTimeInterval: 1.2)
        #expect(answers.withLock { $0.isEmpty }, "answered while the store was locked: \(answers.withLock { $0 })")
        released.withLock { $0 = Date() }
        try holder.db.execute("COMMIT")
        #expect(group.wait(timeout: .now() + 30) == .success)
        let all = answers.withLock { $0 }
        #expect(all.count == 8 && all.allSatisfy { $0.0 == 200 && $0.2.contains(#""applied":1"#) }, "\(all)")
        #expect(all.allSatisfy { $0.1 >= released.withLock { $0! } })

        let health = try HTTPClient().perform(method: "GET", url: address + "/v1/health", headers: [("Authorization", "Bearer \(token)")], timeout: 10)
        let text = String(decoding: health.body, as: UTF8.self)
        guard case .object(let fields)? = try? JSON.parse(health.body), case .object(let counts)? = fields.first(where: { $0.0 == "eventGroups" })?.1 else {
            Issue.record("no eventGroups in \(text)")
            return
        }
        let count = { (name: String) in counts.first { $0.0 == name }?.1.int ?? -1 }
        // The first went alone and waited; the seven behind it went as one group.
        #expect(count("requests") == 8 && count("groups") == 2 && count("largest") == 7, "\(text)")
        // Eight hearts, one batch row for the step's owner, as eight posts one after another make.
        let store = try Store(location: served)
        #expect(try store.db.query("SELECT count(*) FROM batch_members") { $0.int(0) }.first == 8)
    }

    @Test("a server told to stop while posts wait for their group answers each once the group is written, then exits cleanly")
    func stopWhileParked() throws {
        let (served, token) = try oneStep(folder + "/stop.db", people: 5)
        let (server, address) = try Stepo.serve(served, log: folder + "/stop.log")
        defer { server.stop() }
        let holder = try Store(location: served)
        try holder.db.execute("BEGIN IMMEDIATE")
        let statuses = Mutex<[Int]>([])
        let group = DispatchGroup()
        func post(_ poster: Int) {
            group.enter()
            Thread {
                defer { group.leave() }
                let answer = GroupCommitTests.heart(from: poster, to: address, token: token)
                statuses.withLock { $0.append(answer?.status ?? 0) }
            }.start()
        }
        post(1)
        Thread.sleep(forTimeInterval: 0.3)
        for poster in 2...4 { post(poster) }
        Thread.sleep(forTimeInterval: 0.5)
        // SIGTERM while one group waits for the lock and three posts wait behind it.
        kill(server.pid, SIGTERM)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(statuses.withLock { $0.isEmpty })
        try holder.db.execute("COMMIT")
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(statuses.withLock { $0 } == [200, 200, 200, 200])
        #expect(server.wait(timeout: 20) == 0, "stepo serve did not exit cleanly")
        #expect(try Store(location: served).db.query("SELECT count(*) FROM events WHERE ext LIKE 'h%'") { $0.int(0) }.first == 4)
    }

    @Test("stopped under a stream of posts, the server exits cleanly: every post answered 200 is stored, every one refused 503 stopping is not, none is stored unanswered",
          arguments: [0, 1, 2])
    func stopUnderTraffic(run: Int) throws {
        let (served, token) = try oneStep(folder + "/traffic-\(run).db", people: 9)
        let log = folder + "/traffic-\(run).log"
        let (server, address) = try Stepo.serve(served, log: log)
        defer { server.stop() }
        // Eight posters on keep-alive connections, a comment a post, until the server is gone;
        // on run 1 another writer holds the store across the stop.
        let outcomes = Mutex<[String: Int]>([:])  // event id → status (0: no answer)
        let group = DispatchGroup()
        let stop = Mutex(false)
        for poster in 1...8 {
            group.enter()
            Thread {
                defer { group.leave() }
                let client = HTTPClient()
                var n = 0
                while !stop.withLock({ $0 }) {
                    n += 1
                    let id = "c\(poster)-\(n)"
                    let line = #"{"id":"\#(id)","type":"comment","at":"2026-11-20T09:00:00Z","actor":"u\#(poster)","step":"s1","comment":{"id":"\#(id)","text":"on"}}"#
                    let answer = try? client.perform(method: "POST", url: address + "/v1/events", headers: [("Authorization", "Bearer \(token)")],
                                                      body: Data(line.utf8), timeout: 30, connectTimeout: 2)
                    outcomes.withLock { $0[id] = answer?.status ?? 0 }
                    if answer == nil { return }  // the server is gone
                }
            }.start()
        }
        Thread.sleep(forTimeInterval: 0.8)
        let holder = run == 1 ? try Store(location: served) : nil
        try holder?.db.execute("BEGIN IMMEDIATE")
        Thread.sleep(forTimeInterval: run == 2 ? 0.05 : 0.3)
        kill(server.pid, SIGTERM)
        Thread.sleep(forTimeInterval: 0.5)
        try holder?.db.execute("COMMIT")
        let exit = server.wait(timeout: 40)
        stop.withLock { $0 = true }
        #expect(group.wait(timeout: .now() + 40) == .success)
        #expect(exit == 0, "stepo serve exited \(exit.map(String.init) ?? "not at all"): \((try? String(contentsOfFile: log, encoding: .utf8))?.suffix(300) ?? "")")
        let stored = Set(try Store(location: served).db.query("SELECT ext FROM events WHERE ext LIKE 'c%'") { $0.string(0) })
        let all = outcomes.withLock { $0 }
        let answered = all.filter { $0.value == 200 }.map(\.key), refused = all.filter { $0.value == 503 }.map(\.key)
        let unanswered = all.filter { $0.value == 0 }.map(\.key)
        #expect(answered.count > 20, "only \(answered.count) answered")
        #expect(answered.allSatisfy(stored.contains), "answered 200 and not stored")
        #expect(!refused.contains(where: stored.contains), "refused and stored")
        #expect(!unanswered.contains(where: stored.contains), "stored and never answered: \(unanswered.filter(stored.contains))")
        #expect(all.values.allSatisfy { [200, 503, 0].contains($0) }, "\(Set(all.values))")
    }
}
