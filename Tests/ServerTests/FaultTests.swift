import BenchSupport
import Foundation
import Synchronization
import HTTPClient
import Notifications
import Postgres
import Testing
import TestSupport
@testable import Backend

/// How many seeded runs a fault test makes: `STEPO_FAULT_RUNS`, or a few in CI.
enum FaultRuns {
    static var count: Int { Int(ProcessInfo.processInfo.environment["STEPO_FAULT_RUNS"] ?? "") ?? 3 }
}

/// The client's HTTP layer meets a server that refuses, resets, half-answers or answers
/// garbage: every command says it is offline and exits 1 — never a crash (URLSession on Linux
/// died with SIGILL in 10–60% of such runs). Engine-independent: run once, in the SQLite pass.
@Suite("Faults: the client never crashes on a broken connection", .enabled(if: !TestEngine.isPostgres))
struct ClientFaultTests {
    let folder = NSTemporaryDirectory() + "stepo-clientfault-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    @Test("stepo sync, activity --replica and qa walk --server against refused, reset, half-answered and garbage connections: exit 1, no signal",
          arguments: ["refused", "reset", "half", "garbage"])
    func brokenServer(fault: String) throws {
        let server: FaultyServer? = fault == "refused" ? nil : try FaultyServer(FaultyServer.Mode(rawValue: fault)!)
        let refused = try refusedPort()
        let url = server?.url ?? "http://127.0.0.1:\(refused)"
        defer { server?.stop() }
        let environment = ["XDG_STATE_HOME": folder + "/state"]
        let commands: [[String]] = [
            ["sync", "--server", url, "--token", "stp_fault"],
            ["activity", "--replica", "--server", url, "--token", "stp_fault"],
            ["qa", "walk", "--server", url, "--token", "stp_fault"],
        ]
        for run in 0..<FaultRuns.count {
            for command in commands {
                let result = try Stepo.run(command, environment: environment, timeout: 60)
                #expect(result.status < 128, "run \(run): stepo \(command[0]) ended by signal \(result.status - 128): \(result.stderr)")
                #expect(result.status <= 1, "run \(run): stepo \(command[0]) exit \(result.status): \(result.stderr)")
                let said = result.stdout + result.stderr
                #expect(said.contains("no answer") || said.contains("offline") || said.contains("cannot sync"),
                        "stepo \(command[0]) did not say it could not reach the server: \(said)")
            }
        }
    }
}

extension ClientFaultTests {
    @Test("a sync to an address that never answers, or is not a stepo server, leaves no replica file behind")
    func noReplicaLeft() throws {
        let state = folder + "/state-wrong"
        let server = try FaultyServer(.garbage)
        defer { server.stop() }
        for url in ["http://127.0.0.1:\(try refusedPort())", server.url] {
            let result = try Stepo.run(["sync", "--server", url, "--token", "stp_wrong"], environment: ["XDG_STATE_HOME": state])
            #expect(result.status == 1)
            let left = (try? FileManager.default.contentsOfDirectory(atPath: state + "/stepo/replicas")) ?? []
            #expect(left.isEmpty, "left behind: \(left)")
        }
    }

    @Test("stepo sync --watch with no replica yet, against a server answering 503 (or refusing connections), waits and retries: never exits")
    func watchWithoutReplica() throws {
        for fault in ["unavailable", "refused"] {
            let server: FaultyServer? = fault == "refused" ? nil : try FaultyServer(.unavailable)
            let refused = try refusedPort()
            let url = server?.url ?? "http://127.0.0.1:\(refused)"
            let log = folder + "/watch-\(fault).log"
            let watch = try Spawn.start([Stepo.binary, "sync", "--watch", "--server", url], log: log,
                                        environment: ["XDG_STATE_HOME": folder + "/state-\(fault)", "STEPO_TOKEN": "stp_fault"])
            Thread.sleep(forTimeInterval: 3)
            let said = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
            #expect(watch.isRunning, "sync --watch exited against a \(fault) server: \(said)")
            #expect(said.contains("retrying in"), "\(said)")
            #expect(!said.contains("refused the token"), "\(said)")
            watch.stop()
            server?.stop()
        }
    }
}

/// A full disk under a running server (a small tmpfs, so root only; CI runs as root): a clear,
/// retryable 503 with Retry-After, the server stays up and serves again once space returns,
/// and nothing half-written. An ingest that meets it names its line and keeps the lines before.
@Suite("Faults: a full disk", .serialized, .enabled(if: !TestEngine.isPostgres && getuid() == 0))
final class DiskFullTests {
    let folder = NSTemporaryDirectory() + "stepo-diskfull-" + UUID().uuidString
    let disk: String

    init() throws {
        disk = folder + "/disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        let mounted = try Spawn.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", disk])
        guard mounted.status == 0 else { throw Spawn.Failure(description: "cannot mount a tmpfs: \(mounted.stderr)") }
    }

    deinit {
        _ = try? Spawn.run(["umount", "-l", disk])
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Fills the disk with a ballast file, leaving `room` bytes free; returns its path.
    func fill(leaving room: Int) throws -> String {
        let ballast = disk + "/ballast"
        _ = try Spawn.run(["sh", "-c", "dd if=/dev/zero of='\(ballast)' bs=4k 2>/dev/null; sync"])
        let size = (try FileManager.default.attributesOfItem(atPath: ballast)[.size] as? Int) ?? 0
        #expect(truncate(ballast, off_t(max(0, size - room))) == 0)
        return ballast
    }

    static let world = """
    {"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"o","username":"o","name":"Owen"}}
    {"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"f","username":"f","name":"Fay"}}
    {"id":"j1","type":"journey","at":"2026-11-20T08:01:00Z","journey":{"id":"j","owner":"o","title":"Runs"}}
    {"id":"s1","type":"step","at":"2026-11-20T08:02:00Z","step":{"id":"s","journey":"j","caption":"Ridge"}}
    {"id":"m1","type":"mediaReady","at":"2026-11-20T08:03:00Z","step":"s"}

    """

    /// Comments of about 2 KB each, so a few fill what the ballast left.
    static func comments(_ range: Range<Int>, prefix: String) -> String {
        range.map { i in
            #"{"id":"\#(prefix)\#(i)","type":"comment","at":"2026-11-20T09:00:00Z","actor":"f","step":"s","comment":{"id":"\#(prefix)c\#(i)","text":"\#(String(repeating: "words ", count: 340))\#(i)"}}"#
        }.joined(separator: "\n") + "\n"
    }

    @Test("a server whose disk fills answers 503 storeFull with Retry-After, stays up, and stores again when space returns")
    func server() throws {
        let db = disk + "/stepo.db"
        #expect(try Stepo.run(["ingest", "--db", db, "-"], stdin: Data(Self.world.utf8)).status == 0)
        let admin = try Stepo.run(["token", "--db", db, "--admin"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let (server, address) = try Stepo.serve(db, log: folder + "/serve.log")
        defer { server.stop() }
        let client = HTTPClient()
        let headers = [("Authorization", "Bearer \(admin)")]
        let ballast = try fill(leaving: 96 << 10)
        var full: HTTPAnswer?
        var stored = 0
        for i in 0..<400 {
            let answer = try client.perform(method: "POST", url: address + "/v1/events", headers: headers,
                                            body: Data(Self.comments(i..<(i + 1), prefix: "p").utf8), timeout: 30)
            if answer.status == 503 { full = answer; break }
            #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
            stored += 1
        }
        let refusal = try #require(full, "the disk never filled")
        #expect(stored > 0, "the first post already met a full disk: the test filled too much")
        #expect(refusal.header("Retry-After") != nil)
        let error = try JSON.parse(refusal.body)["error"]
        #expect(error?["code"]?.string == "storeFull")
        #expect(server.isRunning)
        #expect(try client.perform(method: "GET", url: address + "/v1/health", timeout: 10).status == 200)
        // Space returns: the same request is stored now, and everything before it is there.
        try FileManager.default.removeItem(atPath: ballast)
        var again = 0
        for attempt in 0..<3 {
            again = try client.perform(method: "POST", url: address + "/v1/events", headers: headers,
                                       body: Data(Self.comments(stored..<(stored + 1), prefix: "p").utf8), timeout: 30).status
            if again == 200 { break }
            usleep(useconds_t(200_000 * (attempt + 1)))
        }
        #expect(again == 200)
        #expect(server.isRunning)
        server.stop()
        let store = try Store(path: db)
        #expect(try store.audit.eventsApplied(idPrefix: "p") == stored + 1)
        #expect(try (0...stored).allSatisfy { try store.comment("pc\($0)") != nil })
        #expect(try store.comment("pc\(stored + 1)") == nil)
        let check = try Stepo.run(["check", "--db", db])
        #expect(check.status == 0 && check.stdout.contains("sound"), "\(check.stdout)\(check.stderr)")
    }

    @Test("an ingest that fills the disk names its line, keeps the lines before it, and a rerun after space returns applies the rest")
    func ingest() throws {
        let db = disk + "/ingest.db"
        #expect(try Stepo.run(["ingest", "--db", db, "-"], stdin: Data(Self.world.utf8)).status == 0)
        let ballast = try fill(leaving: 256 << 10)
        let file = folder + "/comments.ndjson"
        try Data(Self.comments(0..<400, prefix: "q").utf8).write(to: URL(fileURLWithPath: file))
        let failed = try Stepo.run(["ingest", "--db", db, file])
        #expect(failed.status == 1)
        let said = try #require(failed.stderr.range(of: #"comments\.ndjson:[0-9]+: the store failed"#, options: .regularExpression),
                                "\(failed.stderr)")
        let line = Int(failed.stderr[said].split(separator: ":")[1]) ?? 0
        #expect(line > 1 && line <= 400)
        #expect(failed.stderr.contains("full"))
        try FileManager.default.removeItem(atPath: ballast)
        let store = try Store(path: db)
        #expect(try store.audit.eventsApplied(idPrefix: "q") == line - 1)
        let rerun = try Stepo.run(["ingest", "--db", db, "--quiet", file])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(try store.audit.eventsApplied(idPrefix: "q") == 400)
    }
}

/// PostgreSQL restarting under a server with parked long-polls (a cluster of this test's own):
/// every parked poll gets a retryable 503 with Retry-After, the server reconnects, and a
/// `stepo sync --watch` waits and carries on.
@Suite("Faults: PostgreSQL restarts under parked long-polls",
       .enabled(if: !TestEngine.isPostgres && (PostgresCluster.available || ProcessInfo.processInfo.environment["CI"] != nil)))
struct DatabaseRestartTests {
    let folder = NSTemporaryDirectory() + "stepo-pgrestart-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    @Test("parked long-polls answer 503 with Retry-After, the server serves again after each restart, sync --watch never exits")
    func restart() async throws {
        let cluster = try ThrowawayCluster()
        let url = try cluster.createDatabase()
        let world = DiskFullTests.world
        #expect(try Stepo.run(["ingest", "--database", url, "-"], stdin: Data(world.utf8)).status == 0)
        let token = try Stepo.run(["token", "--database", url, "--user", "o"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let admin = try Stepo.run(["token", "--database", url, "--admin"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let (server, address) = try Stepo.serve(url, log: folder + "/serve.log")
        defer { server.stop() }
        let watch = try Spawn.start([Stepo.binary, "sync", "--server", address, "--token", token, "--watch"], log: folder + "/watch.log",
                                    environment: ["XDG_STATE_HOME": folder + "/state"])
        defer { watch.stop() }
        let client = HTTPClient()
        // STEPO_FAULT_RUNS restarts in a row (a few in CI), each under parked polls.
        for cycle in 0..<FaultRuns.count {
            let version = try JSON.parse(try client.perform(method: "GET", url: address + "/v1/activity?after=0",
                                                            headers: [("Authorization", "Bearer \(token)")], timeout: 10).body)["next"]?.int ?? 0
            // Five long-polls parked on the server.
            let answers = Answers()
            let parked = Date()
            for _ in 0..<5 {
                Thread {
                    let answer = try? client.perform(method: "GET", url: address + "/v1/activity?after=\(version)&wait=30",
                                                     headers: [("Authorization", "Bearer \(token)")], timeout: 40)
                    answers.add(answer)
                    answers.note(String(format: "after=%d answered after %.2f s", version, Date().timeIntervalSince(parked)))
                }.start()
            }
            try await Task.sleep(nanoseconds: 500_000_000)
            try cluster.stop()
            let deadline = Date().addingTimeInterval(15)
            while answers.all.count < 5, Date() < deadline { try await Task.sleep(nanoseconds: 50_000_000) }
            let got = answers.all
            #expect(got.count == 5, "restart \(cycle): parked polls still waiting after the database went away")
            for answer in got {
                #expect(answer?.status == 503, "restart \(cycle): \(answers.notes) \(answer.map { String(decoding: $0.body, as: UTF8.self).prefix(300) } ?? "no answer")")
                #expect(answer?.header("Retry-After") != nil)
            }
            #expect(server.isRunning)
            try cluster.start()
            // The server reconnects: a post goes through within a few tries.
            var posted = 0
            for _ in 0..<40 where posted != 200 {
                let line = #"{"id":"after-restart-\#(cycle)","type":"comment","at":"\#(Timestamp.format(Timestamp.parse("2026-11-20T10:00:00Z")! + Int64(cycle) * 60_000))","actor":"f","step":"s","comment":{"id":"back\#(cycle)","text":"back again"}}"#
                posted = (try? client.perform(method: "POST", url: address + "/v1/events", headers: [("Authorization", "Bearer \(admin)")],
                                              body: Data(line.utf8), timeout: 10))?.status ?? 0
                if posted != 200 { try await Task.sleep(nanoseconds: 250_000_000) }
            }
            #expect(posted == 200, "restart \(cycle): the server did not store again")
            // The watching sync waited and carried on: it is still running and saw the comment.
            let sawHeart = Date().addingTimeInterval(45)
            var log = ""
            while Date() < sawHeart {
                log = String(decoding: FileManager.default.contents(atPath: folder + "/watch.log") ?? Data(), as: UTF8.self)
                if log.components(separatedBy: "synced 1 row ").count - 1 > cycle { break }
                try await Task.sleep(nanoseconds: 200_000_000)
            }
            #expect(watch.isRunning, "sync --watch exited: \(log)")
            #expect(log.components(separatedBy: "synced 1 row ").count - 1 > cycle, "\(log)")
            #expect(log.contains("server unavailable") || log.contains("offline"), "\(log)")
        }
    }
}

extension DatabaseRestartTests {
    @Test("an ingest whose database stops under it names its line and says truly how much is stored")
    func ingestLosesDatabase() async throws {
        // Commits durable when answered (the throwaway default is not: an immediate stop
        // right after a commit may lose it, which would not be the ingest's untruth).
        let cluster = try ThrowawayCluster(settings: ["synchronous_commit=on"])
        let url = try cluster.createDatabase()
        var text = ""
        for i in 0..<100 {
            text += #"{"id":"u\#(i)","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"p\#(i)","username":"p\#(i)","name":"P"}}"# + "\n"
        }
        text += #"{"id":"j","type":"journey","at":"2026-11-20T08:01:00Z","journey":{"id":"j","owner":"p0","title":"Runs"}}"# + "\n"
        text += #"{"id":"s","type":"step","at":"2026-11-20T08:02:00Z","step":{"id":"s","journey":"j","caption":"Ridge"}}"# + "\n"
        text += #"{"id":"r","type":"mediaReady","at":"2026-11-20T08:03:00Z","step":"s"}"# + "\n"
        // Runs of fifty hearts and shares (decided set at a time) between runs of mutes.
        for n in 0..<40_000 {
            let a = n % 100, b = (a + 1 + (n / 100) % 99) % 100
            if (n / 50) % 2 == 0 {
                text += #"{"id":"m\#(n)","type":"\#(n % 3 == 0 ? "share" : "heart")","at":"2026-11-20T09:00:00Z","actor":"p\#(a)","step":"s"}"# + "\n"
            } else {
                text += #"{"id":"m\#(n)","type":"\#((n / 9_900) % 2 == 0 ? "mute" : "unmute")","at":"2026-11-20T09:00:00Z","actor":"p\#(a)","target":"p\#(b)"}"# + "\n"
            }
        }
        let file = folder + "/big.ndjson"
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let ingest = try Spawn.start([Stepo.binary, "ingest", "--database", url, "--quiet", file], log: folder + "/ingest.log")
        // Stopped mid-way: once some of it is stored (a fixed pause was the whole ingest on a
        // quick day), looking from a connection of its own.
        let watcher = try Store(postgres: url).db
        let watching = Date().addingTimeInterval(30)
        // (A blocking pause: with the other suites running, a task's sleep may wake seconds
        // late, after the ingest has finished.)
        while Date() < watching, ((try? watcher.scalar("SELECT count(*) FROM events WHERE ext LIKE 'm%'")) ?? 0) < 2_000 {
            usleep(20_000)
        }
        try cluster.stop()
        let status = ingest.wait(timeout: 60)
        try cluster.start()
        let log = String(decoding: FileManager.default.contents(atPath: folder + "/ingest.log") ?? Data(), as: UTF8.self)
        #expect(status == 1, "\(log)")
        let said = try #require(log.range(of: #"big\.ndjson:[0-9]+: the store failed"#, options: .regularExpression), "\(log)")
        let line = Int(log[said].split(separator: ":")[1]) ?? 0
        let storedThrough: Int
        if log.contains("the lines before it are stored") {
            storedThrough = line - 1
        } else if log.contains("no line of this run is stored") {
            storedThrough = 0
        } else {
            let range = try #require(log.range(of: #"lines 1–[0-9]+ are stored"#, options: .regularExpression))
            storedThrough = Int(log[range].dropFirst(8).prefix { $0.isNumber }) ?? -1
        }
        let store = try Store(postgres: url)
        let stored = try store.audit.eventsApplied()
        #expect(stored == storedThrough, "it said \(storedThrough) lines are stored; \(stored) are: \(log)")
    }
}

/// Answers collected from several threads.
final class Answers: Sendable {
    private let state = Mutex<(items: [HTTPAnswer?], lines: [String])>(([], []))
    func add(_ item: HTTPAnswer?) { state.withLock { $0.items.append(item) } }
    func note(_ line: String) { state.withLock { $0.lines.append(line) } }
    var notes: [String] { state.withLock { $0.lines } }
    var all: [HTTPAnswer?] { state.withLock { $0.items } }
}
