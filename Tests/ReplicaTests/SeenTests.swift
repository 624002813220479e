import BenchSupport
import Foundation
import TestSupport
import Notifications
import Testing
import Wire
@testable import API
@_spi(Bench) @testable import Backend
@testable import Replica

/// Opening Activity stamps every row seen; reading all stamps every row read. However many
/// rows there are, that is one mark: a few rows written here and on the server, one mutation
/// sent, one mark (and no row) brought back — while each row's `seenAt` and the counts stay
/// exact.
@Suite("Seen and read-all are one stamp")
struct SeenTests {
    struct Cost: Equatable {
        var replicaWrites: Int
        var storeWrites: Int
        var rowsBack: Int
        var mutationsSent: Int
    }

    /// A reader with `rows` unseen rows, synced; then Activity opened (or read-all) and synced.
    func stamp(rows: Int, readAll: Bool) throws -> Cost {
        let folder = NSTemporaryDirectory() + "stepo-seen-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try Store(location: try TestEngine.location(folder, "server.db"))
        let bulk = BulkWorld(store)
        let newest = Timestamp.parse("2026-11-29T00:00:00Z")!
        try bulk.build {
            try bulk.addUsers(1...50)
            try bulk.addJourneys(2, owners: 1)
            try bulk.addSteps(10, journeys: 2, publishedAt: newest - 40 * Timestamp.day)
            try bulk.addRows(recipient: 1, count: rows, newest: newest, spacing: 1000, actors: 2...50, steps: 10)
        }
        let replica = try Replica(path: folder + "/u1.db")
        let counting = Counting(InProcessTransport(router: Router(store: store), user: "u1"))
        let engine = SyncEngine(replica: replica, transport: counting)
        #expect(try engine.sync() == rows)
        #expect(try replica.counts.unseen == rows)

        let replicaBefore = replica.db.totalChanges, storeBefore = store.connection.totalChanges
        counting.reset()
        let at = newest + 60_000
        if readAll { try replica.markAllRead(at: at) } else { try replica.markAllSeen(at: at) }
        let sent = Int64(Date().timeIntervalSince1970 * 1000)
        let rowsBack = try engine.sync()
        let answered = Int64(Date().timeIntervalSince1970 * 1000)
        let cost = Cost(replicaWrites: replica.db.totalChanges - replicaBefore, storeWrites: store.connection.totalChanges - storeBefore,
                        rowsBack: rowsBack, mutationsSent: counting.mutations)

        // Exact afterwards: every row stamped once, by the server's clock when the mutation
        // came, and the counts agree with a recount.
        let server = try store.recount(for: 1)
        #expect(server.unseen == 0)
        #expect(server.unread == (readAll ? 0 : rows))
        #expect(try replica.counts == ServerCounts(unseen: 0, unread: readAll ? 0 : rows, stale: false))
        let stamped = try #require(try replica.row(1)?.seenAt)
        #expect((sent...answered).contains(stamped))
        for id in [1, rows / 2, rows] {
            let row = try #require(try replica.row(id))
            #expect(row.seenAt == stamped)
            #expect(row.readAt == (readAll ? stamped : nil))
        }
        let reader = try #require(try store.user("u1"))
        let page = try store.sync.page(for: reader, after: 0, limit: rows)
        #expect(page.rows.allSatisfy { $0.seenAt == stamped && $0.readAt == (readAll ? stamped : nil) })
        return cost
    }

    @Test("opening Activity over 1,000 or 20,000 unseen rows costs the same", arguments: [false, true])
    func constant(readAll: Bool) throws {
        let small = try stamp(rows: 1_000, readAll: readAll)
        let large = try stamp(rows: 20_000, readAll: readAll)
        #expect(small == large)
        #expect(large.rowsBack == 0)
        #expect(large.mutationsSent == 1)
        #expect(large.replicaWrites <= 16)
        #expect(large.storeWrites <= 16)
    }

    /// The real in-process transport, counting the mutations it carried.
    final class Counting: Transport, @unchecked Sendable {
        let inner: Transport
        private(set) var mutations = 0
        var serverName: String { inner.serverName }
        init(_ inner: Transport) { self.inner = inner }
        func reset() { mutations = 0 }

        func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data) {
            if path == "/v1/mutations", let body, let list = try JSON.parse(body)["mutations"]?.array { mutations += list.count }
            return try inner.perform(method: method, path: path, query: query, body: body)
        }
    }
}
