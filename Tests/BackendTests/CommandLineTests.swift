import Foundation
import Notifications
import Wire
import Testing
import TestSupport
@testable import Backend
import Inbox

/// Holds what a reader thread collected; a lock or a DispatchGroup orders the write before the read.
final class DataBox: @unchecked Sendable {
    var data = Data()
}

@Suite("The stepo command line")
struct CommandLineTests {
    let folder: String
    var db: String { folder + "/cli.db" }

    init() throws {
        folder = NSTemporaryDirectory() + "stepo-cli-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    static let world = """
    {"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"chaucao","username":"chaucao","name":"Chau Cao"}}
    {"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"maya","username":"maya","name":"Maya Okonkwo","avatarUrl":"https://cdn/maya.jpg"}}
    {"id":"j1","type":"journey","at":"2026-11-20T08:02:00Z","journey":{"id":"j1","owner":"chaucao","title":"Run the ridge"}}
    {"id":"s1","type":"step","at":"2026-11-20T09:00:00Z","step":{"id":"s1","journey":"j1","caption":"Trail run before work — up the ridge and back.","photoUrl":"https://cdn/s1.jpg"}}
    {"id":"m1","type":"mediaReady","at":"2026-11-20T10:00:00Z","step":"s1"}

    """

    func write(_ name: String, _ data: Data) throws -> String {
        let path = folder + "/" + name
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("stepo help COMMAND is that command's --help; an unknown one, or an option given twice with two values, is a usage error")
    func helpForCommand() throws {
        let prune = try Stepo.run(["help", "prune"])
        #expect(prune.status == 0 && prune.stdout.hasPrefix("usage: stepo prune"), "\(prune.stdout.prefix(200))")
        let unknown = try Stepo.run(["help", "nosuch"])
        #expect(unknown.status == 2 && unknown.stderr.contains("no command nosuch"))
        // An option given twice with two values is neither: nothing is pruned.
        let twice = try Stepo.run(["prune", "--db", db, "--keep-days", "90", "--keep-days=3"])
        #expect(twice.status == 2 && twice.stderr.contains("--keep-days is given twice (90 and 3)"), "\(twice.stderr)")
        #expect(!FileManager.default.fileExists(atPath: db))
    }

    @Test("ingest prints one contract line per row, with the contract's keys in order")
    func contractLine() throws {
        let events = Self.world + #"{"id":"e12","type":"heart","at":"2026-11-20T10:05:00Z","actor":"maya","step":"s1"}"# + "\n"
        let result = try Stepo.run(["ingest", "--db", db, try write("e.ndjson", Data(events.utf8))])
        #expect(result.status == 0)
        #expect(result.lines.count == 1)
        let line = try #require(result.lines.first)
        // Foundation's parser forgets key order, so read the order off the raw line.
        let keys = ["event", "id", "recipient", "kind", "category", "priority", "actor", "title",
                    "body", "media", "tap", "thread", "push"]
        let offsets = keys.compactMap { line.range(of: "\"\($0)\":")?.lowerBound }
        #expect(offsets.count == keys.count)
        #expect(offsets == offsets.sorted())
        #expect(line.hasPrefix("{\"event\":\"e12\",\"id\":"))
        let json = try JSON.parse(line)
        #expect(json["body"] == "Stepped with you by heart: Trail run before work — up the ridge and back.")
        #expect(json["media"] == .object([("face", "https://cdn/maya.jpg"), ("image", "https://cdn/s1.jpg")]))
        #expect(json["tap"] == .object([("screen", "step"), ("step", "s1"), ("comments", "closed")]))
        #expect(json["push"] == "sent")
    }

    @Test("bad lines are reported with their line number and reason, skipped, and the rest applied; exit 1")
    func badLines() throws {
        var data = Data(Self.world.utf8)
        data += Data("{not json\n".utf8)                                                                       // 6
        data += Data(#"{"id":"x1","type":"wave","at":"2026-11-20T10:05:00Z"}"#.utf8 + [0x0A])                   // 7
        data += Data(#"{"id":"x2","type":"heart","at":"2026-11-20T10:05:00Z","step":"s1"}"#.utf8 + [0x0A])      // 8
        data += Data(#"{"id":"x3","type":"heart","at":"2026-11-20T10:05:00Z","actor":"ghost","step":"s1"}"#.utf8 + [0x0A])  // 9
        data += Data(#"{"id":"x4","type":"step","at":"2026-11-20T10:05:00Z","step":{"id":"s2","journey":"j1","caption":"wip"}}"#.utf8 + [0x0A])  // 10
        data += Data(#"{"id":"x5","type":"heart","at":"2026-11-20T10:06:00Z","actor":"maya","step":"s2"}"#.utf8 + [0x0A])  // 11
        data += Data(#"{"id":"x6","type":"comment","at":"2026-11-20T10:06:00Z","actor":"maya","step":"s1","comment":{"id":"c1","text":"caf"#.utf8)
        data += Data([0xC3, 0x28]) + Data(#""}}"#.utf8 + [0x0A])                                               // 12: invalid UTF-8
        var long = Data(#"{"id":"x7","type":"heart","at":"2026-11-20T10:07:00Z","actor":"maya","step":"s1","pad":""#.utf8)
        long += Data(repeating: 0x61, count: 1 << 20) + Data(#""}"#.utf8)
        data += long + [0x0A]                                                                                // 13: over 1 MiB
        data += Data(#"{"id":"x8","type":"heart","at":"2026-11-20T10:08:00Z","actor":"maya","step":"s1"}"#.utf8 + [0x0A])  // 14: good
        let path = try write("bad.ndjson", data)
        let result = try Stepo.run(["ingest", "--db", db, path])
        #expect(result.status == 1)
        let expected = [
            "\(path):6: malformed JSON",
            "\(path):7: unknown event type \"wave\"",
            "\(path):8: missing field 'actor'",
            "\(path):9: unknown user ghost",
            "\(path):11: step s2 is not published yet (its media is still processing)",
            "\(path):12: line is not valid UTF-8",
            "\(path):13: line is \(long.count) bytes, over the 1048576-byte limit",
        ]
        for message in expected {
            #expect(result.stderr.contains("stepo ingest: " + message), "\(message)\n\(result.stderr)")
        }
        #expect(result.lines.count == 1)
        #expect(try JSON.parse(result.lines[0])["event"] == "x8")
        let activity = try Stepo.run(["activity", "--db", db, "--user", "chaucao", "--json"])
        #expect(try JSON.parse(activity.stdout)["counts"] == .object([("unseen", 1), ("unread", 1)]))
    }

    @Test("within one batch, what a later event changes is seen by the interactions after it")
    func laterEventsInOneBatch() throws {
        // One file, so one transaction: the steps and people interactions look up are cached
        // there, and preferences, a rename and a deletion must each show in the next row.
        // (The two hearts are more than 30 minutes apart, so they do not batch.)
        let stream = Self.world + """
            {"id":"u3","type":"user","at":"2026-11-20T10:01:00Z","user":{"id":"linh","username":"linh","name":"Linh Trần"}}
            {"id":"h1","type":"heart","at":"2026-11-20T10:05:00Z","actor":"maya","step":"s1"}
            {"id":"p1","type":"preferences","at":"2026-11-20T10:06:00Z","user":"chaucao","stepWith":false}
            {"id":"h2","type":"heart","at":"2026-11-20T10:37:00Z","actor":"linh","step":"s1"}
            {"id":"n1","type":"user","at":"2026-11-20T10:37:30Z","user":{"id":"linh","username":"linh","name":"Linh T."}}
            {"id":"h3","type":"share","at":"2026-11-20T10:37:40Z","actor":"linh","step":"s1"}
            {"id":"d1","type":"delete","at":"2026-11-20T10:38:00Z","step":"s1"}
            {"id":"c1","type":"comment","at":"2026-11-20T10:39:00Z","actor":"linh","step":"s1","comment":{"id":"c1","text":"so proud"}}

            """
        let result = try Stepo.run(["ingest", "--db", db, try write("batch.ndjson", Data(stream.utf8))])
        #expect(result.status == 1)
        #expect(result.stderr.contains("batch.ndjson:13: step s1 was deleted"))
        let rows = try result.lines.map { try JSON.parse(Data($0.utf8)) }
        #expect(rows.map { $0["event"] } == ["h1", "h2", "h3"])
        #expect(rows.map { $0["push"] } == ["sent", "suppressed:preferences", "suppressed:preferences"])
        #expect(rows.map { $0["title"] } == ["Maya Okonkwo", "Linh Trần", "Linh T."])
    }

    @Test("ingest reads standard input, and a repeated stream is a silent no-op")
    func stdinAndReplay() throws {
        let events = Data((Self.world + #"{"id":"e12","type":"heart","at":"2026-11-20T10:05:00Z","actor":"maya","step":"s1"}"# + "\n").utf8)
        let first = try Stepo.run(["ingest", "--db", db, "-"], stdin: events)
        #expect(first.status == 0 && first.lines.count == 1)
        let again = try Stepo.run(["ingest", "--db", db], stdin: events)
        #expect(again.status == 0)
        #expect(again.stdout.isEmpty)
        #expect(again.stderr.contains("0 events applied, 6 repeated"))
        #expect(again.stderr.contains("every event was already applied"))
    }

    @Test("a live stream on standard input sees its rows while the input is still open, fan-outs included")
    func liveStream() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Stepo.binary)
        process.arguments = ["ingest", "--db", db, "-"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let follower = #"{"id":"f1","type":"follow","at":"2026-11-20T09:30:00Z","actor":"maya","target":"chaucao"}"#
        let publish = #"{"id":"s2","type":"step","at":"2026-11-21T09:00:00Z","step":{"id":"s2","journey":"j1","caption":"Day two"}}"#
            + "\n" + #"{"id":"m2","type":"mediaReady","at":"2026-11-21T09:05:00Z","step":"s2"}"#
        let lines = Self.world.split(separator: "\n").prefix(3).joined(separator: "\n") + "\n" + follower + "\n"
            + Self.world.split(separator: "\n").suffix(2).joined(separator: "\n") + "\n" + publish + "\n"
        input.fileHandleForWriting.write(Data(lines.utf8))
        // Collect the output on another thread; wait here, with a deadline, until the fan-out's
        // row has arrived while the input is still open.
        let collected = DataBox()
        let lock = NSLock()
        DispatchQueue.global().async {
            while true {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { return }
                lock.lock(); collected.data.append(chunk); lock.unlock()
            }
        }
        var received = ""
        let deadline = Date().addingTimeInterval(20)
        while !received.contains("\"event\":\"m2\"") && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            lock.lock(); received = String(decoding: collected.data, as: UTF8.self); lock.unlock()
        }
        #expect(process.isRunning, "stepo should still be waiting for more input")
        let rows = received.split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
        #expect(rows.map { $0["kind"]?.string ?? "" } == ["newFollower", "firstStep", "newStep"])
        #expect(rows.last?["recipient"] == "maya")
        try input.fileHandleForWriting.close()
        let exitDeadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < exitDeadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(!process.isRunning)
        if !process.isRunning { #expect(process.terminationStatus == 0) }
    }

    @Test("activity, seen and read print the counts; another user's row is refused")
    func stamps() throws {
        let events = Self.world + #"{"id":"e12","type":"heart","at":"2026-11-20T10:05:00Z","actor":"maya","step":"s1"}"# + "\n"
        let ingest = try Stepo.run(["ingest", "--db", db, try write("e.ndjson", Data(events.utf8))])
        let rowId = try #require(try JSON.parse(ingest.lines[0])["id"]?.int)
        let text = try Stepo.run(["activity", "--db", db, "--user", "chaucao"])
        #expect(text.stdout.contains("1 unseen · 1 unread"))
        #expect(text.stdout.contains("Maya Okonkwo — Stepped with you by heart: Trail run before work — up the ridge and back."))
        #expect(try Stepo.run(["seen", "--db", db, "--user", "chaucao"]).stdout == "{\"unseen\":0,\"unread\":1}\n")
        let foreign = try Stepo.run(["read", "--db", db, "--user", "maya", String(rowId)])
        #expect(foreign.status == 1)
        #expect(foreign.stderr.contains("user maya has no row \(rowId)"))
        #expect(try Stepo.run(["read", "--db", db, "--user", "chaucao", String(rowId)]).stdout == "{\"unseen\":0,\"unread\":0}\n")
    }

    @Test("explain and push answer for a row; unknown ids and bad options are clear errors")
    func explainAndPush() throws {
        let events = Self.world + #"{"id":"e12","type":"heart","at":"2026-11-20T10:05:00Z","actor":"maya","step":"s1"}"# + "\n"
        _ = try Stepo.run(["ingest", "--db", db, try write("e.ndjson", Data(events.utf8))])
        let explain = try Stepo.run(["explain", "--db", db, "e12"])
        #expect(explain.stdout.contains("chaucao  steppedWithHeart  row 1  push sent"))
        let apns = try Stepo.run(["push", "--db", db, "1", "--platform", "apns"])
        #expect(try JSON.parse(apns.stdout)["payload"]?["aps"]?["badge"] == 1)
        let fcm = try Stepo.run(["push", "--db", db, "1", "--platform", "fcm"])
        #expect(try JSON.parse(fcm.stdout)["message"]?["data"]?["threadId"] == "step:s1")
        #expect(try Stepo.run(["explain", "--db", db, "nope"]).status == 1)
        #expect(try Stepo.run(["push", "--db", db, "1"]).status == 2)
        #expect(try Stepo.run(["push", "--db", db, "99", "--platform", "fcm"]).stderr.contains("no notification row 99"))
        #expect(try Stepo.run(["activity", "--db", db, "--user", "ghost\u{1B}[2J"]).stderr.contains("unknown user ghost␛[2J"))
        #expect(try Stepo.run(["frobnicate"]).status == 2)
        #expect(try Stepo.run(["activity", "--bogus"]).status == 2)
    }

    @Test("qa walk opens every row's destination and performs every row's action, on a scratch copy of the store")
    func qaWalk() throws {
        let env = ["XDG_DATA_HOME": folder + "/xdg", "XDG_STATE_HOME": folder + "/state"]
        let result = try Stepo.run(["qa", "walk"], environment: env)
        #expect(result.status == 0, "\(result.stdout)")
        #expect(result.stdout.contains("106 rows"))
        #expect(result.stdout.contains("3 × deleted → no longer available"))
        #expect(result.stdout.contains("1 × accept: the server agreed, the profile shows it and offers it no more, a repeat was refused and reported"))
        #expect(result.stdout.contains("9 × follow back: the server agreed"))
        #expect(result.stdout.hasSuffix("every destination and action matches the board\n"))
        // For CI: one result per row, as JSON and as JUnit XML; the screen reached beside the board's word.
        let json = try Stepo.run(["qa", "walk", "--json", "--junit", folder + "/walk.xml"], environment: env)
        #expect(json.status == 0)
        let report = try JSON.parse(json.stdout)
        let rows = try #require(report["rows"]?.array)
        #expect(rows.count == 106 && report["mismatches"] == 0)
        let batch = try #require(rows.first { $0["kind"] == "batch" })
        #expect(batch["board"] == "interactions" && batch["reached"] == "interactions" && batch["ok"] == true)
        #expect(rows.contains { $0["board"] == "step comment highlighted" && $0["reached"]?.string?.hasSuffix("comment highlighted") == true })
        // The summary says what the screens showed in the same words as the JSON, every one of them.
        for row in rows where row["kind"] != "batch" {
            let board = try #require(row["board"]?.string), reached = try #require(row["reached"]?.string)
            #expect(result.stdout.contains(" × \(board) → \(reached)\n") || result.stdout.contains(" × deleted → \(reached)\n"),
                    "\(board) → \(reached) is not in the summary")
        }
        // A step whose comments are in view says so, whatever the board calls its tap.
        #expect(!rows.contains { $0["reached"] == "step comments closed" })
        let xml = try String(contentsOfFile: folder + "/walk.xml", encoding: .utf8)
        #expect(xml.contains(#"<testsuite name="stepo qa walk @chaucao" tests="106" failures="0">"#))
        #expect(xml.components(separatedBy: "<testcase ").count == 107)
        // One row.
        let id = try #require(batch["row"]?.int)
        let one = try Stepo.run(["qa", "walk", "--row", "\(id)", "--json"], environment: env)
        let oneReport = try JSON.parse(one.stdout)
        #expect(one.status == 0 && oneReport["rows"]?.array?.count == 1)
        let missing = try Stepo.run(["qa", "walk", "--row", "3"], environment: env)
        #expect(missing.status == 1 && missing.stderr.contains("there is no row 3 in @chaucao's activity"))
        #expect(try Stepo.run(["qa", "walk", "--row", "x"], environment: env).status == 2)
        // The user's own store and replicas are untouched: An's request still waits.
        let store = try Store(path: folder + "/xdg/stepo/stepo.db")
        let an = try #require(try store.user("an")), me = try #require(try store.user("chaucao"))
        #expect(try store.hasPendingRequest(from: an.key, to: me.key))
        #expect(!FileManager.default.fileExists(atPath: folder + "/state/stepo/replicas"))
        // Against a server, it acts only when told to.
        let token = try store.tokens.create(for: me, admin: false, at: 0)
        let (server, url) = try Stepo.serve(folder + "/xdg/stepo/stepo.db", log: folder + "/serve.log")
        defer { server.stop() }
        let remote = try Stepo.run(["qa", "walk", "--server", url, "--token", token], environment: env)
        #expect(remote.status == 0, "\(remote.stdout)")
        #expect(remote.stdout.contains("inline actions not performed"))
        #expect(try store.hasPendingRequest(from: an.key, to: me.key))
    }

    @Test("the sample world passes its own walk for every one of its people, acts included; a banned account has nothing to walk")
    func qaWalkEveryUser() throws {
        let env = ["XDG_DATA_HOME": folder + "/xdg", "XDG_STATE_HOME": folder + "/state"]
        #expect(try Stepo.run(["demo"], environment: env).status == 0)
        let store = try Store(path: folder + "/xdg/stepo/stepo.db")
        let ids = Set(try String(contentsOfFile: Stepo.sampleEvents, encoding: .utf8).split(separator: "\n").compactMap { line -> String? in
            let event = try JSON.parse(Data(line.utf8))
            return event["type"]?.string == "user" ? event["user"]?["id"]?.string : nil
        })
        let people = try ids.sorted().map { try #require(try store.user($0)) }
        #expect(people.count >= 40)
        var failed: [String] = []
        for person in people {
            let walked = try Stepo.run(["qa", "walk", "--user", person.id], environment: env)
            if walked.status != 0 { failed.append("\(person.id): \(walked.stdout.split(separator: "\n").filter { $0.contains("MISMATCH") }) \(walked.stderr)") }
            if !person.isActive {
                #expect(walked.stderr.contains("nothing to walk"), "\(person.id): \(walked.stderr)")
            }
        }
        #expect(failed.isEmpty, "\(failed)")
    }

    @Test("after a block either way, a ban or a deactivation, the walk expects the board's fallback: the step without the withheld comment, or no longer available",
          arguments: ["block alice bob", "block bob alice", "block carol alice", "ban bob", "deactivated bob", "private carol"])
    func qaWalkAfterLosingSight(change: String) throws {
        let db = folder + "/lost.db"
        let words = change.split(separator: " ").map(String.init)
        let last: String = switch words[0] {
        case "block": #"{"id":"x","type":"block","at":"2026-11-20T10:00:00Z","actor":"\#(words[1])","target":"\#(words[2])"}"#
        case "private": #"{"id":"x","type":"privacy","at":"2026-11-20T10:00:00Z","user":"\#(words[1])","private":true}"#
        default: #"{"id":"x","type":"account","at":"2026-11-20T10:00:00Z","user":"\#(words[1])","state":"\#(words[0] == "ban" ? "banned" : "deactivated")"}"#
        }
        let world = """
        {"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"alice","username":"alice","name":"Alice Ames"}}
        {"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"bob","username":"bob","name":"Bob Brandt"}}
        {"id":"u3","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"carol","username":"carol","name":"Carol Chen"}}
        {"id":"j1","type":"journey","at":"2026-11-20T08:01:00Z","journey":{"id":"jc","owner":"carol","title":"Carol's runs"}}
        {"id":"s1","type":"step","at":"2026-11-20T08:02:00Z","step":{"id":"sc","journey":"jc","caption":"ridge"}}
        {"id":"m1","type":"mediaReady","at":"2026-11-20T08:03:00Z","step":"sc"}
        {"id":"c1","type":"comment","at":"2026-11-20T09:00:00Z","actor":"bob","step":"sc","comment":{"id":"cb","text":"@alice look at this"}}
        {"id":"c2","type":"comment","at":"2026-11-20T09:01:00Z","actor":"alice","step":"sc","comment":{"id":"ca","text":"nice one"}}
        {"id":"c3","type":"comment","at":"2026-11-20T09:02:00Z","actor":"bob","step":"sc","comment":{"id":"cr","text":"thanks","parent":"ca"}}
        {"id":"f1","type":"follow","at":"2026-11-20T09:03:00Z","actor":"bob","target":"alice"}
        \(last)

        """
        #expect(try Stepo.run(["ingest", "--db", db, "-"], stdin: Data(world.utf8)).status == 0)
        let env = ["XDG_STATE_HOME": folder + "/state"]
        for user in ["alice", "carol"] {
            let walked = try Stepo.run(["qa", "walk", "--db", db, "--user", user], environment: env)
            #expect(walked.status == 0, "\(change) / \(user): \(walked.stdout) \(walked.stderr)")
        }
    }

    @Test("demo --reset starts afresh: every row New again, the store's replicas gone; not while another process holds the store")
    func demoReset() throws {
        let env = ["XDG_DATA_HOME": folder + "/xdg", "XDG_STATE_HOME": folder + "/state"]
        #expect(try Stepo.run(["demo"], environment: env).stdout.contains("106 unseen · 106 unread"))
        #expect(try Stepo.run(["seen", "--user", "chaucao"], environment: env).status == 0)
        #expect(try Stepo.run(["sync"], environment: env).status == 0)
        let replicas = folder + "/state/stepo/replicas"
        #expect(try FileManager.default.contentsOfDirectory(atPath: replicas).count == 1)
        #expect(try Stepo.run(["demo"], environment: env).stdout.contains("0 unseen · 106 unread"))
        // Held open by this process: refused, and nothing removed.
        do {
            let held = try Store(path: folder + "/xdg/stepo/stepo.db")
            let refused = try Stepo.run(["demo", "--reset"], environment: env)
            #expect(refused.status == 1 && refused.stderr.contains("is open in process \(getpid())"), "\(refused.stderr)")
            #expect(try held.user("chaucao") != nil)
        }
        let reset = try Stepo.run(["demo", "--reset"], environment: env)
        #expect(reset.status == 0 && reset.stderr.contains("and 1 replica of it"), "\(reset.stderr)")
        #expect(reset.stdout.contains("106 unseen · 106 unread"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: replicas).isEmpty)
    }

    @Test("every subcommand answers --help with its usage", arguments: ["demo", "ingest", "explain", "push", "activity", "seen", "read",
                                                                         "stats", "sync", "serve", "token", "devices", "deliver", "inbox", "qa"])
    func help(command: String) throws {
        let result = try Stepo.run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("usage: stepo \(command)"))
    }

    @Test("the benchmarks are a program of their own, beside stepo: it answers --help, refuses an unknown bench, and stepo says where they went")
    func benchProgram() throws {
        let bench = URL(fileURLWithPath: Stepo.binary).deletingLastPathComponent().appendingPathComponent("stepo-bench").path
        let help = try Spawn.run([bench, "--help"])
        #expect(help.status == 0 && help.stdout.hasPrefix("usage: stepo-bench engine"), "\(help.stderr)")
        let unknown = try Spawn.run([bench, "nope"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown benchmark nope"))
        let old = try Stepo.run(["bench", "engine"])
        #expect(old.status == 2 && old.stderr.contains("stepo-bench"))
    }

    @Test("stepo devices registers and lists a user's devices; deliver --dry-run prints each due push; explain --row lists a row's deliveries")
    func devicesAndDryRun() throws {
        #expect(try Stepo.run(["ingest", "--db", db, "-"], stdin: Data(Self.world.utf8)).status == 0)
        let events = Data((#"{"id":"e12","type":"heart","at":"2026-11-20T10:05:00Z","actor":"maya","step":"s1"}"# + "\n").utf8)
        let added = try Stepo.run(["devices", "--db", db, "--user", "chaucao", "--add", "tok-apns", "--platform", "apns"])
        #expect(added.status == 0 && added.stdout.hasPrefix("tok-apns  apns  production  registered "))
        #expect(try Stepo.run(["devices", "--db", db, "--user", "chaucao", "--add", "x y", "--platform", "apns"]).status == 2)
        #expect(try Stepo.run(["devices", "--db", db, "--user", "chaucao", "--add", "t", "--platform", "pager"]).status == 2)
        let ingest = try Stepo.run(["ingest", "--db", db, "-"], stdin: events)
        let firstLine = try #require(ingest.lines.first)
        let row = try #require(try JSON.parse(Data(firstLine.utf8))["id"]?.int)
        let dry = try Stepo.run(["deliver", "--db", db, "--dry-run"])
        #expect(dry.status == 0 && dry.lines.count == 1)
        let dryLine = try #require(dry.lines.first)
        let entry = try JSON.parse(Data(dryLine.utf8))
        #expect(entry["row"]?.int == row && entry["platform"]?.string == "apns")
        #expect(entry["request"]?["headers"]?[":path"]?.string == "/3/device/tok-apns")
        #expect(entry["request"]?["payload"]?["aps"]?["alert"]?["title"]?.string == "Maya Okonkwo")
        let explained = try Stepo.run(["explain", "--db", db, "--row", String(row)])
        #expect(explained.stdout.contains("row \(row) · 1 delivery") && explained.stdout.contains("apns  tok-apns  due"))
        // Without a provider named there is nothing to send to: it says so.
        let send = try Stepo.run(["deliver", "--db", db])
        #expect(send.status == 2 && send.stderr.contains("name a provider"))
    }

    @Test("the README and stepo inbox --help list every key the inbox answers, in the help overlay's words")
    func keys() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let help = try Stepo.run(["inbox", "--help"])
        #expect(help.status == 0)
        #expect(InboxState.helpLines.count >= 16)
        for line in InboxState.helpLines {
            #expect(readme.contains("\n" + line + "\n"), "README.md does not list \(line)")
            #expect(help.stdout.contains("  " + line + "\n"), "stepo inbox --help does not list \(line)")
        }
        // Every key the list answers is in the help: the keys the reducer reads, spelled as the help spells them.
        for key in ["j/k", "PgUp/PgDn", "g/G", "Space", "Enter", "i ", "a / d", "f ", "b ", "/ ", "1–5 / 0", "A ", "p ", "r ", "s ", "t ", "mouse", "q Esc", "? "] {
            #expect(InboxState.helpLines.contains { $0.hasPrefix(key) }, "the help has no line for \(key)")
        }
    }

    @Test("with no arguments, stepo seeds the default store from the sample data and shows chaucao's activity")
    func demo() throws {
        let result = try Stepo.run([], environment: ["XDG_DATA_HOME": folder + "/xdg"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("Activity · Chau Cao (@chaucao) · 106 unseen"))
        #expect(result.stdout.contains("Lena Ortiz — Started a journey: Bake sourdough from scratch — day one is on air"))
        #expect(FileManager.default.fileExists(atPath: folder + "/xdg/stepo/stepo.db"))
        let again = try Stepo.run([], environment: ["XDG_DATA_HOME": folder + "/xdg"])
        #expect(again.stdout == result.stdout)
        #expect(!again.stderr.contains("seeded"))
    }
}
