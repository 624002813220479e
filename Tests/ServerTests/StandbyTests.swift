import BenchSupport
import Foundation
import HTTPClient
import Notifications
import Postgres
import Testing
import TestSupport
import Wire
@testable import Backend

/// `stepo serve --read-database`: reads from a streaming standby (a second cluster made with
/// `pg_basebackup -R`), never an answer older than the primary's, whatever the standby does.
@Suite("Standby reads: a streaming standby answers reads, never behind the primary",
       .enabled(if: PostgresCluster.available || ProcessInfo.processInfo.environment["CI"] != nil,
                "PostgreSQL is not installed here: the standby tests did not run (bash .ci/deps installs it)"))
struct StandbyTests {
    let folder = NSTemporaryDirectory() + "stepo-standby-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    func get(_ url: String, token: String) -> (status: Int, json: JSON) {
        let answer = try? HTTPClient().perform(method: "GET", url: url, headers: [("Authorization", "Bearer \(token)")], body: nil, timeout: 30)
        return (answer?.status ?? 0, answer.flatMap { try? JSON.parse($0.body) } ?? .null)
    }

    func post(_ url: String, token: String, _ body: String) -> Int {
        (try? HTTPClient().perform(method: "POST", url: url, headers: [("Authorization", "Bearer \(token)")], body: Data(body.utf8),
                                   timeout: 30))?.status ?? 0
    }

    /// Where the server's reads went so far (`/v1/health`).
    func reads(_ address: String) -> [String: Int] {
        guard case .object(let fields)? = get(address + "/v1/health", token: "")
            .json["reads"] else { return [:] }
        return Dictionary(uniqueKeysWithValues: fields.compactMap { key, value in value.int.map { (key, $0) } })
    }

    /// Waits up to `seconds` for `condition`.
    func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }

    @Test("reads go to the standby once it has replayed; paused, stopped or restarted, every answer still holds what the primary committed")
    func standbyReads() throws {
        // Commits flushed when they are answered, as a production primary runs: a standby
        // then has them a moment later (with them asynchronous, up to 200 ms later).
        let primary = try ThrowawayCluster(settings: ["synchronous_commit=on"])
        let url = try primary.createDatabase()
        let store = try Store(postgres: url)
        var lines = ""
        for i in 0..<300 {
            lines += #"{"id":"user-u\#(i)","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"u\#(i)","username":"u\#(i)","name":"User \#(i)"}}"# + "\n"
        }
        lines += #"{"id":"j0","type":"journey","at":"2026-11-20T08:00:00Z","journey":{"id":"j0","owner":"u0","title":"Alps"}}"# + "\n"
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(lines.utf8)), onRow: { _ in }, onReject: { _, _ in })
        let me = try #require(try store.user("u0"))
        let token = try store.tokens.create(for: me, admin: false, at: 0)
        let admin = try store.tokens.create(for: nil, admin: true, at: 0)

        let standby = try primary.standby()
        let database = String(url.dropFirst("postgresql:///".count).prefix { $0 != "?" })
        let standbyURL = standby.url(database)
        let control = try PGConnection(standby.url("postgres"))
        let (server, address) = try Stepo.serve(url, log: folder + "/serve.log", ["--read-database", standbyURL, "--threads", "2"])
        defer { server.stop() }
        var made = 0
        /// A follow of u0 through the server, then u0's pull, counts and the new step at once:
        /// each must already hold it, wherever it was read.
        func followAndRead(_ label: String) {
            made += 1
            let at = Timestamp.format(Timestamp.parse("2026-11-20T09:00:00Z")! + Int64(made) * 1000)
            let event = #"{"id":"f\#(made)","type":"follow","at":"\#(at)","actor":"u\#(made)","target":"u0"}"#
            let step = #"{"id":"s\#(made)","type":"step","at":"\#(at)","step":{"id":"s\#(made)","journey":"j0","caption":"Step \#(made)"}}"#
            #expect(post(address + "/v1/events", token: admin, event + "\n" + step) == 200, "\(label)")
            let version = try? store.currentVersion()
            let page = get(address + "/v1/activity?after=0", token: token)
            #expect(page.status == 200 && (page.json["next"]?.int ?? 0) >= (version ?? .max), "\(label): the pull stopped short of \(version ?? -1)")
            #expect(page.json["rows"]?.array?.contains { $0["event"]?.string == "f\(made)" } == true, "\(label): the follow is missing: \(String(describing: page.json).prefix(600)) \(reads(address))")
            #expect(get(address + "/v1/counts", token: token).status == 200, "\(label)")
            #expect(get(address + "/v1/steps/s\(made)", token: token).status == 200, "\(label): the new step is not found")
        }

        // Replaying: reads go to the standby.
        #expect(eventually { followAndRead("replaying"); return (reads(address)["standby"] ?? 0) >= 6 },
                "the standby never answered: \(reads(address))")

        // Paused: nothing it has not replayed is handed out; the primary answers instead.
        let reader = try Store(standby: standbyURL, primary: try Store(postgres: url))
        _ = try control.execute("SELECT pg_wal_replay_pause()")
        // Each paused read goes to the primary: judged behind, or (a replay slower than its grace
        // on a loaded machine) down for the moment.
        let awayBefore = (reads(address)["standbyBehind"] ?? 0) + (reads(address)["standbyDown"] ?? 0)
        for _ in 0..<3 { followAndRead("paused") }
        #expect((reads(address)["standbyBehind"] ?? 0) + (reads(address)["standbyDown"] ?? 0) >= awayBefore + 9, "\(reads(address))")
        // The store itself refuses a horizon the standby has not replayed past, and a standby
        // that cannot show the primary's newest write is not opened.
        #expect(throws: EventError.self) { _ = try Store(standby: standbyURL, primary: try Store(postgres: url)) }
        #expect(throws: StandbyBehind.self) { _ = try reader.horizon() }
        _ = try control.execute("SELECT pg_wal_replay_resume()")
        let standbyBefore = reads(address)["standby"] ?? 0
        #expect(eventually { followAndRead("resumed"); return (reads(address)["standby"] ?? 0) > standbyBefore + 3 })
        #expect(try reader.horizon() > 0)

        // Stopped: the primary answers; started again, the standby takes the reads back.
        try standby.stop()
        let downBefore = reads(address)["standbyDown"] ?? 0
        for _ in 0..<3 { followAndRead("stopped") }
        #expect((reads(address)["standbyDown"] ?? 0) > downBefore, "\(reads(address))")
        try standby.start()
        let standbyAgain = reads(address)["standby"] ?? 0
        #expect(eventually(20) { followAndRead("restarted"); return (reads(address)["standby"] ?? 0) > standbyAgain + 3 },
                "the standby did not take the reads back: \(reads(address))")
        // Said once each time, not per read: to the standby, away when stopped, back when started
        // (and, on a loaded machine, away and back again when replay lagged past its grace) —
        // the two lines alternate, and there are a few of them, not one per read.
        let log = String(decoding: FileManager.default.contents(atPath: folder + "/serve.log") ?? Data(), as: UTF8.self)
        let said = log.split(separator: "\n").compactMap { line -> Bool? in
            if line.contains("reads go to the standby") { return true }
            if line.contains("the standby cannot serve reads (") { return false }
            return nil
        }
        #expect(said.first == true && said.last == true && said.count >= 3 && said.count <= 9, "\(log)")
        #expect(zip(said, said.dropFirst()).allSatisfy { $0 != $1 }, "\(log)")
    }

    @Test("seeded random streams: every person's pages and counts read on the standby are the primary's, byte for byte",
          arguments: [31, 32] as [UInt64])
    func sameAnswers(seed: UInt64) throws {
        let primary = try ThrowawayCluster(settings: ["synchronous_commit=on"])
        let url = try primary.createDatabase()
        let store = try Store(postgres: url)
        let standby = try primary.standby()
        let database = String(url.dropFirst("postgresql:///".count).prefix { $0 != "?" })
        let stream = RandomStream(seed: seed, events: 600)
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(stream.text.utf8)), onRow: { _ in }, onReject: { _, _ in })
        var reader: Store?
        #expect(eventually { reader = try? Store(standby: standby.url(database), primary: store); return reader != nil })
        let onStandby = try #require(reader)
        var compared = 0
        for i in 0..<24 {
            guard let person = try store.user("p\(i)") else { continue }
            let rows = try store.sync.page(for: person, after: 0, limit: 5000)
            // From the start, and from the middle of the person's history.
            for after in [0, rows.rows.isEmpty ? 0 : rows.rows[rows.rows.count / 2].version] {
                let there = try replayed { try onStandby.sync.page(for: person, after: after, limit: 40) }
                let here = try store.sync.page(for: person, after: after, limit: 40)
                #expect(there.bytes == here.bytes, "p\(i) after \(after): the standby's page differs")
                compared += there.rows.count
            }
            #expect(try replayed { try onStandby.inboxes.counts(for: person.key) } == (try store.inboxes.counts(for: person.key)), "p\(i)")
        }
        #expect(compared > 100, "only \(compared) rows compared")
    }

    /// `read` on the standby, asked again while the standby has not yet replayed what it must
    /// show (its refusal is right; on a busy machine replay can lag past the store's short
    /// grace): the comparison is of what it answers once it answers.
    private func replayed<T>(_ read: () throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(20)
        while true {
            do { return try read() } catch is StandbyBehind where Date() < deadline { usleep(20_000) }
        }
    }

    @Test("a standby of a fork (a copy of the primary promoted and written to) is refused, however far its WAL has gone: reads stay on the primary")
    func forkRefused() throws {
        let primary = try ThrowawayCluster()
        let url = try primary.createDatabase()
        let store = try Store(postgres: url)
        let user = #"{"id":"user-ann","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"ann","username":"ann","name":"Ann"}}"#
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(user.utf8)), onRow: { _ in }, onReject: { _, _ in })
        let database = String(url.dropFirst("postgresql:///".count).prefix { $0 != "?" })
        // The fork: same store, same identity, its own history from here, and more WAL than the primary.
        let fork = try primary.standby()
        try fork.promote()
        let writer = try PGConnection(fork.url(database))
        _ = try writer.execute("CREATE TABLE pad AS SELECT g, repeat('x', 200) AS t FROM generate_series(1, 100000) AS g")
        let forkStandby = try fork.standby()
        let forkURL = forkStandby.url(database)
        #expect(throws: EventError.self) { _ = try Store(standby: forkURL, primary: store) }
        // Through a server: every read from the primary, none from the fork's standby.
        let person = try #require(try store.user("ann"))
        let token = try store.tokens.create(for: person, admin: false, at: 0)
        let admin = try store.tokens.create(for: nil, admin: true, at: 0)
        let (server, address) = try Stepo.serve(url, log: folder + "/serve.log", ["--read-database", forkURL])
        defer { server.stop() }
        for i in 0..<3 {
            let follow = #"{"id":"u\#(i)","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"p\#(i)","username":"p\#(i)","name":"P"}}"# + "\n"
                + #"{"id":"f\#(i)","type":"follow","at":"2026-11-20T09:00:0\#(i)Z","actor":"p\#(i)","target":"ann"}"#
            #expect(post(address + "/v1/events", token: admin, follow) == 200)
            let page = get(address + "/v1/activity?after=0", token: token)
            #expect(page.json["rows"]?.array?.count == i + 1, "\(page.json)")
        }
        #expect(reads(address)["standby"] == 0 && (reads(address)["standbyDown"] ?? 0) >= 3, "\(reads(address))")
        let log = String(decoding: FileManager.default.contents(atPath: folder + "/serve.log") ?? Data(), as: UTF8.self)
        #expect(log.contains("does not follow this primary") && !log.contains("reads go to the standby"), "\(log)")
    }

    @Test("no password reaches a message: before the host, as a query parameter, or in a key=value string",
          arguments: [
              ("postgresql://stepo:S3cret@db.internal/stepo", "postgresql://stepo@db.internal/stepo"),
              ("postgres://stepo:Pa%40ss@db/x?sslmode=require", "postgres://stepo@db/x?sslmode=require"),
              ("postgresql:///stepo?host=/run/pg&user=stepo&password=S3cret", "postgresql:///stepo?host=/run/pg&user=stepo&password=…"),
              ("postgresql:///stepo?sslpassword=Key1&PASSWORD=Two&user=u", "postgresql:///stepo?sslpassword=…&password=…&user=u"),
              ("host=/run/pg dbname=stepo password='a b' user=x", "host=/run/pg dbname=stepo password=… user=x"),
          ])
    func redacted(given: String, shown: String) {
        #expect(Store.redacted(given) == shown)
    }

    @Test("the serve command shows neither password: not in its start line, nor when the standby cannot be reached, nor in a usage error")
    func passwordsNotShown() throws {
        let url = try PostgresCluster.shared().newDatabase()
        let store = try Store(postgres: url)
        let user = #"{"id":"user-ann","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"ann","username":"ann","name":"Ann"}}"#
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(user.utf8)), onRow: { _ in }, onReject: { _, _ in })
        let person = try #require(try store.user("ann"))
        let token = try store.tokens.create(for: person, admin: false, at: 0)
        let (server, address) = try Stepo.serve(url + "&password=PrimarySecret", log: folder + "/pw.log",
                                                ["--read-database", "postgresql:///nowhere?host=/nonexistent&user=x&password=StandbySecret"])
        #expect(get(address + "/v1/counts", token: token).status == 200)
        server.stop()
        let log = String(decoding: FileManager.default.contents(atPath: folder + "/pw.log") ?? Data(), as: UTF8.self)
        #expect(log.contains("listening on") && log.contains("the standby cannot serve reads ("), "\(log)")
        #expect(!log.contains("Secret"), "\(log)")
        let usage = try Spawn.run([Stepo.binary, "serve", "--database", url, "--read-database", "host=/x password=KeySecret"])
        #expect(usage.status == 2 && !usage.stderr.contains("KeySecret"), "\(usage.stderr)")
    }

    @Test("--read-database: a usage error without --database, with a file, or malformed; a primary given as the standby is refused, and the server reads from the primary")
    func badStandby() throws {
        let file = try Spawn.run([Stepo.binary, "serve", "--db", folder + "/x.db", "--read-database", "postgresql:///x"])
        #expect(file.status == 2 && file.stderr.contains("--read-database needs --database"), "\(file.stderr)")
        let url = try PostgresCluster.shared().newDatabase()
        let notURL = try Spawn.run([Stepo.binary, "serve", "--database", url, "--read-database", folder + "/y.db"])
        #expect(notURL.status == 2 && notURL.stderr.contains("takes a PostgreSQL URL"), "\(notURL.stderr)")
        // A URL libpq can never use is refused at once, with its reason, not retried every second.
        for malformed in ["postgresql://[::1", "postgresql:///x?bogusparam=1&password=Hidden"] {
            let refused = try Spawn.run([Stepo.binary, "serve", "--database", url, "--read-database", malformed])
            #expect(refused.status == 2 && refused.stderr.contains("--read-database") && !refused.stderr.contains("Hidden"),
                    "\(refused.stderr)")
        }
        let store = try Store(postgres: url)
        #expect(throws: EventError.self) { _ = try Store(standby: url, primary: store) }
        let user = #"{"id":"user-ann","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"ann","username":"ann","name":"Ann"}}"#
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(user.utf8)), onRow: { _ in }, onReject: { _, _ in })
        let person = try #require(try store.user("ann"))
        let token = try store.tokens.create(for: person, admin: false, at: 0)
        let (server, address) = try Stepo.serve(url, log: folder + "/serve.log", ["--read-database", url])
        defer { server.stop() }
        #expect(get(address + "/v1/counts", token: token).status == 200)
        #expect(get(address + "/v1/activity?after=0", token: token).status == 200)
        #expect(reads(address)["standby"] == 0 && (reads(address)["standbyDown"] ?? 0) >= 2, "\(reads(address))")
        let log = String(decoding: FileManager.default.contents(atPath: folder + "/serve.log") ?? Data(), as: UTF8.self)
        #expect(log.contains("the standby cannot serve reads (") && log.contains("not a standby"), "\(log)")
    }
}
