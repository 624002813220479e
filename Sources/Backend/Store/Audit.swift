import Storage

extension Store {
    /// What an operator (`stepo check`) or a test asks of a whole store: is it sound, and how
    /// much does it hold.
    public var audit: Audit { Audit(store: self) }
}

/// A whole store's soundness and size, read without changing anything.
public struct Audit {
    let store: Store
    var db: Connection { store.db }

    /// Everything found wrong: pages the engine reports damaged (SQLite's integrity check;
    /// PostgreSQL checks its own pages as it reads them), then references that point at
    /// nothing. Empty for a sound store.
    public func problems() throws -> [String] {
        var found: [String] = []
        if db.dialect.isOneFile {
            found += try db.query("PRAGMA integrity_check") { $0.string(0) }.filter { $0 != "ok" }
        }
        return found + (try referenceViolations())
    }

    /// References that point at nothing. SQLite declares them without enforcing them per write
    /// (the store looks every reference up first): `PRAGMA foreign_key_check` reads them all.
    /// PostgreSQL enforces the declared ones at each write; its partitioned per-recipient
    /// tables declare none, so they are checked here row by row.
    public func referenceViolations() throws -> [String] {
        guard !db.dialect.isOneFile else {
            return try db.query("PRAGMA foreign_key_check") { "\($0.string(0)) row \($0.int(1)) → \($0.string(2))" }
        }
        return try Audit.postgresReferences.flatMap { try db.query($0) { $0.string(0) } }
    }

    private static let postgresReferences = [
        "SELECT 'notifications ' || id || ' → users' FROM notifications n WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = n.recipient)",
        "SELECT 'notifications ' || id || ' → events' FROM notifications n WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = n.event)",
        "SELECT 'notifications ' || id || ' → actor' FROM notifications n WHERE n.actor IS NOT NULL AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = n.actor)",
        "SELECT 'inboxes ' || \"user\" || ' → users' FROM inboxes i WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = i.\"user\")",
        "SELECT 'marks ' || \"user\" || ' → users' FROM marks m WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = m.\"user\")",
        "SELECT 'batches ' || row || ' → notifications' FROM batches b WHERE NOT EXISTS (SELECT 1 FROM notifications n WHERE n.id = b.row)",
    ]

    /// How many events have been applied, each counted once by its id (a device's mutations
    /// are events too, named `mutation:…`); with `prefix`, those whose id starts with it.
    public func eventsApplied(idPrefix prefix: String? = nil) throws -> Int {
        guard let prefix else { return try db.scalar("SELECT count(*) FROM events WHERE ext IS NOT NULL") ?? 0 }
        return try db.scalar("SELECT count(*) FROM events WHERE substr(ext, 1, CAST(? AS INTEGER)) = ?", prefix.unicodeScalars.count, prefix) ?? 0
    }

    /// How many notification rows the store holds, every recipient's.
    public func rowsStored() throws -> Int {
        try db.scalar("SELECT count(*) FROM notifications") ?? 0
    }
}
