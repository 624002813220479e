import Backend
import Foundation
import Notifications

/// The worlds the benches share, and the servers they run on them.
enum BenchWorld {
    /// A store where u1 has `rows` unseen hearts, a second apart, from a thousand people
    /// (u2 … u1001) on its 100 steps in 10 journeys: one person with a lot.
    static func popularReader(_ path: String, rows: Int) throws -> Store {
        let store = try Store(path: path)
        let bulk = BulkWorld(store)
        try bulk.build {
            try bulk.addUsers(1...1001)
            try bulk.addJourneys(10, owners: 1)
            try bulk.addSteps(100, journeys: 10, publishedAt: Timestamp.parse("2026-11-01T00:00:00Z")!)
            try bulk.addRows(recipient: 1, count: rows, newest: Timestamp.parse("2026-11-29T00:00:00Z")!, spacing: 1000,
                             actors: 2...1001, steps: 100)
        }
        return store
    }

    /// `stepo serve` on `database`, on a port of the system's choosing: the child and its address.
    static func serve(_ database: String, log: String) throws -> (child: Child, address: String) {
        let server = try Child.start([CommandLine.executablePath, "serve", "--db", database, "--port", "0", "--quiet"], log: log)
        do {
            return (server, try Child.address(in: log))
        } catch {
            server.stop()
            throw error
        }
    }
}
