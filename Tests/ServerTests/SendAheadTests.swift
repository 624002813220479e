import BenchSupport
import Foundation
import Postgres
import Storage
import Testing
import TestSupport

/// Statements sent ahead inside a transaction (libpq's pipeline mode): they keep their order,
/// their errors still undo the transaction, and a COMMIT that was never answered is never
/// taken as done.
@Suite("PostgreSQL: statements sent ahead",
       .enabled(if: PostgresCluster.available || ProcessInfo.processInfo.environment["CI"] != nil))
struct SendAheadTests {
    @Test("writes sent ahead run in order with the reads after them, and one that fails undoes the whole transaction")
    func orderAndErrors() throws {
        let cluster = try ThrowawayCluster()
        let db = try Connection(postgres: try cluster.createDatabase())
        try db.execute("CREATE TABLE t (x BIGINT PRIMARY KEY, y BIGINT NOT NULL)")
        let seen = try db.transaction { () -> Int in
            for x in 1...5 { try db.run("INSERT INTO t(x, y) VALUES (?, ?)", x, x * 10) }
            try db.run("UPDATE t SET y = y + 1 WHERE x = ?", 3)
            #expect(db.changes == 1)
            return try db.scalar("SELECT y FROM t WHERE x = ?", 3) ?? -1
        }
        #expect(seen == 31)
        // A duplicate key among writes sent ahead: the transaction fails, and nothing of it stays.
        #expect(throws: PostgresError.self) {
            try db.transaction {
                try db.run("INSERT INTO t(x, y) VALUES (?, ?)", 6, 60)
                try db.run("INSERT INTO t(x, y) VALUES (?, ?)", 1, 10)
                try db.run("INSERT INTO t(x, y) VALUES (?, ?)", 7, 70)
            }
        }
        #expect(try db.scalar("SELECT count(*) FROM t") == 5)
        // The connection serves again at once, inside a transaction and out.
        try db.transaction { try db.run("INSERT INTO t(x, y) VALUES (?, ?)", 8, 80) }
        #expect(try db.scalar("SELECT count(*) FROM t") == 6)
        withExtendedLifetime(cluster) {}
    }

    @Test("a COMMIT sent ahead to a server process that died is an error, and nothing it carried is stored")
    func commitNeverAnswered() throws {
        let cluster = try ThrowawayCluster()
        let url = try cluster.createDatabase()
        let db = try Connection(postgres: url)
        try db.execute("CREATE TABLE t (x BIGINT PRIMARY KEY)")
        // The cluster commits without waiting for its log (durability off): write it out now,
        // so the crash below loses only what it should.
        try db.execute("CHECKPOINT")
        let backend = try #require(try db.scalar("SELECT pg_backend_pid()"))
        #expect(throws: (any Error).self) {
            try db.transaction {
                try db.run("INSERT INTO t(x) VALUES (?)", 1)
                // The server process goes away without a word (as under kill -9 or an immediate stop).
                kill(pid_t(backend), SIGKILL)
                Thread.sleep(forTimeInterval: 0.3)
                try db.run("INSERT INTO t(x) VALUES (?)", 2)
            }
        }
        // A server that lost a backend restarts its others; wait for it, then look.
        var count: Int?
        var last = ""
        for _ in 0..<50 where count == nil {
            do { count = try Connection(postgres: url).scalar("SELECT count(*) FROM t") } catch {
                last = "\(error)"
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        #expect(count == 0, "\(last) \((try? String(contentsOfFile: cluster.folder + "/log", encoding: .utf8))?.suffix(1500) ?? "")")
        withExtendedLifetime(cluster) {}
    }
}
