import CLibPQ
import Foundation

/// An error PostgreSQL (or libpq) reported: its message, its SQLSTATE code when the server sent
/// one, and the SQL that caused it.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public let message: String
    /// The five-character SQLSTATE, e.g. "23505" for a unique violation; "" when none.
    public let state: String
    public let sql: String?

    public init(_ message: String, state: String = "", sql: String? = nil) {
        self.message = message
        self.state = state
        self.sql = sql
    }

    /// A unique, check, foreign-key or not-null constraint refused the write (class 23).
    public var isConstraintViolation: Bool { state.hasPrefix("23") }

    public var description: String { sql.map { "\(message) (in: \($0))" } ?? message }
}

/// A parameter as PostgreSQL receives it: a type, and the value in text form (binary for bytea).
public enum PGParameter {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case bytes([UInt8])

    /// The type OID the statement is prepared with: int8, float8, text, bytea; 0 (let the
    /// server infer) for NULL.
    var typeOID: Oid {
        switch self {
        case .null: return 0
        case .integer: return 20
        case .real: return 701
        case .text: return 25
        case .bytes: return 17
        }
    }

    var typeLetter: Character {
        switch self {
        case .null: return "n"
        case .integer: return "i"
        case .real: return "r"
        case .text: return "t"
        case .bytes: return "b"
        }
    }
}

/// One connection to a PostgreSQL server. Statements are prepared once per text (and again only
/// for parameter types no earlier preparation takes: a NULL goes to any of them), then executed
/// by name. Use it from one thread at a time.
///
/// Writes whose answers nobody waits for can be sent ahead (`send`, libpq's pipeline mode):
/// they run in order with whatever follows, and travel to the server with the next statement
/// that reads an answer — one round trip for all of them. An error one of them meets is thrown
/// by that next statement (`flush`); the transaction is aborted by then, as it would be anyway.
public final class PGConnection: @unchecked Sendable {  // owns a libpq handle: one thread at a time, handed over whole
    let handle: OpaquePointer
    /// Each statement text's preparations: the parameters' kinds each was prepared for (`n`: the
    /// server inferred the type from the statement) and its name.
    private var prepared: [String: [(kinds: [Character], name: String)]] = [:]
    /// How many statements this connection has prepared (their names are `s0`, `s1`, …).
    private var preparedCount = 0
    private var lastChanges = 0
    private var allChanges = 0
    /// Commands sent ahead whose answers are not read yet, in order: their SQL (for errors) and
    /// whether the caller wants the last one's rows.
    private var queued: [(sql: String, wanted: Bool)] = []
    /// An error a command sent ahead met, read where nothing could throw it (`changes`): thrown
    /// by the next call that can.
    private var unthrown: Error?
    /// Statements sent ahead since the connection opened (they may have changed rows).
    public private(set) var sentAhead = 0
    /// Commands sent ahead at most before their answers are read, so neither side's socket
    /// buffer fills while the other waits.
    /// (A set's write is a few hundred statements with answers of a few bytes each.)
    static let longestQueue = 256

    /// Rows the last INSERT, UPDATE or DELETE changed (after the answers of what was sent ahead).
    public var changes: Int {
        settleQuietly()
        return lastChanges
    }

    /// Rows changed since the connection opened (after the answers of what was sent ahead).
    public var totalChanges: Int {
        settleQuietly()
        return allChanges
    }

    /// Changed rows counted so far plus statements sent ahead, without reading any answer: it
    /// moves whenever anything may have changed.
    public var activity: Int { allChanges + sentAhead }

    /// Whether statements run for their effect alone are sent ahead (set inside a transaction
    /// by the store's seam).
    public var sendsAhead = false

    /// Why libpq would refuse `conninfo` before connecting anywhere (a malformed URL, an
    /// unknown parameter), or nil when it parses.
    public static func parseError(_ conninfo: String) -> String? {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &message) else {
            defer { if let message { PQfreemem(message) } }
            return message.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "it cannot be parsed"
        }
        PQconninfoFree(options)
        return nil
    }

    /// Connects with a libpq connection string or URI (`postgresql://…`, `host=/tmp dbname=x`).
    public init(_ conninfo: String) throws {
        guard let raw = PQconnectdb(conninfo) else { throw PostgresError("cannot allocate a PostgreSQL connection") }
        guard PQstatus(raw) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(raw)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(raw)
            throw PostgresError("cannot connect to PostgreSQL: \(message)")
        }
        handle = raw
        stepo_pq_silence(raw)
    }

    deinit { PQfinish(handle) }

    /// The server's version, e.g. 150018 for 15.18.
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// The connection's socket, to wait on for notifications.
    public var socket: Int32 { PQsocket(handle) }

    /// Runs one or more statements with no parameters (the simple query protocol).
    @discardableResult
    public func execute(_ sql: String) throws -> PGResult {
        try flush()
        return try check(PQexec(handle, sql), sql: sql)
    }

    // MARK: Sending ahead

    /// Sends `sql` with `parameters` (prepared once, as `execute`) without waiting for its
    /// answer: see the type's notes.
    public func send(_ sql: String, _ parameters: [PGParameter]) throws {
        try throwUnthrown()
        try enqueue(sql, parameters, wanted: false)
        sentAhead += 1
        if queued.count >= PGConnection.longestQueue { try flush() }
    }

    /// Queues the prepared `sql` in pipeline mode (preparing it first answers what is queued).
    private func enqueue(_ sql: String, _ parameters: [PGParameter], wanted: Bool) throws {
        let name = try preparedName(sql, parameters)
        try enterPipeline()
        let sent = withValues(parameters) { pointers, lengths, formats in
            PQsendQueryPrepared(handle, name, Int32(parameters.count), pointers, lengths, formats, 0)
        }
        try sentOrAbandon(sent, sql: sql)
        queued.append((sql, wanted))
    }

    /// Puts what was sent ahead on the wire without waiting for its answers: the server runs
    /// it while this side goes on (the answers are read with the next statement that reads one).
    public func push() throws {
        guard !queued.isEmpty else { return }
        guard PQsendFlushRequest(handle) == 1, PQflush(handle) == 0 else {
            throw PostgresError("cannot send ahead: " + String(cString: PQerrorMessage(handle)))
        }
    }

    /// Sends a command without parameters (`BEGIN`, `SAVEPOINT x`, `NOTIFY c`, `COMMIT`) ahead.
    public func sendCommand(_ sql: String) throws {
        try throwUnthrown()
        try enterPipeline()
        try sentOrAbandon(PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 0), sql: sql)
        queued.append((sql, false))
        if queued.count >= PGConnection.longestQueue { try flush() }
    }

    /// Reads the answers of everything sent ahead — one round trip — and throws the first error
    /// any of them met. Returns the last one's rows when they were `wanted`.
    @discardableResult
    public func flush() throws -> PGResult? {
        try throwUnthrown()
        guard !queued.isEmpty else { return nil }
        let commands = queued
        queued = []
        guard PQpipelineSync(handle) == 1 else {
            let failure = PostgresError(String(cString: PQerrorMessage(handle)), sql: commands.last?.sql)
            leavePipeline()
            throw failure
        }
        var failure: Error?
        var rows: PGResult?
        for command in commands {
            // A command's results, then NULL; after an error, each later command is only "aborted".
            // A command with no result at all was never answered: the connection broke, and
            // nothing sent ahead (a COMMIT above all) may be taken as done.
            var answered = false
            while let raw = PQgetResult(handle) {
                answered = true
                if PQresultStatus(raw) == PGRES_PIPELINE_ABORTED { PQclear(raw); continue }
                // A COMMIT of a transaction something aborted answers ROLLBACK, not an error.
                let rolledBack = command.sql == "COMMIT" && PQresultStatus(raw) == PGRES_COMMAND_OK
                    && PQcmdStatus(raw).map { String(cString: $0) } == "ROLLBACK"
                do {
                    let result = try check(raw, sql: command.sql)
                    if command.wanted { rows = result }
                    if rolledBack && failure == nil {
                        failure = PostgresError("the transaction was rolled back, not committed", state: "40000", sql: command.sql)
                    }
                } catch {
                    if failure == nil { failure = error }
                }
            }
            if !answered && failure == nil {
                failure = PostgresError("no answer from PostgreSQL: " + String(cString: PQerrorMessage(handle))
                    .trimmingCharacters(in: .whitespacesAndNewlines), sql: command.sql)
            }
        }
        let synced = leavePipeline()
        if let failure { throw failure }
        guard synced else {
            throw PostgresError("no answer from PostgreSQL: " + String(cString: PQerrorMessage(handle))
                .trimmingCharacters(in: .whitespacesAndNewlines), sql: commands.last?.sql)
        }
        return rows
    }

    /// Reads what was sent ahead where nothing can throw: an error waits for the next call.
    private func settleQuietly() {
        guard !queued.isEmpty else { return }
        do { try flush() } catch { if unthrown == nil { unthrown = error } }
    }

    /// Forgets an error met ahead (the transaction it broke is being rolled back) and reads
    /// whatever answers are still owed.
    public func discardAhead() {
        if !queued.isEmpty { _ = try? flush() }
        unthrown = nil
    }

    private func throwUnthrown() throws {
        if let error = unthrown {
            unthrown = nil
            throw error
        }
    }

    private func enterPipeline() throws {
        guard PQpipelineStatus(handle) == PQ_PIPELINE_OFF else { return }
        guard PQenterPipelineMode(handle) == 1 else {
            throw PostgresError("cannot send ahead: " + String(cString: PQerrorMessage(handle)))
        }
    }

    /// Reads the sync point's result and goes back to one statement at a time. Returns whether
    /// the sync point was answered (false: the connection broke).
    @discardableResult
    private func leavePipeline() -> Bool {
        var synced = false
        for _ in 0..<8 where PQpipelineStatus(handle) != PQ_PIPELINE_OFF {
            if PQexitPipelineMode(handle) == 1 { return synced || PQstatus(handle) == CONNECTION_OK }
            if let raw = PQgetResult(handle) {
                if PQresultStatus(raw) == PGRES_PIPELINE_SYNC { synced = true }
                PQclear(raw)
            }
        }
        return synced && PQstatus(handle) == CONNECTION_OK
    }

    private func sentOrAbandon(_ sent: Int32, sql: String) throws {
        guard sent == 1 else {
            let failure = PostgresError(String(cString: PQerrorMessage(handle)), sql: sql)
            discardAhead()
            throw failure
        }
    }

    /// Runs `sql` (with `$1`, `$2` … placeholders) with `parameters`, prepared once per text and
    /// parameter types.
    /// With `prepare: false` the text is parsed for this one run and nothing is kept.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PGParameter], prepare: Bool = true) throws -> PGResult {
        try throwUnthrown()
        if !queued.isEmpty && prepare {
            // After what was sent ahead, in the same round trip.
            try enqueue(sql, parameters, wanted: true)
            guard let rows = try flush() else { throw PostgresError("no answer", sql: sql) }
            return rows
        }
        // A text run once is not sent in the pipeline: what was sent ahead is answered first.
        if !queued.isEmpty { try flush() }
        let name = prepare ? try preparedName(sql, parameters) : ""
        let types = prepare ? [] : parameters.map(\.typeOID)
        let result = withValues(parameters) { pointers, lengths, formats in
            prepare ? PQexecPrepared(handle, name, Int32(parameters.count), pointers, lengths, formats, 0)
                    : PQexecParams(handle, sql, Int32(parameters.count), types, pointers, lengths, formats, 0)
        }
        return try check(result, sql: sql)
    }

    /// Runs `sql` with `parameters` (prepared or not, as `execute`) and calls `body` with each row
    /// as it arrives, one at a time (libpq's single-row mode): a million rows are never held at
    /// once. The result `body` gets holds one row, at index 0.
    public func forEachRow(_ sql: String, _ parameters: [PGParameter], prepare: Bool = true,
                           _ body: (PGResult) throws -> Void) throws {
        try flush()
        let name = prepare ? try preparedName(sql, parameters) : ""
        let types = prepare ? [] : parameters.map(\.typeOID)
        let sent = withValues(parameters) { pointers, lengths, formats in
            prepare ? PQsendQueryPrepared(handle, name, Int32(parameters.count), pointers, lengths, formats, 0)
                    : PQsendQueryParams(handle, sql, Int32(parameters.count), types, pointers, lengths, formats, 0)
        }
        guard sent == 1 else { throw PostgresError(String(cString: PQerrorMessage(handle)), sql: sql) }
        PQsetSingleRowMode(handle)
        // Every result must be read, even after a failure, before the connection is free again.
        var failure: Error?
        while let raw = PQgetResult(handle) {
            if failure != nil { PQclear(raw); continue }
            if PQresultStatus(raw) == PGRES_SINGLE_TUPLE {
                let row = PGResult(raw)
                do { try body(row) } catch { failure = error }
            } else {
                do { _ = try check(raw, sql: sql) } catch { failure = error }
            }
        }
        if let failure { throw failure }
    }

    /// Whether a statement prepared for `kinds` takes parameters of `wanted`: a NULL goes to any
    /// type, and a value in text form to a type the server inferred (a NULL's, at preparation)
    /// from where the parameter stands; bytes, sent in binary, only to bytea.
    static func takes(_ kinds: [Character], _ wanted: [Character]) -> Bool {
        guard kinds.count == wanted.count else { return false }
        for (had, want) in zip(kinds, wanted) where want != "n" && had != want && !(had == "n" && want != "b") { return false }
        return true
    }

    /// The name `sql` is prepared under for parameters like these, preparing it when no earlier
    /// preparation takes them. Keyed by the kinds of the values alone, a multi-row insert whose
    /// rows hold NULLs in changing places was prepared again for every pattern: thousands of
    /// statements in a long ingest, held on both sides of the connection.
    private func preparedName(_ sql: String, _ parameters: [PGParameter]) throws -> String {
        let wanted = parameters.map(\.typeLetter)
        if let known = prepared[sql]?.first(where: { PGConnection.takes($0.kinds, wanted) }) { return known.name }
        // Preparing is one statement at a time: what was sent ahead is answered first.
        try flush()
        let name = "s\(preparedCount)"
        var kinds = wanted
        var types = parameters.map(\.typeOID)
        if types.contains(0) {
            // A NULL's type is left to the server, which cannot always tell (`? IS NULL`): then
            // it is text. Inside a transaction the failed attempt must not abort it. The server
            // names the parameter it could not type; each try types one more.
            let inTransaction = PQtransactionStatus(handle) == PQTRANS_INTRANS
            while true {
                if inTransaction { try execute("SAVEPOINT stepo_prepare") }
                do {
                    _ = try check(PQprepare(handle, name, sql, Int32(types.count), types), sql: sql)
                    if inTransaction { try execute("RELEASE stepo_prepare") }
                    break
                } catch let error as PostgresError where error.state == "42P18" {
                    if inTransaction { try execute("ROLLBACK TO stepo_prepare; RELEASE stepo_prepare") }
                    guard let dollar = error.message.range(of: "parameter $"),
                          let number = Int(error.message[dollar.upperBound...].prefix { $0.isNumber }),
                          (1...types.count).contains(number), types[number - 1] == 0 else { throw error }
                    types[number - 1] = 25
                    kinds[number - 1] = "t"
                }
            }
        } else {
            _ = try check(PQprepare(handle, name, sql, Int32(types.count), types), sql: sql)
        }
        prepared[sql, default: []].append((kinds, name))
        preparedCount += 1
        return name
    }

    /// Calls `body` with the parameters as libpq takes them: C buffers (text, or bytea's raw
    /// bytes), their lengths and formats; freed after.
    private func withValues<R>(_ parameters: [PGParameter],
                               _ body: ([UnsafePointer<CChar>?], [Int32], [Int32]) -> R) -> R {
        var values: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        defer { values.forEach { free($0) } }
        for parameter in parameters {
            var length: Int32 = 0, format: Int32 = 0
            switch parameter {
            case .null: values.append(nil)
            case .integer(let value): values.append(strdup(String(value)))
            case .real(let value): values.append(strdup("\(value)"))
            case .text(let value): values.append(strdup(value))
            case .bytes(let value):
                let buffer = malloc(max(value.count, 1))!
                value.withUnsafeBytes { if let base = $0.baseAddress { buffer.copyMemory(from: base, byteCount: value.count) } }
                values.append(buffer.assumingMemoryBound(to: CChar.self))
                (length, format) = (Int32(value.count), 1)
            }
            lengths.append(length)
            formats.append(format)
        }
        return body(values.map { UnsafePointer($0) }, lengths, formats)
    }

    /// Turns a libpq result into a `PGResult`, or throws its error (and frees it).
    private func check(_ raw: OpaquePointer?, sql: String) throws -> PGResult {
        guard let raw else {
            throw PostgresError(String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines), sql: sql)
        }
        switch PQresultStatus(raw) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            // As SQLite counts them: rows an INSERT, UPDATE or DELETE changed (with RETURNING
            // too); other statements leave the count as it was.
            let command = PQcmdStatus(raw).map { String(cString: $0) } ?? ""
            if ["INSERT", "UPDATE", "DELETE"].contains(where: command.hasPrefix), let tuples = PQcmdTuples(raw),
               let count = Int(String(cString: tuples)) {
                lastChanges = count
                allChanges += count
            }
            return PGResult(raw)
        default:
            let message = String(cString: PQresultErrorMessage(raw)).trimmingCharacters(in: .whitespacesAndNewlines)
            let state = PQresultErrorField(raw, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            PQclear(raw)
            throw PostgresError(message, state: state, sql: sql)
        }
    }

    // MARK: Notifications

    /// Reads what the server has sent and returns the channels notified since the last call.
    /// Does not wait: wait on `socket` first.
    public func notifications() throws -> [String] {
        try flush()
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError("the PostgreSQL connection broke: " + String(cString: PQerrorMessage(handle)))
        }
        var channels: [String] = []
        while let notify = PQnotifies(handle) {
            channels.append(String(cString: notify.pointee.relname))
            PQfreemem(notify)
        }
        return channels
    }

    /// Whether the connection is still usable.
    public var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }
}

/// The rows of a query, in text form. Frees its libpq result when released.
public final class PGResult {
    let handle: OpaquePointer
    public let rowCount: Int
    public let columnCount: Int

    init(_ handle: OpaquePointer) {
        self.handle = handle
        rowCount = Int(PQntuples(handle))
        columnCount = Int(PQnfields(handle))
    }

    deinit { PQclear(handle) }

    public func isNull(_ row: Int, _ column: Int) -> Bool {
        PQgetisnull(handle, Int32(row), Int32(column)) == 1
    }

    /// The value as an integer: digits parsed in place; a boolean's `t`/`f` as 1/0.
    public func int64(_ row: Int, _ column: Int) -> Int64 {
        guard let text = PQgetvalue(handle, Int32(row), Int32(column)) else { return 0 }
        var pointer = text
        var negative = false
        switch pointer.pointee {
        case CChar(UInt8(ascii: "t")): return 1
        case CChar(UInt8(ascii: "f")): return 0
        case CChar(UInt8(ascii: "-")): negative = true; pointer += 1
        default: break
        }
        var value: Int64 = 0
        while pointer.pointee >= 48 && pointer.pointee <= 57 {
            value = value &* 10 &+ Int64(pointer.pointee - 48)
            pointer += 1
        }
        if pointer.pointee == CChar(UInt8(ascii: ".")) || pointer.pointee == CChar(UInt8(ascii: "e")) {
            return Int64(strtod(text, nil))  // a numeric or float value read as an integer, as SQLite would
        }
        return negative ? -value : value
    }

    public func double(_ row: Int, _ column: Int) -> Double {
        guard let text = PQgetvalue(handle, Int32(row), Int32(column)) else { return 0 }
        if text.pointee == CChar(UInt8(ascii: "t")) { return 1 }
        if text.pointee == CChar(UInt8(ascii: "f")) { return 0 }
        return strtod(text, nil)
    }

    public func string(_ row: Int, _ column: Int) -> String? {
        guard !isNull(row, column), let text = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        let count = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return text.withMemoryRebound(to: UInt8.self, capacity: count) {
            String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
        }
    }

    /// A bytea value (text form `\x0a1b…`) as bytes.
    public func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        guard let text = string(row, column) else { return nil }
        guard text.hasPrefix("\\x") else { return Array(text.utf8) }
        var bytes: [UInt8] = []
        var high: UInt8?
        for c in text.utf8.dropFirst(2) {
            let nibble: UInt8
            switch c {
            case 48...57: nibble = c - 48
            case 97...102: nibble = c - 87
            case 65...70: nibble = c - 55
            default: continue
            }
            if let h = high { bytes.append(h << 4 | nibble); high = nil } else { high = nibble }
        }
        return bytes
    }

    /// The column's type OID (20 int8, 25 text, 16 bool, 17 bytea …).
    public func type(_ column: Int) -> UInt32 { PQftype(handle, Int32(column)) }
}
