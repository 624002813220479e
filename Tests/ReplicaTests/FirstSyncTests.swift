import BenchSupport
import Foundation
import TestSupport
import Notifications
import Testing
import Wire
@testable import API
@testable import Backend
@testable import Replica
import SQLite

/// A first sync of many pages fills empty tables and makes their indexes once at its end; its
/// pages leave the owner's step threads to the pull's last page. Both are ways of doing the
/// same work: what a replica holds afterwards is what one big page would have given it.
@Suite("A first sync in pages")
struct FirstSyncTests {
    let folder = NSTemporaryDirectory() + "stepo-firstsync-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// Every table of a replica, row by row as text, the bookkeeping left out (the client's
    /// id, the queue, the schema's record): what two replicas of one reader must share.
    static func dump(_ path: String) throws -> [String: [String]] {
        let db = try Database(path: path, readOnly: true)
        let tables = try db.query("""
            SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
            AND name NOT IN ('meta', 'pending', 'schema_migrations') ORDER BY name
            """) { $0.string(0) }
        var result: [String: [String]] = [:]
        for table in tables {
            // The marks' own numbering is local; what they say is not.
            let select = table == "marks" ? "SELECT version, kind, through_row, at FROM marks" : "SELECT * FROM \"\(table)\""
            result[table] = try db.query(select) { row in
                (0..<row.columnCount).map { row.isNull($0) ? "NULL" : row.string($0) }.joined(separator: "|")
            }.sorted()
        }
        for key in ["version", "afterRow", "unseen", "unread", "initialDone", "store"] {
            result["meta:" + key] = try db.query("SELECT value FROM meta WHERE key = ?", [key]) { $0.string(0) }
        }
        return result
    }

    /// Compares a replica synced in one page (`whole`) with one synced in many (`paged`), table
    /// by table, the comments apart (the paged one may hold fewer threads, never other
    /// comments): the comments of each, as dumped, for the caller's own checks.
    static func compare(whole: String, paged: String, _ label: String) throws -> (all: Set<String>, some: Set<String>) {
        var a = try dump(whole), b = try dump(paged)
        let (all, some) = (Set(a.removeValue(forKey: "comments") ?? []), Set(b.removeValue(forKey: "comments") ?? []))
        #expect(some.isSubset(of: all), "\(label): a comment only the paged replica holds")
        for table in Set(a.keys).union(b.keys).sorted() where a[table] != b[table] {
            let left = a[table] ?? [], right = b[table] ?? []
            Issue.record("\(label): \(table) differs (\(left.count) and \(right.count) entries): \(String(describing: zip(left, right).first { $0 != $1 }))")
        }
        return (all, some)
    }

    /// The indexes a replica has, as the schema makes them.
    static func indexes(_ path: String) throws -> [String] {
        let db = try Database(path: path, readOnly: true)
        return try db.query("SELECT name || ': ' || sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name") {
            $0.string(0)
        }
    }

    @Test("seeded worlds with blocks, bans, privacy and deletes: pages of 7 give each reader what one page gives, and every index",
          arguments: [35, 36, 37] as [UInt64])
    func pagesAgreeWithOnePage(seed: UInt64) throws {
        let location = try TestEngine.location(folder, "server-\(seed).db")
        let store = try Store(location: location)
        let stream = RandomStream(seed: seed, events: 1_500)
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(stream.text.utf8)), onRow: { _ in }, onReject: { _, _ in })
        let fresh = try FirstSyncTests.indexes(try Replica(path: folder + "/fresh.db").path)
        #expect(fresh.count >= 10)
        for reader in ["p0", "p1", "p2", "p5"] {
            guard let person = try store.user(reader), person.isActive else { continue }
            let whole = folder + "/\(seed)-\(reader)-whole.db", paged = folder + "/\(seed)-\(reader)-paged.db"
            for (path, size) in [(whole, 5_000), (paged, 7)] {
                let transport = InProcessTransport(user: reader) { Router(store: try Store(location: location)) }
                let engine = SyncEngine(replica: try Replica(path: path), transport: transport, pageSize: size)
                _ = try engine.sync()
            }
            #expect(try FirstSyncTests.dump(whole)["rows"]?.isEmpty == false, "\(reader) has no rows in seed \(seed)")
            // The threads: a pull of many pages brings the comments its rows are about, and the
            // threads of the steps its last page quotes; one page, the threads of every step.
            let (all, some) = try FirstSyncTests.compare(whole: whole, paged: paged, "\(reader), seed \(seed)")
            let quoted = Set(try Replica(path: paged).db.query("SELECT DISTINCT comment FROM rows WHERE comment IS NOT NULL") { $0.string(0) })
            let held = Set(some.map { String($0.prefix { $0 != "|" }) })
            let stillThere = Set(all.map { String($0.prefix { $0 != "|" }) })
            // A row's comment deleted since is given up with the row's words; a thread keeps it in
            // its place without them, so only a thread brings it back.
            let missing = quoted.intersection(stillThere).subtracting(held)
            let placeholders = Set(all.filter { $0.hasSuffix("|1") && $0.split(separator: "|", omittingEmptySubsequences: false)[3] == "NULL" }
                .map { String($0.prefix { $0 != "|" }) })
            #expect(missing.isSubset(of: placeholders), "\(reader), seed \(seed): the comments of rows \(missing.subtracting(placeholders).sorted().prefix(5)) are missing")
            #expect(try FirstSyncTests.indexes(paged) == fresh, "\(reader), seed \(seed): the paged replica's indexes")
            #expect(try Replica(path: paged).meta("deferredIndexes") == nil)
        }
    }

    @Test("a first sync of many pages makes its indexes once, at its end; later pulls, in pages too, never drop them")
    func indexesWaitForTheEnd() throws {
        let location = try TestEngine.location(folder, "server.db")
        let store = try Store(location: location)
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(RandomStream(seed: 9, events: 600).text.utf8)),
                                              onRow: { _ in }, onReject: { _, _ in })
        let fresh = try FirstSyncTests.indexes(try Replica(path: folder + "/fresh.db").path)
        // Between the pages: no secondary index on the tables being filled, and how to make them kept.
        final class Watching: Transport, @unchecked Sendable {
            let inner: Transport
            let path: String
            var between: [Int] = []
            var serverName: String { inner.serverName }
            init(_ inner: Transport, _ path: String) { self.inner = inner; self.path = path }
            func perform(method: String, path route: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data) {
                if route == "/v1/activity", let db = try? Database(path: path, readOnly: true) {
                    between.append((try? db.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")) ?? -1)
                }
                return try inner.perform(method: method, path: route, query: query, body: body)
            }
        }
        let path = folder + "/p0.db"
        let watching = Watching(InProcessTransport(user: "p0") { Router(store: try Store(location: location)) }, path)
        let engine = SyncEngine(replica: try Replica(path: path), transport: watching, pageSize: 5)
        _ = try engine.sync()
        #expect(watching.between.count > 3)
        // The fetcher asks a page ahead of the writer: once the first page is in, the indexes
        // stay away until the last.
        let waiting = watching.between.drop { $0 == fresh.count }
        #expect(waiting.count > 2 && waiting.allSatisfy { $0 < fresh.count }, "\(watching.between)")
        #expect(try FirstSyncTests.indexes(path) == fresh)
        // Later pulls (a change after the first sync, in pages too) keep them.
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(RandomStream(seed: 10, events: 300, start: "2026-11-09T08:00:00Z").text.utf8)),
                                onRow: { _ in }, onReject: { _, _ in })
        let later = Watching(InProcessTransport(user: "p0") { Router(store: try Store(location: location)) }, path)
        _ = try SyncEngine(replica: try Replica(path: path), transport: later, pageSize: 5).sync()
        #expect(!later.between.isEmpty && later.between.allSatisfy { $0 == fresh.count }, "\(later.between)")
    }

    @Test("killed with its indexes waiting: the next open makes them, and the pull ends where one whole sync would")
    func killedWithIndexesWaiting() throws {
        let location = try TestEngine.location(folder, "server.db")
        let store = try Store(location: location)
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(RandomStream(seed: 11, events: 900).text.utf8)),
                                              onRow: { _ in }, onReject: { _, _ in })
        let fresh = try FirstSyncTests.indexes(try Replica(path: folder + "/fresh.db").path)
        let path = folder + "/p0.db"
        // A pull stopped after three pages, as a kill leaves it: each page committed with its version.
        final class Stopping: Transport, @unchecked Sendable {
            let inner: Transport
            var left: Int
            var serverName: String { inner.serverName }
            init(_ inner: Transport, pages: Int) { self.inner = inner; left = pages }
            func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data) {
                if path == "/v1/activity" {
                    left -= 1
                    if left < 0 { throw Unreachable(description: "pulled the plug") }
                }
                return try inner.perform(method: method, path: path, query: query, body: body)
            }
        }
        do {
            let replica = try Replica(path: path)
            let stopping = Stopping(InProcessTransport(user: "p0") { Router(store: try Store(location: location)) }, pages: 3)
            #expect(throws: Unreachable.self) { try SyncEngine(replica: replica, transport: stopping, pageSize: 4).sync() }
            #expect(try replica.meta("deferredIndexes") != nil)
            #expect(try replica.version > 0)
            #expect(try FirstSyncTests.indexes(path).count < fresh.count)
        }
        // Opened again (a new process would): its indexes are made before anything reads it.
        let reopened = try Replica(path: path)
        #expect(try FirstSyncTests.indexes(path) == fresh)
        #expect(try reopened.meta("deferredIndexes") == nil)
        _ = try SyncEngine(replica: reopened, transport: InProcessTransport(user: "p0") { Router(store: try Store(location: location)) },
                           pageSize: 4).sync()
        let whole = folder + "/whole.db"
        _ = try SyncEngine(replica: try Replica(path: whole), transport: InProcessTransport(user: "p0") {
            Router(store: try Store(location: location))
        }, pageSize: 5_000).sync()
        _ = try FirstSyncTests.compare(whole: whole, paged: path, "after the resumed pull")
    }

    @Test("the real stepo sync killed -9 mid first pull, again and again: it restarts on the same file and ends with every row and index")
    func killedWithSignalNine() throws {
        let db = folder + "/store.db"
        // Enough rows for a pull of several pages of 5,000 that takes a while.
        let bulk = 40_000
        let store = try BulkWorld.popularReader(db, rows: bulk, people: 200, steps: 40)
        let token = try store.tokens.create(for: try store.user("u1"), admin: false, at: 0)
        let (server, url) = try Stepo.serve(db, log: folder + "/serve.log")
        defer { server.stop() }
        let state = ["XDG_STATE_HOME": folder + "/state"]
        var killed = 0
        for delay in [0.15, 0.3, 0.45, 0.6] {
            let run = try Spawn.start([Stepo.binary, "sync", "--server", url, "--token", token], log: folder + "/sync.log", environment: state)
            usleep(useconds_t(delay * 1_000_000))
            kill(run.pid, SIGKILL)
            if run.wait(timeout: 30) == 128 + SIGKILL { killed += 1 }
        }
        #expect(killed > 0, "every sync finished before its kill: the world is too small to test this")
        let last = try Stepo.run(["sync", "--server", url, "--token", token], environment: state)
        #expect(last.status == 0, "\(last.stderr)")
        let path = try FileManager.default.contentsOfDirectory(atPath: folder + "/state/stepo/replicas").first { $0.hasSuffix(".db") }
        let replica = try Replica(path: folder + "/state/stepo/replicas/" + (try #require(path)))
        #expect(try replica.rowCount == bulk)
        #expect(try FirstSyncTests.indexes(replica.path) == (try FirstSyncTests.indexes(try Replica(path: folder + "/fresh.db").path)))
        #expect(try replica.firstSyncDone)
    }
}
