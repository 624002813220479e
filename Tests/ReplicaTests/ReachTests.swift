import Foundation
import Notifications
import Testing
import TestSupport
import Wire
@testable import API
@testable import Backend
@testable import Replica

/// A person out of reach — banned, deactivated, behind a block — cannot be followed back or
/// accepted: the replica's row says so (withheld), and the server refuses the act if it comes.
@Suite("Acts towards a person out of reach")
struct ReachTests {
    @Test("Quinn follows Maya, then is banned or blocks her: a first pull gives the row withheld, and a follow back sent anyway is refused with the reason",
          arguments: ["banned", "blocked"])
    func followBackRefused(change: String) throws {
        let folder = NSTemporaryDirectory() + "stepo-reach-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let location = try TestEngine.location(folder, "reach.db")
        let store = try Store(location: location)
        let lines = """
        {"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"maya","username":"maya","name":"Maya Okonkwo"}}
        {"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"quinn","username":"quinn","name":"Quinn Avery"}}
        {"id":"f1","type":"follow","at":"2026-11-20T09:00:00Z","actor":"quinn","target":"maya"}
        """
        for line in lines.split(separator: "\n") { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
        let replica = try Replica(path: folder + "/maya.db")
        let engine = SyncEngine(replica: replica, transport: InProcessTransport(user: "maya") { Router(store: try Store(location: location)) })
        try engine.sync()
        #expect(try replica.rows().first?.withheld == false)
        let event = change == "banned"
            ? #"{"id":"x","type":"account","at":"2026-11-20T10:00:00Z","user":"quinn","state":"banned"}"#
            : #"{"id":"x","type":"block","at":"2026-11-20T10:00:00Z","actor":"quinn","target":"maya"}"#
        _ = try Ingestor(store: store).apply(Data(event.utf8))
        try engine.sync()
        // A first pull from now on gives the row withheld: the inbox offers no follow back.
        let fresh = try Replica(path: folder + "/maya-fresh.db")
        try SyncEngine(replica: fresh, transport: InProcessTransport(user: "maya") { Router(store: try Store(location: location)) }).sync()
        let row = try #require(try fresh.rows().first)
        #expect(row.kind == .newFollower && row.withheld, "a first pull still offers a follow back")
        // Sent anyway (a replica that had not synced yet): refused, said, and not stored.
        try replica.enqueue(.followBack(user: "quinn"))
        try engine.sync()
        let refusals = engine.takeRefusals()
        #expect(refusals.count == 1 && refusals[0].contains(change == "banned" ? "banned" : "a block stands between"), "\(refusals)")
        let maya = try #require(try store.user("maya")), quinn = try #require(try store.user("quinn"))
        #expect(try !store.follows(maya.key, quinn.key))
    }
}
