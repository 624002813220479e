import Foundation
import TestSupport
import Notifications
import Testing
import SQLite
import Wire
@testable import API
@testable import Backend
@testable import Replica
@testable import Inbox

/// Where rows land, built from a real replica synced from a real store.
@Suite("Destinations from the replica")
struct DestinationTests {
    let folder = NSTemporaryDirectory() + "stepo-dest-" + UUID().uuidString

    func scene() throws -> (Store, Replica, SyncEngine) {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = try TestEngine.location(folder, "server.db")
        let store = try Store(location: path)
        let replica = try Replica(path: folder + "/me.db")
        let engine = SyncEngine(replica: replica, transport: InProcessTransport(user: "me") { Router(store: try Store(location: path)) })
        return (store, replica, engine)
    }

    func apply(_ store: Store, _ lines: [String]) throws {
        for line in lines { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
    }

    @Test("a replica that cannot be read says so: its failure is never shown as content gone, nor a list as empty")
    func unreadableReplica() throws {
        let (store, replica, engine) = try scene()
        try apply(store, [
            #"{"id":"u0","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"me","username":"me","name":"Me"}}"#,
            #"{"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"ana","username":"ana","name":"Ana"}}"#,
            #"{"id":"j0","type":"journey","at":"2026-11-20T08:00:00Z","journey":{"id":"j","owner":"me","title":"Runs"}}"#,
            #"{"id":"s0","type":"step","at":"2026-11-20T08:01:00Z","step":{"id":"s","journey":"j","caption":"Ridge"}}"#,
            #"{"id":"m0","type":"mediaReady","at":"2026-11-20T08:02:00Z","step":"s"}"#,
            #"{"id":"c0","type":"comment","at":"2026-11-20T08:03:00Z","actor":"ana","step":"s","comment":{"id":"c","text":"Lovely"}}"#,
        ])
        try engine.sync()
        let row = try #require(try replica.rows().first { if case .step = $0.tap { true } else { false } })
        guard case .step = try DestinationLoader.tap(row, replica: replica) else { Issue.record("the comment does not open its step"); return }
        // Another hand breaks the file under the replica: the steps' table is gone.
        let other = try Database(path: folder + "/me.db")
        try other.execute("DROP TABLE steps")
        #expect(throws: (any Error).self) { try DestinationLoader.tap(row, replica: replica) }
        try other.execute("DROP TABLE cards")
        #expect(throws: (any Error).self) { try InboxRunner.page(.top, newAbove: 0, filter: nil, replica: replica) }
    }

    @Test("Enter on a batch lands on who did it, newest first, as the board's tap column says — not on the step")
    func batchTapsToInteractions() throws {
        let (store, replica, engine) = try scene()
        var lines = [
            #"{"id":"u0","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"me","username":"me","name":"Me"}}"#,
            #"{"id":"j0","type":"journey","at":"2026-11-20T08:00:00Z","journey":{"id":"j","owner":"me","title":"Runs"}}"#,
            #"{"id":"s0","type":"step","at":"2026-11-20T08:01:00Z","step":{"id":"s","journey":"j","caption":"Ridge"}}"#,
            #"{"id":"m0","type":"mediaReady","at":"2026-11-20T08:02:00Z","step":"s"}"#,
        ]
        for (i, name) in ["Jules", "Ana", "Kofi"].enumerated() {
            lines.append(#"{"id":"u\#(i + 1)","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"p\#(i)","username":"p\#(i)","name":"\#(name)"}}"#)
            lines.append(#"{"id":"h\#(i)","type":"heart","at":"2026-11-20T08:1\#(i):00Z","actor":"p\#(i)","step":"s"}"#)
        }
        try apply(store, lines)
        try engine.sync()
        let batch = try #require(try replica.rows().first { $0.kind == .batch })
        #expect(batch.title == "Kofi and 2 others")
        guard case .interactions(let page) = try DestinationLoader.tap(batch, replica: replica) else {
            Issue.record("a batch opened \((try? DestinationLoader.tap(batch, replica: replica))?.title ?? "nothing"), not its interactions list")
            return
        }
        #expect(page.step.id == "s")
        // Offline, from the rows that reached the replica: the batch as one entry.
        #expect(page.people.map(\.name) == ["Kofi and 2 others"])
        // Live, as the inbox refreshes it from the server: everyone, newest first.
        let list = try #require(try engine.interactions(onStep: "s").value)
        guard case .interactions(let live) = DestinationLoader.liveInteractions(list, like: page) else {
            Issue.record("no live interactions list"); return
        }
        #expect(live.people.map(\.name) == ["Kofi", "Ana", "Jules"])
        #expect(live.step.hearts == 3)

        // Someone banned, someone blocked: counted out of what the reader is told, as they
        // are left out of the list (the count never says more than the list can show).
        try apply(store, [#"{"id":"x1","type":"account","at":"2026-11-20T09:00:00Z","user":"p0","state":"banned"}"#,
                          #"{"id":"x2","type":"block","at":"2026-11-20T09:01:00Z","actor":"me","target":"p2"}"#])
        let after = try #require(try engine.interactions(onStep: "s").value)
        guard case .interactions(let fewer) = DestinationLoader.liveInteractions(after, like: page) else {
            Issue.record("no live interactions list"); return
        }
        #expect(fewer.people.map(\.name) == ["Ana"])
        #expect(fewer.step.hearts == 1 && fewer.step.shares == 0)
        #expect(DestinationView.lines(.interactions(fewer), width: 80).contains { $0.text == "♥ 1 heart · ↗ 0 shares" })
        #expect(try engine.step("s").value?.step.hearts == 1)
    }
}

@Suite("The / filter")
struct FilterTests {
    let folder = NSTemporaryDirectory() + "stepo-filter-" + UUID().uuidString

    @Test("case and accents aside: /tran finds Trần, /Nguyễn finds a name stored with its marks apart, either way it is typed")
    func accents() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = try TestEngine.location(folder, "server.db")
        let store = try Store(location: path)
        let replica = try Replica(path: folder + "/me.db")
        let engine = SyncEngine(replica: replica, transport: InProcessTransport(user: "me") { Router(store: try Store(location: path)) })
        let decomposed = "Nguye\u{0302}\u{0303}n Van"  // ễ as e + two marks
        let lines = [
            #"{"id":"u0","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"me","username":"me","name":"Me"}}"#,
            #"{"id":"u1","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"linh","username":"linh","name":"Linh Trần"}}"#,
            #"{"id":"u2","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"van","username":"van","name":"\#(decomposed)"}}"#,
            #"{"id":"u3","type":"user","at":"2026-11-20T08:00:00Z","user":{"id":"kofi","username":"kofi","name":"Kofi Asante"}}"#,
            #"{"id":"f1","type":"follow","at":"2026-11-20T08:01:00Z","actor":"linh","target":"me"}"#,
            #"{"id":"f2","type":"follow","at":"2026-11-20T08:02:00Z","actor":"van","target":"me"}"#,
            #"{"id":"f3","type":"follow","at":"2026-11-20T08:03:00Z","actor":"kofi","target":"me"}"#,
        ]
        for line in lines { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
        try engine.sync()
        func titles(_ typed: String) throws -> [String] {
            try replica.rows(matching: try #require(try RowFilter.parse(typed)), limit: 10).map(\.title)
        }
        #expect(try titles("tran") == ["Linh Trần"])
        #expect(try titles("TRẦN") == ["Linh Trần"])
        #expect(try titles("Nguyễn") == [decomposed])              // typed precomposed
        #expect(try titles("nguye\u{0302}\u{0303}n") == [decomposed])   // typed with its marks apart
        #expect(try titles("nguyen") == [decomposed])
        #expect(try titles("following").count == 3)
        #expect(try titles("kind:newF").count == 3)
        #expect(throws: FilterError.self) { try RowFilter.parse("kind:nosuch") }
    }
}
