import Deliver
import Foundation
import HTTPClient
import Notifications
import Testing
import TestSupport

/// The push bench measures the worker against its own stand-in (`stepo-bench standins`:
/// nghttp2, the checks in Swift) because the tests' (Granian, the checks in Python) costs as
/// much a request as the worker does a push. The bench trusts it to refuse what the providers
/// refuse: both are sent the same requests, good and broken, and must answer alike.
@Suite("The bench's stand-in answers as the tests' does", .serialized)
final class StandInTests {
    let folder = NSTemporaryDirectory() + "stepo-standins-" + UUID().uuidString
    var running: [Spawn.Background] = []

    deinit {
        for standIn in running { standIn.stop() }
        try? FileManager.default.removeItem(atPath: folder)
    }

    struct Case {
        let name: String
        let request: HTTPRequest
    }

    /// The stand-in's APNs key and a stranger's, and provider tokens signed with either.
    struct Signer {
        let now = Int(Date().timeIntervalSince1970)
        let p8: String, strangerP8: String

        init(keys: String, stranger: String) throws {
            p8 = String(decoding: try #require(FileManager.default.contents(atPath: keys + "/apns.p8")), as: UTF8.self)
            strangerP8 = String(decoding: try #require(FileManager.default.contents(atPath: stranger + "/apns.p8")), as: UTF8.self)
        }

        func apnsToken(_ pem: String, kid: String, iat: Int?) throws -> String {
            try JWT.es256(header: .object([("alg", "ES256"), ("kid", .string(kid))]),
                          claims: .object([("iss", "TEAM123456"), ("iat", .int(iat ?? now))]), pem: pem)
        }
    }

    /// The requests: each named, sent to the stand-in at `url` whose keys are in `keys`;
    /// `stranger` holds keys the stand-in never issued.
    func cases(url: String, keys: String, stranger: String) throws -> [Case] {
        let signer = try Signer(keys: keys, stranger: stranger)
        let (now, p8, strangerP8) = (signer.now, signer.p8, signer.strangerP8)
        func apnsToken(_ pem: String, kid: String = "KEY1234567", iat: Int? = nil) throws -> String {
            try signer.apnsToken(pem, kid: kid, iat: iat)
        }
        let good = try apnsToken(p8)
        func apns(_ device: String, bearer: String? = nil, omit: String? = nil, priority: String = "10",
                  body: String = #"{"aps":{"alert":{"title":"Jules"}}}"#) -> HTTPRequest {
            let headers = [("apns-topic", "app.stepo.ios"), ("apns-push-type", "alert"), ("apns-priority", priority),
                           ("authorization", "bearer " + (bearer ?? good))].filter { $0.0 != omit }
            return HTTPRequest(method: "POST", url: url + "/3/device/" + device, headers: headers, body: Data(body.utf8))
        }
        func account(_ folder: String) throws -> JSON { try JSON.parse(try #require(FileManager.default.contents(atPath: folder + "/service.json"))) }
        func grant(_ folder: String, scope: String = "https://www.googleapis.com/auth/firebase.messaging") throws -> HTTPRequest {
            let key = try #require(try account(folder)["private_key"]?.string)
            let assertion = try JWT.rs256(header: .object([("alg", "RS256"), ("typ", "JWT")]),
                                          claims: .object([("iss", "stepo@stepo-test.iam.gserviceaccount.com"), ("scope", .string(scope)),
                                                           ("aud", .string(url + "/token")), ("iat", .int(now)), ("exp", .int(now + 3600))]),
                                          pem: key)
            return HTTPRequest(method: "POST", url: url + "/token", headers: [("content-type", "application/x-www-form-urlencoded")],
                               body: Data("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8))
        }
        func fcm(_ device: String, bearer: String = "Bearer stand-in-access-token") -> HTTPRequest {
            HTTPRequest(method: "POST", url: url + "/v1/projects/stepo-test/messages:send",
                        headers: [("authorization", bearer), ("content-type", "application/json")],
                        body: Data(#"{"message":{"token":"\#(device)","android":{"priority":"high"}}}"#.utf8))
        }
        return [
            Case(name: "APNs, all in order", request: apns("ok-1")),
            Case(name: "APNs, a provider token signed by a key not theirs", request: apns("ok-2", bearer: try apnsToken(strangerP8))),
            Case(name: "APNs, a provider token with another key id", request: apns("ok-3", bearer: try apnsToken(p8, kid: "KEY0000000"))),
            Case(name: "APNs, a provider token two hours old", request: apns("ok-4", bearer: try apnsToken(p8, iat: now - 7200))),
            Case(name: "APNs, a provider token that is not a JWT", request: apns("ok-11", bearer: "foo.bar.baz")),
            Case(name: "APNs, a provider token without bearer", request: HTTPRequest(method: "POST", url: url + "/3/device/ok-12",
                headers: [("apns-topic", "app.stepo.ios"), ("apns-push-type", "alert"), ("apns-priority", "10"), ("authorization", good)],
                body: Data(#"{"aps":{}}"#.utf8))),
            Case(name: "APNs, no apns-topic", request: apns("ok-5", omit: "apns-topic")),
            Case(name: "APNs, priority 7", request: apns("ok-6", priority: "7")),
            Case(name: "APNs, a payload over 4,096 bytes", request: apns("ok-7", body: #"{"aps":{"alert":"\#(String(repeating: "x", count: 4200))"}}"#)),
            Case(name: "APNs, no aps dictionary", request: apns("ok-8", body: #"{"alert":"x"}"#)),
            Case(name: "APNs, a token gone", request: apns("gone-1")),
            Case(name: "APNs, a bad token", request: apns("bad-1")),
            Case(name: "APNs, busy the first time", request: apns("busy-1")),
            Case(name: "APNs, busy no more", request: apns("busy-1")),
            Case(name: "FCM, a grant signed by the service account", request: try grant(keys)),
            Case(name: "FCM, a grant signed by another account", request: try grant(stranger)),
            Case(name: "FCM, a grant for another scope", request: try grant(keys, scope: "https://www.googleapis.com/auth/cloud-platform")),
            Case(name: "FCM, all in order", request: fcm("ok-9")),
            Case(name: "FCM, a wrong access token", request: fcm("ok-10", bearer: "Bearer guessed")),
            Case(name: "FCM, a token gone", request: fcm("gone-2")),
            Case(name: "FCM, down the first time", request: fcm("down-2")),
            Case(name: "FCM, down no more", request: fcm("down-2")),
        ]
    }

    /// A seeded stream of requests, each mixing faults at random (several at once, so the two
    /// stand-ins must also agree on which fault a request is refused for), with good ones among
    /// them; each device name is new, so a busy or down device answers the same in both runs.
    func randomCases(seed: UInt64, count: Int, url: String, keys: String, stranger: String) throws -> [Case] {
        var random = SplitMix(seed: seed)
        let signer = try Signer(keys: keys, stranger: stranger)
        let (now, p8, strangerP8) = (signer.now, signer.p8, signer.strangerP8)
        func apnsToken(_ pem: String, kid: String = "KEY1234567", iat: Int? = nil) throws -> String {
            try signer.apnsToken(pem, kid: kid, iat: iat)
        }
        let tokens: [(String, String?)] = [
            ("a good token", "bearer " + (try apnsToken(p8))), ("a good token", "bearer " + (try apnsToken(p8))),
            ("a stranger's key", "bearer " + (try apnsToken(strangerP8))), ("another kid", "bearer " + (try apnsToken(p8, kid: "KEY0000000"))),
            ("two hours old", "bearer " + (try apnsToken(p8, iat: now - 7200))), ("not a JWT", "bearer foo.bar.baz"),
            ("no bearer", try apnsToken(p8)), ("no authorization", nil),
        ]
        let bodies = [("a small alert", #"{"aps":{"alert":{"title":"Jules"}}}"#), ("a small alert", #"{"aps":{"alert":"x"}}"#),
                      ("4,200 bytes", #"{"aps":{"alert":"\#(String(repeating: "x", count: 4200))"}}"#),
                      ("no aps", #"{"alert":"x"}"#), ("exactly 4,096 bytes", #"{"aps":{"alert":"\#(String(repeating: "y", count: 4096 - 20))"}}"#)]
        let devices = ["ok", "ok", "ok", "gone", "bad", "busy", "down"]
        var cases: [Case] = []
        for n in 0..<count {
            if random.below(4) == 0 {
                // FCM: a right or guessed access token, a message with a device or without.
                let bearer = random.below(3) == 0 ? "Bearer guessed" : "Bearer stand-in-access-token"
                let device = "\(random.pick(devices))-r\(seed)-\(n)"
                let body = random.below(5) == 0 ? #"{"message":{"android":{"priority":"high"}}}"#
                                                : #"{"message":{"token":"\#(device)","android":{"priority":"high"}}}"#
                cases.append(Case(name: "FCM \(n): \(bearer.suffix(7)), \(device)\(body.contains("token") ? "" : " (no token)")",
                                  request: HTTPRequest(method: "POST", url: url + "/v1/projects/stepo-test/messages:send",
                                                       headers: [("authorization", bearer), ("content-type", "application/json")],
                                                       body: Data(body.utf8))))
                continue
            }
            let token = random.pick(tokens), body = random.pick(bodies)
            let topic = random.below(6) != 0, type = random.below(8) != 0
            let priority = random.pick(["10", "10", "5", "7"])
            let device = "\(random.pick(devices))-r\(seed)-\(n)"
            var headers = [("apns-priority", priority)]
            if topic { headers.append(("apns-topic", "app.stepo.ios")) }
            if type { headers.append(("apns-push-type", "alert")) }
            if let value = token.1 { headers.append(("authorization", value)) }
            cases.append(Case(name: "APNs \(n): \(token.0), \(body.0), \(topic ? "" : "no topic, ")\(type ? "" : "no push type, ")priority \(priority), \(device)",
                              request: HTTPRequest(method: "POST", url: url + "/3/device/" + device, headers: headers, body: Data(body.1.utf8))))
        }
        return cases
    }

    /// Sends every case, one after the other (the busy and down answers depend on the order):
    /// each case's status and whether the stand-in logged a broken rule for it.
    func answers(_ cases: [Case], caFile: String, log: String) throws -> [String] {
        let client = HTTP2Multiplexer(largestBody: 64 << 10, streams: 8, timeout: 10)
        var statuses: [Int] = []
        for (tag, item) in cases.enumerated() {
            client.start(item.request, tag: tag, caFile: caFile)
            var answer: Result<HTTPAnswer, HTTPFailure>?
            let deadline = Date().addingTimeInterval(10)
            while answer == nil, Date() < deadline { answer = client.poll(wait: 0.05).first?.result }
            statuses.append(try #require(try answer?.get()).status)
        }
        let text = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
        let lines = try text.split(separator: "\n").map { try JSON.parse(Data($0.utf8)) }
        #expect(lines.count == cases.count)
        return zip(cases, zip(statuses, lines)).map { item, answer in
            "\(item.name): \(answer.0)" + (answer.1["violation"] != nil ? " (a broken rule)" : "")
                + (answer.1["status"]?.int == answer.0 ? "" : " (logged \(answer.1["status"]?.int ?? 0))")
        }
    }

    @Test("the same requests, good and broken, get the same answers from both stand-ins; every broken rule is logged")
    func sameAnswers() throws {
        var results: [[String]] = []
        for (name, own) in [("granian", false), ("own", true)] {
            let (process, url) = try PushDeliveryTests.startStandIn(in: folder + "/" + name, own: own)
            running.append(process)
            // Keys the stand-in never issued: another stand-in's.
            let stranger = folder + "/" + (own ? "granian" : "stranger")
            if !own {
                let (other, _) = try PushDeliveryTests.startStandIn(in: stranger)
                running.append(other)
            }
            let keys = folder + "/" + name
            results.append(try answers(try cases(url: url, keys: keys, stranger: stranger), caFile: keys + "/cert.pem",
                                       log: keys + "/requests.jsonl"))
        }
        #expect(results[0] == results[1])
        // And what both answered is what the providers document.
        #expect(results[1] == [
            "APNs, all in order: 200",
            "APNs, a provider token signed by a key not theirs: 403 (a broken rule)",
            "APNs, a provider token with another key id: 403 (a broken rule)",
            "APNs, a provider token two hours old: 403 (a broken rule)",
            "APNs, a provider token that is not a JWT: 403 (a broken rule)",
            "APNs, a provider token without bearer: 403 (a broken rule)",
            "APNs, no apns-topic: 400 (a broken rule)",
            "APNs, priority 7: 400 (a broken rule)",
            "APNs, a payload over 4,096 bytes: 413 (a broken rule)",
            "APNs, no aps dictionary: 400 (a broken rule)",
            "APNs, a token gone: 410",
            "APNs, a bad token: 400",
            "APNs, busy the first time: 429",
            "APNs, busy no more: 200",
            "FCM, a grant signed by the service account: 200",
            "FCM, a grant signed by another account: 400 (a broken rule)",
            "FCM, a grant for another scope: 400 (a broken rule)",
            "FCM, all in order: 200",
            "FCM, a wrong access token: 401 (a broken rule)",
            "FCM, a token gone: 404",
            "FCM, down the first time: 500",
            "FCM, down no more: 200",
        ])
    }

    @Test("seeded streams of requests mixing faults: both stand-ins give each the same answer and log the same broken rules",
          arguments: [7, 8, 9] as [UInt64])
    func sameAnswersOnRandomStreams(seed: UInt64) throws {
        var results: [[String]] = []
        for (name, own) in [("granian", false), ("own", true)] {
            let home = folder + "/\(name)-\(seed)"
            let (process, url) = try PushDeliveryTests.startStandIn(in: home, own: own)
            running.append(process)
            let stranger = folder + "/stranger-\(seed)"
            if !own {
                let (other, _) = try PushDeliveryTests.startStandIn(in: stranger)
                running.append(other)
            }
            results.append(try answers(try randomCases(seed: seed, count: 120, url: url, keys: home, stranger: stranger),
                                       caFile: home + "/cert.pem", log: home + "/requests.jsonl"))
        }
        for (granian, own) in zip(results[0], results[1]) where granian != own {
            Issue.record("seed \(seed): Granian answered \(granian); the bench's own \(own)")
        }
        #expect(results[0].count == results[1].count)
        // The stream reaches what it is for: good requests, each kind of refusal.
        let statuses = Set(results[1].map { String($0.split(separator: ":").last?.split(separator: " ").first ?? "") })
        #expect(statuses.isSuperset(of: ["200", "400", "403", "410", "413"]), "\(statuses)")
    }
}
