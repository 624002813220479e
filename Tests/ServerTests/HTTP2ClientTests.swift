import Foundation
import HTTPClient
import Testing
import TestSupport

/// The push worker's HTTP/2 client (nghttp2 over OpenSSL) against the Granian stand-in and
/// against servers that misbehave: every request comes back exactly once, answered or failed
/// with the reason a worker acts on, and within its deadline.
@Suite("HTTP/2 client", .serialized)
final class HTTP2ClientTests {
    let folder = NSTemporaryDirectory() + "stepo-h2-" + UUID().uuidString
    var standin: Spawn.Background?

    deinit {
        standin?.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The stand-in's address (it answers FCM's `messages:send` with a small JSON body).
    func startStandin() throws -> String {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Standins/standins.py").path
        let started = try Spawn.start(["python3", script, "--dir", folder], log: folder + "/standin.log")
        standin = started
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let log = String(decoding: FileManager.default.contents(atPath: folder + "/standin.log") ?? Data(), as: UTF8.self)
            if let range = log.range(of: #"https://127\.0\.0\.1:\d+"#, options: .regularExpression) { return String(log[range]) }
            usleep(50_000)
        }
        throw Spawn.Failure(description: "the HTTP/2 stand-in did not start")
    }

    /// Polls until every tag in `tags` came back (each once) or `seconds` passed.
    func collect(_ client: HTTP2Multiplexer, _ tags: Range<Int>, within seconds: Double) -> [Int: Result<HTTPAnswer, HTTPFailure>] {
        var found: [Int: Result<HTTPAnswer, HTTPFailure>] = [:]
        let deadline = Date().addingTimeInterval(seconds)
        while client.inFlight > 0, Date() < deadline {
            for completion in client.poll(wait: 0.05) {
                #expect(found[completion.tag] == nil, "tag \(completion.tag) came back twice")
                found[completion.tag] = completion.result
            }
        }
        #expect(Set(found.keys) == Set(tags))
        #expect(client.inFlight == 0)
        return found
    }

    func post(_ url: String) -> HTTPRequest {
        HTTPRequest(method: "POST", url: url + "/v1/projects/stepo-test/messages:send",
                    headers: [("authorization", "Bearer nothing"), ("Content-Type", "application/json")],
                    body: Data(#"{"message":{"token":"t"}}"#.utf8))
    }

    @Test("many requests over one connection, more than the streams it may open at once; each answered once")
    func manyStreams() throws {
        let url = try startStandin()
        let client = HTTP2Multiplexer(largestBody: 64 << 10, streams: 8, timeout: 10)
        for tag in 0..<300 { client.start(post(url), tag: tag, caFile: folder + "/cert.pem") }
        let answers = collect(client, 0..<300, within: 20)
        // Without the service account's token the stand-in refuses each with 401, as FCM does:
        // an answer, read whole (status, headers, JSON body).
        for (_, result) in answers {
            let answer = try result.get()
            #expect(answer.status == 401)
            #expect(answer.headers.allSatisfy { $0.name == $0.name.lowercased() && !$0.name.hasPrefix(":") })
            #expect(String(decoding: answer.body, as: UTF8.self).contains("UNAUTHENTICATED"))
        }
        let log = String(decoding: FileManager.default.contents(atPath: folder + "/requests.jsonl") ?? Data(), as: UTF8.self)
        #expect(log.split(separator: "\n").count == 300)
    }

    @Test("an untrusted certificate, a refused port, certificates that cannot be read: each fails as 'cannot connect', at once")
    func cannotConnect() throws {
        let url = try startStandin()
        let client = HTTP2Multiplexer(largestBody: 64 << 10, streams: 8, timeout: 5)
        let closed = try FaultyServer(.reset)
        let refused = "https://127.0.0.1:\(closed.port)"
        closed.stop()
        client.start(post(url), tag: 0)  // the system's certificates: the stand-in's is not among them
        client.start(post(refused), tag: 1, caFile: folder + "/cert.pem")
        client.start(post(url), tag: 2, caFile: folder + "/no-such-file.pem")
        let began = Date()
        let results = collect(client, 0..<3, within: 5)
        #expect(Date().timeIntervalSince(began) < 3)
        for tag in 0..<3 {
            guard case .failure(let failure)? = results[tag] else { Issue.record("request \(tag) did not fail"); continue }
            #expect(failure.reason == .connect, "\(failure)")
        }
        if case .failure(let failure)? = results[0] { #expect(failure.description.contains("TLS")) }
    }

    @Test("an answer larger than the client takes fails as too large; the connection goes on")
    func tooLarge() throws {
        let url = try startStandin()
        let client = HTTP2Multiplexer(largestBody: 16, streams: 8, timeout: 5)
        client.start(post(url), tag: 0, caFile: folder + "/cert.pem")
        client.start(HTTPRequest(method: "GET", url: url + "/nothing-here"), tag: 1, caFile: folder + "/cert.pem")
        let results = collect(client, 0..<2, within: 10)
        if case .failure(let failure)? = results[0] { #expect(failure.reason == .tooLarge) } else { Issue.record("a 100-byte answer was taken") }
        #expect((try? results[1]?.get())?.status == 404)
    }

    @Test("servers that hang up, answer garbage or never answer: each request fails, within its deadline",
          arguments: [FaultyServer.Mode.reset, .half, .garbage, .silent])
    func faults(_ mode: FaultyServer.Mode) throws {
        let server = try FaultyServer(mode)
        defer { server.stop() }
        let client = HTTP2Multiplexer(largestBody: 64 << 10, streams: 8, timeout: 1.5)
        // Over TLS (the handshake fails) and in clear text with prior knowledge (HTTP/2 fails).
        for tag in 0..<3 { client.start(post("https://127.0.0.1:\(server.port)"), tag: tag, caFile: nil) }
        for tag in 3..<6 { client.start(post(server.url), tag: tag, version: .http2PriorKnowledge) }
        let began = Date()
        let results = collect(client, 0..<6, within: 6)
        #expect(Date().timeIntervalSince(began) < 4)
        for (tag, result) in results {
            guard case .failure(let failure) = result else { Issue.record("request \(tag) was answered by a \(mode) server"); continue }
            if mode == .silent { #expect(failure.reason == .timeout, "\(failure)") }
        }
    }

    @Test("the server going away mid-flight fails what it did not answer; a later request connects afresh")
    func serverGone() throws {
        let url = try startStandin()
        let client = HTTP2Multiplexer(largestBody: 64 << 10, streams: 100, timeout: 5)
        for tag in 0..<50 { client.start(post(url), tag: tag, caFile: folder + "/cert.pem") }
        _ = client.poll(wait: 0)
        standin?.stop()
        standin = nil
        let results = collect(client, 0..<50, within: 10)
        #expect(results.count == 50)
        // The next request finds nobody listening: it fails at once, never waits on the dead one.
        client.start(post(url), tag: 50, caFile: folder + "/cert.pem")
        let after = collect(client, 50..<51, within: 5)
        if case .failure(let failure)? = after[50] { #expect(failure.reason == .connect) } else { Issue.record("answered by a stopped server") }
    }
}
