import BenchSupport
import Foundation
import Notifications
import Testing
import TestSupport
import Wire
@testable import API
@testable import Backend
@testable import Replica

/// A store restored from an older copy under replicas that synced past it (docs/operations.md):
/// the replicas learn it at their next pull, start again, and hold only what the store holds —
/// a block made after the restore reaches them like any other.
@Suite("A store restored from a backup")
struct RestoreTests {
    let folder = NSTemporaryDirectory() + "stepo-restore-" + UUID().uuidString
    let location: String

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        location = try TestEngine.location(folder, "restore.db")
    }

    func ingest(_ lines: String) throws {
        let store = try Store(location: location)
        for line in lines.split(separator: "\n") { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
    }

    func engine(_ replica: Replica) -> SyncEngine {
        let location = self.location
        return SyncEngine(replica: replica, transport: InProcessTransport(user: "alice") { Router(store: try Store(location: location)) })
    }

    /// The whole store copied aside, as an operator backs it up: SQLite's `VACUUM INTO`, or
    /// `pg_dump` of the database.
    func backUp() throws {
        if TestEngine.isPostgres {
            let dump = try Spawn.run([Self.pgTool("pg_dump"), "-Fc", "-f", folder + "/backup.dump", location])
            #expect(dump.status == 0, "\(dump.stderr)")
        } else {
            try Store(location: location).copy(to: folder + "/backup.db")
        }
    }

    /// The backup put back in the store's place, every connection to it closed first.
    func restore() throws {
        if TestEngine.isPostgres {
            // Into the database made anew (`--clean` cannot drop a partitioned table's keys).
            let name = try #require(URLComponents(string: location)?.path.dropFirst())
            let admin = location.replacingOccurrences(of: "/\(name)?", with: "/postgres?")
            for sql in ["DROP DATABASE \(name) WITH (FORCE)", "CREATE DATABASE \(name)"] {
                let done = try Spawn.run([Self.pgTool("psql"), "-q", "-d", admin, "-c", sql])
                #expect(done.status == 0, "\(done.stderr)")
            }
            let restored = try Spawn.run([Self.pgTool("pg_restore"), "-d", location, folder + "/backup.dump"])
            #expect(restored.status == 0, "\(restored.stderr)")
        } else {
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: location + suffix) }
            try FileManager.default.removeItem(atPath: location)
            try FileManager.default.copyItem(atPath: folder + "/backup.db", toPath: location)
        }
    }

    static func pgTool(_ name: String) throws -> String {
        try #require(ThrowawayCluster.installedBinaries) + "/" + name
    }

    static let world = """
    {"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"alice","username":"alice","name":"Alice Ames"}}
    {"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"bob","username":"bob","name":"Bob Brandt"}}
    {"id":"u3","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"carol","username":"carol","name":"Carol Chen"}}
    {"id":"j1","type":"journey","at":"2026-11-20T08:01:00Z","journey":{"id":"ja","owner":"alice","title":"Garden"}}
    {"id":"s1","type":"step","at":"2026-11-20T08:02:00Z","step":{"id":"sa","journey":"ja","caption":"tomatoes"}}
    {"id":"m1","type":"mediaReady","at":"2026-11-20T08:03:00Z","step":"sa"}
    {"id":"c1","type":"comment","at":"2026-11-20T09:00:00Z","actor":"bob","step":"sa","comment":{"id":"bc1","text":"BOBWORDS on your tomatoes"}}
    """

    /// Five changes after the backup: rows the restored store will not have.
    static let afterBackup = """
    {"id":"a1","type":"heart","at":"2026-11-20T09:10:00Z","actor":"carol","step":"sa"}
    {"id":"a2","type":"comment","at":"2026-11-20T09:11:00Z","actor":"carol","step":"sa","comment":{"id":"cc1","text":"LOSTWORDS one"}}
    {"id":"a3","type":"comment","at":"2026-11-20T09:12:00Z","actor":"carol","step":"sa","comment":{"id":"cc2","text":"LOSTWORDS two"}}
    {"id":"a4","type":"follow","at":"2026-11-20T09:13:00Z","actor":"carol","target":"alice"}
    {"id":"a5","type":"comment","at":"2026-11-20T09:14:00Z","actor":"bob","step":"sa","comment":{"id":"bc2","text":"LOSTWORDS from bob"}}
    """

    /// Bytes of the replica's files (the database and its log) that contain `marker`.
    func replicaHolds(_ marker: String, _ path: String) -> Bool {
        [path, path + "-wal"].contains { file in
            guard let data = FileManager.default.contents(atPath: file) else { return false }
            return data.range(of: Data(marker.utf8)) != nil
        }
    }

    @Test("restored under a replica that synced past it, then a block: the replica starts again and holds only what the store does")
    func restoredThenBlocked() throws {
        try ingest(Self.world)
        try backUp()
        try ingest(Self.afterBackup)
        let path = folder + "/alice-replica.db"
        let replica = try Replica(path: path)
        try engine(replica).sync()
        #expect(try replica.rows().count == 6)
        #expect(replicaHolds("BOBWORDS", path) && replicaHolds("LOSTWORDS", path))

        try restore()
        try ingest(#"{"id":"b1","type":"block","at":"2026-11-20T10:00:00Z","actor":"alice","target":"bob"}"#)
        let again = engine(replica)
        try again.sync()
        #expect(again.takeRefusals().contains { $0.contains("restored from an earlier copy") })

        // What the store holds for Alice now, and nothing else.
        let store = try Store(location: location)
        let alice = try #require(try store.user("alice"))
        let held = try store.inboxes.activityAsSeen(by: alice, limit: 100)
        #expect(try replica.rows().map(\.id).sorted() == held.map(\.id).sorted())
        #expect(try replica.rows().allSatisfy { row in held.contains { $0.id == row.id && $0.title == row.title } })
        #expect(!replicaHolds("LOSTWORDS", path), "the replica still holds rows the restored store lost")
        #expect(!replicaHolds("BOBWORDS", path), "the replica still holds the words of a person Alice blocked")
        #expect(try replica.version == (try store.sync.page(for: alice, after: 0, limit: 100).next))
    }

    @Test("restored, and written past the replica's version before it pulls: the marks still tell the histories apart")
    func restoredAndOvertaken() throws {
        try ingest(Self.world)
        try backUp()
        try ingest(Self.afterBackup)
        let replica = try Replica(path: folder + "/alice-replica.db")
        try engine(replica).sync()
        let synced = try replica.version
        try restore()
        // More changes than were lost: the store's versions pass the replica's again.
        var lines: [String] = []
        for i in 1...12 {
            lines.append(#"{"id":"n\#(i)","type":"heart","at":"2026-11-20T11:\#(String(format: "%02d", i)):00Z","actor":"\#(i % 2 == 0 ? "carol" : "bob")","step":"sa"}"#)
        }
        try ingest(lines.joined(separator: "\n"))
        let store = try Store(location: location)
        #expect(try store.currentVersion() > synced)
        try engine(replica).sync()
        let alice = try #require(try store.user("alice"))
        let held = try store.inboxes.activityAsSeen(by: alice, limit: 100)
        #expect(try replica.rows().map(\.id).sorted() == held.map(\.id).sorted())
        #expect(!replicaHolds("LOSTWORDS", folder + "/alice-replica.db"))
    }

    @Test("a change queued against rows the restored store lost is never applied to the rows that took their ids")
    func queuedChangeDropped() throws {
        try ingest(Self.world)
        try backUp()
        try ingest(Self.afterBackup)
        let replica = try Replica(path: folder + "/alice-replica.db")
        try engine(replica).sync()
        let lost = try #require(try replica.rows().first { $0.body.contains("LOSTWORDS two") })
        try replica.markRead(lost.id, at: 1)
        #expect(try replica.pendingCount() == 1)
        try restore()
        // New rows take the lost rows' ids.
        try ingest("""
        {"id":"r1","type":"comment","at":"2026-11-20T11:00:00Z","actor":"carol","step":"sa","comment":{"id":"rc1","text":"NEW one"}}
        {"id":"r2","type":"comment","at":"2026-11-20T11:01:00Z","actor":"carol","step":"sa","comment":{"id":"rc2","text":"NEW two"}}
        {"id":"r3","type":"comment","at":"2026-11-20T11:02:00Z","actor":"carol","step":"sa","comment":{"id":"rc3","text":"NEW three"}}
        """)
        let store = try Store(location: location)
        let alice = try #require(try store.user("alice"))
        let taken = try #require(try store.inboxes.row(lost.id, of: alice))
        #expect(taken.body.contains("NEW"), "the id was not reused: \(taken.body)")
        let sync = engine(replica)
        try sync.sync()
        #expect(try store.inboxes.row(lost.id, of: alice)?.readAt == nil, "a read queued for a lost row stamped the row that took its id")
        #expect(try replica.pendingCount() == 0)
        #expect(sync.takeRefusals().contains { $0.contains("dropped") })
        #expect(try replica.rows().map(\.id).sorted() == (try store.inboxes.activityAsSeen(by: alice, limit: 100)).map(\.id).sorted())
    }

    @Test("a replica the store has not gone back under is not reset: its mark matches, and new rows come as usual")
    func noFalseAlarm() throws {
        try ingest(Self.world)
        let replica = try Replica(path: folder + "/alice-replica.db")
        let sync = engine(replica)
        try sync.sync()
        let before = try replica.rows().map(\.id)
        try ingest(Self.afterBackup)
        #expect(try sync.sync() == 5)
        #expect(try replica.rows().count == before.count + 5)
        #expect(sync.takeRefusals().isEmpty)
    }

    @Test("the pull answers 409 historyDiverged for a mark that is not the store's, and 400 for one that cannot be a mark")
    func pullRefusesAnotherHistory() throws {
        try ingest(Self.world)
        let transport = InProcessTransport(user: "alice") { [location] in Router(store: try Store(location: location)) }
        let (status, body) = try transport.perform(method: "GET", path: "/v1/activity", query: [:], body: nil)
        #expect(status == 200)
        let page = try ActivityPage(data: body)
        let mark = try #require(page.history)
        let same = try transport.perform(method: "GET", path: "/v1/activity", query: ["after": String(page.next), "history": mark], body: nil)
        #expect(same.status == 200)
        let other = try transport.perform(method: "GET", path: "/v1/activity", query: ["after": String(page.next), "history": "1234abcd"], body: nil)
        #expect(other.status == 409)
        #expect(try JSON.parse(other.body)["error"]?["code"]?.string == "historyDiverged")
        for bad in ["", "xyz", "12345678901234567", "１２"] {
            let refused = try transport.perform(method: "GET", path: "/v1/activity", query: ["after": "3", "history": bad], body: nil)
            #expect(refused.status == 400, "history=\(bad)")
        }
    }
}
