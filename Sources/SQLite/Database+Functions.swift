import CSQLite

/// A text function SQL can call, kept alive for as long as its connection.
final class TextFunction {
    let body: (String) -> String
    init(_ body: @escaping (String) -> String) { self.body = body }
}

extension Database {
    /// Registers `name(text)` for SQL on this connection: `body` on the text (NULL stays NULL).
    /// Deterministic, so SQLite may use it in indexes and reuse its answers.
    public func function(_ name: String, _ body: @escaping (String) -> String) throws {
        let box = Unmanaged.passRetained(TextFunction(body)).toOpaque()
        let code = sqlite3_create_function_v2(handle, name, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, box, { context, count, values in
            guard let context, count == 1, let values, let value = values[0], sqlite3_value_type(value) != SQLITE_NULL,
                  let text = sqlite3_value_text(value) else {
                sqlite3_result_null(context)
                return
            }
            let function = Unmanaged<TextFunction>.fromOpaque(sqlite3_user_data(context)).takeUnretainedValue()
            let answer = function.body(String(cString: text))
            sqlite3_result_text(context, answer, -1, stepo_sqlite_transient())
        }, nil, nil, { box in
            if let box { Unmanaged<TextFunction>.fromOpaque(box).release() }
        })
        guard code == SQLITE_OK else { throw SQLiteError(code: code, connection: handle, sql: nil) }
    }
}
