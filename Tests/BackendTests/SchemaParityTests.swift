import Foundation
import Testing
import TestSupport
@testable import Backend

/// The two DDLs are written by hand (Schema.swift, PostgresSchema.swift): this holds them to one
/// shape, so a table, a column, a key or an index added to one engine and not the other fails
/// here rather than in a query on the other engine.
@Suite("The two engines' schemas",
       .enabled(if: !TestEngine.isPostgres && (PostgresCluster.available || ProcessInfo.processInfo.environment["CI"] != nil)))
struct SchemaParityTests {
    @Test("SQLite and PostgreSQL stores have the same tables, columns, nullability, keys and indexes")
    func sameShape() throws {
        let folder = NSTemporaryDirectory() + "stepo-schema-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sqlite = try Store(location: folder + "/store.db").schemaShape()
        let postgres = try Store(location: try PostgresCluster.shared().database(for: folder + "/store")).schemaShape()
        #expect(sqlite.tables.count > 20, "\(sqlite)")
        // PostgreSQL partitions the rows by recipient (a key must hold the partition column);
        // several servers ask it whose rows changed since a version (one server on SQLite asks
        // per parked poll); and delivery attempts are read in the order of SQLite's implicit
        // rowid, which PostgreSQL declares. These differences are deliberate, and only these.
        let deliberateKeys = ["notifications": (sqlite: ["id"], postgres: ["recipient", "id"]),
                              "delivery_attempts": (sqlite: [], postgres: ["rowid"])]
        let deliberateColumns = ["delivery_attempts": "rowid"]
        let deliberateIndexes: Set<String> = ["notifications_by_id", "notifications_by_change", "marks_by_change", "revocations_by_change"]
        #expect(sqlite.tables.map(\.name) == postgres.tables.map(\.name))
        for table in sqlite.tables {
            guard let other = postgres.tables.first(where: { $0.name == table.name }) else { continue }
            #expect(table.columns.map(\.name) == other.columns.map(\.name).filter { $0 != deliberateColumns[table.name] },
                    "columns of \(table.name)")
            for column in table.columns {
                guard let twin = other.columns.first(where: { $0.name == column.name }) else { continue }
                #expect(column.notNull == twin.notNull, "\(table.name).\(column.name): NOT NULL on SQLite \(column.notNull), on PostgreSQL \(twin.notNull)")
            }
            if let known = deliberateKeys[table.name] {
                #expect(table.primaryKey == known.sqlite && other.primaryKey == known.postgres, "primary key of \(table.name)")
            } else {
                #expect(table.primaryKey == other.primaryKey, "primary key of \(table.name)")
            }
        }
        let onlySQLite = sqlite.indexes.filter { !postgres.indexes.contains($0) }
        let onlyPostgres = postgres.indexes.filter { !sqlite.indexes.contains($0) && !deliberateIndexes.contains($0.name ?? "") }
        for name in deliberateIndexes {
            #expect(postgres.indexes.contains { $0.name == name } && !sqlite.indexes.contains { $0.name == name }, "\(name) is PostgreSQL's own")
        }
        #expect(onlySQLite.isEmpty && onlyPostgres.isEmpty,
                "only on SQLite:\n\(SchemaShape(tables: [], indexes: onlySQLite))\nonly on PostgreSQL:\n\(SchemaShape(tables: [], indexes: onlyPostgres))")
    }
}
