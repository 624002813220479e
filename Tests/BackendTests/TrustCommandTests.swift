import Foundation
import Notifications
import Wire
import Testing
import TestSupport
@testable import Backend

/// What was seen from outside, as the real binary shows it: queued pushes after a block, the
/// push a surface draws, a cached decision inside one ingest.
@Suite("Trust across time, through the command line")
struct TrustCommandTests {
    let folder: String
    var store: String

    init() throws {
        folder = NSTemporaryDirectory() + "stepo-trust-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        store = try TestEngine.location(folder, "trust.db")
    }

    func ingest(_ lines: String) throws -> Spawn.Result {
        try Stepo.run(["ingest"] + TestEngine.storeArguments(store) + ["-"], stdin: Data(lines.utf8))
    }

    static let world = """
    {"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"alice","username":"alice","name":"Alice Ames"}}
    {"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"bob","username":"bob","name":"Bob Brandt","avatarUrl":"https://cdn/bob.jpg"}}
    {"id":"j1","type":"journey","at":"2026-11-20T08:01:00Z","journey":{"id":"ja","owner":"alice","title":"Garden"}}
    {"id":"j2","type":"journey","at":"2026-11-20T08:01:00Z","journey":{"id":"jb","owner":"bob","title":"BOBSECRET trail"}}
    {"id":"s1","type":"step","at":"2026-11-20T08:02:00Z","step":{"id":"sa","journey":"ja","caption":"tomatoes","photoUrl":"https://cdn/sa.jpg"}}
    {"id":"m1","type":"mediaReady","at":"2026-11-20T08:03:00Z","step":"sa"}
    {"id":"s2","type":"step","at":"2026-11-20T08:02:00Z","step":{"id":"sb","journey":"jb","caption":"bend","photoUrl":"https://cdn/sb.jpg"}}
    {"id":"m2","type":"mediaReady","at":"2026-11-20T08:03:00Z","step":"sb"}
    {"id":"f1","type":"follow","at":"2026-11-20T08:04:00Z","actor":"alice","target":"bob"}

    """

    static let bobActs = """
    {"id":"e1","type":"heart","at":"2026-11-20T09:00:00Z","actor":"bob","step":"sa"}
    {"id":"e2","type":"comment","at":"2026-11-20T09:01:00Z","actor":"bob","step":"sa","comment":{"id":"c1","text":"BOBSECRET words"}}
    {"id":"e3","type":"comment","at":"2026-11-20T09:02:00Z","actor":"bob","step":"sb","comment":{"id":"c2","text":"@alice BOBSECRET look"}}
    {"id":"e4","type":"step","at":"2026-11-20T09:03:00Z","step":{"id":"sb2","journey":"jb","caption":"BOBSECRET caption","photoUrl":"https://cdn/sb2.jpg"}}
    {"id":"e5","type":"mediaReady","at":"2026-11-20T09:04:00Z","step":"sb2"}

    """

    @Test("after a block, stepo deliver --dry-run lists none of the queued pushes and says why on stderr; stepo push and explain --row say so too",
          arguments: ["block", "ban"])
    func dryRunAfterLosingSight(change: String) throws {
        #expect(try ingest(Self.world).status == 0)
        let phone = try Stepo.run(["devices"] + TestEngine.storeArguments(store) + ["--user", "alice", "--add", "alice-phone", "--platform", "apns"])
        #expect(phone.status == 0)
        let acts = try ingest(Self.bobActs)
        let rows = try acts.lines.map { try JSON.parse(Data($0.utf8)) }.filter { $0["recipient"]?.string == "alice" }
        #expect(rows.count == 4)
        let before = try Stepo.run(["deliver"] + TestEngine.storeArguments(store) + ["--dry-run"])
        #expect(before.lines.count == 4)
        // Made on 2026-11-20, each past its expiry since: shown, and marked as what the worker gives up.
        #expect(before.lines.allSatisfy { $0.contains(#""expired":"2026-11-"#) }, "\(before.stdout)")
        #expect(before.stderr.contains("4 of them past their expiry"), "\(before.stderr)")
        let event = change == "block"
            ? #"{"id":"x","type":"block","at":"2026-11-20T10:00:00Z","actor":"alice","target":"bob"}"#
            : #"{"id":"x","type":"account","at":"2026-11-20T10:00:00Z","user":"bob","state":"banned"}"#
        #expect(try ingest(event + "\n").status == 0)
        let after = try Stepo.run(["deliver"] + TestEngine.storeArguments(store) + ["--dry-run"])
        #expect(after.status == 0)
        #expect(after.lines.isEmpty, "still due: \(after.stdout)")
        #expect(!after.stdout.contains("BOBSECRET") && !after.stdout.contains("Bob"))
        #expect(after.stderr.contains(change == "block" ? "blocked" : "actorInactive"))
        let row = try #require(rows.first?["id"]?.int)
        let push = try Stepo.run(["push"] + TestEngine.storeArguments(store) + [String(row), "--platform", "apns"])
        #expect(push.status == 1 && push.stdout.isEmpty)
        #expect(push.stderr.contains("withheld"))
        let explained = try Stepo.run(["explain"] + TestEngine.storeArguments(store) + ["--row", String(row)])
        #expect(explained.stdout.contains("now: row \(row)'s push is withheld"))
        // Alice's activity as text (what `stepo` prints into a pipe) and as JSON: the rows stay,
        // withheld — none of Bob's words, no face.
        for format in [[], ["--json"]] {
            let listed = try Stepo.run(["activity"] + TestEngine.storeArguments(store) + ["--user", "alice"] + format)
            #expect(listed.status == 0 && listed.stdout.contains("Bob Brandt"))
            #expect(!listed.stdout.contains("BOBSECRET") && !listed.stdout.contains("bob.jpg"), "\(listed.stdout)")
        }
    }

    @Test("a push queued for Alice's phone never goes to it once she signed out of it, nor once Bob signed in on it",
          arguments: ["removed", "movedToBob", "takenByBob", "backToAlice"])
    func deviceChangedHands(change: String) throws {
        #expect(try ingest(Self.world).status == 0)
        let devices = ["devices"] + TestEngine.storeArguments(store)
        #expect(try Stepo.run(devices + ["--user", "alice", "--add", "shared-phone", "--platform", "fcm"]).status == 0)
        let acts = try ingest(Self.bobActs)
        #expect(try acts.lines.map { try JSON.parse(Data($0.utf8)) }.filter { $0["recipient"]?.string == "alice" }.count == 4)
        let before = try Stepo.run(["deliver"] + TestEngine.storeArguments(store) + ["--dry-run"])
        #expect(before.lines.count == 4 && before.stdout.contains("BOBSECRET"))
        // Signed out first, or taken over by Bob without one; and, last, Alice back on it.
        if change != "takenByBob" {
            #expect(try Stepo.run(devices + ["--user", "alice", "--remove", "shared-phone"]).status == 0)
        }
        if change != "removed" {
            #expect(try Stepo.run(devices + ["--user", "bob", "--add", "shared-phone", "--platform", "fcm"]).status == 0)
        }
        if change == "backToAlice" {
            #expect(try Stepo.run(devices + ["--user", "alice", "--add", "shared-phone", "--platform", "apns"]).status == 0)
        }
        let after = try Stepo.run(["deliver"] + TestEngine.storeArguments(store) + ["--dry-run"])
        #expect(after.status == 0)
        #expect(after.lines.isEmpty, "still due for the phone: \(after.stdout)")
        #expect(!after.stdout.contains("BOBSECRET") && !after.stdout.contains("shared-phone"))
        // Dropped when the phone changed hands (said by explain), or at claim if still waiting.
        let explained = try Stepo.run(["explain"] + TestEngine.storeArguments(store) + ["--row", String(try #require(try acts.lines.first.flatMap { try JSON.parse(Data($0.utf8))["id"]?.int }))])
        #expect(after.stderr.contains("deviceChanged") || explained.stdout.contains("deviceChanged"), "\(after.stderr) \(explained.stdout)")
        // The phone's own person still gets their pushes on it: Alice hearts Bob's step.
        if change == "movedToBob" || change == "takenByBob" {
            #expect(try ingest(#"{"id":"h9","type":"heart","at":"2026-11-20T11:00:00Z","actor":"alice","step":"sb"}"# + "\n").status == 0)
            let bobs = try Stepo.run(["deliver"] + TestEngine.storeArguments(store) + ["--dry-run"])
            #expect(bobs.lines.count == 1 && bobs.stdout.contains("Alice Ames") && !bobs.stdout.contains("BOBSECRET"), "\(bobs.stdout)")
        }
    }

    @Test("inside one ingest, after the owner hearts her own step, a banned user's heart and a deactivated user's comment make no row")
    func cachedActorState() throws {
        let stream = Self.world + """
            {"id":"u3","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"carl","username":"carl","name":"Carl"}}
            {"id":"a1","type":"account","at":"2026-11-20T08:30:00Z","user":"bob","state":"banned"}
            {"id":"a2","type":"account","at":"2026-11-20T08:30:00Z","user":"carl","state":"deactivated"}
            {"id":"h0","type":"heart","at":"2026-11-20T09:00:00Z","actor":"alice","step":"sa"}
            {"id":"h1","type":"heart","at":"2026-11-20T09:01:00Z","actor":"bob","step":"sa"}
            {"id":"c1","type":"comment","at":"2026-11-20T09:02:00Z","actor":"carl","step":"sa","comment":{"id":"c1","text":"hello"}}

            """
        let result = try ingest(stream)
        #expect(result.status == 0)
        #expect(!result.lines.contains { $0.contains("\"event\":\"h1\"") || $0.contains("\"event\":\"c1\"") }, "\(result.stdout)")
        let explained = try Stepo.run(["explain"] + TestEngine.storeArguments(store) + ["h1"])
        #expect(explained.stdout.contains("actorInactive"))
    }
}
