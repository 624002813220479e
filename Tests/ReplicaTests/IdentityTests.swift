import Foundation
import Synchronization
import Notifications
import Testing
import TestSupport
import Wire
@testable import API
@testable import Backend
@testable import Replica

/// A replica belongs to one (store, reader): never a mix of two stores.
@Suite("A replica belongs to one store")
struct IdentityTests {
    let folder = NSTemporaryDirectory() + "stepo-identity-" + UUID().uuidString

    /// A store where `fan` hearts chaucao's step.
    func store(_ name: String, fan: String) throws -> Store {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let store = try Store(location: "\(folder)/\(name).db")
        let lines = """
        {"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"chaucao","username":"chaucao","name":"Chau Cao"}}
        {"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"\(fan)","username":"\(fan)","name":"Fan \(fan)"}}
        {"id":"j1","type":"journey","at":"2026-11-20T08:02:00Z","journey":{"id":"j1","owner":"chaucao","title":"Run"}}
        {"id":"s1","type":"step","at":"2026-11-20T09:00:00Z","step":{"id":"s1","journey":"j1","caption":"Trail run"}}
        {"id":"m1","type":"mediaReady","at":"2026-11-20T10:00:00Z","step":"s1"}
        {"id":"h1","type":"heart","at":"2026-11-20T10:05:00Z","actor":"\(fan)","step":"s1"}
        """
        for line in lines.split(separator: "\n") { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
        return store
    }

    func engine(_ replica: Replica, _ store: Store) -> SyncEngine {
        let path = store.path
        return SyncEngine(replica: replica, transport: InProcessTransport(user: "chaucao") { Router(store: try Store(location: path)) })
    }

    @Test("each store has an identity of its own, made with it and kept")
    func identities() throws {
        let a = try store("a", fan: "maya"), b = try store("b", fan: "kofi")
        #expect(a.identity.count == 32 && b.identity.count == 32 && a.identity != b.identity)
        #expect(try Store(location: a.path).identity == a.identity)
        #expect(try Replica.defaultPath(store: a.identity, user: "chaucao") != Replica.defaultPath(store: b.identity, user: "chaucao"))
    }

    @Test("pulled from another store, a replica starts afresh: none of the first store's rows remain")
    func anotherStore() throws {
        let a = try store("a", fan: "maya"), b = try store("b", fan: "kofi")
        let replica = try Replica(path: folder + "/shared.db")
        try engine(replica, a).sync()
        #expect(try replica.rows().map(\.title) == ["Fan maya"])
        #expect(try replica.storeIdentity == a.identity)
        try replica.markAllSeen(at: 1)  // a queued stamp meant for store a
        try engine(replica, b).sync()
        #expect(try replica.rows().map(\.title) == ["Fan kofi"])
        #expect(try replica.storeIdentity == b.identity)
        #expect(try replica.person("maya") == nil)
        let me = try #require(try b.user("chaucao"))
        #expect(try replica.counts == ServerCounts(unseen: try b.inboxes.counts(for: me.key).unseen, unread: 1, stale: false))
    }

    @Test("a server whose store changes between pages (a proxy alternating two stores) ends the sync with an error after a few resets, not a loop")
    func alternatingStores() throws {
        let a = try store("a", fan: "maya"), b = try store("b", fan: "kofi")
        for store in [a, b] {
            for n in 1...3 {
                _ = try Ingestor(store: store).apply(Data(#"{"id":"x\#(n)","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"x\#(n)","username":"x\#(n)","name":"X"}}"#.utf8))
                _ = try Ingestor(store: store).apply(Data(#"{"id":"xh\#(n)","type":"share","at":"2026-11-20T10:06:00Z","actor":"x\#(n)","step":"s1"}"#.utf8))
            }
        }
        let alternating = Alternating([engineTransport(a), engineTransport(b)])
        let replica = try Replica(path: folder + "/alternating.db")
        let engine = SyncEngine(replica: replica, transport: alternating, pageSize: 1)
        #expect { try engine.sync() } throws: { "\($0)".contains("the server's store changed 4 times during one sync") }
        #expect(alternating.calls.withLock { $0 } < 20)
    }

    func engineTransport(_ store: Store) -> Transport {
        let path = store.path
        return InProcessTransport(user: "chaucao") { Router(store: try Store(location: path)) }
    }

    /// Each request to the next of its transports in turn.
    final class Alternating: Transport, Sendable {
        let transports: [Transport]
        let calls = Mutex(0)
        init(_ transports: [Transport]) { self.transports = transports }
        var serverName: String { "alternating" }
        func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data) {
            let n = calls.withLock { calls in defer { calls += 1 }; return calls }
            return try transports[n % transports.count].perform(method: method, path: path, query: query, body: body)
        }
    }

    @Test("the embedded default keeps --db A and --db B apart")
    func embeddedDefault() throws {
        _ = try store("a", fan: "maya")
        _ = try store("b", fan: "kofi")
        let environment = ["XDG_STATE_HOME": folder + "/state", "XDG_DATA_HOME": folder + "/data"]
        let first = try Stepo.run(["activity", "--replica", "--db", folder + "/a.db", "--user", "chaucao"], environment: environment)
        let second = try Stepo.run(["activity", "--replica", "--db", folder + "/b.db", "--user", "chaucao"], environment: environment)
        #expect(first.stdout.contains("Fan maya") && !first.stdout.contains("Fan kofi"))
        #expect(second.stdout.contains("Fan kofi") && !second.stdout.contains("Fan maya"))
    }
}
