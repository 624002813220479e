import Foundation
import TestSupport
import Notifications
import Testing
import Wire
@testable import API
@testable import Backend
@testable import Replica

/// One change can touch more rows than a page holds: a deleted step's hearts, all at one
/// version. A client that asks with `afterRow` gets it a page at a time; one that does not
/// gets the whole change at once, as before.
@Suite("Paging inside one change")
struct PagingTests {
    let folder = NSTemporaryDirectory() + "stepo-paging-" + UUID().uuidString
    let store: Store
    var clock = Timestamp.parse("2026-11-20T08:00:00Z")!
    var n = 0
    static let fans = 30

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        store = try Store(location: try TestEngine.location(folder, "server.db"))
        try event("user", [("user", .object([("id", "pat"), ("username", "pat"), ("name", "Pat")]))])
        try event("journey", [("journey", .object([("id", "ultra"), ("owner", "pat"), ("title", "Ultra")]))])
        try event("step", [("step", .object([("id", "s1"), ("journey", "ultra"), ("caption", "Long run"),
                                             ("photoUrl", "https://cdn/s1.jpg")]))])
        try event("mediaReady", [("step", "s1")])
        for i in 0..<PagingTests.fans {
            try event("user", [("user", .object([("id", .string("fan\(i)")), ("username", .string("fan\(i)")), ("name", .string("Fan \(i)"))]))])
            // Alternately hearts and shares, each after the last batch closed: a row per fan.
            clock += Batching.window
            try event(i % 2 == 0 ? "heart" : "share", [("actor", .string("fan\(i)")), ("step", "s1")])
        }
    }

    mutating func event(_ type: String, _ fields: [(String, JSON)]) throws {
        n += 1
        clock += 60_000
        let json = JSON.object([("id", .string("g\(n)")), ("type", .string(type)), ("at", .string(Timestamp.format(clock)))] + fields)
        _ = try Ingestor(store: store).apply(Data(json.serialized.utf8))
    }

    /// Pat's rows as the server holds them: id → version and whether withheld.
    func serverRows() throws -> [Int: String] {
        let pat = try #require(try store.user("pat"))
        var all: [Int: String] = [:]
        for row in try store.sync.page(for: pat, after: 0, limit: 100_000).rows {
            all[row.id] = "\(row.version) \(row.deleted)"
        }
        return all
    }

    @Test("with afterRow, a change bigger than a page comes in pages of at most the limit, each row once")
    func pagesInsideAVersion() throws {
        var world = self
        let pat = try #require(try store.user("pat"))
        let before = try store.sync.page(for: pat, after: 0, limit: 100_000).next
        try world.event("delete", [("step", "s1")])
        // The old contract: the whole change in one answer.
        let whole = try store.sync.page(for: pat, after: before, limit: 7)
        #expect(whole.rows.count == PagingTests.fans)
        #expect(Set(whole.rows.map(\.version)).count == 1)
        // The cursor: pages of 7, then the rest; no row twice, none missed.
        var seen: [Int] = []
        var after = before, afterRow = 0, pages = 0
        while true {
            let page = try store.sync.page(for: pat, after: after, afterRow: afterRow, limit: 7)
            pages += 1
            #expect(page.rows.count <= 7)
            seen += page.rows.map(\.id)
            guard page.more else { break }
            after = page.next
            afterRow = try #require(page.nextRow)
            try #require(pages < 20, "the cursor does not move on: \(pages) pages after \(after)/\(afterRow)")
        }
        #expect(pages == 5)
        #expect(seen.count == PagingTests.fans)
        #expect(Set(seen) == Set(whole.rows.map(\.id)))
    }

    @Test("a replica synced in pages of 7 across one deletion holds what one big page would")
    func replicaConverges() throws {
        var world = self
        let path = try TestEngine.location(folder, "server.db")
        let replica = try Replica(path: folder + "/pat.db")
        let counting = Counting(InProcessTransport(user: "pat") { Router(store: try Store(location: path)) })
        let engine = SyncEngine(replica: replica, transport: counting, pageSize: 7)
        #expect(try engine.sync() == PagingTests.fans)
        try world.event("delete", [("step", "s1")])
        #expect(try engine.sync() == PagingTests.fans)
        #expect(counting.largest <= 7)
        let server = try serverRows()
        var local: [Int: String] = [:]
        for row in try replica.rows(limit: 100_000) { local[row.id] = "\(row.version) \(row.deleted)" }
        #expect(local == server)
        #expect(try replica.version == (try store.currentVersion()))
        #expect(try replica.afterRow == 0)
    }

    /// The real in-process transport, noting the largest page it carried.
    final class Counting: Transport, @unchecked Sendable {
        let inner: Transport
        let lock = NSLock()
        private(set) var largest = 0
        var serverName: String { inner.serverName }
        init(_ inner: Transport) { self.inner = inner }

        func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data) {
            let answer = try inner.perform(method: method, path: path, query: query, body: body)
            if path == "/v1/activity", answer.status == 200 {
                let rows = try ActivityPage(json: try JSON.parse(answer.body)).rows.count
                lock.lock(); largest = max(largest, rows); lock.unlock()
            }
            return answer
        }
    }
}
