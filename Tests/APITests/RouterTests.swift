import Foundation
import TestSupport
import Notifications
import Wire
import SQLite
import Testing
@testable import API
@testable import Backend

/// The router, called in-process (as the in-process transport will), on a real store file.
@Suite("The API router")
struct RouterTests {
    let folder = NSTemporaryDirectory() + "stepo-api-" + UUID().uuidString
    let store: Store
    let router: Router
    var tokens: [String: String] = [:]
    let admin: String

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        store = try Store(location: try TestEngine.location(folder, "api.db"))
        router = Router(store: store)
        let lines = """
        {"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"chaucao","username":"chaucao","name":"Chau Cao"}}
        {"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"maya","username":"maya","name":"Maya Okonkwo"}}
        {"id":"u3","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"an","username":"an.nguyen","name":"An Nguyễn"}}
        {"id":"p1","type":"privacy","at":"2026-11-20T08:01:00Z","user":"chaucao","private":true}
        {"id":"j1","type":"journey","at":"2026-11-20T08:02:00Z","journey":{"id":"j1","owner":"chaucao","title":"Run the ridge"}}
        {"id":"s1","type":"step","at":"2026-11-20T09:00:00Z","step":{"id":"s1","journey":"j1","caption":"Trail run"}}
        {"id":"m1","type":"mediaReady","at":"2026-11-20T10:00:00Z","step":"s1"}
        {"id":"h1","type":"heart","at":"2026-11-20T10:05:00Z","actor":"maya","step":"s1"}
        {"id":"h2","type":"share","at":"2026-11-20T10:06:00Z","actor":"maya","step":"s1"}
        {"id":"r1","type":"follow","at":"2026-11-20T10:07:00Z","actor":"an","target":"chaucao"}
        """
        for line in lines.split(separator: "\n") { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
        for id in ["chaucao", "maya"] {
            tokens[id] = try store.tokens.create(for: try store.user(id), admin: false, at: 0)
        }
        admin = try store.tokens.create(for: nil, admin: true, at: 0)
    }

    func call(_ method: String, _ path: String, as user: String? = nil, token: String? = nil,
              query: [String: String] = [:], body: String = "") -> (Int, JSON) {
        var headers: [String: String] = [:]
        if let bearer = token ?? user.flatMap({ tokens[$0] }) { headers["Authorization"] = "Bearer \(bearer)" }
        let response = router.respond(to: HTTPRequest(method: method, path: path, query: query, headers: headers, body: Data(body.utf8)))
        return (response.status, (try? JSON.parse(response.body)) ?? .null)
    }

    func freshCounts(_ user: String) throws -> JSON {
        try store.recount(for: try #require(try store.user(user)).key).json
    }

    @Test("following back or accepting a banned, deactivated or blocked person is refused with its reason, and nothing is stored",
          arguments: ["banned", "deactivated", "blocked", "blockedBy"])
    func actsTowardsSomeoneOutOfReach(change: String) throws {
        let lines = """
        {"id":"q1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"quinn","username":"quinn","name":"Quinn Avery"}}
        {"id":"q2","type":"follow","at":"2026-11-20T10:10:00Z","actor":"quinn","target":"chaucao"}
        """
        for line in lines.split(separator: "\n") { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
        let event = switch change {
        case "blocked": #"{"id":"x","type":"block","at":"2026-11-20T11:00:00Z","actor":"chaucao","target":"quinn"}"#
        case "blockedBy": #"{"id":"x","type":"block","at":"2026-11-20T11:00:00Z","actor":"quinn","target":"chaucao"}"#
        default: #"{"id":"x","type":"account","at":"2026-11-20T11:00:00Z","user":"quinn","state":"\#(change)"}"#
        }
        _ = try Ingestor(store: store).apply(Data(event.utf8))
        // chaucao is private: Quinn's follow was a request. Accept it, and follow Quinn back.
        let body = #"{"client":"c-q","mutations":[{"seq":1,"type":"acceptRequest","user":"quinn"},{"seq":2,"type":"followBack","user":"quinn"}]}"#
        let (status, json) = call("POST", "/v1/mutations", as: "chaucao", body: body)
        #expect(status == 200 && json["applied"]?.int == 2)
        let refused = json["refused"]?.array ?? []
        #expect(refused.count == 2, "\(json)")
        let expected = change.hasPrefix("blocked") ? "a block stands between chaucao and quinn" : "quinn is \(change) now"
        #expect(refused.allSatisfy { $0["reason"]?.string?.contains(expected) == true }, "\(refused)")
        let chau = try #require(try store.user("chaucao")), quinn = try #require(try store.user("quinn"))
        #expect(try !store.follows(chau.key, quinn.key) && !store.follows(quinn.key, chau.key))
        // A decline only takes the request away: it stands (a block took the request away already).
        guard !change.hasPrefix("blocked") else { return }
        let decline = call("POST", "/v1/mutations", as: "chaucao",
                           body: #"{"client":"c-q","mutations":[{"seq":3,"type":"declineRequest","user":"quinn"}]}"#)
        #expect(decline.1["refused"]?.array?.isEmpty ?? true, "\(decline.1)")
    }

    @Test("a row's push endpoint draws what the rules allow now: after a block, 410 pushWithheld with the reason, no words")
    func pushAfterBlock() throws {
        let chau = try #require(try store.user("chaucao"))
        let row = try #require(try store.inboxes.activity(of: chau).first { $0.actor == "maya" })
        let before = call("GET", "/v1/rows/\(row.id)/push", as: "chaucao", query: ["platform": "apns"])
        #expect(before.0 == 200 && before.1["payload"]?["aps"]?["alert"]?["title"]?.string == "Maya Okonkwo")
        _ = try Ingestor(store: store).apply(Data(#"{"id":"b1","type":"block","at":"2026-11-20T11:00:00Z","actor":"maya","target":"chaucao"}"#.utf8))
        for platform in ["apns", "fcm"] {
            let after = call("GET", "/v1/rows/\(row.id)/push", as: "chaucao", query: ["platform": platform])
            #expect(after.0 == 410)
            #expect(after.1["error"]?["code"]?.string == "pushWithheld")
            #expect(after.1["error"]?["message"]?.string == "No push goes out for it now: a block stands between its actor and its recipient.")
            #expect(!after.1.serialized.contains("Maya") && !after.1.serialized.contains("Trail run"))
        }
    }

    @Test("no token, a bad token, or a user token posting events is refused")
    func auth() {
        #expect(call("GET", "/v1/counts").0 == 401)
        #expect(call("GET", "/v1/counts", token: "stp_nope").0 == 401)
        #expect(call("POST", "/v1/events", as: "maya", body: "{}").0 == 403)
        #expect(call("GET", "/v1/health").0 == 200)
    }

    @Test("activity pages the user's rows by version, with counts and the next version")
    func activity() throws {
        let (status, json) = call("GET", "/v1/activity", as: "chaucao", query: ["after": "0", "limit": "2"])
        #expect(status == 200)
        let rows = try #require(json["rows"]?.array)
        #expect(rows.map { $0["kind"]?.string } == ["steppedWithHeart", "steppedWithShare"])
        #expect(json["counts"] == .object([("unseen", 3), ("unread", 3)]))
        let next = try #require(json["next"]?.int)
        let (_, rest) = call("GET", "/v1/activity", as: "chaucao", query: ["after": String(next)])
        #expect(rest["rows"]?.array?.map { $0["kind"]?.string } == ["followRequest"])
        #expect(call("GET", "/v1/activity", as: "chaucao", query: ["limit": "0"]).0 == 400)
    }

    @Test("a mutation batch answers counts equal to a fresh COUNT, and a replayed seq is a no-op")
    func mutations() throws {
        let rows = try #require(call("GET", "/v1/activity", as: "chaucao").1["rows"]?.array)
        let first = try #require(rows.first?["id"]?.int)
        let body = #"{"client":"c-1","mutations":[{"seq":1,"type":"read","id":\#(first)},{"seq":2,"type":"seen","upTo":999999}]}"#
        let (status, json) = call("POST", "/v1/mutations", as: "chaucao", body: body)
        #expect(status == 200)
        #expect(json["applied"] == 2)
        #expect(json["counts"] == (try freshCounts("chaucao")))
        #expect(json["counts"] == .object([("unseen", 0), ("unread", 2)]))
        let version = try store.currentVersion()
        let again = call("POST", "/v1/mutations", as: "chaucao", body: body)
        #expect(again.1["applied"] == 2)
        #expect(try store.currentVersion() == version)
    }

    @Test("a replayed batch ending in seen leaves a row that arrived between the two posts unseen")
    func replayAfterNewRow() throws {
        let body = #"{"client":"c-9","mutations":[{"seq":1,"type":"seen","upTo":999999}]}"#
        #expect(call("POST", "/v1/mutations", as: "chaucao", body: body).1["counts"]?["unseen"] == 0)
        for line in [#"{"id":"z1","type":"user","at":"2026-11-20T11:00:00Z","user":{"id":"zed","username":"zed","name":"Zed"}}"#,
                     #"{"id":"z2","type":"follow","at":"2026-11-20T11:01:00Z","actor":"zed","target":"chaucao"}"#] {
            _ = try Ingestor(store: store).apply(Data(line.utf8))
        }
        let replay = call("POST", "/v1/mutations", as: "chaucao", body: body)
        #expect(replay.0 == 200 && replay.1["applied"] == 1)
        #expect(replay.1["counts"]?["unseen"] == 1)
        #expect(try freshCounts("chaucao")["unseen"] == 1)
        // A seq of 0 or below is refused whole.
        for seq in ["0", "-1"] {
            let refused = call("POST", "/v1/mutations", as: "chaucao",
                               body: #"{"client":"c-9","mutations":[{"seq":\#(seq),"type":"seen","upTo":999999}]}"#)
            #expect(refused.0 == 400)
        }
        #expect(try freshCounts("chaucao")["unseen"] == 1)
    }

    @Test("accepting a request from the inbox follows through and notifies the requester")
    func acceptRequest() throws {
        let body = #"{"client":"c-1","mutations":[{"seq":1,"type":"acceptRequest","user":"an"}]}"#
        #expect(call("POST", "/v1/mutations", as: "chaucao", body: body).0 == 200)
        let an = try #require(try store.user("an"))
        #expect(try store.follows(an.key, try #require(try store.user("chaucao")).key))
        #expect(try store.inboxes.activity(of: an).map(\.kind) == [.followRequestAccepted])
        // Accepted already (from another device): refused, said so, and the seq is consumed.
        let twice = call("POST", "/v1/mutations", as: "chaucao",
                         body: #"{"client":"c-2","mutations":[{"seq":1,"type":"acceptRequest","user":"an"}]}"#)
        #expect(twice.0 == 200 && twice.1["applied"] == 1)
        #expect(twice.1["refused"] == .array([.object([("seq", 1), ("reason", "no pending follow request from an to chaucao")])]))
    }

    @Test("another user's row is refused exactly as an unknown id is, and nothing is stamped")
    func otherUsersRow() throws {
        let row = try #require(call("GET", "/v1/activity", as: "chaucao").1["rows"]?.array?.first?["id"]?.int)
        let foreign = call("POST", "/v1/mutations", as: "maya", body: #"{"client":"m","mutations":[{"seq":1,"type":"read","id":\#(row)}]}"#)
        let unknown = call("POST", "/v1/mutations", as: "maya", body: #"{"client":"n","mutations":[{"seq":1,"type":"read","id":999999}]}"#)
        #expect(foreign.0 == 200 && unknown.0 == 200)
        #expect(foreign.1["refused"]?.array?.first?["reason"] == .string("no row \(row)"))
        #expect(unknown.1["refused"]?.array?.first?["reason"] == "no row 999999")
        #expect(try store.inboxes.row(row)?.readAt == nil)
    }

    @Test("from the moment an account is banned, its tokens get 403 on every endpoint and change nothing")
    func bannedAccount() throws {
        _ = try Ingestor(store: store).apply(Data(#"{"id":"ban","type":"account","at":"2026-11-21T00:00:00Z","user":"maya","state":"banned"}"#.utf8))
        let endpoints: [(String, String, String)] = [
            ("GET", "/v1/activity", ""), ("GET", "/v1/counts", ""), ("GET", "/v1/me", ""), ("GET", "/v1/preferences", ""),
            ("PUT", "/v1/preferences", #"{"all":false}"#), ("GET", "/v1/steps/s1", ""), ("GET", "/v1/users/chaucao", ""),
            ("POST", "/v1/mutations", #"{"client":"m","mutations":[{"seq":1,"type":"followBack","user":"chaucao"},{"seq":2,"type":"preferences","all":false}]}"#),
        ]
        let before = try store.currentVersion()
        for (method, path, body) in endpoints {
            let (status, json) = call(method, path, as: "maya", body: body)
            #expect(status == 403, "\(method) \(path)")
            #expect(json["error"]?["code"] == "accountInactive")
        }
        #expect(try store.currentVersion() == before)
        #expect(try store.user("maya")?.preferences.all == true)
    }

    @Test("a revoked or expired token is 401")
    func revokedToken() throws {
        let token = try #require(tokens["chaucao"])
        #expect(call("GET", "/v1/counts", token: token).0 == 200)
        #expect(try store.tokens.revoke(token, at: 1) == 1)
        #expect(call("GET", "/v1/counts", token: token).0 == 401)
        let soon = try store.tokens.create(for: try store.user("chaucao"), admin: false, at: 0, expiresAt: 1)
        #expect(call("GET", "/v1/counts", token: soon).0 == 401)
    }

    @Test("a number past 64 bits, or a seq of 0, is a 400 naming the field, and nothing is applied")
    func numbers() throws {
        let big = call("POST", "/v1/mutations", as: "chaucao", body: #"{"client":"c","mutations":[{"seq":1,"type":"seen","upTo":9223372036854775808}]}"#)
        #expect(big.0 == 400)
        #expect(big.1["error"]?["message"]?.string?.contains("upTo") == true)
        let zero = call("POST", "/v1/mutations", as: "chaucao", body: #"{"client":"c","mutations":[{"seq":0,"type":"seen","upTo":1}]}"#)
        #expect(zero.0 == 400 && zero.1["error"]?["message"]?.string?.contains("seq") == true)
        #expect(call("GET", "/v1/activity", as: "chaucao", query: ["after": "99999999999999999999"]).0 == 400)
        #expect(try store.inboxes.counts(for: try #require(try store.user("chaucao")).key).unseen > 0)
    }

    @Test("malformed, invalid, oversized and wrong-method requests get their 4xx")
    func badRequests() {
        #expect(call("POST", "/v1/mutations", as: "chaucao", body: "{not json").0 == 400)
        #expect(call("POST", "/v1/mutations", as: "chaucao", body: #"{"client":"bad client","mutations":[]}"#).0 == 400)
        #expect(call("POST", "/v1/mutations", as: "chaucao", body: #"{"client":"c","mutations":[{"seq":1,"type":"dance"}]}"#).0 == 400)
        #expect(call("DELETE", "/v1/counts", as: "chaucao").0 == 405)
        #expect(call("GET", "/v1/nowhere", as: "chaucao").0 == 404)
        #expect(call("POST", "/v1/mutations", as: "chaucao", body: String(repeating: " ", count: (1 << 20) + 1)).0 == 413)
        let (status, json) = call("GET", "/v1/counts", as: "chaucao")
        #expect(status == 200 && json["unseen"] != nil)
    }

    @Test("an admin token posts events in the NDJSON contract")
    func postEvents() throws {
        let body = #"{"id":"h9","type":"heart","at":"2026-11-20T11:00:00Z","actor":"an","step":"s1"}"# + "\n{oops\n"
        let (status, json) = call("POST", "/v1/events", token: admin, body: body)
        #expect(status == 200)
        #expect(json["applied"] == 1 && json["rowsWritten"] == 1)
        #expect(json["rows"] == nil, "rows only when asked: \(json)")
        #expect(json["rejected"]?.array?.first?["line"] == 2)
        // Asked, the first N rows the events wrote, in order.
        let two = #"{"id":"h10","type":"share","at":"2026-11-20T11:01:00Z","actor":"an","step":"s1"}"# + "\n"
            + #"{"id":"f10","type":"follow","at":"2026-11-20T11:02:00Z","actor":"chaucao","target":"maya"}"#
        let asked = call("POST", "/v1/events", token: admin, query: ["rows": "1"], body: two)
        #expect(asked.0 == 200 && asked.1["applied"] == 2 && asked.1["rowsWritten"] == 2, "\(asked)")
        #expect(asked.1["rows"]?.array?.count == 1 && asked.1["rows"]?.array?.first?["event"] == "h10", "\(asked.1)")
        for bad in ["-1", "10001", "x"] {
            let refused = call("POST", "/v1/events", token: admin, query: ["rows": bad], body: two)
            #expect(refused.0 == 400 && refused.1["error"]?["message"]?.string?.contains("rows") == true)
        }
    }

    @Test("the trust budget is for an admin token only; its span defaults to the week up to the newest event; bad times are 400")
    func stats() throws {
        let (status, json) = call("GET", "/v1/stats", token: admin)
        #expect(status == 200)
        #expect(json["until"] == "2026-11-20T10:07:00Z" && json["since"] == "2026-11-13T10:07:00Z")
        #expect(json["categories"]?["stepWith"]?["sent"] == 2 && json["categories"]?["social"]?["rows"] == 1)
        #expect(json["kinds"]?["followRequest"]?["sent"] == 1)
        let narrow = call("GET", "/v1/stats", token: admin, query: ["since": "2026-11-20T10:06:00Z", "until": "2026-11-20T10:06:30Z"])
        #expect(narrow.0 == 200 && narrow.1["categories"]?["stepWith"]?["rows"] == 1)
        #expect(call("GET", "/v1/stats", as: "chaucao").0 == 403)
        #expect(call("GET", "/v1/stats").0 == 401)
        let bad = call("GET", "/v1/stats", token: admin, query: ["since": "yesterday"])
        #expect(bad.0 == 400 && bad.1["error"]?["message"]?.string?.contains("RFC 3339") == true)
        #expect(call("GET", "/v1/stats", token: admin, query: ["since": "2026-11-21T00:00:00Z", "until": "2026-11-20T00:00:00Z"]).0 == 400)
        #expect(call("POST", "/v1/stats", token: admin).0 == 405)
        let refused = router.respond(to: HTTPRequest(method: "POST", path: "/v1/stats", query: [:],
                                                     headers: ["Authorization": "Bearer \(admin)"], body: Data()))
        #expect(refused.headers.contains { $0.name == "Allow" && $0.value == "GET, HEAD" })
        #expect(call("HEAD", "/v1/stats", token: admin).0 == 200)
        #expect(call("GET", "/v1/stats", token: admin, query: ["since": "0001-01-01T00:00:00Z"]).0 == 400)
    }

    @Test("a step opens for its owner; to someone who may not see it, it is gone, with the fallback; unknown is 404")
    func stepVisibility() throws {
        let (status, json) = call("GET", "/v1/steps/s1", as: "chaucao")
        #expect(status == 200)
        #expect(json["step"]?["hearts"] == 1 && json["step"]?["shares"] == 1)
        #expect(json["step"]?["caption"] == "Trail run")
        // chaucao is private and maya does not follow her.
        let hidden = call("GET", "/v1/steps/s1", as: "maya")
        #expect(hidden.0 == 410)
        #expect(hidden.1["error"]?["message"] == "This content is no longer available")
        #expect(hidden.1["error"]?["fallback"] == .object([("screen", "profile"), ("user", "chaucao")]))
        #expect(call("GET", "/v1/steps/nope", as: "chaucao").0 == 404)
        #expect(call("GET", "/v1/steps/s1/interactions", as: "chaucao").1["interactions"]?.array?.count == 2)
    }

    @Test("a deleted step answers 410 and falls back to its owner's profile")
    func deletedStep() throws {
        _ = try Ingestor(store: store).apply(Data(#"{"id":"d1","type":"delete","at":"2026-11-21T08:00:00Z","step":"s1"}"#.utf8))
        let (status, json) = call("GET", "/v1/steps/s1", as: "chaucao")
        #expect(status == 410)
        #expect(json["error"]?["fallback"]?["user"] == "chaucao")
    }

    @Test("a profile shows the follow state: An asked to follow chaucao")
    func profile() {
        let (status, json) = call("GET", "/v1/users/an", as: "chaucao")
        #expect(status == 200)
        #expect(json["user"]?["name"] == "An Nguyễn")
        #expect(json["user"]?["requestedYou"] == true)
        #expect(json["user"]?["following"] == false)
        #expect(call("GET", "/v1/users/ghost", as: "chaucao").0 == 404)
    }

    @Test("a journey lists its steps and its people panel")
    func journey() {
        let (status, json) = call("GET", "/v1/journeys/j1", as: "chaucao")
        #expect(status == 200)
        #expect(json["journey"]?["title"] == "Run the ridge")
        #expect(json["journey"]?["steps"]?.array?.count == 1)
        #expect(json["journey"]?["people"]?.array != nil)
    }

    @Test("preferences read and change; a bad value is 400")
    func preferences() {
        #expect(call("GET", "/v1/preferences", as: "maya").1["journeys"] == true)
        let (status, json) = call("PUT", "/v1/preferences", as: "maya", body: #"{"journeys":false}"#)
        #expect(status == 200 && json["journeys"] == false && json["customFollow"] == .array([]))
        #expect(call("GET", "/v1/preferences", as: "maya").1["journeys"] == false)
        #expect(call("PUT", "/v1/preferences", as: "maya", body: #"{"journeys":"no"}"#).0 == 400)
    }

    @Test("quiet hours: PUT sets them, GET shows them, null turns them off; a zone that is no zone is 400 and changes nothing")
    func quietHours() {
        #expect(call("GET", "/v1/preferences", as: "maya").1["quietHours"] == .null)
        let set = call("PUT", "/v1/preferences", as: "maya", body: #"{"quietHours":{"from":"22:00","to":"07:00","zone":"Europe/Paris"}}"#)
        #expect(set.0 == 200 && set.1["quietHours"]?["zone"] == "Europe/Paris" && set.1["quietHours"]?["from"] == "22:00")
        let bad = call("PUT", "/v1/preferences", as: "maya", body: #"{"quietHours":{"from":"22:00","to":"07:00","zone":"Mars/Base"}, "all":false}"#)
        #expect(bad.0 == 400 && "\(bad.1)".contains("quietHours.zone"))
        let kept = call("GET", "/v1/preferences", as: "maya").1
        #expect(kept["quietHours"]?["to"] == "07:00" && kept["all"] == true)
        // Through a mutation, as the inbox sends it.
        let mutation = call("POST", "/v1/mutations", as: "maya", body: #"{"client":"c-quiet","mutations":[{"seq":1,"type":"preferences","quietHours":null}]}"#)
        #expect(mutation.0 == 200 && mutation.1["applied"] == 1)
        #expect(call("GET", "/v1/preferences", as: "maya").1["quietHours"] == .null)
    }

    @Test("an activity page carries the entities its rows point at")
    func entities() throws {
        let json = call("GET", "/v1/activity", as: "chaucao").1
        let steps = try #require(json["entities"]?["steps"]?.array)
        #expect(steps.map { $0["id"]?.string } == ["s1"])
        let users = try #require(json["entities"]?["users"]?.array).compactMap { $0["id"]?.string }
        #expect(Set(users).isSuperset(of: ["maya", "an", "chaucao"]))
    }
}

/// docs/api.md against the router's table.
@Suite("docs/api.md")
struct APIDocTests {
    @Test("every route the router serves has its section in docs/api.md, and every section's route is served")
    func everyEndpoint() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/api.md"), encoding: .utf8)
        for endpoint in Router.endpoints {
            let heading = "### `\(endpoint.methods.joined(separator: "|")) \(endpoint.path)`"
            #expect(doc.contains(heading + "\n"), "docs/api.md has no section \(heading)")
        }
        let sections = doc.split(separator: "\n").filter { $0.hasPrefix("### `") }
        let served = Set(Router.endpoints.map { "### `\($0.methods.joined(separator: "|")) \($0.path)`" })
        for section in sections { #expect(served.contains(String(section)), "docs/api.md documents \(section), which the router does not serve") }
        #expect(sections.count == Router.endpoints.count)
    }
}

/// `/v1/devices`: a user's own tokens only.
@Suite("Devices through the API")
struct DeviceRouteTests {
    @Test("register, list and remove a device; another user's token is not theirs to see or remove; bad input is 400")
    func devices() throws {
        let t = try RouterTests()
        let (status, json) = t.call("POST", "/v1/devices", as: "maya", body: #"{"platform":"fcm","token":"tok-1"}"#)
        #expect(status == 200)
        #expect(json["devices"]?.array?.first?["token"]?.string == "tok-1")
        #expect(json["devices"]?.array?.first?["environment"]?.string == "production")
        #expect(t.call("GET", "/v1/devices", as: "chaucao").1["devices"] == .array([]))
        #expect(t.call("DELETE", "/v1/devices/tok-1", as: "chaucao").0 == 404)
        for bad in [#"{"platform":"pager","token":"x"}"#, #"{"platform":"apns","token":""}"#,
                    #"{"platform":"apns","token":"a b"}"#, #"{"platform":"apns","token":"t","environment":"moon"}"#] {
            #expect(t.call("POST", "/v1/devices", as: "maya", body: bad).0 == 400, "\(bad)")
        }
        // Registered again by chaucao: it moves.
        #expect(t.call("POST", "/v1/devices", as: "chaucao", body: #"{"platform":"fcm","token":"tok-1"}"#).0 == 200)
        #expect(t.call("GET", "/v1/devices", as: "maya").1["devices"] == .array([]))
        #expect(t.call("DELETE", "/v1/devices/tok-1", as: "chaucao").0 == 200)
        #expect(t.call("GET", "/v1/devices", as: "chaucao").1["devices"] == .array([]))
        #expect(t.call("PUT", "/v1/devices", as: "chaucao").0 == 405)
    }
}

/// A page's `ETag`: a repeated page is answered 304 without being read; any change to the store
/// names a new page; another reader's page is another page.
@Suite("Pages by tag")
struct PageTagTests {
    let folder = NSTemporaryDirectory() + "stepo-tag-" + UUID().uuidString

    func respond(_ router: Router, _ token: String, query: [String: String], tag: String? = nil) -> HTTPResponse {
        var headers = ["Authorization": "Bearer \(token)"]
        if let tag { headers["If-None-Match"] = tag }
        return router.respond(to: HTTPRequest(method: "GET", path: "/v1/activity", query: query, headers: headers))
    }

    static func tag(_ response: HTTPResponse) -> String? { response.headers.first { $0.name == "ETag" }?.value }

    @Test("the same page asked with its tag is 304 and empty; a change anywhere, another reader, another query or a long-poll reads it again")
    func notModified() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try Store(location: try TestEngine.location(folder, "tag.db"))
        let router = Router(store: store)
        let ingest = { (text: String) in for line in text.split(separator: "\n") { _ = try Ingestor(store: store).apply(Data(line.utf8)) } }
        try ingest("""
            {"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"chaucao","username":"chaucao","name":"Chau Cao"}}
            {"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"maya","username":"maya","name":"Maya Okonkwo"}}
            {"id":"j1","type":"journey","at":"2026-11-20T08:02:00Z","journey":{"id":"j1","owner":"chaucao","title":"Run the ridge"}}
            {"id":"s1","type":"step","at":"2026-11-20T09:00:00Z","step":{"id":"s1","journey":"j1","caption":"Trail run"}}
            {"id":"m1","type":"mediaReady","at":"2026-11-20T10:00:00Z","step":"s1"}
            {"id":"h1","type":"heart","at":"2026-11-20T10:05:00Z","actor":"maya","step":"s1"}
            """)
        let chau = try store.tokens.create(for: try store.user("chaucao"), admin: false, at: 0)
        let maya = try store.tokens.create(for: try store.user("maya"), admin: false, at: 0)
        let query = ["limit": "50"]

        let first = respond(router, chau, query: query)
        #expect(first.status == 200)
        let tag = try #require(Self.tag(first))
        #expect(first.headers.contains { $0.name == "Vary" && $0.value == "Authorization" })
        // Asked again with it: nothing is read, nothing is sent.
        let again = respond(router, chau, query: query, tag: tag)
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(Self.tag(again) == tag)
        #expect(respond(router, chau, query: query, tag: "W/\(tag)").status == 304, "If-None-Match compares weakly")
        #expect(respond(router, chau, query: query, tag: "\"other\", \(tag)").status == 304, "a list of tags")
        // The same page without the tag is the same bytes under the same tag.
        let plain = respond(router, chau, query: query)
        #expect(plain.body == first.body)
        #expect(Self.tag(plain) == tag)
        // Another reader, another query: other pages, whatever tag they are sent with.
        #expect(respond(router, maya, query: query, tag: tag).status == 200)
        #expect(respond(router, chau, query: ["limit": "49"], tag: tag).status == 200)
        #expect(respond(router, chau, query: ["limit": "50", "after": "1"], tag: tag).status == 200)
        // A long-poll with the tag is a long-poll, never a 304.
        #expect(respond(router, chau, query: ["limit": "50", "wait": "1"], tag: tag).status != 304)
        // Nor when its wait ran out with nothing new: the server asks once more, past the deadline.
        var expired = HTTPRequest(method: "GET", path: "/v1/activity", query: ["limit": "50", "wait": "1"],
                                  headers: ["Authorization": "Bearer \(chau)", "If-None-Match": tag])
        expired.deadline = Date().addingTimeInterval(-1)
        #expect(router.respond(to: expired).status == 200)

        // A change anywhere in the store — here a profile Chau's page shows, made by someone
        // else's event with no row for Chau — names a new page, read afresh.
        try ingest(#"{"id":"n1","type":"user","at":"2026-11-20T11:00:00Z","user":{"id":"maya","username":"maya","name":"Maya O."}}"#)
        let changed = respond(router, chau, query: query, tag: tag)
        #expect(changed.status == 200)
        let newTag = try #require(Self.tag(changed))
        #expect(newTag != tag)
        #expect(String(decoding: changed.body, as: UTF8.self).contains("Maya O."))
        // A seen mark is a change too.
        let marked = router.respond(to: HTTPRequest(method: "POST", path: "/v1/mutations", headers: ["Authorization": "Bearer \(chau)"],
                                                    body: Data(#"{"client":"tag-test","mutations":[{"seq":1,"type":"seen","upTo":1000000}]}"#.utf8)))
        #expect(marked.status == 200)
        #expect(respond(router, chau, query: query, tag: newTag).status == 200)
    }
}

@Test("a bearer token is read in any case of the scheme, with spaces and tabs around it; anything else is no token",
      arguments: [("Bearer abc", "abc"), ("bearer abc", "abc"), ("BEARER abc", "abc"), ("Bearer   abc \t", "abc"),
                  ("Bearer \tabc", "abc"), ("Bearer ", nil), ("Bearer", nil), ("Bearer\tabc", nil), ("Basic abc", nil),
                  ("Bearer\u{0}abc", nil), ("Bearerabc", nil), ("", nil), ("Bearer a b", "a b"), ("Bearer ü", "ü")] as [(String, String?)])
func bearerTokens(header: String, token: String?) {
    #expect(HTTPRequest.bearer(in: header) == token)
    #expect(HTTPRequest(method: "GET", path: "/", headers: ["AUTHORIZATION": header]).bearerToken == token)
}
