import Foundation
import Notifications
import SQLite

/// One row of the user's activity as the replica holds it.
public struct ReplicaRow: Equatable, Sendable {
    public var id: Int
    public var version: Int
    public var createdAt: Int64
    public var kind: String
    public var title: String
    public var body: String
    public var seenAt: Int64?
    public var readAt: Int64?
    public var deleted: Bool
    /// The server's row, as received (tap, media, thread, actor…).
    public var json: JSON
}

/// The last counts the server gave, and whether they may be out of date (offline, or
/// stamps still queued). The replica never invents a count.
public struct ServerCounts: Equatable, Sendable {
    public var unseen: Int
    public var unread: Int
    public var stale: Bool

    public init(unseen: Int, unread: Int, stale: Bool) {
        self.unseen = unseen
        self.unread = unread
        self.stale = stale
    }
}

/// A local SQLite copy of one user's activity on one server, with the queue of mutations not
/// yet acknowledged. Every change is one transaction, so a killed process loses nothing queued.
/// Safe to use from several threads (one connection behind a lock).
public final class Replica: @unchecked Sendable {
    private let db: Database
    private let lock = NSRecursiveLock()

    public init(path: String) throws {
        db = try Database(path: path)
        var migrator = Migrator()
        migrator.register("0001-replica", """
            CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
            CREATE TABLE rows (
                id INTEGER PRIMARY KEY,
                version INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                kind TEXT NOT NULL,
                title TEXT NOT NULL,
                body TEXT NOT NULL,
                seen_at INTEGER,
                read_at INTEGER,
                deleted INTEGER NOT NULL DEFAULT 0,
                json TEXT NOT NULL
            );
            CREATE INDEX rows_newest_first ON rows(created_at DESC, id DESC);
            -- Mutations made here and not yet acknowledged by the server, in order.
            CREATE TABLE pending (seq INTEGER PRIMARY KEY, mutation TEXT NOT NULL);
            """)
        migrator.register("0002-entities", """
            -- The people, steps, comments and journeys the rows point at: destinations open offline.
            CREATE TABLE entities (kind TEXT NOT NULL, id TEXT NOT NULL, json TEXT NOT NULL, PRIMARY KEY (kind, id)) WITHOUT ROWID;
            """)
        migrator.register("0003-by-step", """
            -- A step's comments without reading every comment: an index on the JSON's step and time.
            CREATE INDEX entities_comments_by_step ON entities(json_extract(json, '$.step'), json_extract(json, '$.at'))
                WHERE kind = 'comments';
            -- The rows about a step (its interactions list).
            CREATE INDEX rows_by_step ON rows(json_extract(json, '$.tap.step')) WHERE json_extract(json, '$.tap.step') IS NOT NULL;
            """)
        try migrator.migrate(db)
        try locked {
            if try meta("client") == nil {
                try setMeta("client", "c-" + UUID().uuidString.lowercased().prefix(18))
            }
        }
    }

    /// `$XDG_STATE_HOME/stepo/replicas/{server}-{user}.db` (`~/.local/state/…`), folder created.
    public static func defaultPath(server: String, user: String) throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state"
        let folder = base + "/stepo/replicas"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        func safe(_ text: String) -> String {
            String(text.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." ? $0 : "_" }.prefix(80))
        }
        return "\(folder)/\(safe(server))-\(safe(user)).db"
    }

    /// The replica file of a user token on a server: named by a stable fingerprint of the
    /// token (FNV-1a), never the secret itself, so it opens offline too.
    public static func defaultPath(server: String, token: String) throws -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in token.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return try defaultPath(server: server, user: "t" + String(hash, radix: 16))
    }

    // MARK: Reading

    /// The newest rows first.
    public func rows(limit: Int = 500) throws -> [ReplicaRow] {
        try locked {
            try db.query("""
                SELECT \(Replica.rowColumns) FROM rows ORDER BY created_at DESC, id DESC LIMIT ?
                """, [limit], Replica.row)
        }
    }

    /// The hearts and shares on a step that reached this user as rows, newest first: the
    /// people behind a batched "and 12 others".
    public func interactions(onStep step: String) throws -> [ReplicaRow] {
        try locked {
            try db.query("""
                SELECT \(Replica.rowColumns) FROM rows
                WHERE json_extract(json, '$.tap.step') = ? AND kind IN ('heart', 'share', 'steppedWithHeart', 'steppedWithShare')
                ORDER BY created_at DESC, id DESC
                """, [step], Replica.row)
        }
    }

    private static let rowColumns = "id, version, created_at, kind, title, body, seen_at, read_at, deleted, json"

    private static func row(_ row: Row) -> ReplicaRow {
        ReplicaRow(id: row.int(0), version: row.int(1), createdAt: row.int64(2), kind: row.string(3),
                   title: row.string(4), body: row.string(5), seenAt: row.optionalInt64(6),
                   readAt: row.optionalInt64(7), deleted: row.bool(8),
                   json: (try? JSON.parse(row.string(9))) ?? .null)
    }

    /// A stored entity: `kind` is `users`, `steps`, `comments` or `journeys`.
    public func entity(_ kind: String, _ id: String) throws -> JSON? {
        try locked { try db.first("SELECT json FROM entities WHERE kind = ? AND id = ?", [kind, id]) { try? JSON.parse($0.string(0)) } ?? nil }
    }

    /// A step's comments as last synced, oldest first.
    public func comments(ofStep step: String) throws -> [JSON] {
        try locked {
            try db.query("""
                SELECT json FROM entities
                WHERE kind = 'comments' AND json_extract(json, '$.step') = ?
                ORDER BY json_extract(json, '$.at')
                """, [step]) { (try? JSON.parse($0.string(0))) ?? .null }
        }
    }

    public var rowCount: Int { (try? locked { try db.scalar("SELECT count(*) FROM rows") }) ?? 0 }

    /// The highest version applied.
    public var version: Int { (try? locked { try number("version") }) ?? 0 }

    public var clientId: String { (try? locked { try meta("client") }) ?? "c-unknown" }

    /// The user this replica belongs to, as the server named them (remembered for offline use).
    public var user: String? {
        get { try? locked { try meta("user") } }
        set { if let newValue { try? locked { try setMeta("user", newValue) } } }
    }

    /// The last counts the server gave; stale while mutations wait to be sent.
    public var counts: ServerCounts {
        (try? locked {
            ServerCounts(unseen: try number("unseen"), unread: try number("unread"),
                         stale: try pendingCount() > 0)
        }) ?? ServerCounts(unseen: 0, unread: 0, stale: true)
    }

    public func pendingCount() throws -> Int { try locked { try db.scalar("SELECT count(*) FROM pending") ?? 0 } }

    func pending() throws -> [JSON] {
        try locked { try db.query("SELECT mutation FROM pending ORDER BY seq") { (try? JSON.parse($0.string(0))) ?? .null } }
    }

    // MARK: Local acts: shown at once, queued for the server

    /// Opening Activity: every row here is stamped seen, and the server is told.
    public func markAllSeen(at: Int64) throws {
        try locked {
            try db.transaction {
                try db.run("UPDATE rows SET seen_at = ? WHERE seen_at IS NULL", at)
                try enqueue([("type", "seen"), ("upTo", .int(try number("version")))])
            }
        }
    }

    /// Opening a row: it is read (and seen), and the server is told.
    public func markRead(_ id: Int, at: Int64) throws {
        try locked {
            try db.transaction {
                try db.run("UPDATE rows SET read_at = coalesce(read_at, ?), seen_at = coalesce(seen_at, ?) WHERE id = ?", at, at, id)
                try enqueue([("type", "read"), ("id", .int(id))])
            }
        }
    }

    /// Any other mutation (`acceptRequest`, `followBack`, `preferences`, …), queued as given.
    public func enqueue(_ fields: [(String, JSON)]) throws {
        try locked {
            try db.transaction {
                let seq = try number("nextSeq", otherwise: 1)
                try db.run("INSERT INTO pending(seq, mutation) VALUES (?, ?)", seq, JSON.object([("seq", .int(seq))] + fields).serialized)
                try setMeta("nextSeq", String(seq + 1))
            }
        }
    }

    // MARK: Applying what the server said

    /// The server applied every mutation up to `seq`: drop them from the queue, keep its counts.
    func acknowledge(upTo seq: Int, counts: JSON?) throws {
        try locked {
            try db.transaction {
                try db.run("DELETE FROM pending WHERE seq <= ?", seq)
                try store(counts)
            }
        }
    }

    /// One page of changes and the version after it, in one transaction.
    func apply(page rows: [JSON], next: Int, counts: JSON?, entities: JSON? = nil) throws {
        try locked {
            try db.transaction {
                let upsert = """
                    INSERT INTO rows(id, version, created_at, kind, title, body, seen_at, read_at, deleted, json)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET version = excluded.version, deleted = excluded.deleted,
                        seen_at = coalesce(rows.seen_at, excluded.seen_at), read_at = coalesce(rows.read_at, excluded.read_at),
                        json = excluded.json, title = excluded.title, body = excluded.body
                    """
                for row in rows {
                    guard let id = row["id"]?.int, let version = row["version"]?.int else { continue }
                    try db.run(upsert, id, version, row["createdAt"]?.string.flatMap(Timestamp.parse) ?? 0,
                               row["kind"]?.string ?? "", row["title"]?.string ?? "", row["body"]?.string ?? "",
                               row["seenAt"]?.string.flatMap(Timestamp.parse), row["readAt"]?.string.flatMap(Timestamp.parse),
                               row["deleted"]?.bool ?? false, row.serialized)
                }
                for kind in ["users", "steps", "comments", "journeys"] {
                    for entity in entities?[kind]?.array ?? [] {
                        guard let id = entity["id"]?.string else { continue }
                        try db.run("""
                            INSERT INTO entities(kind, id, json) VALUES (?, ?, ?)
                            ON CONFLICT (kind, id) DO UPDATE SET json = excluded.json
                            """, kind, id, entity.serialized)
                    }
                }
                try setMeta("version", String(max(next, try number("version"))))
                try store(counts)
            }
        }
    }

    private func store(_ counts: JSON?) throws {
        guard let counts, let unseen = counts["unseen"]?.int, let unread = counts["unread"]?.int else { return }
        try setMeta("unseen", String(unseen))
        try setMeta("unread", String(unread))
    }

    private func meta(_ key: String) throws -> String? {
        try db.first("SELECT value FROM meta WHERE key = ?", [key]) { $0.string(0) }
    }

    private func number(_ key: String, otherwise: Int = 0) throws -> Int {
        try meta(key).flatMap(Int.init) ?? otherwise
    }

    private func setMeta(_ key: String, _ value: String) throws {
        try db.run("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value)
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
