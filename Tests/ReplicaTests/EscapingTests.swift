import Foundation
import Notifications
import Testing
import TestSupport
import Wire
@testable import API
@testable import Backend
@testable import Replica
@testable import Server

/// Ids travel in request paths whole: whatever a producer names a person, a step or a journey,
/// the client's encoding of it, decoded by the server, is the id again — over HTTP and in
/// process alike.
@Suite("Ids through every client call")
struct EscapingTests {
    /// Characters that mean something in a URL, beside plain ones and letters beyond ASCII.
    static let alphabet: [String] = ["a", "Z", "7", "-", "_", ".", "~", "?", "#", "%", "/", ";", "\"", "\\", "+", "&", "=",
                                     ":", "@", "!", "'", "(", ")", "*", ",", "$", "[", "]", "é", "漢", "🙂", "%2F", "%25", ".."]

    @Test("seeded random ids, each a person, a journey and a step: every client call finds the very one, over HTTP and in process")
    func randomIds() throws {
        let folder = NSTemporaryDirectory() + "stepo-escape-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let location = try TestEngine.location(folder, "escape.db")
        let store = try Store(location: location)
        var rng = SplitMix(seed: 33)
        var ids: [String] = ["café-1", "..", ".", "a/b", "a?b", "a#b", "100%", "x;y", #"q"uote"#, #"back\slash"#]
        for _ in 0..<40 {
            ids.append((0..<(1 + rng.below(6))).map { _ in rng.pick(Self.alphabet) }.joined())
        }
        ids = Array(Set(ids)).sorted()
        var lines = [#"{"id":"u-reader","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"reader","username":"reader","name":"Reader"}}"#]
        for (n, id) in ids.enumerated() {
            let quoted = JSON.string(id).serialized
            lines.append(#"{"id":"u\#(n)","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":\#(quoted),"username":"p\#(n)","name":"Person \#(n)"}}"#)
            lines.append(#"{"id":"j\#(n)","type":"journey","at":"2026-11-20T08:01:00Z","journey":{"id":\#(quoted),"owner":"reader","title":"Journey \#(n)"}}"#)
            lines.append(#"{"id":"s\#(n)","type":"step","at":"2026-11-20T08:02:00Z","step":{"id":\#(quoted),"journey":\#(quoted),"caption":"Step \#(n)"}}"#)
            lines.append(#"{"id":"m\#(n)","type":"mediaReady","at":"2026-11-20T08:03:00Z","step":\#(quoted)}"#)
        }
        for line in lines { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
        let known = try ids.filter { try store.user($0) != nil && store.step($0) != nil && store.journey($0) != nil }
        #expect(known.count == ids.count, "the store refused some ids: \(Set(ids).subtracting(known).sorted())")

        let server = try HTTPServer(databasePath: location, port: 0, threads: 2)
        defer { server.stop() }
        let token = try store.tokens.create(for: try store.user("reader"), admin: false, at: 0)
        let transports: [(String, Transport)] = [
            ("HTTP", HTTPTransport(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, token: token)),
            ("in process", InProcessTransport(user: "reader") { Router(store: try Store(location: location)) }),
        ]
        for (name, transport) in transports {
            let engine = SyncEngine(replica: try Replica(path: folder + "/\(name).db"), transport: transport)
            for id in known {
                guard case .found(let profile) = try engine.person(id) else {
                    Issue.record("\(name): the profile of \(id.debugDescription) was not found")
                    continue
                }
                #expect(profile.user.id == id, "\(name): asked for \(id.debugDescription), got \(profile.user.id.debugDescription)")
                guard case .found(let step) = try engine.step(id) else {
                    Issue.record("\(name): the step \(id.debugDescription) was not found")
                    continue
                }
                #expect(step.step.id == id)
                guard case .found(let journey) = try engine.journey(id) else {
                    Issue.record("\(name): the journey \(id.debugDescription) was not found")
                    continue
                }
                #expect(journey.journey.id == id)
                if case .found = try engine.interactions(onStep: id) {} else { Issue.record("\(name): interactions of \(id.debugDescription)") }
            }
        }
    }

    @Test("an id is escaped once: every byte but ASCII letters, digits, - _ ~; decoding gives it back")
    func segmentIsOneEscape() {
        var rng = SplitMix(seed: 7)
        for _ in 0..<500 {
            let id = (0..<(1 + rng.below(8))).map { _ in rng.pick(Self.alphabet) }.joined()
            let segment = HTTPTransport.segment(id)
            #expect(segment.unicodeScalars.allSatisfy { $0.isASCII && ($0 == "%" || CharacterSet.alphanumerics.contains($0) || "-_~".unicodeScalars.contains($0)) })
            #expect(!segment.contains("/") && !segment.contains("."))
            #expect(segment.removingPercentEncoding == id)
        }
        #expect(HTTPTransport.segment("café-1") == "caf%C3%A9-1")
    }
}
