import Foundation
import Postgres
import SQLite

/// Which engine holds a store.
public enum Engine: String, Sendable {
    /// The embedded default: one file, one writer at a time.
    case sqlite
    /// The scale-out store: one server, many `stepo serve` processes.
    case postgresql
}

/// The one seam between the backend's SQL and an engine: a connection, its statements, its
/// transactions. The backend writes its SQL once, in the dialect both engines share (`?` and
/// `:name` parameters, `ON CONFLICT … DO NOTHING`, `RETURNING`); on PostgreSQL the text is
/// translated once (`$n` parameters, the reserved column name `user` quoted) and prepared on
/// the server. What differs beyond that — schema, copies, the writer lock — is asked of
/// `engine` where it is needed.
///
/// A connection is used from one thread at a time.
public final class Connection {
    enum Backing {
        case sqlite(Database)
        case postgres(PGConnection)
    }

    let backing: Backing
    public let engine: Engine
    /// Where this engine differs from the other, by name.
    public var dialect: Dialect { Dialect(engine) }
    /// The SQLite file, or the PostgreSQL location with any password removed.
    public let path: String
    /// Statements by SQL text (SQLite's quick key: the text is not hashed whole on every call).
    private var cache: [SQLText: Statement] = [:]
    private var depth = 0

    /// Where this connection went, to open another there (with any password).
    private let location: String

    /// A connection to the SQLite database `database`.
    public init(_ database: Database) {
        backing = .sqlite(database)
        engine = .sqlite
        path = database.path
        location = database.path
    }

    /// Connects to PostgreSQL at `url` (`postgresql://…` or a libpq keyword string).
    ///
    /// JIT compilation is turned off for the session: the store's statements are short, and
    /// the planner's cost of a fan-out's ceiling test (subqueries over eight partitions) passed
    /// the JIT threshold, so each fan-out spent about 50 ms compiling a statement that then ran
    /// in under a millisecond (found with auto_explain; the sample world ingested 60× slower
    /// than on SQLite, 5.5 s against 0.09 s).
    public init(postgres url: String) throws {
        let connection = try PGConnection(url)
        _ = try connection.execute("SET jit = off")
        backing = .postgres(connection)
        engine = .postgresql
        path = Connection.redacted(url)
        location = url
    }

    /// A second connection to the same database: for a reader beside this connection's writes
    /// (read-only, on SQLite).
    public func another(readOnly: Bool = false) throws -> Connection {
        switch engine {
        case .sqlite: return Connection(try Database(path: location, readOnly: readOnly))
        case .postgresql: return try Connection(postgres: location)
        }
    }

    /// `url` without its passwords: the one before `@` (`postgresql://user:secret@host/db` →
    /// `postgresql://user@host/db`) and any `password=` or `sslpassword=` parameter, in a URL's
    /// query or a `key=value` connection string (its value becomes `…`).
    public static func redacted(_ url: String) -> String {
        var text = url
        if let scheme = text.range(of: "://") {
            let authority = text[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" }
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                text = String(text[..<colon]) + String(text[at...])
            }
        }
        return text.replacingOccurrences(of: #"(?i)\b(ssl)?password\s*=\s*('[^']*'|[^&\s]*)"#, with: "$1password=…",
                                         options: .regularExpression)
    }

    /// The SQLite database underneath, when that is the engine (no handle leaves the seam).
    var sqlite: Database? {
        if case .sqlite(let database) = backing { return database }
        return nil
    }

    /// The PostgreSQL connection underneath, when that is the engine.
    var postgres: PGConnection? {
        if case .postgres(let connection) = backing { return connection }
        return nil
    }

    // MARK: What only SQLite has

    /// Starts timing every statement (SQLite's own clock); PostgreSQL's account is
    /// pg_stat_statements, so there this does nothing.
    public func startProfiling() { sqlite?.startProfiling() }

    /// The statements that took the most time since `startProfiling` (none on PostgreSQL).
    public func profileReport(top: Int = 15) -> [(sql: String, runs: Int, milliseconds: Double)] {
        sqlite?.profileReport(top: top) ?? []
    }

    /// A checkpointer of this connection's write-ahead log, on a connection of its own: SQLite
    /// only (PostgreSQL checkpoints by itself).
    public func makeCheckpointer() -> Checkpointer? {
        sqlite.map { _ in Checkpointer(path: path) }
    }

    /// Keeps the write-ahead log bounded from this writer's connection: past `largest` bytes it
    /// is emptied here (see `Checkpointer.truncate`), else the background checkpoint is nudged.
    public func boundLog(with checkpointer: Checkpointer, largest: Int) {
        guard let database = sqlite else { return }
        if Checkpointer.logSize(path) > largest {
            _ = try? checkpointer.truncate(database, attempts: 3)
        } else {
            checkpointer.nudge()
        }
    }

    /// Puts the statements sent ahead on the wire (PostgreSQL), so the server runs them while
    /// the caller goes on; nothing on SQLite, which runs each statement as it is made.
    public func pushAhead() throws {
        if case .postgres(let connection) = backing { try connection.push() }
    }

    /// Runs one or more statements with no parameters and no results.
    public func execute(_ sql: String) throws {
        switch backing {
        case .sqlite(let database): try database.execute(sql)
        case .postgres(let connection): try connection.execute(PostgresDialect.translate(sql).sql)
        }
    }

    /// A prepared statement for `sql`, kept for the next call with the same text.
    public func cached(_ sql: String) throws -> Statement {
        let key = SQLText(sql)
        if let statement = cache[key] { return statement }
        let statement: Statement
        switch backing {
        case .sqlite(let database): statement = Statement(.sqlite(try database.cached(sql)))
        case .postgres(let connection):
            statement = Statement(.postgres(PGStatement(connection: connection, translated: PostgresDialect.translate(sql), kept: true)))
        }
        cache[key] = statement
        return statement
    }

    /// A statement for `sql` that runs once (a text made for one call): nothing is kept.
    public func prepare(_ sql: String) throws -> Statement {
        switch backing {
        case .sqlite(let database): return Statement(.sqlite(try database.prepare(sql)))
        case .postgres(let connection):
            return Statement(.postgres(PGStatement(connection: connection, translated: PostgresDialect.rewrite(sql), kept: false)))
        }
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

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int {
        switch backing {
        case .sqlite(let database): return database.changes
        case .postgres(let connection): return connection.changes
        }
    }

    /// Rows changed through this connection since it opened.
    public var totalChanges: Int {
        switch backing {
        case .sqlite(let database): return database.totalChanges
        case .postgres(let connection): return connection.totalChanges
        }
    }

    /// The id the last INSERT into `table` (whose key is `id`) gave its last row, on this connection.
    public func lastInsertedID(_ table: String) throws -> Int {
        switch backing {
        case .sqlite(let database): return Int(database.lastInsertRowID)
        case .postgres:
            return try scalar("SELECT currval(pg_get_serial_sequence('\(table)', 'id'))") ?? 0
        }
    }

    /// Whether the connection still works: false once PostgreSQL's connection broke. (A SQLite
    /// file has no connection to lose.)
    public var isConnected: Bool {
        postgres?.isHealthy ?? true
    }

    public var isInTransaction: Bool { depth > 0 || (sqlite?.isInTransaction ?? false) }

    /// How a transaction isolates itself from other connections.
    public enum Isolation {
        /// A writer of the store's versioned data. On SQLite one at a time (its write lock, taken
        /// at the start); on PostgreSQL writers run side by side at read committed, their
        /// versions kept in order by the store (`stepo_version()`), their shared rows by row
        /// locks. Its commit notifies `changeChannel` when it changed anything.
        case writer
        /// One consistent snapshot for reads (SQLite's deferred transaction; PostgreSQL's
        /// repeatable read).
        case snapshot
        /// Atomic, but beside other writers: for work that takes row locks of its own (the
        /// outbox's claims, `FOR UPDATE SKIP LOCKED`). SQLite has only one writer anyway.
        case concurrent
    }

    /// The channel a PostgreSQL writer notifies when it commits a change.
    public static let changeChannel = "stepo_changes"

    /// Advisory lock keys on PostgreSQL ("stepo" in ASCII, then a number). The store uses keys
    /// below 2^40 for versions in flight, so its own locks are above.
    public static let migrationLock: Int64 = 0x7374_6570_6f00_0001
    /// Held for a moment while a version is taken, and while the horizon is read.
    public static let versionLock: Int64 = 0x7374_6570_6f00_0002

    /// Runs `body` atomically: a transaction at the outermost level, a savepoint when nested.
    /// Any error thrown rolls back everything `body` did and is rethrown.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try transaction(.writer, body)
    }

    /// Runs `body` atomically, isolated as `isolation` says (see `transaction(_:)`).
    public func transaction<T>(_ isolation: Isolation, _ body: () throws -> T) throws -> T {
        switch backing {
        case .sqlite(let database):
            depth += 1
            defer { depth -= 1 }
            return try database.transaction(immediate: isolation != .snapshot, body)
        case .postgres(let connection):
            // Inside, writes whose answers nobody reads are sent ahead: BEGIN, the writes and
            // COMMIT travel with the statements that read, not one round trip each.
            let level = depth
            if level == 0 {
                switch isolation {
                case .writer, .concurrent: try connection.sendCommand("BEGIN")
                case .snapshot: try connection.sendCommand("BEGIN ISOLATION LEVEL REPEATABLE READ")
                }
            } else {
                try connection.sendCommand("SAVEPOINT stepo_sp\(level)")
            }
            depth += 1
            let sendingAhead = connection.sendsAhead
            connection.sendsAhead = true
            // Back down exactly once, whether the body or the COMMIT throws.
            defer {
                depth = level
                connection.sendsAhead = sendingAhead
            }
            let activityBefore = connection.activity
            do {
                let result = try body()
                if level > 0 {
                    try connection.sendCommand("RELEASE stepo_sp\(level)")
                } else {
                    if isolation == .writer && connection.activity != activityBefore {
                        // Other servers' parked long-polls hear of it at commit: a hint with no
                        // data (they look at versions to see what changed). PostgreSQL folds repeats.
                        try connection.sendCommand("NOTIFY \(Connection.changeChannel)")
                    }
                    try connection.sendCommand("COMMIT")
                    try connection.flush()
                }
                return result
            } catch {
                connection.discardAhead()
                _ = try? connection.execute(level == 0 ? "ROLLBACK" : "ROLLBACK TO stepo_sp\(level); RELEASE stepo_sp\(level)")
                throw error
            }
        }
    }

    /// Whether `error` is a constraint the database upheld (unique, check, reference), on
    /// either engine: bad input, not a broken store.
    public static func isConstraintViolation(_ error: Error) -> Bool {
        if let error = error as? SQLiteError { return error.isConstraintViolation }
        if let error = error as? PostgresError { return error.isConstraintViolation }
        return false
    }

    /// A failure of the store itself that clears by itself, for a retryable answer: no room
    /// on its disk, or the database gone for a moment (a restart, a failover, a lock held).
    public enum Fault: Sendable, Equatable {
        /// The disk (or the database's space) is full: nothing was written.
        case full
        /// The database cannot be reached or is shutting down or starting.
        case unavailable
        /// Another writer holds the store longer than this one would wait.
        case busy
    }

    /// The fault `error` stands for, or nil for any other failure.
    public static func fault(of error: Error) -> Fault? {
        if let error = error as? SQLiteError {
            switch error.primaryCode {
            case 13: return .full  // SQLITE_FULL
            case 5, 6: return .busy  // SQLITE_BUSY, SQLITE_LOCKED
            case 10, 14, 8: return .unavailable  // SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_READONLY
            default: return nil
            }
        }
        if let error = error as? PostgresError {
            if error.state == "53100" { return .full }  // disk_full
            if error.state.hasPrefix("08") || error.state.hasPrefix("57P") || error.state.hasPrefix("53") { return .unavailable }
            if error.state.isEmpty { return .unavailable }  // no answer at all: the connection is gone
            // lock_not_available; a deadlock PostgreSQL broke, a serialization failure: tried again, it may pass
            if error.state == "55P03" || error.state == "40P01" || error.state == "40001" { return .busy }
        }
        return nil
    }

    /// Whether `error` is PostgreSQL giving up a transaction that may succeed when tried again:
    /// a deadlock it broke (40P01) or a serialization failure (40001).
    public static func isTransient(_ error: Error) -> Bool {
        guard let error = error as? PostgresError else { return false }
        return error.state == "40P01" || error.state == "40001"
    }

    /// The message of a database error, without the SQL.
    public static func message(of error: Error) -> String {
        if let error = error as? SQLiteError { return error.message }
        if let error = error as? PostgresError { return error.message }
        return "\(error)"
    }
}

/// A prepared statement on either engine. `bind` replaces the previous run's values.
public final class Statement {
    enum Backing {
        case sqlite(SQLite.Statement)
        case postgres(PGStatement)
    }

    let backing: Backing

    init(_ backing: Backing) { self.backing = backing }

    /// Binds `values` to the parameters in order.
    @discardableResult
    public func bind(_ values: [SQLBindable]) throws -> Statement {
        switch backing {
        case .sqlite(let statement): try statement.bind(values)
        case .postgres(let statement): try statement.bind(values)
        }
        return self
    }

    /// Binds the `:name` parameters from `values` (names with their colon); extra values are
    /// ignored, a missing one is an error.
    @discardableResult
    public func bind(named values: [String: SQLBindable]) throws -> Statement {
        switch backing {
        case .sqlite(let statement): try statement.bind(named: values)
        case .postgres(let statement): try statement.bind(named: values)
        }
        return self
    }

    /// Runs the statement to completion, ignoring any rows. On PostgreSQL inside a transaction
    /// it is sent ahead: it runs in order, and its answer (an error included) is read with the
    /// next statement that reads one.
    public func run() throws {
        switch backing {
        case .sqlite(let statement): try statement.run()
        case .postgres(let statement):
            if statement.kept && statement.connection.sendsAhead {
                try statement.send()
            } else {
                _ = try statement.execute()
            }
        }
    }

    /// Calls `body` with each row.
    public func forEach(_ body: (Row) throws -> Void) throws {
        switch backing {
        case .sqlite(let statement): try statement.forEach { try body(Row(.sqlite($0))) }
        case .postgres(let statement):
            let result = try statement.execute()
            for index in 0..<result.rowCount { try body(Row(.postgres(result, index))) }
        }
    }

    /// Calls `body` with each row as it arrives, never holding them all (PostgreSQL's
    /// single-row mode; SQLite steps row by row anyway): for results that can be a million
    /// rows. `body` must not use this connection meanwhile — on PostgreSQL it is busy until
    /// the last row is read.
    public func stream(_ body: (Row) throws -> Void) throws {
        switch backing {
        case .sqlite(let statement): try statement.forEach { try body(Row(.sqlite($0))) }
        case .postgres(let statement): try statement.stream { try body(Row(.postgres($0, 0))) }
        }
    }

    /// Calls `body` with each row while it answers true.
    public func forEach(while body: (Row) throws -> Bool) throws {
        switch backing {
        case .sqlite(let statement): try statement.forEach(while: { try body(Row(.sqlite($0))) })
        case .postgres(let statement):
            let result = try statement.execute()
            for index in 0..<result.rowCount where try !body(Row(.postgres(result, index))) { return }
        }
    }

    /// Maps every row through `transform`.
    public func map<T>(_ transform: (Row) throws -> T) throws -> [T] {
        var result: [T] = []
        try forEach { result.append(try transform($0)) }
        return result
    }

    /// The first row mapped through `transform`, or nil when there is none.
    public func first<T>(_ transform: (Row) throws -> T) throws -> T? {
        switch backing {
        case .sqlite(let statement): return try statement.first { try transform(Row(.sqlite($0))) }
        case .postgres(let statement):
            let result = try statement.execute()
            return result.rowCount == 0 ? nil : try transform(Row(.postgres(result, 0)))
        }
    }
}

/// A statement's text as PostgreSQL takes it, and the values bound for its next run.
final class PGStatement {
    let connection: PGConnection
    let translated: PostgresDialect.Translation
    /// Whether the server keeps it prepared (else it is parsed and planned for its one run).
    let kept: Bool
    private var values: [PGParameter] = []

    init(connection: PGConnection, translated: PostgresDialect.Translation, kept: Bool) {
        self.connection = connection
        self.translated = translated
        self.kept = kept
    }

    func bind(_ values: [SQLBindable]) throws {
        guard values.count == translated.parameterCount else {
            throw PostgresError("expected \(translated.parameterCount) parameters, got \(values.count)", sql: translated.sql)
        }
        self.values = values.map { PGStatement.parameter($0.sqlValue) }
    }

    func bind(named values: [String: SQLBindable]) throws {
        self.values = try translated.names.map { name in
            guard let value = values[name] else { throw PostgresError("no value for parameter \(name)", sql: translated.sql) }
            return PGStatement.parameter(value.sqlValue)
        }
    }

    func execute() throws -> PGResult {
        try connection.execute(translated.sql, values, prepare: kept)
    }

    func send() throws {
        try connection.send(translated.sql, values)
    }

    func stream(_ body: (PGResult) throws -> Void) throws {
        try connection.forEachRow(translated.sql, values, prepare: kept, body)
    }

    static func parameter(_ value: SQLValue) -> PGParameter {
        switch value {
        case .null: return .null
        case .integer(let int): return .integer(int)
        case .real(let double): return .real(double)
        case .text(let text): return .text(text)
        case .blob(let bytes): return .bytes(bytes)
        }
    }
}

/// The current row of a statement's results, on either engine. Valid only inside the callback
/// that receives it.
public struct Row {
    enum Backing {
        case sqlite(SQLite.Row)
        case postgres(PGResult, Int)
    }

    let backing: Backing

    init(_ backing: Backing) { self.backing = backing }

    public var columnCount: Int {
        switch backing {
        case .sqlite(let row): return row.columnCount
        case .postgres(let result, _): return result.columnCount
        }
    }

    public func isNull(_ index: Int) -> Bool {
        switch backing {
        case .sqlite(let row): return row.isNull(index)
        case .postgres(let result, let at): return result.isNull(at, index)
        }
    }

    public func int64(_ index: Int) -> Int64 {
        switch backing {
        case .sqlite(let row): return row.int64(index)
        case .postgres(let result, let at): return result.int64(at, index)
        }
    }

    public func int(_ index: Int) -> Int { Int(int64(index)) }

    public func optionalInt(_ index: Int) -> Int? { isNull(index) ? nil : int(index) }

    public func optionalInt64(_ index: Int) -> Int64? { isNull(index) ? nil : int64(index) }

    public func bool(_ index: Int) -> Bool { int64(index) != 0 }

    public func double(_ index: Int) -> Double {
        switch backing {
        case .sqlite(let row): return row.double(index)
        case .postgres(let result, let at): return result.double(at, index)
        }
    }

    public func string(_ index: Int) -> String { optionalString(index) ?? "" }

    public func optionalString(_ index: Int) -> String? {
        switch backing {
        case .sqlite(let row): return row.optionalString(index)
        case .postgres(let result, let at): return result.string(at, index)
        }
    }

    /// The text at `index` made into a value by `make` (`Kind.init(rawValue:)`, `PushStatus.init`),
    /// or a `RowDecodingError` naming `table.column` and what it held: never a default.
    public func decoded<T>(_ index: Int, table: String, column: String, _ make: (String) -> T?) throws -> T {
        try RowDecodingError.decode(optionalString(index), table: table, column: column, make)
    }

    /// The value with its type: what SQLite stored, or what PostgreSQL's column type says.
    public func value(_ index: Int) -> SQLValue {
        switch backing {
        case .sqlite(let row): return row.value(index)
        case .postgres(let result, let at):
            if result.isNull(at, index) { return .null }
            switch result.type(index) {
            case 20, 21, 23, 16: return .integer(result.int64(at, index))
            case 700, 701, 1700: return .real(result.double(at, index))
            case 17: return .blob(result.bytes(at, index) ?? [])
            default: return .text(result.string(at, index) ?? "")
            }
        }
    }
}

// What the backend binds and reads, from the SQLite module, so that it imports only this one.
@_exported import enum SQLite.SQLValue
@_exported import protocol SQLite.SQLBindable
@_exported import struct SQLite.RowDecodingError
