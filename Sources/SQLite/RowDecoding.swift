/// A stored value its column may not hold — a kind or a state this build does not know, from a
/// newer build or a damaged file. It is read as this error, which names the table, the column
/// and the value; never as some other value (an unknown kind is not an announcement, an unknown
/// push state is not `sent`).
public struct RowDecodingError: Error, CustomStringConvertible, Equatable {
    public let table: String
    public let column: String
    public let value: String

    public init(table: String, column: String, value: String) {
        self.table = table
        self.column = column
        self.value = value
    }

    public var description: String {
        // Escaped and cut short: the value came from a file, not from this build.
        let shown = value.count > 40 ? String(value.prefix(40)) + "…" : value
        return "\(table).\(column) holds \(shown.debugDescription), which this build cannot read "
            + "(a store written by a newer stepo, or a damaged one)"
    }

    /// `make(text)`, or this error when it gives nil.
    public static func decode<T>(_ text: String?, table: String, column: String, _ make: (String) -> T?) throws -> T {
        guard let text, let value = make(text) else {
            throw RowDecodingError(table: table, column: column, value: text ?? "NULL")
        }
        return value
    }
}

extension Row {
    /// The text at `index` made into a value by `make` (`Kind.init(rawValue:)`, `PushStatus.init`),
    /// or a `RowDecodingError` naming `table.column` and what it held.
    public func decoded<T>(_ index: Int, table: String, column: String, _ make: (String) -> T?) throws -> T {
        try RowDecodingError.decode(optionalString(index), table: table, column: column, make)
    }
}
