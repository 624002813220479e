import Foundation
import TestSupport
import Notifications
import Testing
@_spi(Bench) @testable import Backend
@testable import Replica

/// A replica after the store pruned: its next sync drops what the store no longer holds, through
/// one number on the page, and its cards are as if it had never held those rows. Through the
/// real `stepo serve` and `stepo sync`, on both engines.
@Suite("Retention: replicas follow the store's prune")
struct PruneSyncTests {
    let folder = NSTemporaryDirectory() + "stepo-prunesync-" + UUID().uuidString

    @Test("synced, pruned, synced again: the replica holds exactly the store's rows, none older than the horizon, and sound cards")
    func replicaFollows() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let location = try TestEngine.location(folder, "store.db")
        let ingest = try Stepo.run(["ingest"] + TestEngine.storeArguments(location) + ["--quiet", Stepo.sampleEvents])
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let token = try Stepo.run(["token"] + TestEngine.storeArguments(location) + ["--user", "chaucao"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let (server, url) = try Stepo.serve(location, log: folder + "/serve.log")
        defer { server.stop() }
        let state = ["XDG_STATE_HOME": folder + "/state"]
        let first = try Stepo.run(["sync", "--server", url, "--token", token], environment: state)
        #expect(first.status == 0, "\(first.stderr)")
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder + "/state/stepo/replicas").first { $0.hasSuffix(".db") })
        let before = try Replica(path: folder + "/state/stepo/replicas/" + name).rowCount

        let horizon = "2026-11-22T00:00:00Z"
        let prune = try Stepo.run(["prune"] + TestEngine.storeArguments(location) + ["--before", horizon])
        #expect(prune.status == 0, "\(prune.stderr)")
        let again = try Stepo.run(["sync", "--server", url, "--token", token], environment: state)
        #expect(again.status == 0, "\(again.stderr)")

        let store = try Store(location: location)
        let user = try #require(try store.user("chaucao"))
        let kept = try store.connection.query("SELECT id FROM notifications WHERE recipient = ? ORDER BY id", [user.key]) { $0.int(0) }
        let replica = try Replica(path: folder + "/state/stepo/replicas/" + name)
        let held = try replica.db.query("SELECT id FROM rows ORDER BY id") { $0.int(0) }
        #expect(held.count < before && !held.isEmpty, "held \(held.count) of \(before)")
        #expect(held == kept)
        let oldest = try replica.db.scalar("SELECT min(created_at) FROM rows") ?? 0
        #expect(oldest >= Timestamp.parse(horizon)!, "the replica's oldest row is from \(Timestamp.format(Int64(oldest)))")
        // Cards as a replica that never held the pruned rows builds them.
        #expect(try replica.db.scalar("""
            SELECT count(*) FROM cards AS c WHERE c.rows <> (SELECT count(*) FROM rows AS r WHERE r.card = c.key)
               OR c.newest <> (SELECT max(id) FROM rows AS r WHERE r.card = c.key) OR c.oldest <> (SELECT min(id) FROM rows AS r WHERE r.card = c.key)
               OR c.people <> (SELECT count(*) FROM card_people AS p WHERE p.card = c.key)
            """) == 0)
        #expect(try replica.db.scalar("SELECT count(*) FROM rows WHERE card NOT IN (SELECT key FROM cards)") == 0)
        #expect(try replica.db.scalar("SELECT count(*) FROM card_people WHERE card NOT IN (SELECT key FROM cards)") == 0)
        // The badge is the store's.
        let counts = try store.inboxes.counts(for: user.key)
        let shown = try replica.counts
        #expect(shown.unseen == counts.unseen && shown.unread == counts.unread && counts.unseen > 0)
    }
}
