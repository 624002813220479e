import Foundation
import Notifications
import SQLite
import Wire

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

/// A local SQLite copy of one reader's activity on one store, with the queue of mutations not
/// yet acknowledged. Every change is one transaction, so a killed process loses nothing queued.
///
/// It belongs to one (store, reader): a page from another store starts it afresh. It holds
/// nothing its reader may no longer see: what a sync says to drop is deleted with SQLite's
/// `secure_delete` (overwritten, not just unlinked) and the write-ahead log is truncated, so
/// no byte of it stays in the file. Safe to use from several threads (one connection behind
/// a lock).
public final class Replica: @unchecked Sendable {  // owns a SQLite handle; its recursive lock serialises every use
    let db: Database
    let lock = NSRecursiveLock()
    public let path: String
    /// The marks, read once and kept until they change.
    var markCache: MarkIndex?
    /// Copies a sync's pages from the log into the file on a thread of its own, so the
    /// next page is written meanwhile.
    let checkpointer: Checkpointer

    public init(path: String) throws {
        self.path = path
        db = try Replica.open(path)
        checkpointer = Checkpointer(path: path)
        try locked {
            if try meta("client") == nil {
                try setMeta("client", "c-" + UUID().uuidString.lowercased().prefix(18))
            }
            // A first sync stopped midway (killed, or the machine went down) left its indexes
            // to be made at its end: made now, so the replica reads as fast as ever meanwhile.
            // The pull goes on from where it stopped, with them.
            // Asked first: an open with nothing waiting takes no write lock.
            if try meta("deferredIndexes") != nil { try db.transaction { try restoreIndexes() } }
        }
    }

    deinit { checkpointer.finish() }

    /// The page cache while a pull has more pages to come (SQLite's default otherwise, 2 MiB).
    static let pullCacheKiB = 32_000

    /// Opens and migrates the file; one written by a build that knows other migrations is a
    /// cache of something else, and is started afresh.
    private static func open(_ path: String) throws -> Database {
        let db = try Database(path: path)
        try db.execute("PRAGMA secure_delete = ON")
        try db.function("stepo_search_key", SearchKey.of)
        do {
            try ReplicaSchema.migrator.migrate(db)
            return db
        } catch let error as SQLiteError where error.message.contains("unknown to this build") {
            for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
            let fresh = try Database(path: path)
            try fresh.execute("PRAGMA secure_delete = ON")
            try fresh.function("stepo_search_key", SearchKey.of)
            try ReplicaSchema.migrator.migrate(fresh)
            return fresh
        }
    }

    /// The folder replicas live in: `$XDG_STATE_HOME/stepo/replicas` (`~/.local/state/…`), made.
    public static func folder() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state"
        let folder = base + "/stepo/replicas"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    private static func safe(_ text: String) -> String {
        String(text.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." ? $0 : "_" }.prefix(80))
    }

    /// The embedded default's replica of `user` on the store whose identity is `store` (in
    /// `folder`, or the replicas' folder).
    public static func defaultPath(store: String, user: String, in folder: String? = nil) throws -> String {
        "\(try folder ?? Replica.folder())/embedded-\(safe(store))-\(safe(user)).db"
    }

    /// Every embedded replica of the store whose identity is `store`, whoever's (in `folder`,
    /// or the replicas' folder): what a reset store leaves behind.
    public static func embeddedPaths(store: String, in folder: String? = nil) throws -> [String] {
        let folder = try folder ?? Replica.folder()
        let prefix = "embedded-\(safe(store))-"
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
            .filter { $0.hasPrefix(prefix) && $0.hasSuffix(".db") }.sorted().map { folder + "/" + $0 }
    }

    /// The replica of a user token on a server: named by a stable fingerprint of the token
    /// (FNV-1a), never the secret itself, so it opens offline too. The store behind the server
    /// is checked on every pull (`ActivityPage.store`).
    public static func defaultPath(server: String, token: String, in folder: String? = nil) throws -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in token.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return "\(try folder ?? Replica.folder())/\(safe(server))-t\(String(hash, radix: 16)).db"
    }

    /// Removes this replica's files when it holds nothing at all — never synced, nothing
    /// queued: what a first sync to a wrong address would otherwise leave behind. True when
    /// it did.
    @discardableResult
    public func discardIfEmpty() -> Bool {
        // A replica that cannot be read is not known to be empty: it stays.
        guard (try? version) == 0, (try? rowCount) == 0, (try? pendingCount()) == 0 else { return false }
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        return true
    }

    // MARK: What the replica knows of itself

    public var rowCount: Int { get throws { try locked { try db.scalar("SELECT count(*) FROM rows") ?? 0 } } }

    /// The highest version applied.
    public var version: Int { get throws { try locked { try number("version") } } }

    /// Within the version after `version`, the last row applied (0: none): where a change
    /// bigger than a page goes on.
    public var afterRow: Int { get throws { try locked { try number("afterRow") } } }

    /// The id the server files this replica's mutations under (made when the replica was). A
    /// replica that cannot say it throws: sent under a stand-in, its mutations would be taken
    /// for another client's.
    /// Where this replica stands: the version applied, the row reached inside the next one, and
    /// the store its rows came from. What a sync starts from and checks each page against: a
    /// failure to read it throws, never reads as "empty" (which would reset the replica).
    /// `history`: the store's mark at that version, to be asked back with it.
    public func place() throws -> (version: Int, afterRow: Int, store: String?, history: String?) {
        try locked { (try number("version"), try number("afterRow"), try meta("store"), try meta("history")) }
    }

    public var clientId: String {
        get throws {
            guard let id = try locked({ try meta("client") }) else {
                throw SQLiteError(code: 0, message: "the replica at \(path) has no client id", sql: nil)
            }
            return id
        }
    }

    /// The identity of the store these rows came from (nil before the first pull).
    public var storeIdentity: String? { get throws { try locked { try meta("store") } } }

    /// The user this replica belongs to, as the server named them (remembered for offline use).
    public var user: String? { get throws { try locked { try meta("user") } } }

    /// Remembers the user this replica belongs to.
    public func setUser(_ user: String) throws { try locked { try setMeta("user", user) } }

    /// The last counts the server gave; stale while mutations wait to be sent.
    public var counts: ServerCounts {
        get throws {
            try locked { ServerCounts(unseen: try number("unseen"), unread: try number("unread"), stale: try pendingCount() > 0) }
        }
    }

    /// How far a first sync has come: rows received of the reader's rows in all; nil once done.
    /// Whether a first sync has brought everything once (the server's seen marks among it).
    public var firstSyncDone: Bool { get throws { try locked { try meta("initialDone") != nil } } }

    public var initialSync: (received: Int, total: Int)? {
        get throws {
            try locked {
                guard try meta("initialDone") == nil, let total = try meta("initialTotal").flatMap(Int.init) else { return nil }
                return (try number("initialReceived"), total)
            }
        }
    }

    public func pendingCount() throws -> Int { try locked { try db.scalar("SELECT count(*) FROM pending") ?? 0 } }

    /// The mutations waiting for the server, in order (those that cannot be read are taken
    /// out by `discardUnreadable`, which says how many).
    /// The queued mutations, oldest first: at most `limit` (a sync sends a batch at a time, and
    /// a bulk read may have queued thousands).
    public func pending(limit: Int = Int.max) throws -> [Mutation] {
        try locked {
            try db.query("SELECT mutation FROM pending ORDER BY seq LIMIT ?", [limit]) { Replica.mutation($0.string(0)) }.compactMap { $0 }
        }
    }

    /// A queued mutation as stored, or nil when it cannot be read back.
    private static func mutation(_ text: String) -> Mutation? {
        (try? JSON.parse(text)).flatMap { try? Mutation(json: $0) }
    }

    /// Removes the queued mutations that cannot be read back (a damaged local copy): they can
    /// never be sent, and left in place they would keep the counts stale for ever. Returns how
    /// many went, for the reader to be told.
    public func discardUnreadable() throws -> Int {
        try locked {
            let unreadable = try db.query("SELECT seq, mutation FROM pending ORDER BY seq") { row in
                Replica.mutation(row.string(1)) == nil ? row.int(0) : nil
            }.compactMap { $0 }
            for seq in unreadable { try db.run("DELETE FROM pending WHERE seq = ?", seq) }
            return unreadable.count
        }
    }

    // MARK: Meta

    func meta(_ key: String) throws -> String? {
        try db.first("SELECT value FROM meta WHERE key = ?", [key]) { $0.string(0) }
    }

    func number(_ key: String, otherwise: Int = 0) throws -> Int {
        try meta(key).flatMap(Int.init) ?? otherwise
    }

    func setMeta(_ key: String, _ value: String) throws {
        try db.run("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value)
    }

    func clearMeta(_ key: String) throws {
        try db.run("DELETE FROM meta WHERE key = ?", key)
    }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
