import Foundation
import Notifications
import Testing
import TestSupport
import Wire
@testable import API
@testable import Backend

/// A bounded, seeded fuzz of the router and of event lines: thousands of hostile requests and
/// lines, none of which may crash, answer 5xx, cross users, or lose what was stored.
/// `STEPO_FUZZ=100000` runs as many as asked.
@Suite("Fuzz: hostile requests and event lines")
struct FuzzTests {
    static var count: Int { ProcessInfo.processInfo.environment["STEPO_FUZZ"].flatMap(Int.init) ?? 3000 }

    final class Setup {
        let folder = NSTemporaryDirectory() + "stepo-fuzz-" + UUID().uuidString
        let store: Store
        let router: Router
        var tokens: [String] = []

        init() throws {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            store = try Store(location: try TestEngine.location(folder, "f.db"))
            router = Router(store: store)
            let lines = """
            {"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"chaucao","username":"chaucao","name":"Chau Cao"}}
            {"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"maya","username":"maya","name":"Maya Okonkwo"}}
            {"id":"j1","type":"journey","at":"2026-11-20T08:02:00Z","journey":{"id":"j1","owner":"chaucao","title":"Run"}}
            {"id":"s1","type":"step","at":"2026-11-20T09:00:00Z","step":{"id":"s1","journey":"j1","caption":"Trail run"}}
            {"id":"m1","type":"mediaReady","at":"2026-11-20T10:00:00Z","step":"s1"}
            {"id":"h1","type":"heart","at":"2026-11-20T10:05:00Z","actor":"maya","step":"s1"}
            {"id":"f1","type":"follow","at":"2026-11-20T10:06:00Z","actor":"chaucao","target":"maya"}
            """
            for line in lines.split(separator: "\n") { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
            tokens = [try store.tokens.create(for: try store.user("chaucao"), admin: false, at: 0),
                      try store.tokens.create(for: try store.user("maya"), admin: false, at: 0),
                      try store.tokens.create(for: nil, admin: true, at: 0), "stp_bogus", ""]
        }

        deinit { try? FileManager.default.removeItem(atPath: folder) }
    }

    /// Random JSON, sometimes deep, sometimes with hostile numbers and strings.
    static func value(_ rng: inout SplitMix, depth: Int = 0) -> String {
        switch rng.below(depth > 3 ? 6 : 9) {
        case 0: return "null"
        case 1: return rng.below(2) == 0 ? "true" : "false"
        case 2: return rng.pick(["0", "-1", "1", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
                                 "1e309", "1.5", "-0", "42"])
        case 3: return "\"" + rng.pick(["", "chaucao", "maya", "\\u0000", "\\ud800", "\u{1B}[2J", "a\\\"b", "@chaucao hi",
                                        String(repeating: "x", count: 2000), "\u{202E}evil", "2026-11-20T10:00:00Z"]) + "\""
        case 4: return "\"" + String((0..<rng.below(12)).map { _ in Character(Unicode.Scalar(UInt8(32 + rng.below(90)))) })
            .replacingOccurrences(of: "\\", with: "").replacingOccurrences(of: "\"", with: "") + "\""
        case 5: return String(repeating: "[", count: rng.below(3) == 0 ? 500 : 1) + "1" + String(repeating: "]", count: 1)
        case 6: return "[" + (0..<rng.below(4)).map { _ in value(&rng, depth: depth + 1) }.joined(separator: ",") + "]"
        default:
            let keys = ["id", "type", "at", "seq", "upTo", "user", "client", "mutations", "actor", "step", "target", "all",
                        "journeys", "text", "comment", "private", "state"]
            return "{" + (0..<rng.below(6)).map { _ in "\"\(rng.pick(keys))\":\(value(&rng, depth: depth + 1))" }
                .joined(separator: ",") + "}"
        }
    }

    @Test("hostile requests: never a 5xx, always a JSON answer, never another user's rows, nothing stored lost")
    func requests() throws {
        let setup = try Setup()
        var rng = SplitMix(seed: 11)
        let paths = ["/v1/health", "/v1/me", "/v1/counts", "/v1/activity", "/v1/mutations", "/v1/events", "/v1/preferences",
                     "/v1/steps/s1", "/v1/steps/s1/interactions", "/v1/users/maya", "/v1/journeys/j1", "/v1/rows/1/push",
                     "/v1/rows/abc/push", "/v2/x", "/v1/steps/%00", "/v1/users/" + String(repeating: "a", count: 5000), "/"]
        let chaucao = try #require(try setup.store.user("chaucao"))
        let mayaRows = Set(try setup.store.inboxes.activity(of: try #require(try setup.store.user("maya"))).map(\.id))
        let before = try setup.store.inboxes.counts(for: chaucao.key)
        for _ in 0..<Self.count {
            var headers: [String: String] = [:]
            let token = rng.pick(setup.tokens)
            if rng.below(5) > 0 { headers["Authorization"] = rng.pick(["Bearer ", "bearer ", "Basic ", "Bearer  "]) + token }
            var query: [String: String] = [:]
            for _ in 0..<rng.below(3) {
                query[rng.pick(["after", "limit", "wait", "platform", "panel"])] = rng.pick(["0", "-1", "1", "x", "99999999999999999999", "fcm", "0.5", "1000000"])
            }
            if query["wait"] != nil { query["wait"] = "0" }  // a fuzz must not sit in long-polls
            let body = rng.below(3) == 0 ? String((0..<rng.below(300)).map { _ in Character(Unicode.Scalar(UInt8(rng.below(128)))) })
                : Self.value(&rng)
            let request = HTTPRequest(method: rng.pick(["GET", "POST", "PUT", "DELETE", "PATCH", "get"]), path: rng.pick(paths),
                                      query: query, headers: headers, body: Data(body.utf8))
            let response = setup.router.respond(to: request)
            #expect(response.status < 500, "\(request.method) \(request.path) \(body.prefix(80)) → \(response.status)")
            let json = try? JSON.parse(response.body)
            #expect(json != nil, "\(request.path): not JSON")
            // An error has its shape; an events post whose every line was refused answers its report.
            if response.status >= 400, !(request.path == "/v1/events" && response.status == 422) {
                #expect(json?["error"]?["code"]?.string != nil, "\(request.method) \(request.path) → \(response.status)")
            }
            // chaucao's token never sees maya's rows.
            if token == setup.tokens[0], request.path == "/v1/activity", response.status == 200 {
                for row in json?["rows"]?.array ?? [] { #expect(!mayaRows.contains(row["id"]?.int ?? -1)) }
            }
        }
        // What was stored is still there: chaucao's rows, their content.
        #expect(try setup.store.inboxes.activity(of: chaucao).count >= 0)
        #expect(try setup.store.inboxes.counts(for: chaucao.key).unseen <= before.unseen + Self.count)
        #expect(try setup.store.recount(for: chaucao.key) == (try setup.store.inboxes.counts(for: chaucao.key)))
    }

    @Test("hostile event lines: each bad one refused with its line number, the good ones around it applied")
    func eventLines() throws {
        let setup = try Setup()
        var rng = SplitMix(seed: 23)
        var lines: [Data] = []
        var good = 0
        for i in 0..<Self.count {
            if i % 10 == 0 {
                // A known-good event among the noise: a heart from a new fan.
                good += 1
                lines.append(Data("""
                    {"id":"good-u\(i)","type":"user","at":"2026-11-21T00:00:00Z","user":{"id":"fan\(i)","username":"fan\(i)","name":"Fan"}}
                    """.utf8))
                lines.append(Data(#"{"id":"good-h\#(i)","type":"heart","at":"2026-11-21T00:00:01Z","actor":"fan\#(i)","step":"s1"}"#.utf8))
                continue
            }
            var line = Data(Self.value(&rng).utf8)
            if rng.below(4) == 0, !line.isEmpty {
                // Bytes flipped, cut, or invalid UTF-8 spliced in.
                switch rng.below(3) {
                case 0: line[rng.below(line.count)] ^= UInt8(1 << rng.below(8))
                case 1: line = line.prefix(rng.below(line.count))
                default: line.append(contentsOf: [0xC3, 0x28, 0xFF])
                }
            }
            lines.append(line.filter { $0 != 0x0A })
        }
        var rejected: [Int] = []
        let body = lines.reduce(into: Data()) { $0.append($1); $0.append(0x0A) }
        let report = try Ingestor(store: setup.store).ingest(LineReader(data: body), onRow: { _ in }, onReject: { line, _ in
            rejected.append(line)
        })
        #expect(report.applied >= good * 2)
        #expect(rejected.allSatisfy { $0 >= 1 && $0 <= lines.count })
        let owner = try #require(try setup.store.user("chaucao"))
        // The good hearts came within a second of each other: one batch counts every fan.
        let fans = try setup.store.inboxes.activity(of: owner, limit: Int.max).filter { $0.actor?.hasPrefix("fan") == true }
        #expect(fans.reduce(0) { $0 + ($1.members ?? 1) } == good)
        #expect(try setup.store.recount(for: owner.key) == (try setup.store.inboxes.counts(for: owner.key)))
    }
}
