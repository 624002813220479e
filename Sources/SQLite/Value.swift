/// A value SQLite stores: the five storage classes.
public enum SQLValue: Equatable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A Swift value that binds to a statement parameter. Each type binds itself straight to
/// SQLite (no intermediate boxing: binding is on every hot path).
public protocol SQLBindable {
    func bind(to statement: Statement, at index: Int32) throws
    /// The value itself, for an engine other than SQLite (the store's PostgreSQL seam).
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable {
    public var sqlValue: SQLValue { self }
    public func bind(to statement: Statement, at index: Int32) throws {
        switch self {
        case .null: try statement.bindNull(at: index)
        case .integer(let int): try statement.bind(int, at: index)
        case .real(let double): try statement.bind(double, at: index)
        case .text(let text): try statement.bind(text, at: index)
        case .blob(let bytes): try statement.bind(bytes: bytes, at: index)
        }
    }
}

extension Int: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
    public func bind(to statement: Statement, at index: Int32) throws { try statement.bind(Int64(self), at: index) }
}

extension Int64: SQLBindable {
    public var sqlValue: SQLValue { .integer(self) }
    public func bind(to statement: Statement, at index: Int32) throws { try statement.bind(self, at: index) }
}

extension Bool: SQLBindable {
    public var sqlValue: SQLValue { .integer(self ? 1 : 0) }
    public func bind(to statement: Statement, at index: Int32) throws { try statement.bind(Int64(self ? 1 : 0), at: index) }
}

extension Double: SQLBindable {
    public var sqlValue: SQLValue { .real(self) }
    public func bind(to statement: Statement, at index: Int32) throws { try statement.bind(self, at: index) }
}

extension String: SQLBindable {
    public var sqlValue: SQLValue { .text(self) }
    public func bind(to statement: Statement, at index: Int32) throws { try statement.bind(self, at: index) }
}

extension Substring: SQLBindable {
    public var sqlValue: SQLValue { .text(String(self)) }
    public func bind(to statement: Statement, at index: Int32) throws { try statement.bind(String(self), at: index) }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
    public func bind(to statement: Statement, at index: Int32) throws {
        switch self {
        case .none: try statement.bindNull(at: index)
        case .some(let value): try value.bind(to: statement, at: index)
        }
    }
}
