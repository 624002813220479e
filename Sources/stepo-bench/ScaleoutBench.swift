import BenchSupport
import CLI
import Backend
import Foundation
import Notifications
import Postgres

/// `stepo-bench scaleout`: the store on PostgreSQL behind three `stepo serve` processes, all on
/// this machine with a throwaway cluster of the bench's own.
///
/// - load: `--clients` (500) users long-poll, spread over the three servers, while hearts on
///   their steps arrive at `--rate` (1,000) events a second for `--seconds` (60), each posted
///   to one of the servers: errors (0), each post's time to its answer (p99 ≤ 50 ms), and from
///   a post to the answer of its owner's parked long-poll (p99 ≤ 200 ms). At 4× the clients
///   are four times as many.
/// - fanout: one publish to `--followers` (250,000 × the scale: a million at 4×) followers,
///   against a raw INSERT … SELECT of as many rows in psql, in the same database (≤ 2×).
struct ScaleoutBench {
    let arguments: Arguments

    /// CI's guard on PostgreSQL's own account of the throughput run, per event: recorded from
    /// ten runs here and the threshold a quarter's rise crosses (docs/performance.md, "The guards").
    static let statements = (recorded: 14.4, threshold: 16.5), pages = (recorded: 117.0, threshold: 135.0)

    func run() throws -> Int32 {
        let scales = try BenchFigures.scales(arguments)
        let only = arguments["only"]
        guard only == nil || ["throughput", "load", "fanout", "ingest"].contains(only!) else {
            throw UsageError(description: "--only takes throughput, load, fanout or ingest")
        }
        print("stepo-bench scaleout · \(ProcessInfo.processInfo.activeProcessorCount) cores · one PostgreSQL, three servers")
        // --statements: which statements took PostgreSQL's time (pg_stat_statements), printed after the load.
        // --guard: CI's short run of the throughput alone, judged by what PostgreSQL did per event.
        let statements = arguments.has("statements") || arguments.has("guard")
        guard !arguments.has("guard") || only == "throughput" else {
            throw UsageError(description: "--guard goes with --only throughput")
        }
        let cluster = try ThrowawayCluster(settings: ["shared_buffers=512MB", "max_wal_size=8GB", "checkpoint_timeout=30min",
                                                      "work_mem=64MB", "maintenance_work_mem=256MB"]
                                           + (statements ? ["shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track_planning=on"] : []))
        print("PostgreSQL: a throwaway cluster in \(cluster.folder)")
        var figures = BenchFigures()
        if only == nil || only == "throughput" {
            let floor = try pgbench(cluster: cluster)
            var rates: [Int: Double] = [:]
            for scale in scales { rates[scale] = try throughput(scale: scale, cluster: cluster, floor: floor, figures: &figures) }
            growth("events/s", rates, &figures)
        }
        if only == nil || only == "load" {
            for scale in scales { try load(scale: scale, cluster: cluster, figures: &figures) }
        }
        if only == nil || only == "ingest" {
            var rates: [Int: Double] = [:]
            for scale in scales { rates[scale] = try ingest(scale: scale, cluster: cluster, figures: &figures) }
            growth("ingest", rates, &figures)
        }
        if only == nil || only == "fanout" {
            var times: [Int: (publish: Double, raw: Double)] = [:]
            for scale in scales { times[scale] = try fanout(scale: scale, cluster: cluster, figures: &figures) }
            // How the publish grew with its size, beside how the database's own insert grew:
            // past the page cache both grow faster than the rows, and only the difference is ours.
            if let small = times.keys.min(), let large = times.keys.max(), small != large,
               let a = times[small], let b = times[large] {
                let publish = b.publish / max(a.publish, 1e-9), raw = b.raw / max(a.raw, 1e-9)
                figures.line("  one publish: ×\(large) took \(String(format: "%.2f", publish))× the time of ×\(small); the raw insert \(String(format: "%.2f", raw))×",
                             String(format: "%.1f s → %.1f s", a.publish, b.publish), met: publish <= raw * 1.25,
                             target: "≤ 1.25 × the raw insert's growth")
            }
        }
        return figures.finish()
    }

    /// How the time an event takes grew from the smallest scale to the largest, from their
    /// events a second (the same work per event on a world four times the size: ≤ 4.5×).
    func growth(_ what: String, _ rates: [Int: Double], _ figures: inout BenchFigures) {
        guard let small = rates.keys.min(), let large = rates.keys.max(), small != large,
              let a = rates[small], let b = rates[large] else { return }
        figures.line("  \(what): ×\(large) against ×\(small), as time per event", String(format: "%.2f×", a / max(b, 1e-9)),
                     met: a / max(b, 1e-9) <= 4.5, target: "≤ 4.5×")
    }

    /// Starts PostgreSQL's account of the statements in the database at `url` afresh (the
    /// world's making is not the workload's); the connection reads it after.
    func countStatements(_ url: String) throws -> PGConnection {
        let account = try PGConnection(url)
        _ = try account.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        _ = try account.execute("SELECT pg_stat_statements_reset()")
        return account
    }

    // MARK: Load

    func load(scale: Int, cluster: ThrowawayCluster, figures: inout BenchFigures) throws {
        let clients = (try arguments.integer("clients") ?? 500) * scale
        let rate = try arguments.integer("rate") ?? 1000
        let seconds = try arguments.integer("seconds") ?? 60
        guard clients > 0, rate > 0, seconds > 0 else { throw UsageError(description: "--clients, --rate and --seconds must be positive") }
        let world = try LoadWorld(cluster: cluster, clients: clients, actors: 60_001, folder: cluster.folder + "/load-\(scale)")
        defer { world.stop() }
        let (url, servers, tokens, admin, actors) = (world.url, world.servers, world.tokens, world.admin, world.actors)
        let driver = LoadDriver(servers: servers.map(\.address), tokens: tokens, admin: admin, rate: rate,
                                seconds: Double(seconds), actors: actors, clients: clients)
        let result = try driver.run()
        let memory = servers.map { Child.highWaterMB($0.child.pid) }
        if arguments.has("statements") { try printStatements(url) }
        try loadFigures(result: result, memory: memory, clients: clients, rate: rate, seconds: seconds, scale: scale, figures: &figures)
    }

    /// PostgreSQL's own account of where its time went (pg_stat_statements), the costliest first.
    func printStatements(_ url: String) throws {
        do {
            let db = try PGConnection(url)
            try db.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            let sums = try db.execute("""
                SELECT round(sum(total_exec_time)::numeric, 0), round(sum(total_plan_time)::numeric, 0), sum(calls) FROM pg_stat_statements
                WHERE query NOT LIKE '%pg_stat_statements%'
                """)
            print("  pg in all: \(sums.string(0, 0) ?? "") ms executing, \(sums.string(0, 1) ?? "") ms planning, \(sums.string(0, 2) ?? "") statements")
            let top = try db.execute("""
                SELECT round(total_exec_time::numeric, 0), calls, round(mean_exec_time::numeric, 3),
                       round(shared_blks_hit::numeric / greatest(calls, 1), 1), left(regexp_replace(query, '\\s+', ' ', 'g'), 150),
                       round(total_plan_time::numeric, 0)
                FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 30
                """)
            for row in 0..<top.rowCount {
                print("  pg \(top.string(row, 0) ?? "") ms (+\(top.string(row, 5) ?? "") planning), \(top.string(row, 1) ?? "") calls, \(top.string(row, 2) ?? "") ms and \(top.string(row, 3) ?? "") pages each: \(top.string(row, 4) ?? "")")
            }
        }
    }

    func loadFigures(result: LoadDriver.Result, memory: [Double], clients: Int, rate: Int, seconds: Int, scale: Int,
                     figures: inout BenchFigures) throws {
        let label = "\(clients) long-polls on 3 servers, \(rate) events/s for \(seconds) s (\(scale)×)"
        print("\(label): \(result.posted) events posted, \(result.answers) long-poll answers, \(result.awaited) events still awaited at the end, \(result.reconnects) idle connections closed by a server and opened again; "
              + String(format: "servers' peak memory %.0f / %.0f / %.0f MB", memory[0], memory[1], memory[2]))
        let kinds = result.kinds.sorted { $0.value > $1.value }.map { "\($0.value) × \($0.key)" }.joined(separator: "; ")
        figures.line("  errors", "\(result.errors)" + (kinds.isEmpty ? "" : " (\(kinds))"), met: result.errors == 0, target: "0")
        let mutationP99 = BenchFigures.percentile(result.mutations, 0.99) * 1000
        figures.line("  an event's post, sent → answered",
                     String(format: "median %.1f ms, p99 %.1f ms, max %.1f ms", BenchFigures.median(result.mutations) * 1000, mutationP99,
                            (result.mutations.max() ?? 0) * 1000),
                     met: mutationP99 <= 50, target: "p99 ≤ 50 ms")
        let wakeP99 = BenchFigures.percentile(result.wakes, 0.99) * 1000
        figures.line("  an event's post → its owner's long-poll answers (on any of the servers)",
                     String(format: "median %.1f ms, p99 %.1f ms, max %.1f ms (%d events)", BenchFigures.median(result.wakes) * 1000, wakeP99,
                            (result.wakes.max() ?? 0) * 1000, result.wakes.count),
                     met: wakeP99 <= 200 && !result.wakes.isEmpty, target: "p99 ≤ 200 ms")
        let achieved = Double(result.posted - result.errors) / Double(seconds)
        // Issue 34: ≥ 950 accepted a second of the 1,000 offered (95%).
        figures.line("  events accepted per second", String(format: "%.0f", achieved), met: achieved >= Double(rate) * 0.95,
                     target: "≥ \(rate * 95 / 100) (95% of those offered, issue 34)")
    }

    // MARK: Throughput

    /// PostgreSQL's own figure on this cluster: pgbench's TPC-B (five statements a transaction)
    /// with as many clients as the throughput workload posts with, for as long. Returns its tps.
    func pgbench(cluster: ThrowawayCluster) throws -> Double {
        let clients = try arguments.integer("posters") ?? 16
        let seconds = try arguments.integer("pgbench-seconds") ?? 20
        let url = try cluster.createDatabase()
        let database = String(url.dropFirst("postgresql:///".count).prefix { $0 != "?" })
        let pgbench = cluster.binaries + "/pgbench"
        let common = ["-h", cluster.folder, "-U", "postgres"]
        let initialize = try Child.start([pgbench, "-i", "-q", "-s", "16"] + common + [database], log: cluster.folder + "/pgbench-init.log")
        guard initialize.wait().status == 0 else {
            throw CommandError(description: "pgbench -i failed: \((try? String(contentsOfFile: cluster.folder + "/pgbench-init.log", encoding: .utf8)) ?? "")")
        }
        let log = cluster.folder + "/pgbench.log"
        let run = try Child.start([pgbench, "-n", "-c", "\(clients)", "-j", "2", "-T", "\(seconds)"] + common + [database], log: log)
        _ = run.wait()
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard let range = text.range(of: #"tps = [0-9.]+"#, options: .regularExpression), let tps = Double(text[range].dropFirst(6)) else {
            throw CommandError(description: "pgbench printed no tps: \(text.suffix(400))")
        }
        let latency = text.range(of: #"latency average = [0-9.]+ ms"#, options: .regularExpression).map { String(text[$0]) } ?? ""
        print(String(format: "pgbench TPC-B on this cluster (scale 16, %d clients, 2 threads, %d s): %.0f tps, %@", clients, seconds, tps, latency))
        return tps
    }

    /// `--posters` (16) keep-alive clients post hearts and comments (alternately) through the
    /// three servers as fast as they are answered, for `--seconds`; the world has 500 × scale
    /// step owners. Returns the events accepted per second.
    func throughput(scale: Int, cluster: ThrowawayCluster, floor: Double, figures: inout BenchFigures) throws -> Double {
        let posters = try arguments.integer("posters") ?? 16
        let seconds = try arguments.integer("seconds") ?? 20
        let clients = 500 * scale
        let world = try LoadWorld(cluster: cluster, clients: clients, actors: 60_001, folder: cluster.folder + "/throughput-\(scale)")
        defer { world.stop() }
        let account = arguments.has("statements") || arguments.has("guard") ? try countStatements(world.url) : nil
        // wrk where it is installed (a C load generator: a few percent of the CPU); else the
        // bench's own one-thread client, whose CPU share is printed too.
        let driverName: String
        let driverCPU: Double
        var result = LoadDriver.Result()
        var median = 0.0, p99 = 0.0
        guard [nil, "wrk", "own"].contains(arguments["driver"]) else { throw UsageError(description: "--driver takes wrk or own") }
        if arguments["driver"] == "wrk" && WrkDriver.binary == nil { throw CommandError(description: "wrk is not installed (apt-get install wrk)") }
        if WrkDriver.binary != nil && arguments["driver"] != "own" {
            let wrk = WrkDriver(servers: world.servers.map(\.address), admin: world.admin, clients: clients, actors: world.actors,
                                connections: posters, seconds: seconds, folder: cluster.folder + "/wrk-\(scale)")
            let ran = try wrk.run()
            result.posted = ran.posted
            result.errors = ran.errors
            result.kinds = ran.kinds
            median = ran.median
            p99 = ran.p99
            driverName = "wrk (one process a server)"
            driverCPU = ran.cpu
        } else {
            let driver = LoadDriver(servers: world.servers.map(\.address), tokens: world.tokens, admin: world.admin, rate: 1,
                                    seconds: Double(seconds), actors: world.actors, clients: clients, posters: posters,
                                    closedLoop: true, polls: false)
            let before = Guard.threadCPU()
            result = try driver.run()
            median = BenchFigures.median(result.mutations) * 1000
            p99 = BenchFigures.percentile(result.mutations, 0.99) * 1000
            driverName = "the bench's own client (one thread)"
            driverCPU = Guard.threadCPU() - before
        }
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        print(String(format: "load generator: %@, %.1f CPU s of %.0f (%.0f%% of the machine) — target under 10%%", driverName, driverCPU,
                     Double(seconds) * cores, driverCPU / (Double(seconds) * cores) * 100))
        if arguments.has("statements") { try printStatements(world.url) }
        let accepted = Double(result.posted - result.errors) / Double(seconds)
        if let account, result.posted > 0 {
            // PostgreSQL's own account of the load, per event: statements, buffer pages, and
            // execution time. The first two do not depend on how busy the machine is: they are
            // what CI guards (a plan gone bad reads more pages; a lost batching, more statements).
            let totals = try account.execute("""
                SELECT sum(calls), sum(shared_blks_hit + shared_blks_read), sum(total_exec_time) FROM pg_stat_statements
                WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND query NOT LIKE '%pg_stat_statements%'
                """)
            let events = Double(result.posted - result.errors)
            let calls = Double(totals.string(0, 0) ?? "0") ?? 0, pages = Double(totals.string(0, 1) ?? "0") ?? 0
            let milliseconds = Double(totals.string(0, 2) ?? "0") ?? 0
            // Counts, not times — but with group commit, the statements a group shares (BEGIN,
            // COMMIT, NOTIFY, its inboxes locked in key order) fall with the group's size, which
            // moves with timing. Eight runs here (three with `yes` on the other core) measured
            // 14.3–14.4 statements and 117 pages an event; a quarter more (18.0, 146) crosses the
            // threshold, and so do groups of one (group commit lost: 16.8 statements).
            figures.line("  PostgreSQL per event: statements", String(format: "%.1f (recorded %.1f)", calls / events, ScaleoutBench.statements.recorded),
                         met: calls / events <= ScaleoutBench.statements.threshold, target: String(format: "≤ %.1f", ScaleoutBench.statements.threshold))
            figures.line("  PostgreSQL per event: buffer pages", String(format: "%.0f (recorded %.0f)", pages / events, ScaleoutBench.pages.recorded),
                         met: pages / events <= ScaleoutBench.pages.threshold, target: String(format: "≤ %.0f", ScaleoutBench.pages.threshold))
            print(String(format: "  PostgreSQL per event: %.3f ms of execution", milliseconds / events))
        }
        print("\(posters) clients posting hearts and comments through 3 servers for \(seconds) s (\(clients) step owners, \(scale)×): \(result.posted) events")
        let kinds = result.kinds.sorted { $0.value > $1.value }.map { "\($0.value) × \($0.key)" }.joined(separator: "; ")
        figures.line("  errors", "\(result.errors)" + (kinds.isEmpty ? "" : " (\(kinds))"), met: result.errors == 0, target: "0")
        // Issue 34's target is 0.60 (0.30 before it); CI's short run (on whatever machine runs
        // it, with a debug build) only refuses a collapse.
        let least = arguments.has("guard") ? 0.05 : 0.60
        figures.line("  events/s accepted, against pgbench's TPC-B tps", String(format: "%.0f/s (%.2f × %.0f tps); post median %.1f ms, p99 %.1f ms",
                                                                        accepted, accepted / floor, floor, median, p99),
                     met: accepted >= least * floor, target: "≥ \(least) × pgbench")
        return accepted
    }

    // MARK: Ingest

    /// `stepo ingest --database` of `--events` (250,000 × the scale: a million at 4×) uniform
    /// interactions (the engine bench's world and stream), from process start to exit, every
    /// row printed to /dev/null: events a second and peak memory.
    func ingest(scale: Int, cluster: ThrowawayCluster, figures: inout BenchFigures) throws -> Double {
        let events = (try arguments.integer("events") ?? 250_000) * scale
        let url = try cluster.createDatabase()
        try UniformIngest.build(BulkWorld(try Store(postgres: url)))
        let file = cluster.folder + "/uniform-\(scale).ndjson", log = cluster.folder + "/uniform-\(scale).log"
        try UniformIngest.write(events, to: file)
        if arguments.has("statements") { _ = try countStatements(url) }
        let child = try Child.start([Bench.stepo, "ingest", "--database", url, file], log: log, output: "/dev/null")
        let run = child.wait()
        let summary = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard run.status == 0 else {
            figures.fail("stepo ingest --database of \(events) events: \(summary.prefix(300))")
            return 0
        }
        if arguments.has("statements") { try printStatements(url) }
        let rate = Double(events) / run.seconds
        figures.line("  stepo ingest --database, \(events) uniform interactions (\(scale)×), start to exit",
                     String(format: "%.0f events/s (%.1f s; stepo's own CPU %.1f s)", rate, run.seconds, run.cpu),
                     met: rate >= 5_000, target: "≥ 5,000 events/s")
        figures.line("  its peak memory", String(format: "%.0f MB", run.megabytes), met: run.megabytes <= 60, target: "≤ 60 MB")
        return rate
    }

    // MARK: Fan-out

    /// One publish to the followers of u1, timed in the store; then the raw INSERT … SELECT of as
    /// many rows in psql; then the same publish on a second copy of the world as a user runs it:
    /// `stepo ingest --database` from process start to exit, every row printed (to /dev/null),
    /// with its peak memory. Returns the seconds of the first two.
    func fanout(scale: Int, cluster: ThrowawayCluster, figures: inout BenchFigures) throws -> (publish: Double, raw: Double) {
        let followers = (try arguments.integer("followers") ?? 250_000) * scale
        let step = #"{"id":"fan-step","type":"step","at":"2026-11-30T08:00:00Z","step":{"id":"big","journey":"j1","caption":"The summit, at last","photoUrl":"https://cdn.stepo.app/steps/big.jpg"}}"#
        let publish = #"{"id":"fan-publish","type":"mediaReady","at":"2026-11-30T08:01:00Z","step":"big"}"#
        /// u1, followed by everyone else, with a step made and not yet published.
        func world() throws -> (url: String, store: Store) {
            let url = try cluster.createDatabase()
            let store = try Store(postgres: url)
            let bulk = BulkWorld(store)
            try bulk.build {
                try bulk.addUsers(1...(followers + 1))
                try bulk.addFollowers(of: 1, 2...(followers + 1))
                try bulk.addJourneys(1, owners: 1)
            }
            _ = try Ingestor(store: store).apply(Data(step.utf8))
            return (url, store)
        }
        let (url, store) = try world()
        let start = DispatchTime.now()
        guard let outcome = try Ingestor(store: store).apply(Data(publish.utf8)) else { throw CommandError(description: "the publish did nothing") }
        let seconds = BenchFigures.seconds(since: start)
        guard outcome.rowCount == followers else {
            figures.fail("one publish to \(followers) followers made \(outcome.rowCount) rows")
            return (seconds, seconds)
        }
        // The same number of rows, written by hand: one INSERT … SELECT from the follows.
        let raw = """
            \\timing on
            INSERT INTO notifications(event, recipient, ord, kind, actor, step, journey, push, created_at, version)
            SELECT 1, f.follower, i.total + 2, 'newStep', 1, 1, 1, 'sent', 0, 1
            FROM follows AS f JOIN inboxes AS i ON i."user" = f.follower WHERE f.followee = 1;
            """
        let psql = Process()
        psql.executableURL = URL(fileURLWithPath: cluster.psql)
        psql.arguments = ["-X", "-q", "-d", url]
        let input = Pipe(), output = Pipe()
        psql.standardInput = input
        psql.standardOutput = output
        psql.standardError = output
        try psql.run()
        input.fileHandleForWriting.write(Data(raw.utf8))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        psql.waitUntilExit()
        guard let range = text.range(of: #"Time: [0-9.]+ ms"#, options: .regularExpression),
              let milliseconds = Double(text[range].dropFirst(6).dropLast(3)) else {
            throw CommandError(description: "psql did not time the raw insert: \(text.prefix(300))")
        }
        figures.report("one publish to \(followers) followers (\(scale)×)", seconds: seconds, target: Double(followers) / 1_000_000 * 60,
                       ratio: (milliseconds / 1000, 2))
        // As a user runs it, on a fresh copy of the world.
        let copy = try world().url
        let file = cluster.folder + "/publish.ndjson", log = cluster.folder + "/ingest-\(scale).log"
        try Data((publish + "\n").utf8).write(to: URL(fileURLWithPath: file))
        let child = try Child.start([Bench.stepo, "ingest", "--database", copy, file], log: log, output: "/dev/null")
        let run = child.wait()
        let summary = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        if run.status != 0 || !summary.contains("\(followers) rows created") {
            figures.fail("stepo ingest of the publish: \(summary.prefix(300))")
        } else {
            print(String(format: "  the same publish through `stepo ingest --database`, start to exit, every row printed: %.3f s, peak memory %.0f MB",
                         run.seconds, run.megabytes))
        }
        return (seconds, milliseconds / 1000)
    }
}

/// The world the load workloads post to: users 1 … clients each own a journey and a step, the
/// hearts and comments come from the next `actors` people (each (step, person) pair once: the
/// two counts share no factor); three `stepo serve` on the database.
final class LoadWorld {
    let url: String
    let tokens: [String]
    let admin: String
    let actors: Int
    private(set) var servers: [(child: Child, address: String)] = []

    init(cluster: ThrowawayCluster, clients: Int, actors: Int, folder: String) throws {
        self.actors = actors
        url = try cluster.createDatabase()
        let store = try Store(postgres: url)
        let bulk = BulkWorld(store)
        let published = Timestamp.parse("2026-11-01T00:00:00Z")!
        try bulk.build {
            try bulk.addUsers(1...(clients + actors))
            try bulk.addJourneys(clients, owners: clients)
            try bulk.addSteps(clients, journeys: clients, publishedAt: published)
        }
        var tokens: [String] = []
        for key in 1...clients {
            guard let user = try store.user(key: key) else { throw CommandError(description: "the world lost user \(key)") }
            tokens.append(try store.tokens.create(for: user, admin: false, at: 0))
        }
        self.tokens = tokens
        admin = try store.tokens.create(for: nil, admin: true, at: 0)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        do {
            for index in 0..<3 {
                let log = folder + "/serve-\(index).log"
                let child = try Child.start([Bench.stepo, "serve", "--database", url, "--port", "0", "--quiet",
                                             "--per-address", "0", "--threads", "2"], log: log)
                servers.append((child, try Child.address(in: log)))
            }
        } catch {
            stop()
            throw error
        }
    }

    func stop() {
        for server in servers { server.child.stop() }
        servers = []
    }
}

/// The load's clients, in one thread: every long-poll and every post is a keep-alive HTTP/1.1
/// connection on a `poll(2)` loop, so 2,000 clients cost the machine little beside the servers.
final class LoadDriver {
    let servers: [String]
    let tokens: [String]
    let admin: String
    let rate: Int
    let seconds: Double
    let actors: Int
    let clients: Int

    struct Result {
        var posted = 0
        var answers = 0
        var errors = 0
        /// What went wrong, by kind (a status and its error code, or a closed connection).
        var kinds: [String: Int] = [:]
        var awaited = 0
        var reconnects = 0

        mutating func error(_ kind: String) {
            errors += 1
            kinds[kind, default: 0] += 1
        }
        var mutations: [Double] = []
        var wakes: [Double] = []
    }

    /// Connections that post events.
    let posters: Int
    /// Each poster posts its next event as soon as the last is answered (no schedule), and an
    /// event's time counts from its sending; every other event is a comment instead of a heart.
    let closedLoop: Bool
    /// Whether each client holds a long-poll (without: the clients only own the steps).
    let polls: Bool

    init(servers: [String], tokens: [String], admin: String, rate: Int, seconds: Double, actors: Int, clients: Int,
         posters: Int = 48, closedLoop: Bool = false, polls: Bool = true) {
        self.servers = servers
        self.tokens = tokens
        self.admin = admin
        self.rate = rate
        self.seconds = seconds
        self.actors = actors
        self.clients = clients
        self.posters = posters
        self.closedLoop = closedLoop
        self.polls = polls
    }

    /// One connection: what it is for, its socket, what it has read.
    final class Link {
        enum Role { case poll(client: Int), post }
        let role: Role
        let server: Int
        var socket: Int32 = -1
        var input: [UInt8] = []
        var busy = false
        /// For a post: when it was due (its latency counts from then) and whose step it hearts.
        var due = 0.0
        var owner = 0

        init(role: Role, server: Int) {
            self.role = role
            self.server = server
        }
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    func connect(_ link: Link) throws {
        guard let colon = servers[link.server].lastIndex(of: ":"), let port = UInt16(servers[link.server][colon...].dropFirst()) else {
            throw CommandError(description: "bad server address \(servers[link.server])")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(fd); throw CommandError(description: "cannot connect to \(servers[link.server])") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        link.socket = fd
        link.input.removeAll(keepingCapacity: true)
    }

    func send(_ link: Link, _ request: String) {
        var bytes = Array(request.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { write(link.socket, $0.baseAddress! + offset, $0.count - offset) }
            if written <= 0 { break }
            offset += written
        }
        link.busy = true
    }

    /// The complete response at the front of `input`, if there is one: its status and body.
    func response(_ link: Link) -> (status: Int, body: [UInt8])? {
        let marker: [UInt8] = [13, 10, 13, 10]
        guard link.input.count >= 4 else { return nil }
        var end = -1
        for index in 0...(link.input.count - 4) where link.input[index] == 13 && Array(link.input[index..<index + 4]) == marker {
            end = index
            break
        }
        guard end >= 0 else { return nil }
        let head = String(decoding: link.input[0..<end], as: UTF8.self)
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        var length = 0
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
        }
        guard link.input.count >= end + 4 + length else { return nil }
        let body = Array(link.input[(end + 4)..<(end + 4 + length)])
        link.input.removeFirst(end + 4 + length)
        return (status, body)
    }

    func run() throws -> Result {
        var result = Result()
        var links: [Link] = []
        // Every client's long-poll, each on a server of its own turn.
        for client in 0..<(polls ? clients : 0) { links.append(Link(role: .poll(client: client), server: client % servers.count)) }
        for index in 0..<posters { links.append(Link(role: .post, server: index % servers.count)) }
        for link in links { try connect(link) }
        defer { for link in links { close(link.socket) } }
        var after = [Int](repeating: 0, count: clients)
        // Each client's posted events not yet brought by its long-poll: (sent at, version).
        var awaiting = [[(sent: Double, version: Int)]](repeating: [], count: clients)
        // What each client's long-polls answered lately: (at, next), to match a post answered late.
        var answered = [[(at: Double, next: Int)]](repeating: [], count: clients)
        func ask(_ link: Link, client: Int) {
            send(link, "GET /v1/activity?after=\(after[client])&wait=30&limit=50 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(tokens[client])\r\n\r\n")
        }
        for link in links { if case .poll(let client) = link.role { ask(link, client: client) } }
        // Let every long-poll park before the events start.
        Thread.sleep(forTimeInterval: 1)
        let start = LoadDriver.now()
        let end = start + seconds
        var scheduled = 0
        let base = Timestamp.parse("2026-12-01T00:00:00Z")!
        var descriptors = links.map { pollfd(fd: $0.socket, events: Int16(POLLIN), revents: 0) }
        var idlePosters = links.filter { if case .post = $0.role { return true } else { return false } }
        while true {
            let now = LoadDriver.now()
            // Posts due by now, on idle connections (a post waiting for one counts from when it was due).
            let due = closedLoop ? (now < end ? Int.max : scheduled)
                                 : (now < end ? Int((now - start) * Double(rate)) : Int(seconds) * rate)
            // The longest idle first, so every connection stays in use.
            while scheduled < due, !idlePosters.isEmpty {
                let link = idlePosters.removeFirst()
                let k = scheduled
                scheduled += 1
                let step = 1 + k % clients
                let owner = step % clients  // step i is in journey 1 + i % clients, owned by user 1 + i % clients (index i % clients)
                let actor = clients + 1 + k % actors
                let at = Timestamp.format(base + Int64(k))
                let body = closedLoop && k % 2 == 1
                    ? #"{"id":"c\#(k)","type":"comment","at":"\#(at)","actor":"u\#(actor)","step":"s\#(step)","comment":{"id":"bc\#(k)","text":"what a view"}}"#
                    : #"{"id":"h\#(k)","type":"heart","at":"\#(at)","actor":"u\#(actor)","step":"s\#(step)"}"#
                link.due = closedLoop ? now : start + Double(k) / Double(rate)
                link.owner = owner
                send(link, "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(admin)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            }
            if now >= end + 3 { break }  // the last answers have had their time
            let ready = poll(&descriptors, nfds_t(descriptors.count), 2)
            guard ready > 0 else { continue }
            for (index, descriptor) in descriptors.enumerated() where descriptor.revents != 0 {
                descriptors[index].revents = 0
                let link = links[index]
                var buffer = [UInt8](repeating: 0, count: 16_384)
                let count = read(link.socket, &buffer, buffer.count)
                if count <= 0 {
                    // The server closed it: count it, and open it again.
                    // Mid-request that is an error; an idle keep-alive connection the server closed
                    // (past its header deadline) is HTTP as usual: open another.
                    if link.busy {
                        if case .post = link.role { result.error("post connection closed mid-request") } else { result.error("long-poll connection closed mid-request") }
                    } else {
                        result.reconnects += 1
                    }
                    close(link.socket)
                    try connect(link)
                    descriptors[index].fd = link.socket
                    if case .poll(let client) = link.role { ask(link, client: client) } else { link.busy = false; idlePosters.append(link) }
                    continue
                }
                link.input.append(contentsOf: buffer[0..<count])
                while let (status, body) = response(link) {
                    let at = LoadDriver.now()
                    link.busy = false
                    let json = try? JSON.parse(Data(body))
                    switch link.role {
                    case .post:
                        result.posted += 1
                        result.mutations.append(at - link.due)
                        idlePosters.append(link)
                        guard status == 200, let version = json?["version"]?.int, version > 0 else {
                            result.error("post \(status) \(json?["error"]?["message"]?.string ?? json?["rejected"]?.array?.first?["reason"]?.string ?? "")")
                            continue
                        }
                        guard polls else { continue }
                        let client = link.owner
                        // Brought already by an answer that beat this post's own answer here?
                        if let early = answered[client].first(where: { $0.next >= version }) {
                            result.wakes.append(early.at - link.due)
                        } else {
                            awaiting[client].append((link.due, version))
                        }
                    case .poll(let client):
                        guard status == 200, let next = json?["next"]?.int else {
                            result.error("long-poll \(status) \(json?["error"]?["message"]?.string ?? "")")
                            ask(link, client: client)
                            continue
                        }
                        result.answers += 1
                        after[client] = next
                        answered[client].append((at, next))
                        if answered[client].count > 8 { answered[client].removeFirst() }
                        awaiting[client].removeAll { event in
                            guard event.version <= next else { return false }
                            result.wakes.append(at - event.sent)
                            return true
                        }
                        if at < end + 2 { ask(link, client: client) }
                    }
                }
            }
        }
        result.awaited = awaiting.map(\.count).reduce(0, +)
        return result
    }
}
