import Synchronization
import CSQLite
import Foundation

/// One SQLite connection. Owns the handle; statements it prepares are cached by SQL text.
///
/// A connection is used from one thread at a time (SQLite's multi-thread mode); give each
/// thread its own connection to the same file. WAL mode lets readers run beside a writer.
public final class Database {
    let handle: OpaquePointer
    public let path: String
    private var cache: [SQLText: Statement] = [:]
    private var transactionDepth = 0

    /// Process-wide SQLite settings, applied once before the first connection.
    private static let configured: Void = {
        _ = stepo_sqlite_disable_memstatus()
    }()

    /// Opens (creating when asked) the database at `path`, in WAL mode.
    ///
    /// - Parameter foreignKeys: whether SQLite enforces REFERENCES clauses on every write. On by
    ///   default; a caller whose writes already check their references may turn it off, since
    ///   each enforced reference costs a b-tree search per written row.
    public init(path: String, readOnly: Bool = false, create: Bool = true, foreignKeys: Bool = true) throws {
        _ = Database.configured
        var raw: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        flags |= readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0))
        let code = sqlite3_open_v2(path, &raw, flags, nil)
        guard code == SQLITE_OK, let raw else {
            let error = SQLiteError(code: code, connection: raw, sql: nil)
            sqlite3_close_v2(raw)
            throw SQLiteError(code: error.code, message: "cannot open \(path): \(error.message)")
        }
        self.handle = raw
        self.path = path
        sqlite3_extended_result_codes(raw, 1)
        // Waiting for another connection's write lock: SQLite's own busy timeout sleeps 1, 2, 5,
        // 10 … 100 ms between looks, which adds tens of milliseconds to a short wait behind a
        // writer committing a thousand times a second. Look every 0.1 ms for the first 10 ms,
        // then every millisecond, and give up after about 5 s as before.
        sqlite3_busy_handler(raw, { _, count in
            guard count < 5_100 else { return 0 }
            usleep(count < 100 ? 100 : 1_000)
            return 1
        }, nil)
        do {
            if !readOnly && path != ":memory:" { try enterWAL() }
            try execute("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = \(foreignKeys ? "ON" : "OFF"); PRAGMA temp_store = MEMORY")
        } catch {
            cache.removeAll()
            sqlite3_close_v2(raw)
            throw error
        }
    }

    deinit {
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Puts a new file in WAL mode. Several processes opening one new file at once all read it
    /// in its first (rollback) mode and ask for the write lock the change needs; SQLite answers
    /// all but one BUSY at once, without the busy handler (waiting there could deadlock). The
    /// others look again, as the busy handler would, for about 5 s: by then the file is in WAL
    /// mode and the question costs no lock at all.
    private func enterWAL() throws {
        let deadline = DispatchTime.now().uptimeNanoseconds + 5_000_000_000
        while true {
            do {
                return try execute("PRAGMA journal_mode = WAL")
            } catch let error as SQLiteError where error.code & 0xff == SQLITE_BUSY && DispatchTime.now().uptimeNanoseconds < deadline {
                usleep(1_000 + UInt32.random(in: 0..<1_000))
            }
        }
    }

    /// The SQLite library version this process linked, e.g. "3.40.1".
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }

    /// Runs one or more statements with no parameters and no results.
    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        if code != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_free(message)
            throw SQLiteError(code: code, message: text, sql: sql)
        }
    }

    /// A prepared statement for `sql`, reused across calls (prepared once, persistent).
    public func cached(_ sql: String) throws -> Statement {
        let key = SQLText(sql)
        if let statement = cache[key] { return statement }
        let statement = try Statement(database: self, sql: sql, persistent: true)
        // A text built with a value in it is a new statement every time: past this many, the
        // cache starts again rather than keeping each (a caller's statement stays valid).
        if cache.count >= Database.mostCached { cache.removeAll(keepingCapacity: true) }
        cache[key] = statement
        Database.witness?.prepared(sql, on: path)
        return statement
    }

    /// Statements a connection keeps prepared at most (the set paths use a few hundred).
    public static let mostCached = 2_048

    /// A fresh statement, not cached: for SQL that runs once.
    public func prepare(_ sql: String) throws -> Statement {
        Database.witness?.prepared(sql, on: path)
        return try Statement(database: self, sql: sql, persistent: false)
    }

    /// When set, told every SQL text any connection prepares (for a test that checks every
    /// statement's query plan). Set it before opening the connections to watch.
    public static var witness: StatementWitness? {
        get { watching.withLock { $0 } }
        set { watching.withLock { $0 = newValue } }
    }
    private static let watching = Mutex<StatementWitness?>(nil)

    // MARK: Profiling

    private var profile: Profile?

    /// Starts timing every statement this connection runs (SQLite's own clock, per step to
    /// completion): what `profileReport` then lists.
    public func startProfiling() {
        let profile = Profile()
        self.profile = profile
        let context = Unmanaged.passUnretained(profile).toOpaque()
        sqlite3_trace_v2(handle, UInt32(SQLITE_TRACE_PROFILE), { _, context, statement, nanoseconds in
            guard let context, let statement, let nanoseconds else { return 0 }
            let profile = Unmanaged<Profile>.fromOpaque(context).takeUnretainedValue()
            let sql = sqlite3_sql(OpaquePointer(statement)).map { String(cString: $0) } ?? "?"
            profile.add(sql, nanoseconds.load(as: Int64.self))
            return 0
        }, context)
    }

    /// The statements that took the most time since profiling started, with their runs.
    public func profileReport(top: Int = 15) -> [(sql: String, runs: Int, milliseconds: Double)] {
        guard let profile else { return [] }
        return profile.totals.sorted { $0.value.time > $1.value.time }.prefix(top)
            .map { ($0.key, $0.value.runs, Double($0.value.time) / 1e6) }
    }

    /// Runs `sql` with `values` bound, ignoring results.
    public func run(_ sql: String, _ values: SQLBindable...) throws {
        try cached(sql).bind(values).run()
    }

    /// Runs `sql` with an array of `values` bound, ignoring results.
    public func run(_ sql: String, binding values: [SQLBindable]) throws {
        try cached(sql).bind(values).run()
    }

    /// Every row of `sql`, mapped.
    public func query<T>(_ sql: String, _ values: [SQLBindable] = [], _ transform: (Row) throws -> T) throws -> [T] {
        try cached(sql).bind(values).map(transform)
    }

    /// The first row of `sql`, mapped, or nil.
    public func first<T>(_ sql: String, _ values: [SQLBindable] = [], _ transform: (Row) throws -> T) throws -> T? {
        try cached(sql).bind(values).first(transform)
    }

    /// The integer in the first column of the first row, or nil.
    public func scalar(_ sql: String, _ values: SQLBindable...) throws -> Int? {
        try cached(sql).bind(values).first { $0.optionalInt(0) } ?? nil
    }

    private static let savepoints: [(begin: String, release: String, rollback: String)] = (0..<8).map(savepointText)

    private static func savepointText(_ depth: Int) -> (begin: String, release: String, rollback: String) {
        ("SAVEPOINT stepo_sp\(depth)", "RELEASE stepo_sp\(depth)", "ROLLBACK TO stepo_sp\(depth); RELEASE stepo_sp\(depth)")
    }

    /// The savepoint statements for a nesting depth, made once (this runs for every event).
    private static func savepointSQL(_ depth: Int) -> (begin: String, release: String, rollback: String) {
        depth < savepoints.count ? savepoints[depth] : savepointText(depth)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Rows inserted, updated or deleted through this connection since it opened.
    public var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` atomically: a transaction at the outermost level, a savepoint when nested.
    /// Any error thrown rolls back everything `body` did and is rethrown.
    public func transaction<T>(immediate: Bool = true, _ body: () throws -> T) throws -> T {
        let depth = transactionDepth
        let sql = Database.savepointSQL(depth)
        try cached(depth == 0 ? (immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED") : sql.begin).run()
        transactionDepth += 1
        // The depth comes back down exactly once, whether the body or the COMMIT throws (a full
        // disk fails the COMMIT: counted twice, the next transaction would think itself nested).
        defer { transactionDepth = depth }
        do {
            let result = try body()
            try cached(depth == 0 ? "COMMIT" : sql.release).run()
            return result
        } catch {
            try? execute(depth == 0 ? "ROLLBACK" : sql.rollback)
            throw error
        }
    }
}

/// A statement-cache key that hashes an SQL text by its length and three 8-byte words.
///
/// Hashing a whole SQL text on every lookup showed up in ingest profiles; equality stays exact
/// (and is nearly free for the literals the code passes, which share their storage).
public struct SQLText: Hashable {
    let sql: String

    public init(_ sql: String) { self.sql = sql }

    public func hash(into hasher: inout Hasher) {
        var sql = sql
        sql.withUTF8 { bytes in
            hasher.combine(bytes.count)
            guard bytes.count >= 8, let base = UnsafeRawPointer(bytes.baseAddress) else { return }
            // The first, middle and last eight bytes tell statements apart well enough.
            for offset in [0, (bytes.count - 8) / 2, bytes.count - 8] {
                hasher.combine(base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            }
        }
    }

    public static func == (a: SQLText, b: SQLText) -> Bool { a.sql == b.sql }
}

/// Told each SQL text prepared while it is installed, and on which file.
public final class StatementWitness: Sendable {
    private let texts = Mutex<[String: Set<String>]>([:])

    public init() {}

    func prepared(_ sql: String, on path: String) {
        texts.withLock { _ = $0[path, default: []].insert(sql) }
    }

    /// Every SQL text prepared on the file at `path` so far.
    public func statements(on path: String) -> Set<String> {
        texts.withLock { $0[path] ?? [] }
    }
}

/// Time spent per SQL text.
final class Profile {
    var totals: [String: (runs: Int, time: Int64)] = [:]

    func add(_ sql: String, _ nanoseconds: Int64) {
        let old = totals[sql] ?? (0, 0)
        totals[sql] = (old.runs + 1, old.time + nanoseconds)
    }
}
