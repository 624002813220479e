import Foundation
import Synchronization
import HTTPClient
import Notifications
import Testing
import TestSupport
import Wire
@_spi(Bench) @testable import Backend

/// The store on PostgreSQL behind several servers: these need PostgreSQL whatever engine the
/// other suites run on. Where it is not installed they are skipped, and say so; in CI
/// (`CI` set) they run and fail instead.
@Suite("Scale-out: PostgreSQL behind several servers",
       .enabled(if: PostgresCluster.available || ProcessInfo.processInfo.environment["CI"] != nil,
                "PostgreSQL is not installed here: the scale-out tests did not run (bash .ci/deps installs it)"))
struct ScaleOutTests {
    let folder = NSTemporaryDirectory() + "stepo-scale-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// A fresh database with `users` people (u0 … u(n-1)), everyone following u0.
    func world(users: Int) throws -> (url: String, store: Store) {
        let url = try PostgresCluster.shared().newDatabase()
        let store = try Store(postgres: url)
        var lines = ""
        for i in 0..<users {
            lines += #"{"id":"user-u\#(i)","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"u\#(i)","username":"u\#(i)","name":"User \#(i)"}}"# + "\n"
        }
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(lines.utf8)), onRow: { _ in }, onReject: { _, _ in })
        return (url, store)
    }

    /// A blocking HTTP call on a thread of its own; calls `done` with the status and body.
    func call(_ method: String, _ url: String, token: String, body: Data? = nil,
              done: @escaping @Sendable (Int, JSON) -> Void) {
        Thread {
            let answer = try? HTTPClient().perform(method: method, url: url, headers: [("Authorization", "Bearer \(token)")],
                                                   body: body, timeout: 30)
            done(answer?.status ?? 0, answer.flatMap { try? JSON.parse($0.body) } ?? .null)
        }.start()
    }

    /// A call, awaited without holding one of the test runner's shared threads (the suites run
    /// side by side on them: a test blocking there stalls the others).
    func callNow(_ method: String, _ url: String, token: String, body: Data? = nil) async -> (Int, JSON) {
        await withCheckedContinuation { done in
            call(method, url, token: token, body: body) { status, json in done.resume(returning: (status, json)) }
        }
    }

    /// Waits for `group` on a thread of its own, for the same reason.
    func wait(_ group: DispatchGroup) async {
        await withCheckedContinuation { done in
            Thread { group.wait(); done.resume() }.start()
        }
    }

    @Test("three servers, one database: an event posted to one wakes long-polls parked on the other two within 100 ms")
    func threeServers() async throws {
        let (url, store) = try world(users: 6)
        let me = try #require(try store.user("u0"))
        let token = try store.tokens.create(for: me, admin: false, at: 0)
        let admin = try store.tokens.create(for: nil, admin: true, at: 0)
        var servers: [(server: Spawn.Background, address: String)] = []
        defer { for server in servers { server.server.stop() } }
        for index in 0..<3 {
            servers.append(try Stepo.serve(url, log: folder + "/serve-\(index).log"))
        }
        var latencies: [Double] = []
        for round in 0..<5 {
            let next = try #require(await callNow("GET", servers[1].address + "/v1/health", token: token).1["version"]?.int)
            // Two long-polls, on servers B and C.
            let answered = Locked<[Double]>([])
            let bothAnswered = DispatchGroup()
            for server in servers[1...] {
                bothAnswered.enter()
                call("GET", server.address + "/v1/activity?after=\(next)&wait=20", token: token) { status, json in
                    let got = (json["rows"]?.array?.isEmpty == false) && status == 200
                    answered.mutate { $0.append(got ? Date().timeIntervalSince1970 : -1) }
                    bothAnswered.leave()
                }
            }
            try await Task.sleep(nanoseconds: 400_000_000)  // parked by now
            #expect(answered.value.isEmpty, "a long-poll answered before anything changed")
            // A follow of u0, through server A.
            let event = #"{"id":"scale-\#(round)","type":"follow","at":"2026-11-20T09:0\#(round):00Z","actor":"u\#(round + 1)","target":"u0"}"#
            let (status, _) = await callNow("POST", servers[0].address + "/v1/events", token: admin, body: Data(event.utf8))
            #expect(status == 200)
            let committed = Date().timeIntervalSince1970
            await wait(bothAnswered)
            let times = answered.value
            #expect(times.count == 2 && times.allSatisfy { $0 > 0 }, "a long-poll came back without the row: \(times)")
            latencies += times.map { ($0 - committed) * 1000 }
        }
        latencies.sort()
        print("scale-out wake, commit → long-poll answer on another server (ms): \(latencies.map { String(format: "%.1f", $0) })")
        #expect(!latencies.isEmpty)
        // The periodic look is 500 ms apart: answers well inside 100 ms came by NOTIFY.
        #expect(latencies[latencies.count / 2] < 100, "median \(latencies[latencies.count / 2]) ms")
        #expect(latencies.last! < 250, "slowest \(latencies.last!) ms")
    }

    // Blocking, not async: its timings (a lock held 1.8 s, answers after it) must not wait for
    // a turn on the test runner's shared threads, which other suites may hold for seconds.
    @Test("group commit on PostgreSQL: posts that arrive while a group waits for a lock are written as one group, none answered before it commits; two servers write theirs side by side")
    func groupCommit() throws {
        let (url, store) = try world(users: 17)
        let admin = try store.tokens.create(for: nil, admin: true, at: 0)
        let step = """
            {"id":"j","type":"journey","at":"2026-11-20T08:01:00Z","journey":{"id":"j1","owner":"u0","title":"Walk"}}
            {"id":"s","type":"step","at":"2026-11-20T08:02:00Z","step":{"id":"s1","journey":"j1","caption":"Day 1"}}
            {"id":"m","type":"mediaReady","at":"2026-11-20T08:03:00Z","step":"s1"}

            """
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(step.utf8)), onRow: { _ in }, onReject: { _, _ in })
        var servers: [(server: Spawn.Background, address: String)] = []
        defer { for server in servers { server.server.stop() } }
        for index in 0..<2 { servers.append(try Stepo.serve(url, log: folder + "/groups-\(index).log")) }

        // Another transaction holds the events table: each server's first group waits for it,
        // and the posts behind it gather.
        let holder = try Store(postgres: url)
        try holder.connection.execute("BEGIN")
        try holder.connection.execute("LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE")
        let answers = Locked<[(Int, Double)]>([])
        let failures = Failures()
        let group = DispatchGroup()
        // One post to each server first: its group waits for the lock. Then seven more to
        // each, which gather behind it as the next group.
        func post(_ poster: Int) {
            group.enter()
            let event = #"{"id":"h\#(poster)","type":"heart","at":"2026-11-20T09:\#(10 + poster):00Z","actor":"u\#(poster)","step":"s1"}"#
            let address = servers[poster % 2].address
            Thread {
                defer { group.leave() }
                do {
                    let answer = try HTTPClient().perform(method: "POST", url: address + "/v1/events", headers: [("Authorization", "Bearer \(admin)")],
                                                          body: Data(event.utf8), timeout: 120)
                    let applied = (try? JSON.parse(answer.body))?["applied"]?.int
                    answers.mutate { $0.append((applied == 1 ? answer.status : -answer.status, Date().timeIntervalSince1970)) }
                } catch {
                    failures.add("poster \(poster): \(error)")
                    answers.mutate { $0.append((0, Date().timeIntervalSince1970)) }
                }
            }.start()
        }
        for poster in 1...2 { post(poster) }
        Thread.sleep(forTimeInterval: 0.3)
        for poster in 3...16 { post(poster) }
        Thread.sleep(forTimeInterval: 1.5)
        #expect(answers.value.isEmpty, "answered while the lock was held: \(answers.value) \(failures.all.prefix(3))")
        let released = Date().timeIntervalSince1970
        try holder.connection.execute("COMMIT")
        #expect(group.wait(timeout: .now() + 120) == .success)
        #expect(answers.value.count == 16 && answers.value.allSatisfy { $0.0 == 200 && $0.1 >= released }, "\(answers.value)")
        for server in servers {
            let answer = try HTTPClient().perform(method: "GET", url: server.address + "/v1/health", headers: [("Authorization", "Bearer \(admin)")], timeout: 30)
            let health = try JSON.parse(answer.body)
            let requests = health["eventGroups"]?["requests"]?.int ?? -1, groups = health["eventGroups"]?["groups"]?.int ?? -1
            let largest = health["eventGroups"]?["largest"]?.int ?? -1
            print("group commit on PostgreSQL, \(server.address): \(requests) requests in \(groups) groups, the largest \(largest)")
            #expect(requests == 8 && groups == 2 && largest == 7)
        }
        // Sixteen hearts from two servers' groups: one batch row for the step's owner, each heart in it once.
        #expect(try store.connection.query("SELECT count(*) FROM batch_members") { $0.int(0) }.first == 16)
        #expect(try store.connection.query("SELECT count(*) FROM events WHERE ext LIKE 'h%'") { $0.int(0) }.first == 16)
    }

    @Test("group commit on PostgreSQL: two servers' groups that meet the same inboxes in opposite orders never deadlock (each group locks its inboxes in key order first)")
    func noDeadlock() throws {
        let (url, store) = try world(users: 40)
        let admin = try store.tokens.create(for: nil, admin: true, at: 0)
        // Four owners (u0 … u3), a step each; hearts from u4 … u39.
        var setUp = ""
        for owner in 0..<4 {
            setUp += #"{"id":"j\#(owner)","type":"journey","at":"2026-11-20T08:01:00Z","journey":{"id":"j\#(owner)","owner":"u\#(owner)","title":"Walk"}}"# + "\n"
            setUp += #"{"id":"s\#(owner)","type":"step","at":"2026-11-20T08:02:00Z","step":{"id":"s\#(owner)","journey":"j\#(owner)","caption":"Day 1"}}"# + "\n"
            setUp += #"{"id":"m\#(owner)","type":"mediaReady","at":"2026-11-20T08:03:00Z","step":"s\#(owner)"}"# + "\n"
        }
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(setUp.utf8)), onRow: { _ in }, onReject: { _, _ in })
        var servers: [(server: Spawn.Background, address: String)] = []
        defer { for server in servers { server.server.stop() } }
        for index in 0..<2 { servers.append(try Stepo.serve(url, log: folder + "/deadlock-\(index).log")) }
        let addresses = servers.map(\.address)

        // Eight posters on each server, each body two hearts on two owners' steps: on one server
        // in rising order of owner, on the other falling, so groups meet the inboxes crosswise.
        let failures = Failures()
        let group = DispatchGroup()
        for poster in 0..<16 {
            group.enter()
            Thread {
                defer { group.leave() }
                let client = HTTPClient()
                for round in 0..<15 {
                    let actor = 4 + (poster * 15 + round) % 36
                    let n = poster * 100 + round
                    let first = round % 4, second = (round + 1 + poster % 3) % 4
                    guard first != second else { continue }
                    let owners = poster % 2 == 0 ? [min(first, second), max(first, second)] : [max(first, second), min(first, second)]
                    let body = owners.enumerated().map { index, owner in
                        #"{"id":"x\#(n)-\#(index)","type":"heart","at":"2026-11-20T09:00:00Z","actor":"u\#(actor)","step":"s\#(owner)"}"#
                    }.joined(separator: "\n")
                    do {
                        let answer = try client.perform(method: "POST", url: addresses[poster % 2] + "/v1/events",
                                                        headers: [("Authorization", "Bearer \(admin)")], body: Data(body.utf8), timeout: 60)
                        if answer.status != 200 { failures.add("poster \(poster): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))") }
                    } catch {
                        failures.add("poster \(poster): \(error)")
                    }
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 120) == .success)
        #expect(failures.all.isEmpty, "\(failures.all.prefix(3))")
        var retried = 0, groups = 0
        for address in addresses {
            let answer = try HTTPClient().perform(method: "GET", url: address + "/v1/health", headers: [("Authorization", "Bearer \(admin)")], timeout: 30)
            let health = try JSON.parse(answer.body)
            retried += health["eventGroups"]?["retried"]?.int ?? -1
            groups += health["eventGroups"]?["groups"]?.int ?? 0
        }
        print("group commit on PostgreSQL, crosswise: \(groups) groups, \(retried) tried again")
        #expect(retried == 0, "groups were deadlock victims: \(retried)")
    }

    @Test("concurrent writers and pullers: every row a pull may see is seen, none is skipped")
    func noRowSkipped() async throws {
        let (url, store) = try world(users: 241)
        let target = try #require(try store.user("u0"))
        let writers = 4, perWriter = 60, pullers = 3
        let done = Locked(false)
        let failures = Locked<[String]>([])
        let seen = Locked<[Set<Int>]>(Array(repeating: [], count: pullers))
        let group = DispatchGroup()
        for w in 0..<writers {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let connection = try Store(postgres: url)
                    let ingestor = Ingestor(store: connection)
                    for i in 0..<perWriter {
                        let actor = 1 + w * perWriter + i
                        let line = #"{"id":"w\#(w)-\#(i)","type":"follow","at":"2026-11-21T08:00:00Z","actor":"u\#(actor)","target":"u0"}"#
                        _ = try ingestor.apply(Data(line.utf8))
                    }
                } catch {
                    failures.mutate { $0.append("writer \(w): \(error)") }
                }
            }.start()
        }
        let pulls = DispatchGroup()
        for p in 0..<pullers {
            pulls.enter()
            Thread {
                defer { pulls.leave() }
                do {
                    let connection = try Store(postgres: url)
                    var cursor = 0
                    var mine = Set<Int>()
                    var finalRound = false
                    while true {
                        let page = try connection.sync.page(for: target, after: cursor, limit: 7)
                        mine.formUnion(page.rows.map(\.id))
                        cursor = page.next
                        if page.more { continue }
                        if finalRound { break }
                        if done.value { finalRound = true }  // one more pass after the last commit
                    }
                    seen.mutate { $0[p] = mine }
                } catch {
                    failures.mutate { $0.append("puller \(p): \(error)") }
                }
            }.start()
        }
        await wait(group)
        done.set(true)
        await wait(pulls)
        #expect(failures.value.isEmpty, "\(failures.value)")
        let all = Set(try store.inboxes.activity(of: target, limit: Int.max).map(\.id))
        #expect(all.count == writers * perWriter)
        for (index, rows) in seen.value.enumerated() {
            let missed = all.subtracting(rows)
            #expect(missed.isEmpty && rows.isSubset(of: all), "puller \(index) missed \(missed.count) rows: \(missed.sorted().prefix(10))")
        }
    }

    /// A printed row's id (`"id":N`), or nil.
    static func rowId(_ line: String) -> Int? {
        guard let range = line.range(of: #""id":(\d+)"#, options: .regularExpression) else { return nil }
        return Int(line[range].dropFirst(5))
    }

    /// The printed rows with each id replaced by its rank of first appearance.
    static func renumbered(_ text: String) -> String {
        var ranks: [Int: Int] = [:]
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let line = String(line)
            guard let id = rowId(line), let range = line.range(of: #""id":\#(id)"#) else { return line }
            let rank = ranks[id] ?? (ranks.count + 1)
            ranks[id] = rank
            return line.replacingCharacters(in: range, with: #""id":\#(rank)"#)
        }.joined(separator: "\n")
    }

    @Test("stepo ingest prints the same rows on both engines; --database takes only a PostgreSQL URL, and an unreachable one is a clear error")
    func sameOnBothEngines() throws {
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("sample-data/events.ndjson").path
        let url = try PostgresCluster.shared().newDatabase()
        let onSQLite = try Stepo.run(["ingest", "--db", folder + "/same.db", sample])
        let onPostgres = try Stepo.run(["ingest", "--database", url, sample])
        #expect(onSQLite.status == 0 && onPostgres.status == 0, "\(onPostgres.stderr)")
        #expect(onSQLite.lines.count > 1000)
        // Row ids are the engine's to assign: PostgreSQL's come from a sequence a set takes ahead
        // (what it leaves unused is a gap), so the rows are compared with their ids renumbered
        // by first appearance. Everything else is the same, byte for byte.
        #expect(Self.renumbered(onSQLite.stdout) == Self.renumbered(onPostgres.stdout))
        #expect(Set(onPostgres.lines.compactMap(Self.rowId)).count == Set(onSQLite.lines.compactMap(Self.rowId)).count)
        #expect(onSQLite.stderr == onPostgres.stderr)
        // Again: every event is a repeat on both, and says so alike.
        let again = try Stepo.run(["ingest", "--database", url, sample])
        #expect(again.stdout.isEmpty && again.stderr.contains("0 events applied, 873 repeated"), "\(again.stderr)")

        let both = try Stepo.run(["ingest", "--db", folder + "/x.db", "--database", url, sample])
        #expect(both.status == 2 && both.stderr.contains("not both"))
        let notURL = try Stepo.run(["serve", "--database", folder + "/x.db"])
        #expect(notURL.status == 2 && notURL.stderr.contains("PostgreSQL URL"))
        let unreachable = try Stepo.run(["token", "--database", "postgresql:///nothing?host=\(folder)/nowhere", "--admin"])
        #expect(unreachable.status == 1 && unreachable.stderr.contains("cannot connect to PostgreSQL"), "\(unreachable.stderr)")
    }

    @Test("a server whose database connections were cut opens new ones: a request may fail once per cut connection, then all answer")
    func reconnects() async throws {
        let (url, store) = try world(users: 2)
        let person = try #require(try store.user("u0"))
        let token = try store.tokens.create(for: person, admin: false, at: 0)
        let (server, address) = try Stepo.serve(url, log: folder + "/serve.log")
        defer { server.stop() }
        #expect(await callNow("GET", address + "/v1/counts", token: token).0 == 200)
        // Every other session on the database ends, as in a restart or a failover (the server's
        // own catalogue, asked through the store's connection).
        _ = try store.connection.query("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
            """) { $0.bool(0) }
        var statuses: [Int] = []
        for _ in 0..<12 { statuses.append(await callNow("GET", address + "/v1/counts", token: token).0) }
        // The server's pool holds a few connections; each fails one request at most.
        #expect(statuses.suffix(4).allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(statuses.filter { $0 != 200 }.count <= 8, "\(statuses)")
    }

    @Test("delivery workers claiming on several connections at once: each entry goes to exactly one of them")
    func claims() async throws {
        let (url, store) = try world(users: 1)
        // 600 due entries for u0's row, seeded straight into the tables (600 devices would take
        // 600 registrations through the store's calls).
        let row = try #require(try store.connection.first("""
            INSERT INTO notifications(event, recipient, ord, kind, push, created_at, version)
            VALUES ((SELECT max(id) FROM events), (SELECT id FROM users WHERE ext = 'u0'), 1, 'heart', 'sent', 0, 1) RETURNING id
            """) { $0.int(0) })
        try store.connection.run("""
            INSERT INTO outbox(row, token, platform, created_at, due_at) SELECT ?, 'tok' || i, 'apns', 0, 0 FROM generate_series(1, 600) AS i
            """, row)
        let claimed = Locked<[Int: Int]>([:])
        let group = DispatchGroup()
        for worker in 0..<4 {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let connection = try? Store(postgres: url) else { return }
                while let entries = try? connection.outbox.claimDue(worker: "w\(worker)", now: 1, lease: 60_000, limit: 16), !entries.isEmpty {
                    claimed.mutate { for entry in entries { $0[entry.id, default: 0] += 1 } }
                }
            }.start()
        }
        await wait(group)
        #expect(claimed.value.count == 600)
        #expect(claimed.value.values.allSatisfy { $0 == 1 }, "an entry was claimed twice")
    }
}

/// A value shared between threads.
final class Locked<Value: Sendable>: Sendable {
    private let stored: Mutex<Value>

    init(_ value: Value) { stored = Mutex(value) }

    var value: Value { stored.withLock { $0 } }

    func set(_ value: Value) { mutate { $0 = value } }

    func mutate(_ body: (inout Value) -> Void) { stored.withLock { body(&$0) } }
}
