import Foundation
import Postgres
import SQLite
import Testing
import TestSupport
@testable import Backend

/// A file or database that is another program's is never made into a store by accident:
/// every command refuses it and leaves it as it was; `stepo init` makes a store of it outright.
@Suite("Another program's database")
struct ForeignDatabaseTests {
    @Test("stats, ingest, activity, devices and token refuse a database holding an invoices table, and leave it byte for byte; init adopts it")
    func refusedThenAdopted() throws {
        let folder = NSTemporaryDirectory() + "stepo-foreign-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let location: String
        if TestEngine.isPostgres {
            location = try PostgresCluster.shared().newDatabase()
            let other = try PGConnection(location)
            try other.execute("CREATE TABLE invoices (id BIGINT PRIMARY KEY, total NUMERIC); INSERT INTO invoices VALUES (1, 12.50)")
        } else {
            location = folder + "/invoices.db"
            let other = try Database(path: location)
            try other.execute("PRAGMA journal_mode = DELETE; CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices VALUES (1, 12.5)")
        }
        let before = TestEngine.isPostgres ? nil : FileManager.default.contents(atPath: location)
        let store = TestEngine.storeArguments(location)
        let commands: [[String]] = [["stats"] + store, ["ingest"] + store + ["-"], ["activity"] + store + ["--user", "chaucao"],
                                    ["devices"] + store + ["--user", "chaucao"], ["token"] + store + ["--user", "chaucao"]]
        for command in commands {
            let refused = try Stepo.run(command, stdin: Data())
            #expect(refused.status == 1, "\(command[0]): \(refused.stderr)")
            #expect(refused.stderr.contains("another program's tables (invoices) and was left as it is"), "\(command[0]): \(refused.stderr)")
        }
        if let before {
            #expect(FileManager.default.contents(atPath: location) == before, "the file changed")
            #expect(!FileManager.default.fileExists(atPath: location + "-wal"))
        } else {
            let tables = try PGConnection(location).execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()")
            #expect(tables.int64(0, 0) == 1, "tables were added beside the invoices")
        }
        // Asked outright: a store beside the invoices, which stay.
        let made = try Stepo.run(["init"] + store)
        #expect(made.status == 0 && made.stdout.contains("a stepo store"), "\(made.stderr)")
        #expect(try Stepo.run(["check"] + store).status == 0)
        #expect(try Stepo.run(["stats"] + store).status == 0)
        // A new file is still made into a store by any command.
        if !TestEngine.isPostgres {
            #expect(try Stepo.run(["ingest", "--db", folder + "/new.db", "-"], stdin: Data()).status == 0)
        }
    }

    @Test("a file with a schema_migrations of another shape, only a view, or only a version stamped is another program's too, left byte for byte",
          arguments: ["CREATE TABLE schema_migrations (version INTEGER)", "CREATE VIEW v AS SELECT 1", "PRAGMA user_version = 3", "PRAGMA application_id = 12345"])
    func otherShapes(sql: String) throws {
        let folder = NSTemporaryDirectory() + "stepo-foreign-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/other.db"
        try Database(path: path).execute("PRAGMA journal_mode = DELETE; " + sql)
        let before = FileManager.default.contents(atPath: path)
        for command in [["stats"], ["activity", "--user", "x"], ["ingest", "-"]] {
            let refused = try Stepo.run([command[0], "--db", path] + command.dropFirst(), stdin: Data())
            #expect(refused.status == 1 && refused.stderr.contains("was left as it is"), "\(sql) / \(command[0]): \(refused.stderr)")
        }
        #expect(FileManager.default.contents(atPath: path) == before)
    }
}
