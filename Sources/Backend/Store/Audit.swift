import Notifications
import Storage

/// What is at a location given as a store, when it is not one.
public struct NotAStore: Error, CustomStringConvertible {
    public let location: String
    public let why: String
    public var description: String { "\(location) is not a stepo store: \(why)" }

    public init(location: String, why: String) {
        self.location = location
        self.why = why
    }

    /// Another program's database: its tables, and how to make a store of it all the same.
    init(foreign tables: [String], at location: String) {
        let named = tables.prefix(5).joined(separator: ", ") + (tables.count > 5 ? ", …" : "")
        let what = tables.isEmpty ? "another program stamped it (its user_version or application_id)" : "it holds another program's tables (\(named))"
        self.init(location: Store.redacted(location), why: "\(what) and was left as it is; `stepo init` makes a store of it")
    }
}

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

    /// References that point at nothing, one line per kind: the table and column, what they
    /// should point at, and how many rows do not. SQLite declares its foreign keys without
    /// enforcing them per write (the store looks every reference up first): `PRAGMA
    /// foreign_key_check` reads them all. PostgreSQL enforces the declared ones at each write;
    /// its partitioned per-recipient tables declare none. A row's step, comment and journey are
    /// declared on neither. Those are counted here one by one.
    public func referenceViolations() throws -> [String] {
        var found: [(what: String, rows: Int)] = []
        if db.dialect.isOneFile {
            var columns: [String: [Int: String]] = [:]
            var counts: [String: Int] = [:]
            var order: [String] = []
            for (table, parent, key) in try db.query("PRAGMA foreign_key_check", [], { ($0.string(0), $0.string(2), $0.int(3)) }) {
                if columns[table] == nil {
                    columns[table] = Dictionary(try db.query("PRAGMA foreign_key_list(\"\(table)\")") { ($0.int(0), $0.string(3)) },
                                                uniquingKeysWith: { first, _ in first })
                }
                let what = "\(table).\(columns[table]?[key] ?? "?") → \(parent)"
                if counts[what] == nil { order.append(what) }
                counts[what, default: 0] += 1
            }
            found += order.map { ($0, counts[$0] ?? 0) }
        }
        for check in Audit.undeclared where !(db.dialect.isOneFile && check.declaredOnSQLite) {
            let rows = try db.scalar("""
                SELECT count(*) FROM \(check.table) AS c WHERE c.\(check.column) IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM \(check.parent) AS p WHERE p.id = c.\(check.column))
                """) ?? 0
            if rows > 0 { found.append(("\(check.table).\(check.column) → \(check.parent)", rows)) }
        }
        return found.map { "\($0.what): \(Plural.count($0.rows, "row")) point\($0.rows == 1 ? "s" : "") at nothing" }
    }

    /// References PostgreSQL does not check by itself (see `referenceViolations`); those SQLite
    /// declares are read by its `foreign_key_check` there.
    private static let undeclared: [(table: String, column: String, parent: String, declaredOnSQLite: Bool)] = [
        ("notifications", "recipient", "users", true), ("notifications", "event", "events", true),
        ("notifications", "actor", "users", true), ("notifications", "step", "steps", false),
        ("notifications", "comment", "comments", false), ("notifications", "journey", "journeys", false),
        ("inboxes", "\"user\"", "users", true), ("marks", "\"user\"", "users", true), ("batches", "row", "notifications", true),
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
