import Foundation
import TestSupport
import Notifications
import Testing
import Wire
@testable import API
@testable import Backend
@testable import Replica

/// The destinations' documents: the router writes each Wire type and the client reads the
/// same type back, so they cannot drift; a document of the wrong shape is an error naming the
/// member; ids travel as one path segment whatever they hold.
@Suite("Typed destination documents")
struct ResourceDocumentTests {
    let folder = NSTemporaryDirectory() + "stepo-docs-" + UUID().uuidString

    func scene(_ lines: [String]) throws -> (Store, SyncEngine) {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = try TestEngine.location(folder, "server.db")
        let store = try Store(location: path)
        for line in lines { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
        let replica = try Replica(path: folder + "/me.db")
        return (store, SyncEngine(replica: replica, transport: InProcessTransport(user: "me") { Router(store: try Store(location: path)) }))
    }

    static let world = [
        #"{"id":"u0","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"me","username":"me","name":"Me"}}"#,
        #"{"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"ana/1","username":"ana","name":"Ana"}}"#,
        #"{"id":"f1","type":"follow","at":"2026-11-20T08:00:00Z","actor":"ana/1","target":"me"}"#,
        #"{"id":"j0","type":"journey","at":"2026-11-20T08:00:00Z","journey":{"id":"j?1","owner":"me","title":"Runs"}}"#,
        #"{"id":"s0","type":"step","at":"2026-11-20T08:01:00Z","step":{"id":"s/1%","journey":"j?1","caption":"Ridge"}}"#,
        #"{"id":"m0","type":"mediaReady","at":"2026-11-20T08:02:00Z","step":"s/1%"}"#,
        #"{"id":"h0","type":"heart","at":"2026-11-20T08:10:00Z","actor":"ana/1","step":"s/1%"}"#,
        #"{"id":"c0","type":"comment","at":"2026-11-20T08:11:00Z","actor":"ana/1","step":"s/1%","comment":{"id":"c1","text":"go"}}"#,
        #"{"id":"a0","type":"alert","at":"2026-11-20T08:12:00Z","user":"me","person":"ana/1","mode":"all"}"#,
    ]

    @Test("every destination comes back typed, ids with / ? and % in them included, and matches the store")
    func typedCalls() throws {
        let (_, engine) = try scene(Self.world)
        let step = try #require(try engine.step("s/1%").value)
        #expect(step.step.caption == "Ridge" && step.step.hearts == 1)
        #expect(step.comments.map(\.text) == ["go"])
        let list = try #require(try engine.interactions(onStep: "s/1%").value)
        #expect(list.items.map(\.name) == ["Ana"] && list.items.map(\.kind) == [.heart] && list.hearts == 1)
        let person = try #require(try engine.person("ana/1").value)
        #expect(person.user.name == "Ana" && person.user.relationship.followsYou)
        let journey = try #require(try engine.journey("j?1").value)
        #expect(journey.journey.title == "Runs")
        let preferences = try engine.preferences()
        #expect(preferences.switches == Preferences())
        #expect(preferences.alerts == [.init(target: .person("ana/1"), mode: .all)])
        // Unknown: gone, with the server's words, not an error.
        guard case .gone(let why) = try engine.step("nope") else { Issue.record("an unknown step was found"); return }
        #expect(why.contains("nope"))
    }

    @Test("each document reads back what it writes")
    func roundTrips() throws {
        let step = StepEntity(id: "s", journey: "j", journeyTitle: "Runs", owner: "me", caption: "Ridge", photoUrl: "https://p",
                              isFinal: true, publishedAt: 1_700_000_000_000, deleted: false, hearts: 3, shares: 1)
        let comment = CommentEntity(id: "c", step: "s", author: "ana", text: "go", parent: nil, at: 1_700_000_100_000, deleted: false)
        let detail = StepDetail(step: step, comments: [comment])
        #expect(try StepDetail(json: detail.json) == detail)
        let list = InteractionList(step: "s", hearts: 3, shares: 1, items: [
            .init(kind: .share, user: "kofi", name: "Kofi", at: 1_700_000_200_000),
            .init(kind: .heart, user: "ana", name: "Ana", at: 1_700_000_100_000),
        ])
        #expect(try InteractionList(json: list.json) == list)
        let document = PreferencesDocument(switches: Preferences(all: true, stepWith: false, social: true, engagement: false, journeys: true),
                                           alerts: [.init(target: .journey("j"), mode: .off), .init(target: .person("p"), mode: .all)])
        #expect(try PreferencesDocument(json: document.json) == document)
    }

    @Test("a document of the wrong shape is an error naming the member", arguments: [
        (#"{"step":"s","hearts":1,"shares":0,"interactions":[{"type":"like","user":"a","at":"2026-11-20T08:00:00Z"}]}"#,
         "interactions[0].type must be heart or share"),
        (#"{"step":"s","hearts":"1","shares":0,"interactions":[]}"#, "interactions.hearts must be a whole number"),
        (#"{"all":true,"customFollow":[{"person":"a","journey":"b","mode":"all"}]}"#, "preferences.customFollow[0]"),
        (#"{"all":"yes"}"#, "preferences.all must be true or false"),
        (#"[]"#, "preferences must be an object"),
    ])
    func wrongShape(document: String, says: String) throws {
        let json = try JSON.parse(document)
        do {
            if document.contains("interactions") { _ = try InteractionList(json: json) } else { _ = try PreferencesDocument(json: json) }
            Issue.record("read without complaint: \(document)")
        } catch let error as WireError {
            #expect(error.description.contains(says), "\(error.description)")
        }
    }
}
