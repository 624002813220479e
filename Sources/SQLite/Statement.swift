import CSQLite

/// A prepared statement: owns its `sqlite3_stmt` and finalizes it on deinit.
///
/// Statements are reused: `bind` resets the previous run and clears old bindings first.
public final class Statement {
    let handle: OpaquePointer
    unowned let database: Database
    public let sql: String

    init(database: Database, sql: String, persistent: Bool) throws {
        var raw: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let code = sqlite3_prepare_v3(database.handle, sql, -1, flags, &raw, nil)
        guard code == SQLITE_OK, let raw else {
            sqlite3_finalize(raw)
            throw SQLiteError(code: code, connection: database.handle, sql: sql)
        }
        self.handle = raw
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and binds `values` to its parameters in order. Every parameter is
    /// bound on every run, so old bindings never need clearing.
    @discardableResult
    public func bind(_ values: [SQLBindable]) throws -> Statement {
        sqlite3_reset(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard expected == values.count else {
            throw SQLiteError(code: SQLITE_RANGE,
                              message: "expected \(expected) parameters, got \(values.count)", sql: sql)
        }
        for (offset, value) in values.enumerated() {
            try value.bind(to: self, at: Int32(offset + 1))
        }
        return self
    }

    /// Resets the statement and binds its `:name` parameters from `values` (names include the
    /// prefix). Every parameter the SQL names must get a value; extra values are ignored, so one
    /// set of values can serve several statements.
    @discardableResult
    public func bind(named values: [String: SQLBindable]) throws -> Statement {
        sqlite3_reset(handle)
        let count = sqlite3_bind_parameter_count(handle)
        guard count > 0 else { return self }
        for index in 1...count {
            guard let cName = sqlite3_bind_parameter_name(handle, index) else {
                throw SQLiteError(code: SQLITE_RANGE, message: "parameter \(index) has no name", sql: sql)
            }
            let name = String(cString: cName)
            guard let value = values[name] else {
                throw SQLiteError(code: SQLITE_RANGE, message: "no value for parameter \(name)", sql: sql)
            }
            try value.bind(to: self, at: index)
        }
        return self
    }

    // MARK: Binding one parameter (1-based), for SQLBindable's conformances

    public func bindNull(at index: Int32) throws {
        try check(sqlite3_bind_null(handle, index))
    }

    public func bind(_ value: Int64, at index: Int32) throws {
        try check(sqlite3_bind_int64(handle, index, value))
    }

    public func bind(_ value: Double, at index: Int32) throws {
        try check(sqlite3_bind_double(handle, index, value))
    }

    public func bind(_ value: String, at index: Int32) throws {
        // With its byte count SQLite need not scan for the terminator; an empty string keeps
        // a non-null pointer, or SQLite would bind NULL.
        var text = value
        let code = text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                guard let base = chars.baseAddress, !chars.isEmpty else {
                    return sqlite3_bind_text(handle, index, "", 0, stepo_sqlite_transient())
                }
                return sqlite3_bind_text(handle, index, base, Int32(chars.count), stepo_sqlite_transient())
            }
        }
        try check(code)
    }

    public func bind(bytes: [UInt8], at index: Int32) throws {
        let code = bytes.withUnsafeBytes {
            sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), stepo_sqlite_transient())
        }
        try check(code)
    }

    private func check(_ code: Int32) throws {
        guard code == SQLITE_OK else { throw SQLiteError(code: code, connection: database.handle, sql: sql) }
    }

    /// Runs the statement to completion, ignoring any rows.
    public func run() throws {
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Runs the statement and calls `body` with each row.
    public func forEach(_ body: (Row) throws -> Void) throws {
        defer { sqlite3_reset(handle) }
        let row = Row(statement: self)
        while try step() { try body(row) }
    }

    /// Calls `body` with each row while it answers true: the rest of the rows are not read.
    public func forEach(while body: (Row) throws -> Bool) throws {
        defer { sqlite3_reset(handle) }
        let row = Row(statement: self)
        while try step() {
            guard try body(row) else { return }
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
        defer { sqlite3_reset(handle) }
        guard try step() else { return nil }
        return try transform(Row(statement: self))
    }

    func step() throws -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw SQLiteError(code: code, connection: database.handle, sql: sql)
        }
    }
}

/// The current row of a statement being stepped. Valid only inside the callback that receives it.
public struct Row {
    let statement: Statement

    public var columnCount: Int { Int(sqlite3_column_count(statement.handle)) }

    public func isNull(_ index: Int) -> Bool {
        sqlite3_column_type(statement.handle, Int32(index)) == SQLITE_NULL
    }

    public func int(_ index: Int) -> Int { Int(sqlite3_column_int64(statement.handle, Int32(index))) }

    public func int64(_ index: Int) -> Int64 { sqlite3_column_int64(statement.handle, Int32(index)) }

    public func optionalInt(_ index: Int) -> Int? { isNull(index) ? nil : int(index) }

    public func optionalInt64(_ index: Int) -> Int64? { isNull(index) ? nil : int64(index) }

    public func bool(_ index: Int) -> Bool { int64(index) != 0 }

    public func double(_ index: Int) -> Double { sqlite3_column_double(statement.handle, Int32(index)) }

    public func string(_ index: Int) -> String { optionalString(index) ?? "" }

    public func optionalString(_ index: Int) -> String? {
        guard let pointer = sqlite3_column_text(statement.handle, Int32(index)) else { return nil }
        let count = Int(sqlite3_column_bytes(statement.handle, Int32(index)))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    public func value(_ index: Int) -> SQLValue {
        switch sqlite3_column_type(statement.handle, Int32(index)) {
        case SQLITE_INTEGER: return .integer(int64(index))
        case SQLITE_FLOAT: return .real(double(index))
        case SQLITE_TEXT: return .text(string(index))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement.handle, Int32(index)))
            guard count > 0, let pointer = sqlite3_column_blob(statement.handle, Int32(index)) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: pointer, count: count)))
        default: return .null
        }
    }
}
