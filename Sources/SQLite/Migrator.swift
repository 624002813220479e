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

    /// Throws `ForeignDatabase` unless `db` is new (nothing in it, no version or application
    /// id set) or ours (a `schema_migrations` of our shape): a table, a view or a version set
    /// by another program, or a `schema_migrations` of its own (a common name), is not ours.
    public static func requireOwn(_ db: Database) throws {
        // One read transaction, so the three looks see one state of the file: read apart, a
        // new file's first look (no tables) and a later one (the version another process just
        // stamped while migrating it) made it another program's.
        try db.transaction(immediate: false) {
            let objects = try db.query("""
                SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type = 'table' DESC, name
                """) { $0.string(0) }
            let columns = try db.query("SELECT name FROM pragma_table_info('schema_migrations')") { $0.string(0) }
            if columns.isEmpty {
                let stamped = try (db.scalar("PRAGMA user_version") ?? 0) != 0 || (db.scalar("PRAGMA application_id") ?? 0) != 0
                if !objects.isEmpty || stamped { throw ForeignDatabase(path: db.path, tables: objects) }
            } else if columns != ["id"] {
                throw ForeignDatabase(path: db.path, tables: objects)
            }
        }
    }

    /// Applies, in order and each in its own transaction, the migrations the file lacks.
    /// Returns the ids applied now. Several processes opening one new file at once take turns:
    /// each migration is looked for again under the write lock, so it runs once.
    ///
    /// A database that already holds tables but never had migrations is another program's:
    /// it is left as it is (`ForeignDatabase`) unless `adopting`.
    @discardableResult
    public func migrate(_ db: Database, adopting: Bool = false) throws -> [String] {
        if !adopting { try Migrator.requireOwn(db) }
        try db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY NOT NULL)")
        let done = Set(try db.query("SELECT id FROM schema_migrations") { $0.string(0) })
        let known = Set(migrations.map(\.id))
        if let unknown = done.subtracting(known).sorted().first {
            throw SQLiteError(code: 1, message: "the database has migration \(unknown), unknown to this build: it was written by a newer stepo")
        }
        var applied: [String] = []
        for (index, migration) in migrations.enumerated() where !done.contains(migration.id) {
            let ran = try db.transaction { () -> Bool in
                // Another process may have applied it since the look above.
                guard try db.scalar("SELECT count(*) FROM schema_migrations WHERE id = ?", migration.id) == 0 else { return false }
                try db.execute(migration.sql)
                try db.run("INSERT INTO schema_migrations(id) VALUES (?)", migration.id)
                try db.execute("PRAGMA user_version = \(index + 1)")
                return true
            }
            if ran { applied.append(migration.id) }
        }
        return applied
    }
}

/// A database that holds another program's tables and no migrations of ours: never migrated
/// into one of ours unless asked outright.
public struct ForeignDatabase: Error, CustomStringConvertible {
    public let path: String
    public let tables: [String]
    public var description: String {
        let named = tables.prefix(5).joined(separator: ", ") + (tables.count > 5 ? ", …" : "")
        return "\(path) is another program's database (\(tables.isEmpty ? "its version stamped" : "its tables: " + named)): left as it is"
    }
}
