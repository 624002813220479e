import BenchSupport
import SQLite
import CLI
import API
import Backend
import Foundation
import Synchronization
import Notifications
import Replica
import Wire

/// `stepo-bench sync`: initial and incremental sync over loopback HTTP, and 50 long-polling
/// clients under a steady event load, against a real `stepo serve` child process.
struct SyncBench {
    let folder: String
    let seconds: Int
    let arguments: Arguments

    init(arguments: Arguments) throws {
        self.arguments = arguments
        folder = arguments["dir"] ?? NSTemporaryDirectory() + "stepo-syncbench-\(ProcessInfo.processInfo.processIdentifier)"
        seconds = try arguments.integer("seconds") ?? 30
    }

    /// The clients' side, run as a child process (as real clients run elsewhere): one
    /// long-polling replica per token in the file, for `--seconds`.
    func runClients() throws -> Int32 {
        guard let port = arguments["port"], let file = arguments["tokens"] else { throw UsageError(description: "--port and --tokens") }
        let tokens = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init)
        let base = URL(string: "http://127.0.0.1:\(port)")!
        let engines = try tokens.enumerated().map { i, token in
            SyncEngine(replica: try Replica(path: folder + "/client\(i).db"), transport: HTTPTransport(baseURL: base, token: token))
        }
        for engine in engines {
            _ = try? engine.sync()
            Thread { engine.run(longPoll: 5) }.start()
        }
        print("ready")
        fflush(nil)  // every C stream: print() writes through stdout
        Thread.sleep(forTimeInterval: TimeInterval(seconds) + 2)
        for engine in engines { engine.stop() }
        print("done: \(try engines.map { try $0.replica.rowCount }.reduce(0, +)) rows in \(engines.count) replicas")
        return 0
    }

    /// The sizes of first sync measured (`--rows 10000,100000,1000000`).
    var initialSizes: [Int] {
        get throws {
            try (arguments["rows"] ?? "10000,100000,1000000").split(separator: ",").map {
                guard let n = Int($0), n > 0 else { throw UsageError(description: "--rows takes whole numbers, e.g. 10000,100000") }
                return n
            }
        }
    }

    /// A first sync of `rows` rows, as a user meets it: `stepo sync` started against a `stepo
    /// serve` of a store where the reader has that many rows; the time from its start to its
    /// exit, and its peak memory.
    func initialSync(rows: Int, figures: inout BenchFigures) throws -> (seconds: Double, megabytes: Double, floor: Double) {
        let world = folder + "/initial-\(rows)"
        try FileManager.default.createDirectory(atPath: world, withIntermediateDirectories: true)
        let keep = ProcessInfo.processInfo.environment["STEPO_BENCH_KEEP"] != nil
        defer { if !keep { try? FileManager.default.removeItem(atPath: world) } }
        let store = try BenchWorld.popularReader(world + "/server.db", rows: rows)
        let token = try store.tokens.create(for: try store.user("u1"), admin: false, at: 0)
        let run = try SyncBench.firstSync(in: world, token: token, rows: rows)
        return (run.seconds, run.megabytes, run.floor)
    }

    /// The real `stepo sync` against a `stepo serve` of `world`/server.db, from its start to its
    /// exit, which must have synced `rows` rows; then the floor of the replica it made.
    static func firstSync(in world: String, token: String, rows: Int) throws -> (seconds: Double, megabytes: Double, floor: Double, cpu: Double) {
        let (server, url) = try BenchWorld.serve(world + "/server.db", log: world + "/serve.log")
        defer { server.stop() }
        let client = try Child.start([Bench.stepo, "sync", "--server", url, "--token", token], log: world + "/sync.log",
                                     environment: ["XDG_STATE_HOME": world + "/state"])
        let usage = client.wait()
        let log = (try? String(contentsOfFile: world + "/sync.log", encoding: .utf8)) ?? ""
        guard usage.status == 0, log.contains("synced \(rows) rows") else {
            throw CommandError(description: "stepo sync did not finish: \(log.suffix(300))")
        }
        let synced = try Replica.defaultPath(server: url, token: token, in: world + "/state/stepo/replicas")
        return (usage.seconds, usage.megabytes, try SyncBench.copyFloor(of: synced, into: world + "/floor.db"), usage.cpu)
    }

    /// The sizes of the comment world's first syncs (`--comment-rows 100000,400000`).
    var commentSizes: [Int] {
        get throws {
            try (arguments["comment-rows"] ?? "100000,400000").split(separator: ",").compactMap {
                guard let n = Int($0), n >= 1000 || n == 0 else {
                    throw UsageError(description: "--comment-rows takes whole numbers of at least 1000, e.g. 100000,400000 (0: none)")
                }
                return n == 0 ? nil : n
            }
        }
    }

    /// A first sync on a world with real entities: u1 owns `rows / 1000` steps, and each of
    /// `rows` comments by one of a thousand people (u2 … u1001) on one of them is a row for u1,
    /// each made by its own event through the real `stepo ingest` (so each is its own version,
    /// and every page carries people, steps, journeys and the comments' text). Beside it, the
    /// floor in the same run: the synced replica's tables copied by SQLite into a fresh replica
    /// (its indexes made first) in one transaction.
    func commentSync(rows: Int) throws -> (seconds: Double, megabytes: Double, floor: Double, cpu: Double) {
        let world = folder + "/comments-\(rows)"
        try FileManager.default.createDirectory(atPath: world, withIntermediateDirectories: true)
        let keep = ProcessInfo.processInfo.environment["STEPO_BENCH_KEEP"] != nil
        defer { if !keep { try? FileManager.default.removeItem(atPath: world) } }
        let steps = max(1, rows / 1000)
        let store = try Store(path: world + "/server.db")
        let bulk = BulkWorld(store)
        try bulk.build {
            try bulk.addUsers(1...1001)
            try bulk.addJourneys(10, owners: 1)
            try bulk.addSteps(steps, journeys: 10, publishedAt: Timestamp.parse("2026-11-01T00:00:00Z")!)
        }
        let token = try store.tokens.create(for: try store.user("u1"), admin: false, at: 0)
        var rng = SeededGenerator(seed: 35)
        let start = Timestamp.parse("2026-11-02T00:00:00Z")!
        let words = ["that ridge at dawn", "the last climb", "your legs must hate you", "the light on the lake", "day nine already"]
        try BenchFiles.writeLines(rows, to: world + "/comments.jsonl") { i in
            let at = Timestamp.format(start + Int64(i) * 1_000)
            let actor = Int.random(in: 2...1001, using: &rng), step = Int.random(in: 1...steps, using: &rng)
            let text = "\(words[i % words.count]), honestly the best thing I have seen this week (\(i))"
            return #"{"id":"c\#(i)","type":"comment","at":"\#(at)","actor":"u\#(actor)","step":"s\#(step)","comment":{"id":"k\#(i)","text":"\#(text)"}}"#
        }
        let ingest = try Child.start([Bench.stepo, "ingest", "--db", world + "/server.db", "--quiet", world + "/comments.jsonl"],
                                     log: world + "/ingest.log")
        guard ingest.wait().status == 0 else {
            throw CommandError(description: "stepo ingest of the comment world failed: \((try? String(contentsOfFile: world + "/ingest.log", encoding: .utf8))?.suffix(300) ?? "")")
        }
        return try SyncBench.firstSync(in: world, token: token, rows: rows)
    }

    /// The floor of a first sync: what SQLite takes to copy a synced replica's tables into a
    /// fresh file of the same schema, indexes made first, in one transaction. Seconds.
    static func copyFloor(of synced: String, into path: String) throws -> Double {
        guard FileManager.default.fileExists(atPath: synced) else { throw CommandError(description: "no replica at \(synced)") }
        _ = try Replica(path: path)  // the schema, as a replica makes it
        let db = try Database(path: path)
        let tables = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT IN ('meta', 'schema_migrations', 'pending')") { $0.string(0) }
        let started = DispatchTime.now()
        try db.execute("ATTACH DATABASE '\(synced.replacingOccurrences(of: "'", with: "''"))' AS synced")
        try db.transaction {
            for table in tables { try db.execute("INSERT INTO main.\"\(table)\" SELECT * FROM synced.\"\(table)\"") }
        }
        return BenchFigures.seconds(since: started)
    }

    func run() throws -> Int32 {
        if arguments["role"] == "clients" { return try runClients() }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { if ProcessInfo.processInfo.environment["STEPO_BENCH_KEEP"] == nil { try? FileManager.default.removeItem(atPath: folder) } }
        print("stepo-bench sync · \(ProcessInfo.processInfo.activeProcessorCount) cores")
        var figures = BenchFigures()
        var first: [Int: (seconds: Double, megabytes: Double)] = [:]
        for size in try initialSizes {
            let result = try initialSync(rows: size, figures: &figures)
            first[size] = (result.seconds, result.megabytes)
            // Issue 22's targets: 100,000 rows ≤ 2 s, a million ≤ 15 s (other sizes at that
            // rate), peak memory ≤ 100 MB; 10,000 rows ≤ 1.5 s. And issue 35's: ≤ 2.5× the floor.
            let limit = size <= 10_000 ? 1.5 : size <= 100_000 ? 2.0 : 15.0 * Double(size) / 1_000_000
            let ratio = result.seconds / max(result.floor, 1e-9)
            figures.line("first sync of \(size) rows (one version, few entities): stepo sync from start to exit, against stepo serve",
                         String(format: "%.2f s (%.0f rows/s), peak memory %.0f MB; floor %.2f s: %.1f× the floor", result.seconds,
                                Double(size) / result.seconds, result.megabytes, result.floor, ratio),
                         met: result.seconds <= limit && result.megabytes <= 100 && (size < 100_000 || ratio <= 2.5),
                         target: String(format: "≤ %.1f s, ≤ 100 MB (issue 22)", limit) + (size < 100_000 ? "" : "; ≤ 2.5× the floor (issue 35)"))
        }
        if let small = first[100_000], let large = first[1_000_000] {
            let growth = large.seconds / max(small.seconds, 1e-9)
            figures.line("  first sync: a million rows against 100,000", String(format: "%.1f× the time", growth),
                         met: growth <= 11, target: "≤ 11× (issue 22)")
        }
        // Memory is bounded, not proportional: a pull's page cache and its pages in flight have
        // fixed sizes, reached from the second page on. So the two largest sizes are compared.
        let sizes = first.keys.sorted()
        if sizes.count >= 2 {
            let small = sizes[sizes.count - 2], large = sizes[sizes.count - 1]
            let ratio = first[large]!.megabytes / first[small]!.megabytes
            figures.line("  memory of the first sync: \(large) rows against \(small)", String(format: "%.2f×", ratio),
                         met: ratio <= 1.5, target: "≤ 1.5× (bounded)")
        }
        // The world of issue 35: comments by many people, each its own version, beside the floor.
        var commented: [Int: Double] = [:]
        for size in try commentSizes {
            let result = try commentSync(rows: size)
            commented[size] = result.seconds
            let ratio = result.seconds / max(result.floor, 1e-9)
            figures.line("first sync of \(size) comments by 1,000 people on \(size / 1000) steps, each its own version",
                         String(format: "%.2f s (%.0f rows/s, client CPU %.2f s), peak %.0f MB; floor %.2f s: %.1f× the floor",
                                result.seconds, Double(size) / result.seconds, result.cpu, result.megabytes, result.floor, ratio),
                         met: ratio <= 2.5 && result.megabytes <= 100, target: "≤ 2.5× the floor, ≤ 100 MB (issue 35)")
        }
        figures.growth("  first sync of the comment world", commented, limit: 4.5)
        if arguments.has("first-only") { return figures.finish() }
        let path = folder + "/server.db"
        let store = try Store(path: path)
        // 2,000 users; u1 … u50 each own a published step others can heart; u1 has 10,000 rows.
        let world = BulkWorld(store)
        try world.build {
            try world.addUsers(1...2000)
            try world.addJourneys(50, owners: 50)
            try world.addSteps(50, journeys: 50, publishedAt: Timestamp.parse("2026-11-29T00:00:00Z")!)
            try world.addRows(recipient: 1, count: 10_000, newest: Timestamp.parse("2026-11-29T00:00:00Z")!, spacing: 60_000,
                              actors: 2...1001)
        }
        let tokens = try (1...50).map { try store.tokens.create(for: try store.user("u\($0)"), admin: false, at: 0) }
        let admin = try store.tokens.create(for: nil, admin: true, at: 0)

        let server = Process()
        server.executableURL = URL(fileURLWithPath: Bench.stepo)
        server.arguments = ["serve", "--db", path, "--port", "0", "--threads", "4"]
        let log = Pipe()
        server.standardError = log
        try server.run()
        defer { server.terminate(); server.waitUntilExit() }
        let port = try SyncBench.listeningPort(log)
        let base = URL(string: "http://127.0.0.1:\(port)")!
        DispatchQueue.global().async { while !log.fileHandleForReading.availableData.isEmpty {} }  // drain the request log
        // The incremental sync's client: a replica synced once.
        let replica = try Replica(path: folder + "/incremental.db")
        let engine = SyncEngine(replica: replica, transport: HTTPTransport(baseURL: base, token: tokens[0]))
        _ = try engine.sync()
        var start = DispatchTime.now()
        // A step of the replica's reader (u1): each heart on it is a row for them, and wakes them.
        guard let reader = try store.user("u1"),
              let own = try (1...50).compactMap({ try store.step("s\($0)") }).first(where: { $0.ownerKey == reader.key }) else {
            throw CommandError(description: "the bench's world has no step of u1")
        }

        // 2. Incremental: an event posted, the long-poll wakes, the row is in the replica.
        let adminTransport = HTTPTransport(baseURL: base, token: admin)
        var wakes: [Double] = []
        for i in 0..<30 {
            let done = DispatchSemaphore(value: 0)
            let box = TimeBox()
            DispatchQueue.global().async {
                _ = try? engine.sync(wait: 10)
                box.end = DispatchTime.now()
                done.signal()
            }
            Thread.sleep(forTimeInterval: 0.05)
            let at = Timestamp.format(Timestamp.parse("2026-11-29T01:00:00Z")! + Int64(i) * 1000)
            let event = #"{"id":"inc\#(i)","type":"heart","at":"\#(at)","actor":"u\#(100 + i)","step":"\#(own.id)"}"#
            start = DispatchTime.now()
            let posted = try adminTransport.perform(method: "POST", path: "/v1/events", query: [:], body: Data(event.utf8))
            guard posted.status == 200 else {
                throw CommandError(description: "the server refused an event (\(posted.status)): \(String(decoding: posted.body, as: UTF8.self))")
            }
            done.wait()
            wakes.append(Double((box.end ?? start).uptimeNanoseconds - start.uptimeNanoseconds) / 1e6)
        }
        let wake = median(wakes)
        figures.line("incremental sync of one new row (event posted → row in the replica)",
                     String(format: "%.1f ms median, %.1f ms p99", wake, percentile(wakes, 0.99)),
                     met: wake <= 20, target: "≤ 20 ms median")

        // 3. 50 long-polling replica clients (in a child process, as clients are elsewhere), 200
        // events/s for `seconds`, and each of the 50 users stamping seen once a second from here.
        let tokenFile = folder + "/tokens.txt"
        try tokens.joined(separator: "\n").write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let clients = Process()
        // The clients are this program again (`stepo-bench sync --role clients`), not the product.
        clients.executableURL = URL(fileURLWithPath: CommandLine.executablePath)
        clients.arguments = ["sync", "--role", "clients", "--port", String(port), "--tokens", tokenFile,
                             "--seconds", String(seconds), "--dir", folder + "/clients"]
        try FileManager.default.createDirectory(atPath: folder + "/clients", withIntermediateDirectories: true)
        let ready = Pipe()
        clients.standardOutput = ready
        try clients.run()
        defer { if clients.isRunning { clients.terminate() } }
        _ = ready.fileHandleForReading.availableData  // "ready": every client has synced once
        let latencies = LatencyLog()
        let stop = Date().addingTimeInterval(TimeInterval(seconds))
        let group = DispatchGroup()
        for i in 0..<50 {
            group.enter()
            Thread {
                let transport = HTTPTransport(baseURL: base, token: tokens[i])
                var seq = 1
                Thread.sleep(forTimeInterval: Double(i) / 50)  // spread the probes over each second
                while Date() < stop {
                    let body = #"{"client":"probe-\#(i)","mutations":[{"seq":\#(seq),"type":"seen","upTo":1000000000}]}"#
                    let t0 = DispatchTime.now()
                    let result = try? transport.perform(method: "POST", path: "/v1/mutations", query: [:], body: Data(body.utf8))
                    latencies.add(Double(DispatchTime.now().uptimeNanoseconds - t0.uptimeNanoseconds) / 1e6, ok: result?.status == 200)
                    seq += 1
                    Thread.sleep(forTimeInterval: 1)
                }
                group.leave()
            }.start()
        }
        var posted = 0, refused = 0
        var tick = 0
        while Date() < stop {
            let tickStart = Date()
            var batch = ""
            for k in 0..<20 {
                let n = tick * 20 + k
                let at = Timestamp.format(Timestamp.parse("2026-11-29T02:00:00Z")! + Int64(n) * 10)
                // Every (actor, step) pair is new, so every heart makes a row and wakes its owner.
                batch += #"{"id":"load\#(n)","type":"heart","at":"\#(at)","actor":"u\#(60 + (n / 50) % 1900)","step":"s\#(1 + n % 50)"}"# + "\n"
            }
            let result = try? adminTransport.perform(method: "POST", path: "/v1/events", query: [:], body: Data(batch.utf8))
            if result?.status == 200 { posted += 20 } else { refused += 20 }
            tick += 1
            Thread.sleep(forTimeInterval: max(0, 0.1 - Date().timeIntervalSince(tickStart)))
        }
        group.wait()
        clients.waitUntilExit()
        let summary = String(decoding: ready.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        if let done = summary.split(separator: "\n").first(where: { $0.hasPrefix("done") }) { print("  clients \(done)") }
        let rss = SyncBench.residentMB(of: server.processIdentifier)
        let p99 = percentile(latencies.values, 0.99)
        figures.line("50 long-polling clients, \(posted / seconds) events/s for \(seconds) s (\(latencies.values.count) mutations, \(latencies.errors) errors, \(refused) events refused)",
                     String(format: "p99 mutation latency %.1f ms (median %.1f ms); server RSS %.0f MB", p99, median(latencies.values), rss),
                     met: p99 <= 50 && latencies.errors == 0 && refused == 0, target: "no errors, p99 ≤ 50 ms")
        return figures.finish()
    }

    static func listeningPort(_ log: Pipe) throws -> Int {
        var text = ""
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            text += String(decoding: log.fileHandleForReading.availableData, as: UTF8.self)
            if let range = text.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                return Int(text[range].split(separator: ":").last!)!
            }
        }
        throw CommandError(description: "stepo serve did not start: \(text)")
    }

    static func residentMB(of pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kb / 1024
    }

    private func elapsed(_ start: DispatchTime) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9 }
    private func median(_ values: [Double]) -> Double { percentile(values, 0.5) }
    private func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))]
    }
}

private final class TimeBox: Sendable {
    private let value = Mutex<DispatchTime?>(nil)
    var end: DispatchTime? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

private final class LatencyLog: Sendable {
    private let log = Mutex<(values: [Double], errors: Int)>(([], 0))
    var values: [Double] { log.withLock { $0.values } }
    var errors: Int { log.withLock { $0.errors } }
    func add(_ ms: Double, ok: Bool) {
        log.withLock { if ok { $0.values.append(ms) } else { $0.errors += 1 } }
    }
}
