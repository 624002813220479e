import Foundation
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
