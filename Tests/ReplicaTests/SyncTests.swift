import Foundation
import TestSupport
import Notifications
import Wire
import SQLite
import Testing
@testable import API
@testable import Backend
@testable import Replica
@testable import Server

@Suite("Replica and sync")
struct SyncTests {
    let folder = NSTemporaryDirectory() + "stepo-sync-" + UUID().uuidString
    let storePath: String
    let store: Store

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        storePath = try TestEngine.location(folder, "server.db")
        store = try Store(location: storePath)
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("sample-data/events.ndjson")
        let text = try String(contentsOf: sample, encoding: .utf8)
        for line in text.split(separator: "\n") { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
    }

    func replica(_ name: String) throws -> Replica { try Replica(path: "\(folder)/\(name).db") }

    func freshCounts(_ user: String) throws -> (Int, Int) {
        let counts = try store.recount(for: try #require(try store.user(user)).key)
        return (counts.unseen, counts.unread)
    }

    @Test("a first sync in-process copies every row and the server's counts")
    func initialSync() throws {
        let local = try replica("a")
        let engine = SyncEngine(replica: local, transport: InProcessTransport(router: Router(store: try Store(location: storePath)), user: "chaucao"))
        #expect(try engine.sync() == 106)
        #expect(try local.rowCount == 106)
        #expect(try local.counts == ServerCounts(unseen: 106, unread: 106, stale: false))
        #expect(try engine.sync() == 0)
        if case .synced = engine.status {} else { Issue.record("status \(engine.status)") }
        // The destinations open offline: the step, its comments, the people.
        #expect(try local.step("ridge-3")?.caption == "Trail run before work — up the ridge and back.")
        #expect(try local.comments(ofStep: "ridge-3").contains { $0.text == "so proud of this one" })
        #expect(try local.person("linh")?.name == "Linh Trần")
        #expect(try local.journey("guitar")?.title == "Learn to play guitar")
    }

    @Test("a queued change the local copy cannot read back is dropped and said, and the rest still go: the counts do not stay stale")
    func unreadableQueuedChange() throws {
        let local = try replica("q")
        let engine = SyncEngine(replica: local, transport: InProcessTransport(router: Router(store: try Store(location: storePath)), user: "chaucao"))
        try engine.sync()
        let row = try #require(try local.rows(limit: 1).first)
        try local.markRead(row.id, at: 1_000)
        // Another hand damages the queue: a second change that is no longer a mutation.
        try Database(path: folder + "/q.db").run("INSERT INTO pending(seq, mutation) VALUES (99, 'not a mutation')")
        #expect(try local.pendingCount() == 2)
        try engine.sync()
        #expect(try local.pendingCount() == 0 && !(try local.counts.stale))
        #expect(try store.inboxes.row(row.id)?.readAt != nil)
        #expect(engine.takeRefusals() == ["A change waiting to be sent could not be read back from the local copy, and was dropped"])
    }

    @Test("two clients of one user converge, and every count agrees with a server COUNT")
    func twoClients() throws {
        let a = try replica("a"), b = try replica("b")
        let syncA = SyncEngine(replica: a, transport: InProcessTransport(router: Router(store: try Store(location: storePath)), user: "chaucao"))
        let syncB = SyncEngine(replica: b, transport: InProcessTransport(router: Router(store: try Store(location: storePath)), user: "chaucao"))
        try syncA.sync()
        try syncB.sync()
        let target = try #require(try a.rows().first)
        try a.markRead(target.id, at: 1_000)
        try a.markAllSeen(at: 2_000)
        #expect(try a.counts.stale)
        try syncA.sync()
        try syncB.sync()
        let (unseen, unread) = try freshCounts("chaucao")
        #expect(try a.counts == ServerCounts(unseen: unseen, unread: unread, stale: false))
        #expect(try b.counts == a.counts)
        #expect(unseen == 0 && unread == 105)
        // The server stamps with its own clock (a client's clock is not trusted).
        let inB = try #require(try b.rows().first { $0.id == target.id })
        #expect(inB.readAt != nil)
        #expect(try b.rows().allSatisfy { $0.seenAt != nil })
    }

    @Test("a sync with nothing new asks with the page's tag and the server answers 304; after a change it reads the page again")
    func notModifiedOverHTTP() throws {
        let server = try HTTPServer(databasePath: storePath, port: 0, threads: 2)
        defer { server.stop() }
        let token = try store.tokens.create(for: try store.user("chaucao"), admin: false, at: 0)
        let transport = HTTPTransport(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, token: token)
        let engine = SyncEngine(replica: try replica("tagged"), transport: transport)
        #expect(try engine.sync() == 106)
        #expect(transport.notModified == 0)
        // Caught up: the next sync asks for the same (empty) page, and is told it stands.
        #expect(try engine.sync() == 0)
        let before = transport.notModified
        #expect(try engine.sync() == 0)
        #expect(transport.notModified == before + 1, "the repeated page was read again")
        // Anything new: the page is read afresh, and the row arrives.
        _ = try Ingestor(store: store).apply(Data(#"{"id":"late-comment","type":"comment","at":"2026-11-29T12:00:00Z","actor":"maya","step":"ridge-1","comment":{"id":"late-c","text":"so good"}}"#.utf8))
        let now = transport.notModified
        #expect(try engine.sync() >= 1)
        #expect(transport.notModified == now)
    }

    @Test("offline, stamps wait in the queue; when the server is back they are sent once and counts agree")
    func offlineQueue() throws {
        var server: HTTPServer? = try HTTPServer(databasePath: storePath, port: 0, threads: 2)
        let port = server!.port
        let token = try store.tokens.create(for: try store.user("chaucao"), admin: false, at: 0)
        let local = try replica("http")
        let engine = SyncEngine(replica: local, transport: HTTPTransport(baseURL: URL(string: "http://127.0.0.1:\(port)")!, token: token))
        #expect(try engine.sync() == 106)
        server?.stop()
        server = nil
        let first = try #require(try local.rows().first)
        try local.markRead(first.id, at: 5_000)
        try local.markAllSeen(at: 6_000)
        #expect(throws: Unreachable.self) { try engine.sync() }
        if case .offline = engine.status {} else { Issue.record("status \(engine.status)") }
        #expect(try local.counts.stale)
        #expect(try local.pendingCount() == 2)
        #expect(try local.rows().first?.readAt == 5_000)  // shown at once, optimistically
        server = try HTTPServer(databasePath: storePath, port: port, threads: 2)
        try engine.sync()
        #expect(try local.pendingCount() == 0)
        let (unseen, unread) = try freshCounts("chaucao")
        #expect(try local.counts == ServerCounts(unseen: unseen, unread: unread, stale: false))
        #expect(unseen == 0 && unread == 105)
        #expect(try store.inboxes.row(first.id)?.readAt != nil)
        server?.stop()
    }

    @Test("a long-poll through the in-process transport brings a new row as soon as it is made")
    func liveRow() throws {
        let local = try replica("live")
        let engine = SyncEngine(replica: local, transport: InProcessTransport(router: Router(store: try Store(location: storePath)), user: "chaucao"))
        try engine.sync()
        let path = storePath
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
            guard let writer = try? Store(location: path) else { return }
            _ = try? Ingestor(store: writer).apply(Data(#"{"id":"late","type":"follow","at":"2026-11-29T12:30:00Z","actor":"quinn","target":"chaucao"}"#.utf8))
            _ = try? Ingestor(store: writer).apply(Data(#"{"id":"late2","type":"follow","at":"2026-11-29T12:31:00Z","actor":"mai","target":"chaucao"}"#.utf8))
        }
        let started = Date()
        let applied = try engine.sync(wait: 10)
        #expect(applied >= 1)
        #expect(Date().timeIntervalSince(started) < 5)
    }
}
