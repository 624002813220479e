import Foundation
import Notifications
import Wire
import Testing
import TestSupport
@_spi(Bench) @testable import Backend

/// One decision, however it is reached: a seeded random stream ingested three ways — in one
/// run with every cache the ingest keeps (the interaction cache, the ceiling's spans, the
/// prepared statements), with a fresh store for every event (nothing remembered between
/// events), and on PostgreSQL (no interaction cache, another engine's SQL) — must print the
/// same rows, refuse the same lines, and leave the same rows and suppressions. A few events
/// also go through a fresh `stepo ingest` process each.
///
/// `STEPO_DIFFERENTIAL_EVENTS` sets the stream's length (CI: 1,500; on demand: 10,000 or more).
@Suite("Differential: every way of ingesting decides the same", .enabled(if: !TestEngine.isPostgres))
struct DifferentialTests {
    static var events: Int { Int(ProcessInfo.processInfo.environment["STEPO_DIFFERENTIAL_EVENTS"] ?? "") ?? 1_500 }
    /// The long stream: one seed of the set-at-a-time and the eight posters' tests runs this
    /// many events (issue 34 asks for at least 10,000), the other seed `events`.
    static var longEvents: Int { Int(ProcessInfo.processInfo.environment["STEPO_DIFFERENTIAL_LONG"] ?? "") ?? 10_000 }
    /// Events that go through a process each (a process costs tens of milliseconds).
    static var processEvents: Int { Int(ProcessInfo.processInfo.environment["STEPO_DIFFERENTIAL_PROCESSES"] ?? "") ?? 40 }

    let folder = NSTemporaryDirectory() + "stepo-differential-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// What one way produced, made comparable: row ids renumbered in order of appearance,
    /// versions (engine-assigned) left out.
    struct Result: Equatable {
        var printed: [String] = []
        var rejected: [String] = []
        var rows: [String] = []
        var suppressions: [String] = []
    }

    /// Row ids renumbered by first appearance.
    final class Renumber {
        var ids: [Int: Int] = [:]
        func callAsFunction(_ id: Int) -> Int {
            if let known = ids[id] { return known }
            ids[id] = ids.count + 1
            return ids.count
        }
    }

    static func canonical(_ row: ActivityRow, _ renumber: Renumber, state: Bool) -> String {
        var row = row
        row.id = renumber(row.id)
        row.version = 0
        return (state ? row.json : row.contractJSON).serialized
    }

    /// A printed contract line with its row id renumbered.
    static func canonical(line: String, _ renumber: Renumber) -> String {
        guard case .object(let members)? = try? JSON.parse(Data(line.utf8)) else { return "not JSON: " + line }
        return JSON.object(members.map { key, value in
            key == "id" ? (key, .int(renumber(value.int ?? -1))) : (key, value)
        }).serialized
    }

    static func finalState(_ store: Store, _ stream: RandomStream, _ renumber: Renumber, into result: inout Result) throws {
        var last = 0
        while true {
            let rows = try store.inboxes.rows(afterRow: last, limit: 5_000)
            guard let end = rows.last?.id else { break }
            result.rows += rows.map { canonical($0, renumber, state: true) }
            last = end
        }
        // Every candidate left without a row, and why, as `stepo explain` reads it.
        var suppressions: [String] = []
        for id in Set(stream.lines.compactMap { (try? JSON.parse(Data($0.utf8)))?["id"]?.string }) {
            for candidate in try store.explanations.event(id)?.candidates ?? [] where candidate.rowId == nil {
                suppressions.append("\(id) \(candidate.recipient) \(candidate.kind.rawValue) \(candidate.reason?.rawValue ?? "-")")
            }
        }
        result.suppressions = suppressions.sorted()
    }

    /// The whole stream in one ingest: every cache at work.
    static func inOneRun(_ stream: RandomStream, at location: String, exactCeiling: Bool = false, setAtATime: Bool = true,
                         chunkLines: Int = 256) throws -> (Result, Store) {
        let store = try Store(location: location)
        store.ceilingFromCounters = !exactCeiling
        let renumber = Renumber()
        let printed = Box<[String]>([])
        let rejected = Box<[String]>([])
        var ingestor = Ingestor(store: store)
        ingestor.setAtATime = setAtATime
        ingestor.chunkLines = chunkLines
        ingestor.smallestSet = 1
        _ = try ingestor.ingest(LineReader(data: Data(stream.text.utf8)), onRow: { row in
            printed.value.append(canonical(row, renumber, state: false))
        }, onReject: { line, reason in rejected.value.append("\(line): \(reason)") })
        var result = Result(printed: printed.value, rejected: rejected.value)
        try finalState(store, stream, renumber, into: &result)
        return (result, store)
    }

    /// Each event on a store opened afresh for it: nothing remembered from one to the next.
    static func freshPerEvent(_ stream: RandomStream, at path: String) throws -> Result {
        let renumber = Renumber()
        var result = Result()
        for (index, line) in stream.lines.enumerated() {
            let store = try Store(path: path)
            let printed = Box<[String]>([])
            _ = try Ingestor(store: store).ingest(LineReader(data: Data((line + "\n").utf8)), onRow: { row in
                printed.value.append(canonical(row, renumber, state: false))
            }, onReject: { _, reason in result.rejected.append("\(index + 1): \(reason)") })
            result.printed += printed.value
        }
        try finalState(try Store(path: path), stream, renumber, into: &result)
        return result
    }

    static func compare(_ a: Result, _ b: Result, _ names: String) {
        for (what, left, right) in [("printed rows", a.printed, b.printed), ("refused lines", a.rejected, b.rejected),
                                    ("rows as they stand", a.rows, b.rows), ("suppressions", a.suppressions, b.suppressions)] {
            if left != right {
                let index = zip(left, right).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(left.count, right.count)
                Issue.record("""
                    \(names): the \(what) differ first at \(index) (of \(left.count) and \(right.count)):
                      \(index < left.count ? left[index] : "(none)")
                      \(index < right.count ? right[index] : "(none)")
                    """)
            }
        }
    }

    @Test("a seeded stream of every event type, late and out of order: one run with its caches, a fresh store per event, the exact ceiling test alone, and PostgreSQL agree",
          arguments: [101, 202] as [UInt64])
    func threeWays(seed: UInt64) throws {
        let stream = RandomStream(seed: seed, events: Self.events)
        let (cached, store) = try Self.inOneRun(stream, at: folder + "/cached.db")
        // The stream exercises the rules, not only the parser.
        #expect(cached.printed.count > Self.events / 4, "only \(cached.printed.count) rows")
        #expect(cached.rejected.count < Self.events / 3, "\(cached.rejected.count) lines refused")
        let reasons = Set(cached.suppressions.map { $0.split(separator: " ").last.map(String.init) ?? "" })
        #expect(reasons.isSuperset(of: ["self", "blocked", "actorInactive", "duplicate"]), "\(reasons)")
        #expect(cached.printed.contains { $0.contains("suppressed:dailyCeiling") }, "the ceiling was never reached")
        // The ceiling holds in the store as it stands.
        for person in ["p0", "p1", "p2"] { #expect(try CeilingTests.fullestDay(store, person) <= QuietRules.dailyCeiling) }

        print("differential, seed \(seed): \(stream.lines.count) lines, \(cached.printed.count) rows printed, "
              + "\(cached.rejected.count) refused, \(cached.suppressions.count) suppressions, "
              + "\(cached.printed.filter { $0.contains("suppressed:dailyCeiling") }.count) held by the ceiling")
        let fresh = try Self.freshPerEvent(stream, at: folder + "/fresh.db")
        Self.compare(cached, fresh, "one run vs a fresh store per event")
        // The ceiling settled by the per-day push counters, against the exact test alone.
        let (exact, _) = try Self.inOneRun(stream, at: folder + "/exact.db", exactCeiling: true)
        Self.compare(cached, exact, "push counters vs the exact ceiling test")

        if PostgresCluster.available {
            let url = try PostgresCluster.shared().newDatabase()
            let (onPostgres, _) = try Self.inOneRun(stream, at: url)
            Self.compare(cached, onPostgres, "SQLite vs PostgreSQL")
        }
    }

    /// Every table an event writes, as it stands: each row's columns (but the random nonce),
    /// sorted. Two SQLite stores that applied the same stream the same way hold the same keys.
    static func tables(_ store: Store) throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        for table in ["events", "notifications", "comments", "interactions", "steps", "batches", "batch_members", "inboxes",
                      "suppressions", "stats_rows", "stats_withheld", "push_load", "push_daily", "stats_delivery", "outbox",
                      "revocations", "follows", "blocks", "users"] {
            let columns = try store.db.query("SELECT name FROM pragma_table_info('\(table)')") { $0.string(0) }.filter { $0 != "nonce" }
            result[table] = try store.db.query("SELECT \(columns.joined(separator: ", ")) FROM \(table)") { row in
                (0..<columns.count).map { "\(row.value($0))" }.joined(separator: "|")
            }.sorted()
        }
        return result
    }

    @Test("hearts, shares and comments decided set at a time, in runs of 1, 7 and 512 lines, write what one event at a time writes, table for table",
          arguments: [404, 505] as [UInt64])
    func setAtATime(seed: UInt64) throws {
        let stream = RandomStream(seed: seed, events: seed == 404 ? Self.longEvents : Self.events)
        let (one, oneStore) = try Self.inOneRun(stream, at: folder + "/one-\(seed).db", setAtATime: false)
        let reference = try Self.tables(oneStore)
        #expect(reference["batch_members"]!.count > 20, "the stream made too few batches to test them")
        for lines in [1, 7, 512] {
            let (set, setStore) = try Self.inOneRun(stream, at: folder + "/set-\(seed)-\(lines).db", chunkLines: lines)
            Self.compare(one, set, "one event at a time vs set at a time in runs of \(lines)")
            let tables = try Self.tables(setStore)
            for (table, rows) in reference.sorted(by: { $0.key < $1.key }) where tables[table] != rows {
                let other = tables[table] ?? []
                let index = zip(rows, other).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(rows.count, other.count)
                Issue.record("""
                    runs of \(lines): table \(table) differs first at \(index) (of \(rows.count) and \(other.count)):
                      one at a time: \(index < rows.count ? rows[index] : "(none)")
                      set at a time: \(index < other.count ? other[index] : "(none)")
                    """)
            }
        }
        if PostgresCluster.available {
            let url = try PostgresCluster.shared().newDatabase()
            let (onPostgres, _) = try Self.inOneRun(stream, at: url, chunkLines: 512)
            Self.compare(one, onPostgres, "one event at a time on SQLite vs set at a time on PostgreSQL")
        }

        // The same stream's world first, then its hearts, shares and comments alone: one set
        // that lives across every chunk (no line of another type finishes it, and a line the
        // rules refuse does not send the batch to the guarded path), each chunk written while
        // the next is decided.
        let acts = stream.lines.filter { Self.isAct($0) }, world = stream.lines.filter { !Self.isAct($0) }
        func twoParts(_ location: String, setAtATime: Bool, chunkLines: Int) throws -> Store {
            let store = try Store(location: location)
            for part in [world, acts] {
                var ingestor = Ingestor(store: store)
                ingestor.setAtATime = setAtATime
                ingestor.chunkLines = chunkLines
                ingestor.smallestSet = 1
                _ = try ingestor.ingest(LineReader(data: Data((part.joined(separator: "\n") + "\n").utf8)), onRow: { _ in }, onReject: { _, _ in })
            }
            return store
        }
        let split = try Self.tables(try twoParts(folder + "/split-one-\(seed).db", setAtATime: false, chunkLines: 256))
        #expect(split["notifications"]!.count > acts.count / 2, "too few rows: \(split["notifications"]!.count)")
        for lines in [1, 7, 512] {
            let tables = try Self.tables(try twoParts(folder + "/split-set-\(seed)-\(lines).db", setAtATime: true, chunkLines: lines))
            for (table, rows) in split.sorted(by: { $0.key < $1.key }) where tables[table] != rows {
                let other = tables[table] ?? []
                let index = zip(rows, other).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(rows.count, other.count)
                Issue.record("""
                    the acts alone, runs of \(lines): table \(table) differs first at \(index) (of \(rows.count) and \(other.count)):
                      one at a time: \(index < rows.count ? rows[index] : "(none)")
                      set at a time: \(index < other.count ? other[index] : "(none)")
                    """)
            }
        }
    }

    static func isAct(_ line: String) -> Bool {
        line.contains(#""type":"heart""#) || line.contains(#""type":"share""#) || line.contains(#""type":"comment""#)
    }

    @Test("the first events of a stream, each through a stepo ingest process of its own, print what one run prints")
    func processPerEvent() throws {
        let stream = RandomStream(seed: 303, events: Self.processEvents)
        let (cached, _) = try Self.inOneRun(stream, at: folder + "/cached.db")
        let renumber = Renumber()
        var printed: [String] = []
        for line in stream.lines {
            let run = try Stepo.run(["ingest", "--db", folder + "/process.db", "--quiet", "-"], stdin: Data((line + "\n").utf8))
            #expect(run.status <= 1, "\(run.stderr)")
            printed += run.lines.map { Self.canonical(line: $0, renumber) }
        }
        Self.compare(cached, Result(printed: printed, rejected: cached.rejected, rows: cached.rows, suppressions: cached.suppressions),
                     "one run vs a process per event")
    }
}

/// A value a closure fills in (the ingest's callbacks run on its output thread, and have all
/// run when it returns).
final class Box<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
