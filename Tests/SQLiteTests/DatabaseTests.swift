import Foundation
import Testing
@testable import SQLite

@Suite("The SQLite layer, on a real file")
struct DatabaseTests {
    let path = NSTemporaryDirectory() + "stepo-sqlite-\(UUID().uuidString).db"

    func open() throws -> Database {
        let db = try Database(path: path)
        try db.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, name TEXT, score REAL, data BLOB)")
        return db
    }

    @Test("foreign keys are enforced unless the caller opts out")
    func foreignKeys() throws {
        let db = try Database(path: path)
        try db.execute("CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE c (p INTEGER REFERENCES p(id))")
        #expect(throws: SQLiteError.self) { try db.run("INSERT INTO c(p) VALUES (7)") }
        let relaxed = try Database(path: path, foreignKeys: false)
        try relaxed.run("INSERT INTO c(p) VALUES (7)")
        #expect(try relaxed.query("PRAGMA foreign_key_check") { $0.string(0) } == ["c"])
    }

    @Test("a file database runs in WAL mode")
    func wal() throws {
        let db = try open()
        #expect(try db.first("PRAGMA journal_mode", [], { $0.string(0) }) == "wal")
    }

    @Test("values round-trip through typed binds and columns")
    func roundTrip() throws {
        let db = try open()
        try db.run("INSERT INTO t(name, score, data) VALUES (?, ?, ?)", "Trần ✓", 2.5, SQLValue.blob([0, 1, 255]))
        try db.run("INSERT INTO t(name, score, data) VALUES (?, ?, ?)", Optional<String>.none, 1, SQLValue.null)
        let rows = try db.query("SELECT name, score, data FROM t ORDER BY id") { row in
            (row.optionalString(0), row.double(1), row.value(2))
        }
        #expect(rows[0].0 == "Trần ✓" && rows[0].1 == 2.5 && rows[0].2 == .blob([0, 1, 255]))
        #expect(rows[1].0 == nil && rows[1].2 == .null)
    }

    @Test("errors carry SQLite's message and the SQL")
    func errors() throws {
        let db = try open()
        do {
            try db.run("INSERT INTO nowhere VALUES (1)")
            Issue.record("expected an error")
        } catch let error as SQLiteError {
            #expect(error.message == "no such table: nowhere")
            #expect(error.sql == "INSERT INTO nowhere VALUES (1)")
        }
        try db.execute("CREATE UNIQUE INDEX t_name ON t(name)")
        try db.run("INSERT INTO t(name) VALUES (?)", "a")
        #expect(throws: SQLiteError.self) { try db.run("INSERT INTO t(name) VALUES (?)", "a") }
        do { try db.run("INSERT INTO t(name) VALUES (?)", "a") } catch let error as SQLiteError {
            #expect(error.isConstraintViolation)
            #expect(!error.description.contains("\"a\""))
        }
    }

    @Test("the wrong number of values, or a missing named value, is an error before anything runs")
    func bindChecks() throws {
        let db = try open()
        #expect(throws: SQLiteError.self) { try db.cached("INSERT INTO t(name) VALUES (?)").bind([]) }
        #expect(throws: SQLiteError.self) { try db.cached("INSERT INTO t(name) VALUES (:name)").bind(named: [":other": 1]) }
        try db.cached("INSERT INTO t(name) VALUES (:name)").bind(named: [":name": "x", ":extra": 2]).run()
        #expect(try db.scalar("SELECT count(*) FROM t") == 1)
    }

    @Test("a cached statement is prepared once and reused")
    func cache() throws {
        let db = try open()
        let a = try db.cached("SELECT 1")
        let b = try db.cached("SELECT 1")
        #expect(a === b)
    }

    @Test("a failing transaction rolls back everything; a failing savepoint only its own part")
    func transactions() throws {
        let db = try open()
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try db.transaction {
                try db.run("INSERT INTO t(name) VALUES ('lost')")
                throw Boom()
            }
        }
        #expect(try db.scalar("SELECT count(*) FROM t") == 0)
        try db.transaction {
            try db.run("INSERT INTO t(name) VALUES ('kept')")
            _ = try? db.transaction {
                try db.run("INSERT INTO t(name) VALUES ('inner')")
                throw Boom()
            }
        }
        #expect(try db.query("SELECT name FROM t") { $0.string(0) } == ["kept"])
        #expect(!db.isInTransaction)
    }

    @Test("migrations apply once, in order, and record the schema version")
    func migrations() throws {
        var migrator = Migrator()
        migrator.register("1-a", "CREATE TABLE a (x)")
        migrator.register("2-b", "CREATE TABLE b (y)")
        let db = try Database(path: path)
        #expect(try migrator.migrate(db) == ["1-a", "2-b"])
        #expect(try migrator.migrate(db) == [])
        #expect(try db.scalar("PRAGMA user_version") == 2)
        migrator.register("3-bad", "CREATE TABLE a (z)")
        #expect(throws: SQLiteError.self) { try migrator.migrate(db) }
        #expect(try db.scalar("PRAGMA user_version") == 2)
        var older = Migrator()
        older.register("1-a", "CREATE TABLE a (x)")
        #expect(throws: SQLiteError.self) { try older.migrate(db) }
    }

    @Test("opening a path in a missing folder says which file")
    func openError() {
        do {
            _ = try Database(path: "/nonexistent-folder/x.db")
            Issue.record("expected an error")
        } catch let error as SQLiteError {
            #expect(error.message.contains("/nonexistent-folder/x.db"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
