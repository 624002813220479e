import BenchSupport
import CLI
@_spi(Bench) import Backend
import Foundation
import Notifications
import Replica

/// `stepo-bench engine`: the store's paths on uniform worlds and on skewed ones (one account
/// many follow, one person who gets a lot), each skewed workload at 1× and 4× so growth shows.
struct EngineBench {
    let folder: String
    /// One workload only: uniform, ingest (the uniform ingest alone), follows, hearts, fanout, counts, prune or quiet.
    let only: String?
    /// The sizes to run the skewed workloads at (1 and 4 unless told).
    let scales: [Int]
    /// Shrinks every workload (for a quick look; the targets are for 1).
    let fraction: Double
    /// CI's guard: the uniform ingest alone, short, judged by its ratio to the floor.
    let guarding: Bool
    /// `--regress savepoints|counters`: the guard run on a known regression it must catch.
    let regression: Regression?
    /// With `--guard`, `--only cpu` (the CPU pairs) or `--only instructions` (valgrind's counts).
    let guardOnly: String?

    enum Regression: String {
        /// The ingest as it ran before 2026-12-03: a savepoint per chunk, every event alone.
        case savepoints
        /// The trust budget's counters written one statement a row, unsummed.
        case counters

        var described: String {
            switch self {
            case .savepoints: "a savepoint per chunk, every event alone"
            case .counters: "the counters written a row at a time"
            }
        }
    }

    init(arguments: Arguments) throws {
        guarding = arguments.has("guard")
        if let regress = arguments["regress"] {
            guard let known = Regression(rawValue: regress) else {
                throw UsageError(description: "--regress takes savepoints (a savepoint per chunk, as before 2026-12-03) or counters (the trust budget's counters written a row at a time)")
            }
            regression = known
        } else {
            regression = nil
        }
        #if DEBUG
        if guarding { throw UsageError(description: "the guard's recorded ratio is the release build's: swift run -c release stepo-bench engine --guard") }
        #endif
        guardOnly = guarding ? arguments["only"] : nil
        if let guardOnly, !["cpu", "instructions", "memory"].contains(guardOnly) {
            throw UsageError(description: "with --guard, --only is memory (the peak of a real stepo ingest), cpu (the CPU pairs) or instructions (valgrind's counts)")
        }
        only = guarding ? "ingest" : arguments["only"]
        if let only, !["uniform", "ingest", "follows", "hearts", "batch", "fanout", "counts", "prune", "quiet"].contains(only) {
            throw UsageError(description: "--only is one of uniform, ingest, follows, hearts, batch, fanout, counts, prune, quiet")
        }
        scales = try BenchFigures.scales(arguments)
        fraction = try BenchFigures.fraction(arguments)
        folder = arguments["dir"] ?? NSTemporaryDirectory() + "stepo-bench-\(ProcessInfo.processInfo.processIdentifier)"
    }

    func run() throws -> Int32 {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // STEPO_BENCH_KEEP keeps the worlds and inputs, to run `stepo ingest` on them by hand.
        defer { if ProcessInfo.processInfo.environment["STEPO_BENCH_KEEP"] == nil { try? FileManager.default.removeItem(atPath: folder) } }
        print("stepo-bench engine · \(ProcessInfo.processInfo.activeProcessorCount) cores · SQLite \(BenchFigures.sqliteVersion)")
        #if DEBUG
        print("warning: a debug build; run `swift run -c release stepo-bench engine` for real figures")
        #endif
        var figures = BenchFigures()
        if only == nil || only == "uniform" {
            try uniformFanoutAndCounts(&figures)
            try uniformIngest(&figures)
        }
        if only == "ingest" { try uniformIngest(&figures) }
        if only == nil || only == "follows" { try skewedFollows(&figures) }
        if only == nil || only == "hearts" { try skewedHearts(&figures) }
        if only == nil || only == "batch" { try skewedBatch(&figures) }
        if only == nil || only == "fanout" { try skewedFanout(&figures) }
        if only == nil || only == "quiet" { try quietFanout(&figures) }
        if only == nil || only == "counts" { try skewedCounts(&figures) }
        if only == nil || only == "prune" { try prune(&figures) }
        return figures.finish()
    }

    private func sized(_ n: Int) -> Int { max(1, Int(Double(n) * fraction)) }

    private func freshStore(_ name: String) throws -> Store {
        let path = folder + "/\(name).db"
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        return try Store(path: path)
    }

    // MARK: Uniform

    /// One publish to 100,000 followers into a store of 1,000,000 rows; counts for a user
    /// with 10,000 rows who opens Activity now and then.
    private func uniformFanoutAndCounts(_ figures: inout BenchFigures) throws {
        let followers = sized(100_000)
        let store = try freshStore("uniform-fanout")
        let world = BulkWorld(store)
        let heavy = followers + 2
        let now = Timestamp.parse("2026-11-29T12:00:00Z")!
        try world.build {
            try world.addUsers(1...(followers + 100_001))
            try world.addFollowers(of: 1, 2...(followers + 1))
            // 1% blocked either way, 10% with journeys off, 1% inactive, 5,000 journey followers.
            try world.addBlocks(around: 1, modulus: 200, remainder: 0, theyBlock: false)
            try world.addBlocks(around: 1, modulus: 200, remainder: 100, theyBlock: true)
            try world.turnOff(.journeys, 2...(followers + 1), modulus: 10, remainder: 3)
            try world.deactivate(2...(followers + 1), modulus: 100, remainder: 7)
            try world.addJourneys(1, owners: 1)
            try world.addJourneyFollowers(journey: 1, amongFollowersOf: 1, modulus: max(1, followers / 5000), count: 5000)
            try world.addBackgroundRows(sized(990_000), recipients: (followers + 3)...(followers + 100_001), newest: now)
            try world.addRows(recipient: heavy, count: 10_000, newest: now, spacing: 60_000, actors: 3...1002, unseen: 50, readEvery: 3)
        }
        try world.warm()
        let (fanout, raw, rows) = try publishes(store, owner: "u1", journey: "j1", at: now, runs: 3)
        figures.report("uniform: one publish to \(followers) followers (\(rows) rows; store of 1,000,000+)",
                       seconds: fanout, target: 1.0, ratio: (raw, 2.0))
        figures.report(counts: try timeCounts(store, heavy), "uniform: counts, a user with 10,000 rows (50 unseen)", target: 1.0)
    }

    /// Publishes a new step of `journey` `runs` times (after a first step); the median time
    /// of a publish, of a raw INSERT … SELECT of the same rows, and the rows made.
    private func publishes(_ store: Store, owner: String, journey: String, at: Int64, runs: Int) throws -> (Double, Double, Int) {
        var times: [Double] = [], raws: [Double] = []
        var rows = 0
        for run in 0...runs {
            let step = "bench-\(run)"
            let t = at + Int64(run) * 60_000
            try store.apply(Event(id: "create-\(step)", at: t, body: .step(id: step, journey: journey,
                caption: "barre chords finally ring clean", photoUrl: "https://cdn.stepo.app/steps/\(step).jpg", isFinal: false)))
            let start = DispatchTime.now()
            let outcome = try store.apply(Event(id: "publish-\(step)", at: t + 1000, body: .mediaReady(step: step)))
            let elapsed = BenchFigures.seconds(since: start)
            guard run > 0 else { continue }  // the first publish is day one; time the new steps
            times.append(elapsed)
            rows = outcome.rowCount
            raws.append(try BulkWorld(store).timeRawInsert(sameRowsAs: outcome))
        }
        return (BenchFigures.median(times), BenchFigures.median(raws), rows)
    }

    private func timeCounts(_ store: Store, _ user: Int) throws -> [Double] {
        var times: [Double] = []
        for _ in 0..<2000 {
            let start = DispatchTime.now()
            _ = try store.inboxes.counts(for: user)
            times.append(BenchFigures.seconds(since: start))
        }
        return times
    }

    /// 100,000 hearts, shares and comments on 20,000 steps of 5,000 owners, from NDJSON.
    private func uniformIngest(_ figures: inout BenchFigures) throws {
        let events = guarding ? 50_000 : sized(100_000)
        let world = folder + "/ingest-world.db"
        do {
            let store = try Store(path: world)
            try UniformIngest.build(BulkWorld(store))
        }
        let path = folder + "/events-\(UUID().uuidString.prefix(8)).ndjson"
        try UniformIngest.write(events, to: path)
        if guarding { return try guardIngest(events, path: path, world: world, &figures) }
        var rates: [Double] = [], floors: [Double] = []
        var rows = 0
        for run in 1...3 {
            let copy = folder + "/ingest-run\(run).db"
            try FileManager.default.copyItem(atPath: world, toPath: copy)
            let (rate, report) = try EngineBench.ingest(path, into: try Store(path: copy))
            rates.append(rate)
            rows = report.rows
            // The floor, in the same run on the same world: as many rows, inserted raw.
            let floor = folder + "/ingest-floor\(run).db"
            try FileManager.default.copyItem(atPath: world, toPath: floor)
            let floorStore = try Store(path: floor)
            floors.append(try BulkWorld(floorStore).rawInsertRate(rows, recipients: 1...UniformIngest.owners,
                                                                  perTransaction: Ingestor(store: floorStore).batchSize))
        }
        let rate = BenchFigures.median(rates), floor = BenchFigures.median(floors), ratio = rate / max(floor, 1e-9)
        figures.report(rate: rate, "uniform: ingest of \(events) interactions (\(rows) rows), median of 3", target: 30_000)
        figures.line("  the floor: \(rows) rows of the same shape inserted raw, committed as the ingest commits",
                     String(format: "%.0f rows/s; ingest ÷ floor %.3f (wall clock)", floor, ratio), met: ratio >= 0.30,
                     target: "≥ 0.30 (issue 34)")
        try quietHoursIngest(path, events: events, world: world, &figures)
        try millionIngest(world: world, &figures)
    }

    /// The same stream with a phone for every owner, with and without quiet hours
    /// (22:00–07:00 in Paris: half the stream's times fall inside) for half of them, in turns.
    private func quietHoursIngest(_ path: String, events: Int, world: String, _ figures: inout BenchFigures) throws {
        var plain: [Double] = [], quiet: [Double] = []
        var held = 0
        for run in 1...3 {
            for withQuiet in [false, true] {
                let copy = folder + "/ingest-phones-\(withQuiet)-\(run).db"
                try FileManager.default.copyItem(atPath: world, toPath: copy)
                let store = try Store(path: copy)
                let bulk = BulkWorld(store)
                try bulk.addDevices(1...UniformIngest.owners, prefix: "phone-", registeredAt: 0)
                if withQuiet { try bulk.setQuietHours("22:00-07:00 Europe/Paris", 1...UniformIngest.owners, modulus: 2, remainder: 0) }
                let (rate, _) = try EngineBench.ingest(path, into: store)
                if withQuiet {
                    quiet.append(rate)
                    held = try store.connection.scalar("SELECT count(*) FROM outbox WHERE held = 1") ?? 0
                } else {
                    plain.append(rate)
                }
                try? FileManager.default.removeItem(atPath: copy)
            }
        }
        let ratio = BenchFigures.median(quiet) / max(BenchFigures.median(plain), 1e-9)
        figures.line("uniform, a phone per owner: ingest of \(events) interactions, median of 3",
                     String(format: "%.0f events/s without quiet hours, %.0f with them for half the owners (%d pushes held); with ÷ without %.2f",
                            BenchFigures.median(plain), BenchFigures.median(quiet), held, ratio),
                     met: ratio >= 0.95, target: "no slower: ≥ 0.95 (issue 39)")
    }

    /// The real `stepo ingest`, from process start, of ten times the stream (a million events
    /// at full size) into a copy of the world: its rate and its peak memory.
    private func millionIngest(world: String, _ figures: inout BenchFigures) throws {
        let events = sized(1_000_000)
        let path = folder + "/events-million.ndjson", copy = folder + "/ingest-million.db"
        try UniformIngest.write(events, to: path)
        try FileManager.default.copyItem(atPath: world, toPath: copy)
        // Its rows are printed, as a user's run prints them, and thrown away: 400 MB of them.
        let child = try Child.start([Bench.stepo, "ingest", "--db", copy, "--quiet", path], log: folder + "/ingest-million.log",
                                    output: "/dev/null")
        let (status, seconds, megabytes, _) = child.wait()
        guard status == 0 else { throw CommandError(description: "stepo ingest failed: " + (child.logTail() ?? "no output")) }
        if ProcessInfo.processInfo.environment["STEPO_BENCH_KEEP"] == nil { try? FileManager.default.removeItem(atPath: path) }
        figures.line("uniform: stepo ingest of \(events) interactions from process start",
                     String(format: "%.1f s, %.0f events/s, peak %.1f MB", seconds, Double(events) / seconds, megabytes),
                     met: events < 1_000_000 || megabytes <= EngineBench.memoryBound,
                     target: "peak ≤ 80 MB at 1,000,000 (issue 34)" + (events < 1_000_000 ? ", not judged at a fraction" : ""))
    }

    /// CI's guard: the ingest's CPU against its floor's, in turns (see `Guard`). A warm-up
    /// ingest first learns how many rows the floor inserts, and warms the files.
    private func guardIngest(_ events: Int, path: String, world: String, _ figures: inout BenchFigures) throws {
        // Counts need no quiet machine: only the CPU pairs wait for the load to settle.
        if guardOnly == nil || guardOnly == "memory" { try guardMemory(path: path, events: events, world: world, &figures) }
        if guardOnly == "memory" { return }
        if guardOnly != "instructions" { print("  " + Guard.settle()) }
        if guardOnly != "instructions" { try guardPairs(events, path: path, world: world, &figures) }
        if guardOnly != "cpu" { try countIngest(world: world, &figures) }
    }

    /// CI's memory judge: the real `stepo ingest` of the guard's stream from process start, its
    /// peak within issue 34's bound for a million events. A batch held whole (32,768 events
    /// with its facts), or the store's file mapped, passes the bound already at 50,000.
    private func guardMemory(path: String, events: Int, world: String, _ figures: inout BenchFigures) throws {
        let copy = try copy(world, "memory")
        let child = try Child.start([Bench.stepo, "ingest", "--db", copy, "--quiet", path], log: folder + "/ingest-memory.log",
                                    output: "/dev/null")
        let (status, seconds, megabytes, _) = child.wait()
        guard status == 0 else { throw CommandError(description: "stepo ingest failed: " + (child.logTail() ?? "no output")) }
        figures.line("  stepo ingest of \(events) interactions from process start, its peak memory",
                     String(format: "%.1f MB (%.1f s)", megabytes, seconds), met: megabytes <= EngineBench.memoryBound,
                     target: String(format: "≤ %.0f MB, the bound of a million (issue 34)", EngineBench.memoryBound))
    }

    /// The peak a `stepo ingest` of any length stays under (issue 34).
    static let memoryBound = 80.0

    private func guardPairs(_ events: Int, path: String, world: String, _ figures: inout BenchFigures) throws {
        let rows = try EngineBench.ingest(path, into: try Store(path: try copy(world, "warm-up")), regression: regression).1.rows
        var taken: [Guard.Pair] = []
        for run in 1...EngineBench.guardPairs {
            let workCopy = try copy(world, "run\(run)")
            // Each store opened and closed inside its measure: no thread of one is counted in the other.
            // Each side ends with everything checkpointed into its file: the checkpointer's timing
            // then adds or removes no work inside the window. The floor is taken three times and
            // averaged: one floor is a fifteenth of the ingest's time, and alone varied by a third
            // from pair to pair while the machine was busy.
            var floorCPU = 0.0, floorWall = 0.0
            for time in 1...EngineBench.floorsPerPair {
                let floorCopy = try copy(world, "floor\(run)-\(time)")
                let (_, cpu, wall) = try Guard.measure { () throws -> Double in
                    let store = try Store(path: floorCopy)
                    let rate = try BulkWorld(store).rawInsertRate(rows, recipients: 1...UniformIngest.owners, perTransaction: Ingestor(store: store).batchSize)
                    try store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    return rate
                }
                floorCPU += cpu / Double(EngineBench.floorsPerPair)
                floorWall += wall / Double(EngineBench.floorsPerPair)
            }
            let (_, workCPU, workWall) = try Guard.measure { () throws -> Double in
                let store = try Store(path: workCopy)
                let rate = try EngineBench.ingest(path, into: store, regression: regression).0
                try store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                return rate
            }
            taken.append(Guard.Pair(floorCPU: floorCPU, workCPU: workCPU, floorWall: floorWall, workWall: workWall))
        }
        let wall = BenchFigures.median(taken.map(\.workWall)), cpu = BenchFigures.median(taken.map(\.workCPU))
        print(String(format: "uniform: ingest of %d interactions (%d rows)%@: %.0f events/s wall clock, %.2f s CPU, median of %d",
                     events, rows, regression.map { ", \($0.described) (a known regression)" } ?? "", Double(events) / wall, cpu, EngineBench.guardPairs))
        Guard.judge(taken, "  ingest ÷ floor: \(rows) rows of the same shape inserted raw, committed as the ingest commits",
                    threshold: EngineBench.guardThreshold, recorded: EngineBench.recordedRatio, &figures)
    }

    /// The counted ingests: the uniform stream's first 2,000 and 8,000 events, each into a fresh
    /// copy of the world, and as many rows inserted raw as each wrote. Each figure is the
    /// difference between the two sizes, so opening the store and the world's pages fall out.
    static let countedEvents = (2_000, 8_000)
    /// Recorded on the development machine (docs/performance.md, "The guards", has the runs):
    /// the floor's instructions ÷ the ingest's (0.083–0.084 in four runs, one beside `yes`; a
    /// savepoint per chunk 0.066), and the applying thread's system calls an event with full
    /// batches and no checkpoint (`Ingestor.countable`): 0.728–0.730 in five, one beside `yes`.
    static let recordedInstructions = 0.084, recordedCalls = 0.729
    /// Where the judges fail: a rise of a fifth in the ingest's instructions or system calls.
    static var instructionThreshold: Double { recordedInstructions / 1.2 }
    static var callsThreshold: Double { recordedCalls * 1.2 }

    /// CI's second judge: the ingest's instructions and system calls, counted by valgrind in a
    /// process of their own (`--role ingest`), against the floor's (`--role floor`). The system
    /// calls are the applying thread's alone, its batches full and no checkpoint beside it: a
    /// clean clone's CI on another machine counted 2.504 an event where this one counts 1.445,
    /// because a checkpoint thread and batches that commit when the input runs dry follow the
    /// scheduler, and the count followed them.
    private func countIngest(world: String, _ figures: inout BenchFigures) throws {
        func counted(_ role: [String], _ name: String) throws -> (instructions: Double, calls: Instructions.SystemCalls, output: String) {
            let log = folder + "/valgrind-\(name).log", out = folder + "/\(name).out"
            let child = try Child.start(try Instructions.prefix(log: log) + [CommandLine.executablePath, "engine"] + role, log: out)
            let status = child.wait().status
            let output = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            guard status == 0 else { throw CommandError(description: "the counted run \(name) failed: \(output.suffix(300))") }
            // The applying thread's calls: the role runs it on the main thread.
            return (try Instructions.read(log), try Instructions.systemCalls(log, thread: 1), output)
        }
        var work: [(instructions: Double, calls: Instructions.SystemCalls)] = [], floor: [Double] = []
        for events in [EngineBench.countedEvents.0, EngineBench.countedEvents.1] {
            let file = folder + "/counted-\(events).ndjson"
            try UniformIngest.write(events, to: file)
            let ingest = try counted(["--role", "ingest", "--db", try copy(world, "counted-\(events)"), "--events", file]
                                     + (regression.map { ["--regress", $0.rawValue] } ?? []), "ingest-\(events)")
            guard let rows = ingest.output.split(separator: "\n").last(where: { $0.hasPrefix("rows ") }).flatMap({ Int($0.dropFirst(5)) }) else {
                throw CommandError(description: "the counted ingest said no rows: \(ingest.output.suffix(200))")
            }
            work.append((ingest.instructions, ingest.calls))
            floor.append(try counted(["--role", "floor", "--db", try copy(world, "counted-floor-\(events)"), "--rows", String(rows)],
                                     "floor-\(events)").instructions)
        }
        let events = Double(EngineBench.countedEvents.1 - EngineBench.countedEvents.0)
        let ingest = (work[1].instructions - work[0].instructions) / events, raw = (floor[1] - floor[0]) / events
        let calls = (work[1].calls.total - work[0].calls.total) / events
        let what = regression.map { ", \($0.described) (a known regression)" } ?? ""
        figures.line("  ingest ÷ floor in instructions (valgrind; \(EngineBench.countedEvents.0) and \(EngineBench.countedEvents.1) events, as many rows raw)\(what)",
                     String(format: "the floor %.0f ÷ the ingest %.0f an event = %.3f (recorded %.3f)", raw, ingest, raw / max(ingest, 1),
                            EngineBench.recordedInstructions),
                     met: raw / max(ingest, 1) >= EngineBench.instructionThreshold, target: String(format: "≥ %.3f", EngineBench.instructionThreshold))
        figures.line("  the ingest's system calls an event (valgrind)\(what)", String(format: "%.3f (recorded %.3f)", calls, EngineBench.recordedCalls),
                     met: calls <= EngineBench.callsThreshold, target: String(format: "≤ %.3f", EngineBench.callsThreshold))
        print("    an event's calls, by name: " + work[1].calls.beyond(work[0].calls, units: events))
        if calls > EngineBench.callsThreshold { print(Instructions.missedCounts) }
    }

    /// `stepo-bench engine --role ingest --db F --events E [--regress R]` and `--role floor --db F
    /// --rows N`: one side of the counted guard, in a process of its own to run under valgrind.
    static func role(_ arguments: Arguments) throws -> Int32 {
        guard let db = arguments["db"] else { throw UsageError(description: "--role takes --db FILE") }
        let store = try Store(path: db)
        switch arguments["role"] {
        case "ingest":
            guard let events = arguments["events"] else { throw UsageError(description: "--role ingest takes --events FILE") }
            let regression = try arguments["regress"].map {
                guard let known = Regression(rawValue: $0) else { throw UsageError(description: "--regress takes savepoints or counters") }
                return known
            }
            print("rows \(try ingest(events, into: store, regression: regression, countable: true).1.rows)")
        case "floor":
            guard let rows = try arguments.integer("rows"), rows > 0 else { throw UsageError(description: "--role floor takes --rows N") }
            _ = try BulkWorld(store).rawInsertRate(rows, recipients: 1...UniformIngest.owners, perTransaction: Ingestor(store: store).batchSize)
        default:
            throw UsageError(description: "--role is ingest or floor")
        }
        try store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return 0
    }

    // MARK: Retention

    /// `stepo prune`, from process start, of a store where one person holds most rows (spread
    /// evenly over ten days, each from an event of its own, as hearts come) and 2,000 others
    /// share a fifth as many over two weeks; the horizon two days back. The event log goes with
    /// the rows. At 1× and 4×, so a cost that grows faster than the rows shows.
    /// The floor: the same rows and events removed by two raw `DELETE`s on a copy of the same world.
    private func prune(_ figures: inout BenchFigures) throws {
        var rates: [Double] = []
        for scale in [1, 4] {
            let rows = sized(312_500) * scale  // at 4×, a million rows older than the horizon
            let path = folder + "/prune-\(scale).db"
            for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
            let newest = Timestamp.parse("2026-11-29T00:00:00Z")!
            do {
                let store = try Store(path: path)
                let bulk = BulkWorld(store)
                try bulk.build {
                    try bulk.addUsers(1...2_001)
                    try bulk.addJourneys(10, owners: 1)
                    try bulk.addSteps(100, journeys: 10, publishedAt: Timestamp.parse("2026-11-01T00:00:00Z")!)
                    try bulk.addRows(recipient: 1, count: rows, newest: newest, spacing: 864_000_000 / Int64(rows), actors: 2...2_001, steps: 100,
                                     unseen: rows / 2, readEvery: 7, eventEach: true)
                    try bulk.addBackgroundRows(rows / 5, recipients: 2...2_001, newest: newest)
                }
                // The seen mark the world wrote (over half the rows) is left uncounted: the prune
                // counts it first, a slice a transaction, and its longest transaction includes those.
            }
            let horizon = newest - 2 * 86_400_000
            let floorCopy = folder + "/prune-floor-\(scale).db"
            try FileManager.default.copyItem(atPath: path, toPath: floorCopy)
            let floor = try Store(path: floorCopy)
            let start = DispatchTime.now().uptimeNanoseconds
            var removedRaw = 0
            try floor.connection.transaction {
                try floor.connection.run("DELETE FROM notifications WHERE created_at < ? AND recipient = 1", horizon)
                removedRaw = floor.connection.changes
                try floor.connection.run("DELETE FROM events WHERE at < ? AND type = 'heart'", horizon)
            }
            let floorSeconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            try? FileManager.default.removeItem(atPath: floorCopy)

            let output = folder + "/prune-\(scale).out"
            let child = try Child.start([Bench.stepo, "prune", "--db", path, "--before", Timestamp.format(horizon), "--quiet"],
                                        log: folder + "/prune-\(scale).log", output: output)
            let (status, seconds, megabytes, _) = child.wait()
            guard status == 0 else { throw CommandError(description: "stepo prune failed: " + (child.logTail() ?? "no output")) }
            let said = String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self)
            let removed = said.range(of: #"removed \d+"#, options: .regularExpression).flatMap { Int(said[$0].dropFirst(8)) } ?? 0
            let longest = said.range(of: #"the longest [\d.]+"#, options: .regularExpression).flatMap { Double(said[$0].dropFirst(12)) } ?? -1
            let rate = Double(removed) / seconds
            figures.line("prune: stepo prune of \(removed) rows of \(rows + rows / 5) (\(scale)×), from process start",
                         String(format: "%.1f s, %.0f rows/s, peak %.1f MB, the longest transaction %.1f ms", seconds, rate, megabytes, longest),
                         met: megabytes <= 80 && longest <= 50, target: "peak ≤ 80 MB, no transaction over 50 ms (issue 39)")
            print("  stepo prune said: " + said.trimmingCharacters(in: .whitespacesAndNewlines))
            let floorRate = Double(removedRaw) / floorSeconds
            rates.append(rate / floorRate)
            print("  the floor: raw DELETEs of the popular person's \(removedRaw) old rows and their events, in one transaction: "
                  + String(format: "%.0f rows/s; prune ÷ floor %.3f", floorRate, rate / floorRate))
            try? FileManager.default.removeItem(atPath: path)
        }
        if rates.count == 2 {
            // Against the floor of the same size: a raw delete slows too as the indexes deepen.
            let ratio = rates[1] / rates[0]
            figures.line("prune: (prune ÷ floor) at 4× ÷ at 1×", String(format: "%.2f", ratio), met: ratio >= 0.7,
                         target: "≥ 0.70: the prune grows with the rows as a raw delete does, not faster (issue 39)")
        }
    }

    private func copy(_ world: String, _ name: String) throws -> String {
        let copy = folder + "/ingest-\(name).db"
        try FileManager.default.copyItem(atPath: world, toPath: copy)
        return copy
    }

    /// The guard's CPU ratio (50,000 interactions, release build) as recorded on the
    /// development machine: see docs/performance.md, "The guards", for the runs it is the
    /// median of and their spread (ten runs on 2026-12-05, hearts decided set at a time, five
    /// of them with `yes` on the other core: 0.083–0.101). Record it again when a change moves
    /// it for good.
    static let recordedRatio = 0.088
    /// Where the guard fails: a rise of a half (0.088 ÷ 1.5 = 0.059) crosses it, and a fresh
    /// machine's clean-clone CI, which measured 0.077 with a pair at 0.071, does not. A rise of a
    /// quarter is the counts' to catch (`countIngest`). The known regression, the ingest as it
    /// ran before 2026-12-03 (a savepoint per chunk, every event alone), measures 0.022.
    static let guardThreshold = 0.062
    /// Pairs the ingest's guard takes, and floors in each (their mean is the pair's floor).
    static let guardPairs = 7, floorsPerPair = 3

    // MARK: Skewed

    /// N people follow one account, through ingest: each follow asks whether this follower
    /// ever pinged the account, and the ceiling.
    private func skewedFollows(_ figures: inout BenchFigures) throws {
        var seconds: [Int: Double] = [:]
        for scale in scales {
            let n = sized(100_000) * scale
            let store = try freshStore("follows-\(scale)")
            let world = BulkWorld(store)
            try world.build { try world.addUsers(1...(n + 1)) }
            let start = Timestamp.parse("2026-11-20T00:00:00Z")!
            let path = try writeEvents(n) { i in
                #"{"id":"f\#(i)","type":"follow","at":"\#(Timestamp.format(start + Int64(i) * 1000))","actor":"u\#(i + 2)","target":"u1"}"#
            }
            let begin = DispatchTime.now()
            let (rate, report) = try EngineBench.ingest(path, into: store)
            seconds[scale] = BenchFigures.seconds(since: begin)
            figures.report(rate: rate, "skewed ×\(scale): \(n) follows of one account (\(report.rows) rows)", target: 20_000)
        }
        figures.growth("skewed: follows of one account", seconds, limit: 4.5)
    }

    /// A million hearts to one person over ten days: her rows pass the daily ceiling every day.
    private func skewedHearts(_ figures: inout BenchFigures) throws {
        var seconds: [Int: Double] = [:]
        for scale in scales {
            let hearts = sized(1_000_000) * scale
            let fans = 1000
            let steps = max(1, hearts / fans)
            let store = try freshStore("hearts-\(scale)")
            let world = BulkWorld(store)
            let start = Timestamp.parse("2026-11-10T00:00:00Z")!
            try world.build {
                try world.addUsers(1...(fans + 1))
                try world.addJourneys(1, owners: 1)
                try world.addSteps(steps, journeys: 1, publishedAt: start)
            }
            let spacing = max(1, 10 * Timestamp.day / Int64(hearts))
            let path = try writeEvents(hearts) { i in
                let at = Timestamp.format(start + Int64(i) * spacing)
                return #"{"id":"h\#(i)","type":"heart","at":"\#(at)","actor":"u\#(2 + i % fans)","step":"s\#(1 + i / fans)"}"#
            }
            let begin = DispatchTime.now()
            let (rate, report) = try EngineBench.ingest(path, into: store)
            seconds[scale] = BenchFigures.seconds(since: begin)
            figures.report(rate: rate, "skewed ×\(scale): \(hearts) hearts to one person over 10 days (\(report.rows) rows)",
                           target: 20_000)
        }
        figures.growth("skewed: hearts to one person", seconds, limit: 4.5)
    }

    /// 100,000 people heart one step within 30 minutes: each joins the one batch, which costs
    /// the same whatever its size. One row, one audible push.
    private func skewedBatch(_ figures: inout BenchFigures) throws {
        var seconds: [Int: Double] = [:]
        for scale in scales {
            let hearts = sized(100_000) * scale
            let store = try freshStore("batch-\(scale)")
            let world = BulkWorld(store)
            let start = Timestamp.parse("2026-11-10T00:00:00Z")!
            try world.build {
                try world.addUsers(1...(hearts + 1))
                try world.addJourneys(1, owners: 1)
                try world.addSteps(1, journeys: 1, publishedAt: start)
            }
            // Inside the batch's 30 minutes however many: the first at the step's publish.
            let spacing = Double(Batching.window - 1_000) / Double(hearts)
            let path = try writeEvents(hearts) { i in
                let at = Timestamp.format(start + 1_000 + Int64(Double(i) * spacing))
                return #"{"id":"b\#(i)","type":"heart","at":"\#(at)","actor":"u\#(2 + i)","step":"s1"}"#
            }
            let begin = DispatchTime.now()
            let (rate, report) = try EngineBench.ingest(path, into: store)
            seconds[scale] = BenchFigures.seconds(since: begin)
            let owner = try store.inboxes.activity(of: try store.user("u1")!, limit: 10)
            let audible = owner.filter { $0.push == .sent }.count
            figures.report(rate: rate, "skewed ×\(scale): \(hearts) hearts on one step in 30 minutes: \(owner.count) row, "
                           + "\(owner.first?.members ?? 0) people in it, \(audible) audible push, \(report.batchChanges) silent changes",
                           target: 20_000)
            if owner.count != 1 || audible != 1 || owner.first?.members != hearts {
                figures.fail("skewed ×\(scale): the batch should be one row with one audible push counting \(hearts) people")
            }
        }
        figures.growth("skewed: a batch of one step", seconds, limit: 4.5)
    }

    /// One publish to a million followers (10% turned journeys off, 10% have a custom follow
    /// alert on the owner: half all, half off).
    private func skewedFanout(_ figures: inout BenchFigures) throws {
        for scale in scales {
            let followers = sized(1_000_000) * scale
            let store = try freshStore("fanout-\(scale)")
            let world = BulkWorld(store)
            try world.build {
                try world.addUsers(1...(followers + 1))
                try world.addFollowers(of: 1, 2...(followers + 1))
                try world.turnOff(.journeys, 2...(followers + 1), modulus: 10, remainder: 3)
                try world.addAlerts(on: 1, 2...(followers + 1), modulus: 10, remainder: 5)
                try world.addJourneys(1, owners: 1)
            }
            try world.warm()
            let (fanout, raw, rows) = try publishes(store, owner: "u1", journey: "j1",
                                                   at: Timestamp.parse("2026-11-29T12:00:00Z")!, runs: 1)
            figures.report("skewed ×\(scale): one publish to \(followers) followers, 10% with an alert on the owner (\(rows) rows)",
                           seconds: fanout, target: 10.0 * Double(scale), ratio: (raw, 2.0))
            try publishThroughAPI(store, scale: scale, raw: raw, &figures)
            try? FileManager.default.removeItem(atPath: folder + "/fanout-\(scale).db")
        }
    }

    /// One publish to 100,000 followers (×4: 400,000), each with a phone, by the real `stepo
    /// ingest` from process start: with quiet hours (22:00–07:00 Paris, the publish at 23:30
    /// there) for half the followers and without, three runs of each in turns on copies of one
    /// world, compared by the process's CPU (wall clock beside it). The held half is written by
    /// one statement for their one setting.
    private func quietFanout(_ figures: inout BenchFigures) throws {
        var medians: [Int: Double] = [:]
        for scale in scales {
            let followers = sized(100_000) * scale
            let world = folder + "/quiet-world-\(scale).db"
            for suffix in ["", "-wal", "-shm"] { unlink(world + suffix) }
            do {
                let store = try Store(path: world)
                let bulk = BulkWorld(store)
                try bulk.build {
                    try bulk.addUsers(1...(followers + 1))
                    try bulk.addFollowers(of: 1, 2...(followers + 1))
                    try bulk.addJourneys(1, owners: 1)
                    try bulk.addDevices(2...(followers + 1), prefix: "phone-", registeredAt: 0)
                }
            }
            let at = Timestamp.parse("2026-11-29T22:30:00Z")!
            let path = folder + "/quiet-publish.ndjson"
            try (#"{"id":"q-step","type":"step","at":"\#(Timestamp.format(at))","step":{"id":"q-step","journey":"j1","caption":"barre chords finally ring clean","photoUrl":"https://cdn.stepo.app/steps/q.jpg"}}"# + "\n"
                 + #"{"id":"q-publish","type":"mediaReady","at":"\#(Timestamp.format(at + 1000))","step":"q-step"}"# + "\n")
                .write(toFile: path, atomically: true, encoding: .utf8)
            var plain: [Double] = [], quiet: [Double] = [], plainWall: [Double] = [], quietWall: [Double] = []
            var held = 0
            for run in 1...3 {
                for withQuiet in [false, true] {
                    let copy = folder + "/quiet-\(scale)-\(withQuiet)-\(run).db"
                    try FileManager.default.copyItem(atPath: world, toPath: copy)
                    if withQuiet {
                        try BulkWorld(try Store(path: copy)).setQuietHours("22:00-07:00 Europe/Paris", 2...(followers + 1), modulus: 2, remainder: 0)
                    }
                    let child = try Child.start([Bench.stepo, "ingest", "--db", copy, "--quiet", path], log: folder + "/quiet-ingest.log",
                                                output: "/dev/null")
                    let (status, seconds, _, cpu) = child.wait()
                    guard status == 0 else { throw CommandError(description: "stepo ingest failed: " + (child.logTail() ?? "no output")) }
                    if withQuiet {
                        quiet.append(cpu)
                        quietWall.append(seconds)
                        held = try Store(path: copy).connection.scalar("SELECT count(*) FROM outbox WHERE held = 1") ?? 0
                    } else {
                        plain.append(cpu)
                        plainWall.append(seconds)
                    }
                    for suffix in ["", "-wal", "-shm"] { unlink(copy + suffix) }
                }
            }
            let ratio = BenchFigures.median(plain) / max(BenchFigures.median(quiet), 1e-9)
            medians[scale] = BenchFigures.median(quiet)
            figures.line("quiet ×\(scale): one publish to \(followers) followers with phones, by stepo ingest from process start, median of 3",
                         String(format: "CPU %.2f s without quiet hours, %.2f s with them for half (%d pushes held); without ÷ with %.2f (wall clock %.2f s and %.2f s)",
                                BenchFigures.median(plain), BenchFigures.median(quiet), held, ratio,
                                BenchFigures.median(plainWall), BenchFigures.median(quietWall)),
                         met: ratio >= 0.95, target: "no slower: ≥ 0.95 (issue 39)")
            for suffix in ["", "-wal", "-shm"] { unlink(world + suffix) }
        }
        figures.growth("quiet: a publish with half its phones held", medians, limit: 4.5)
    }

    /// The same publish as a producer sends it: `stepo serve` on the store, one
    /// `POST /v1/events`, timed from the request to the whole answer; its size with it.
    private func publishThroughAPI(_ store: Store, scale: Int, raw: Double, _ figures: inout BenchFigures) throws {
        let admin = try store.tokens.create(for: nil, admin: true, at: 0)
        let (server, address) = try BenchWorld.serve(folder + "/fanout-\(scale).db", log: folder + "/fanout-serve-\(scale).log")
        defer { server.stop() }
        guard let base = URL(string: address) else { throw CommandError(description: "stepo serve said \(address)") }
        let producer = HTTPTransport(baseURL: base, token: admin)
        let step = "api-\(scale)"
        let at = Timestamp.parse("2026-11-29T14:00:00Z")!
        let create = #"{"id":"create-\#(step)","type":"step","at":"\#(Timestamp.format(at))","step":{"id":"\#(step)","journey":"j1","caption":"barre chords finally ring clean"}}"#
        let made = try producer.perform(method: "POST", path: "/v1/events", query: [:], body: Data(create.utf8), timeout: 60)
        guard made.status == 200 else { throw CommandError(description: "the step was refused: \(made.status)") }
        let publish = #"{"id":"publish-\#(step)","type":"mediaReady","at":"\#(Timestamp.format(at + 1000))","step":"\#(step)"}"#
        let start = DispatchTime.now()
        let answer = try producer.perform(method: "POST", path: "/v1/events", query: [:], body: Data(publish.utf8), timeout: 600)
        let seconds = BenchFigures.seconds(since: start)
        guard answer.status == 200, let report = try? JSON.parse(answer.body), let rows = report["rowsWritten"]?.int else {
            throw CommandError(description: "the publish was refused: \(answer.status) \(String(decoding: answer.body.prefix(300), as: UTF8.self))")
        }
        figures.report("  the same publish through stepo serve, one POST /v1/events (\(rows) rows)", seconds: seconds,
                       target: 10.0 * Double(scale), ratio: (raw, 2.0))
        figures.line("  its answer", "\(answer.body.count) bytes", met: answer.body.count <= 64 << 10, target: "≤ 64 KB")
    }

    /// Counts for a person with a million rows, most never seen.
    private func skewedCounts(_ figures: inout BenchFigures) throws {
        for scale in scales {
            let rows = sized(1_000_000) * scale
            let store = try freshStore("counts-\(scale)")
            let world = BulkWorld(store)
            try world.build {
                try world.addUsers(1...1001)
                try world.addJourneys(1, owners: 1)
                try world.addSteps(100, journeys: 1, publishedAt: 0)
                try world.addRows(recipient: 1, count: rows, newest: Timestamp.parse("2026-11-29T12:00:00Z")!, spacing: 1000,
                                  actors: 2...1001, steps: 100, unseen: rows / 2, readEvery: 1000)
            }
            figures.report(counts: try timeCounts(store, 1), "skewed ×\(scale): counts, a person with \(rows) rows", target: 1.0)
        }
    }

    // MARK: Helpers

    private func writeEvents(_ count: Int, _ line: (Int) -> String) throws -> String {
        let path = folder + "/events-\(UUID().uuidString.prefix(8)).ndjson"
        try BenchFiles.writeLines(count, to: path, line)
        return path
    }

    /// Ingests `path` into `store` as `stepo ingest` does (every row rendered as its JSON line).
    static func ingest(_ path: String, into store: Store, regression: Regression? = nil, countable: Bool = false) throws -> (Double, Ingestor.Report) {
        let descriptor = open(path, O_RDONLY)
        defer { close(descriptor) }
        var bytes = 0
        let profiling = ProcessInfo.processInfo.environment["STEPO_PROFILE_SQL"] != nil
        if profiling { store.startProfiling() }
        let begin = DispatchTime.now()
        var ingestor = Ingestor(store: store)
        ingestor.savepointEveryChunk = regression == .savepoints
        ingestor.setAtATime = regression != .savepoints
        ingestor.countable = countable
        store.countersPerRow = regression == .counters
        let report = try ingestor.ingest(LineReader(fileDescriptor: descriptor), onRow: { row in
            bytes += row.contractJSON.serialized.utf8.count
        }, onReject: { line, reason in
            print("  rejected line \(line): \(reason)")
        })
        let rate = Double(report.applied) / BenchFigures.seconds(since: begin)
        if profiling {
            for entry in store.profileReport() {
                print(String(format: "  %8.1f ms %7d× %@", entry.milliseconds, entry.runs,
                             String(entry.sql.replacingOccurrences(of: "\n", with: " ").prefix(110))))
            }
        }
        return (rate, report)
    }
}

/// A small deterministic generator (SplitMix64), so a bench's world is the same every run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
