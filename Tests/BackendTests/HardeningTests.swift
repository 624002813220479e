import Foundation
import Notifications
import Testing
import TestSupport
import Wire
@testable import Backend

/// Bad input refused with a clear word, limits that hold for every alphabet, and what a
/// consumer needs to resume: the store's side of hardening.
@Suite("Numbers, dates, limits and resuming")
struct HardeningTests {
    let folder = NSTemporaryDirectory() + "stepo-hard-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    @Test("an offset past 23:59 is not a time", arguments: ["2026-11-29T10:00:00+99:99", "2026-11-29T10:00:00+24:00",
                                                           "2026-11-29T10:00:00-01:60"])
    func offsets(text: String) {
        #expect(Timestamp.parse(text) == nil)
        #expect(Timestamp.parse("2026-11-29T10:00:00+23:59") != nil)
    }

    @Test("an event in year 1 or 9999 is refused by name; 2000 to 2099 are accepted",
          arguments: ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "1999-12-31T23:59:59Z", "2100-01-01T00:00:00Z"])
    func years(at: String) throws {
        let line = #"{"id":"e","type":"user","at":"\#(at)","user":{"id":"u","username":"u","name":"U"}}"#
        #expect(throws: EventError("field 'at' must fall in 2000–2099: \"\(at)\"")) { try Event(json: try JSON.parse(line)) }
        let fine = #"{"id":"e","type":"user","at":"2099-12-31T23:59:59Z","user":{"id":"u","username":"u","name":"U"}}"#
        #expect(try Event(json: try JSON.parse(fine)).at == Timestamp.parse("2099-12-31T23:59:59Z"))
    }

    @Test("a member name given twice is refused, in a small object and a large one")
    func duplicateNames() throws {
        #expect(throws: JSON.ParseError.self) {
            try JSON.parse(#"{"id":"e","type":"follow","at":"2026-11-20T08:00:00Z","actor":"carol","target":"bob","actor":"alice"}"#)
        }
        let large = "{" + (0..<40).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + #","k7":1}"#
        #expect(throws: JSON.ParseError.self) { try JSON.parse(large) }
        #expect(try JSON.parse("{" + (0..<40).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + "}")["k39"]?.int == 39)
    }

    @Test("a NUL inside a name, a caption, a comment or an id is refused by field")
    func nul() throws {
        let name = #"{"id":"e","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"u","username":"u","name":"An\u0000na"}}"#
        #expect(throws: EventError("field 'user.name' holds a NUL character")) { try Event(json: try JSON.parse(name)) }
        let comment = #"{"id":"e","type":"comment","at":"2026-11-20T08:00:00Z","actor":"u","step":"s","comment":{"id":"c","text":"hi\u0000there"}}"#
        #expect(throws: EventError("field 'comment.text' holds a NUL character")) { try Event(json: try JSON.parse(comment)) }
        let id = #"{"id":"e\u0000","type":"mute","at":"2026-11-20T08:00:00Z","actor":"u","target":"v"}"#
        #expect(throws: EventError("field 'id' holds a NUL character")) { try Event(json: try JSON.parse(id)) }
    }

    @Test("an integer past 64 bits is refused by name, not wrapped")
    func bigNumbers() throws {
        let json = try JSON.parse(#"{"seq":1,"type":"seen","upTo":9223372036854775808}"#)
        #expect(json["upTo"]?.int == nil)
        #expect(throws: WireError("mutation 1: upTo must be a whole number from 0 to 9223372036854775807")) {
            try Mutation(json: json)
        }
        #expect(throws: WireError("seq must be a whole number from 1 to 9223372036854775807")) {
            try Mutation(json: try JSON.parse(#"{"seq":0,"type":"seen","upTo":1}"#))
        }
        #expect(throws: WireError("seq must be a whole number from 1 to 9223372036854775807")) {
            try Mutation(json: try JSON.parse(#"{"seq":-3,"type":"seen","upTo":1}"#))
        }
        #expect(try JSON.parse("-9223372036854775808").int == Int.min)
        #expect(try JSON.parse("9223372036854775807").int == Int.max)
    }

    @Test("the JSON reader refuses what RFC 8259 refuses, and deep nesting, without crashing",
          arguments: ["{\"a\":1,}", "[1,]", "01", "\"\\ud800\"", "\"a\u{01}b\"", "tru", "{\"a\" 1}",
                      String(repeating: "[", count: 10_000), "\"\\x\"", "1e", "-"])
    func strictJSON(text: String) {
        #expect(throws: JSON.ParseError.self) { try JSON.parse(text) }
    }

    @Test("a comment dated before its step was published is refused; so is a heart")
    func beforePublish() throws {
        let w = try World()
        try w.users("o", "a")
        try w.journey("j", owner: "o")
        try w.step("s", journey: "j")
        let published = try #require(try w.store.step("s")?.publishedAt)
        #expect(throws: EventError.self) { try w.comment("a", on: "s", "c1", "@o hello", at: published - 365 * Timestamp.day) }
        #expect(throws: EventError.self) { try w.interact("heart", "a", "s", at: published - 1) }
        #expect(try w.activity("o").isEmpty)
    }

    @Test("names are limited in characters and in bytes: a hundred letters under fifty marks each is refused")
    func zalgoRefused() throws {
        let w = try World()
        let zalgo = String(repeating: "a" + String(repeating: "\u{0301}", count: 50), count: 100)
        #expect(zalgo.count == 100)
        #expect(throws: EventError("field 'user.name' is longer than 100 characters or 400 bytes")) {
            try w.event("user", [("user", .object([("id", "z"), ("username", "z"), ("name", .string(zalgo))]))])
        }
    }

    @Test("a push keeps readable words, however many marks its people stack")
    func zalgoPush() throws {
        let heavy = String(repeating: "e\u{0301}\u{0302}\u{0303}\u{0304}\u{0305}\u{0306}\u{0307}", count: 40)
        #expect(Preview.clean(heavy).unicodeScalars.count == 40 * 5)
        let content = PushContent(rowId: 1, kind: .steppedWithComment, title: String(repeating: "Ẓ̴̡̢̛", count: 99),
                                  body: "Stepped with you: " + String(repeating: "ẃ̂", count: 2000), image: nil, face: nil,
                                  thread: "step:s", deepLink: "stepo://step/s", badge: 1)
        let payload = Payload.apns(content)["payload"]!
        #expect(payload.serialized.utf8.count <= Payload.maximumBytes)
        let title = payload["aps"]?["alert"]?["title"]?.string ?? ""
        let body = payload["aps"]?["alert"]?["body"]?.string ?? ""
        #expect(title.count >= 30, "title \(title.count): \(title.prefix(10))")
        #expect(body.hasPrefix("Stepped with you: ") && body.count >= 40, "body \(body.count): \(body.prefix(30))")
    }

    @Test("stepo ingest of a directory is an error, not an empty success")
    func ingestDirectory() throws {
        let result = try Stepo.run(["ingest", "--db", folder + "/d.db", folder])
        #expect(result.status == 1)
        #expect(result.stderr.contains("is a directory"))
    }

    @Test("stepo rows --after re-emits every row after an id, exactly as ingest printed it")
    func resume() throws {
        let events = CommandLineTests.world + (1...5).map {
            // An hour apart: each heart is a row of its own (within 30 minutes they would batch).
            #"{"id":"h\#($0)","type":"user","at":"2026-11-20T1\#($0):00:00Z","user":{"id":"f\#($0)","username":"f\#($0)","name":"Fan \#($0)"}}"# + "\n"
                + #"{"id":"x\#($0)","type":"heart","at":"2026-11-20T1\#($0):00:30Z","actor":"f\#($0)","step":"s1"}"#
        }.joined(separator: "\n") + "\n"
        let path = folder + "/e.ndjson"
        try Data(events.utf8).write(to: URL(fileURLWithPath: path))
        let ingested = try Stepo.run(["ingest", "--db", folder + "/r.db", path])
        #expect(ingested.lines.count == 5)
        let firstId = try #require(try JSON.parse(ingested.lines[1])["id"]?.int)
        let resumed = try Stepo.run(["rows", "--db", folder + "/r.db", "--after", String(firstId)])
        #expect(resumed.status == 0)
        #expect(resumed.lines == Array(ingested.lines.dropFirst(2)))
        // Ingesting the same file again says why no rows appear.
        let again = try Stepo.run(["ingest", "--db", folder + "/r.db", path])
        #expect(again.lines.isEmpty && again.stderr.contains("every event was already applied"))
    }
}

@Suite("Tokens")
struct TokenTests {
    @Test("a token may expire, be listed by id (never its secret), and be revoked")
    func lifecycle() throws {
        let w = try World()
        try w.users("maya")
        let maya = try w.record("maya")
        let token = try w.store.tokens.create(for: maya, admin: false, at: 1_000, expiresAt: 10_000, label: "laptop")
        #expect(try w.store.tokens.holder(of: token, at: 9_999)?.user?.id == "maya")
        #expect(try w.store.tokens.holder(of: token, at: 10_000) == nil)
        let other = try w.store.tokens.create(for: maya, admin: false, at: 2_000)
        let listed = try w.store.tokens.list(of: maya)
        #expect(listed.count == 2 && listed.allSatisfy { $0.id.count == 12 })
        #expect(!listed.contains { other.contains($0.id) && $0.id.count > 12 })
        #expect(try w.store.tokens.revoke(String(listed[0].id.prefix(8)), at: 3_000) == 1)
        #expect(try w.store.tokens.holder(of: other, at: 3_001) == nil)
        #expect(try w.store.tokens.revoke("abc", at: 3_000) == 0)  // too short to name one
    }

    @Test("the token command makes, lists and revokes; a bad expiry is a usage error")
    func command() throws {
        let folder = NSTemporaryDirectory() + "stepo-tok-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let db = folder + "/t.db"
        _ = try Stepo.run(["ingest", "--db", db, "-"], stdin: Data(CommandLineTests.world.utf8))
        let made = try Stepo.run(["token", "--db", db, "--user", "maya", "--expires", "30d", "--label", "phone"])
        #expect(made.status == 0 && made.stdout.hasPrefix("stp_"))
        let listed = try Stepo.run(["token", "--db", db, "--list"])
        #expect(listed.stdout.contains("user maya") && listed.stdout.contains("“phone”") && !listed.stdout.contains("stp_"))
        let id = String(listed.stdout.prefix(12))
        #expect(try Stepo.run(["token", "--db", db, "--revoke", id]).stdout.contains("revoked 1 token"))
        #expect(try Stepo.run(["token", "--db", db, "--list"]).stdout.contains("revoked"))
        #expect(try Stepo.run(["token", "--db", db, "--user", "maya", "--expires", "soon"]).status == 2)
    }
}
