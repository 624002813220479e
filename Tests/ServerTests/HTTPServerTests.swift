import Foundation
import TestSupport
import HTTPClient
import Notifications
import Wire
import Testing
@testable import Backend
@testable import Server

/// The real server on an ephemeral 127.0.0.1 port, spoken to over HTTP/1.1 with libcurl.
@Suite("The HTTP server")
struct HTTPServerTests {
    let folder = NSTemporaryDirectory() + "stepo-http-" + UUID().uuidString
    let server: HTTPServer
    let token: String
    let admin: String
    var base: String { "http://127.0.0.1:\(server.port)" }

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let store = try Store(location: try TestEngine.location(folder, "http.db"))
        let lines = """
        {"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"chaucao","username":"chaucao","name":"Chau Cao"}}
        {"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"maya","username":"maya","name":"Maya Okonkwo"}}
        {"id":"f1","type":"follow","at":"2026-11-20T08:01:00Z","actor":"maya","target":"chaucao"}
        """
        for line in lines.split(separator: "\n") { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
        token = try store.createToken(for: try store.user("chaucao"), admin: false, at: 0)
        admin = try store.createToken(for: nil, admin: true, at: 0)
        server = try HTTPServer(databasePath: try TestEngine.location(folder, "http.db"), port: 0, threads: 2)
    }

    func call(_ method: String, _ path: String, token: String? = nil, body: Data? = nil) async throws -> (Int, JSON) {
        // A blocking request, on a thread of its own: the tasks' few threads stay free.
        let url = base + path
        let answer = try await withCheckedThrowingContinuation { (done: CheckedContinuation<HTTPAnswer, Error>) in
            Thread {
                done.resume(with: Result {
                    try HTTPClient().perform(method: method, url: url, headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [],
                                             body: body, timeout: 70)
                })
            }.start()
        }
        return (answer.status, (try? JSON.parse(answer.body)) ?? .null)
    }

    @Test("the server listens on the port the system chose and answers the API")
    func serves() async throws {
        #expect(server.port > 0)
        #expect(try await call("GET", "/v1/health").0 == 200)
        let (status, counts) = try await call("GET", "/v1/counts", token: token)
        #expect(status == 200)
        #expect(counts == .object([("unseen", 1), ("unread", 1)]))
        let activity = try await call("GET", "/v1/activity?after=0&limit=10", token: token).1
        #expect(activity["rows"]?.array?.first?["body"] == "Started following you")
    }

    @Test("malformed, unauthorized, oversized and wrong-method requests get their 4xx, and the server keeps serving")
    func badRequests() async throws {
        #expect(try await call("GET", "/v1/counts").0 == 401)
        #expect(try await call("POST", "/v1/mutations", token: token, body: Data("{oops".utf8)).0 == 400)
        #expect(try await call("PUT", "/v1/activity", token: token).0 == 405)
        #expect(try await call("POST", "/v1/mutations", token: token, body: Data(count: (1 << 20) + 10)).0 == 413)
        #expect(try await call("GET", "/v2/anything").0 == 404)
        #expect(try await call("GET", "/v1/health").0 == 200)
    }

    @Test("a mutation over HTTP stamps the rows and answers counts equal to a fresh COUNT")
    func mutation() async throws {
        let body = Data(#"{"client":"c-http","mutations":[{"seq":1,"type":"seen","upTo":1000000}]}"#.utf8)
        let (status, json) = try await call("POST", "/v1/mutations", token: token, body: body)
        #expect(status == 200)
        #expect(json["counts"] == .object([("unseen", 0), ("unread", 1)]))
        let store = try Store(location: try TestEngine.location(folder, "http.db"))
        let key = try #require(try store.user("chaucao")).key
        #expect(try store.recount(for: key).unseen == 0)
    }

    @Test("a long-poll answers as soon as an event makes a row for the user, and an idle one at its deadline")
    func longPoll() async throws {
        let next = try #require(try await call("GET", "/v1/activity?after=0", token: token).1["next"]?.int)
        let started = Date()
        async let waited = call("GET", "/v1/activity?after=\(next)&wait=10", token: token)
        try await Task.sleep(nanoseconds: 300_000_000)
        let event = #"{"id":"u3","type":"user","at":"2026-11-20T09:00:00Z","user":{"id":"an","username":"an","name":"An Nguyễn"}}"# + "\n"
            + #"{"id":"f3","type":"follow","at":"2026-11-20T09:01:00Z","actor":"an","target":"chaucao"}"#
        #expect(try await call("POST", "/v1/events", token: admin, body: Data(event.utf8)).0 == 200)
        let (status, json) = try await waited
        let elapsed = Date().timeIntervalSince(started)
        #expect(status == 200)
        #expect(elapsed < 5, "answered after \(elapsed) s")
        #expect(json["rows"]?.array?.isEmpty == false)
        let idleStart = Date()
        let idle = try await call("GET", "/v1/activity?after=\(1_000_000)&wait=1", token: token)
        #expect(idle.0 == 200 && idle.1["rows"]?.array?.isEmpty == true)
        #expect(Date().timeIntervalSince(idleStart) >= 0.9)
    }
}
