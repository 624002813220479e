/// Append-only schema migrations, keyed by id and recorded in `schema_migrations`.
///
/// A migration never changes once shipped; new schema comes as a new migration.
/// `PRAGMA user_version` mirrors the count applied, so `sqlite3 FILE 'PRAGMA user_version'`
/// tells a file's schema version.
public struct Migrator {
    public struct Migration {
        public let id: String
        public let sql: String
        public init(_ id: String, _ sql: String) { self.id = id; self.sql = sql }
    }

    public private(set) var migrations: [Migration] = []

    public init() {}

    public mutating func register(_ id: String, _ sql: String) {
        precondition(!migrations.contains { $0.id == id }, "migration \(id) registered twice")
        migrations.append(Migration(id, sql))
    }

    /// Applies, in order and each in its own transaction, the migrations the file lacks.
    /// Returns the ids applied now.
    @discardableResult
    public func migrate(_ db: Database) throws -> [String] {
        try db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY NOT NULL)")
        let done = Set(try db.query("SELECT id FROM schema_migrations") { $0.string(0) })
        let known = Set(migrations.map(\.id))
        if let unknown = done.subtracting(known).sorted().first {
            throw SQLiteError(code: 1, message: "the database has migration \(unknown), unknown to this build: it was written by a newer stepo")
        }
        var applied: [String] = []
        for (index, migration) in migrations.enumerated() where !done.contains(migration.id) {
            try db.transaction {
                try db.execute(migration.sql)
                try db.run("INSERT INTO schema_migrations(id) VALUES (?)", migration.id)
                try db.execute("PRAGMA user_version = \(index + 1)")
            }
            applied.append(migration.id)
        }
        return applied
    }
}
