import Notifications
import Storage

/// Reads by a set of keys in one statement, whatever the set's size: the gathers of the
/// set-at-a-time paths (an ingest's batch, a push worker's claimed entries) share these.
extension Connection {
    /// Runs `sql`, which reads the table `k` (`table` names it and its columns), with `tuples`
    /// as `k`'s rows, gathering every row. The tuples are one parameter per column on
    /// PostgreSQL (arrays, `unnest`): one statement text, whatever the run's size; on SQLite
    /// a `VALUES` list, a statement for every 64 rows.
    func matching<T>(_ table: String, _ types: [String], _ tuples: [[SQLBindable]], _ sql: String,
                             _ transform: (Row) throws -> T) throws -> [T] {
        guard !tuples.isEmpty else { return [] }
        if dialect.writersSideBySide {
            let text = "WITH \(table) AS (SELECT * FROM unnest(" + types.map { "CAST(? AS \($0)[])" }.joined(separator: ", ") + ")) " + sql
            let columns: [SQLBindable] = types.indices.map { column in KeySets.array(tuples.map { $0[column].sqlValue }) }
            return try gatherQuery(text, columns, transform)
        }
        // SQLite: a `VALUES` list of `KeySets.rowsPerStatement` rows at most, its statement
        // kept: half the cost of a JSON array taken apart with json_extract (1.3 against
        // 2.8 µs a row of six columns).
        let row = "(" + Array(repeating: "?", count: types.count).joined(separator: ", ") + ")"
        var found: [T] = []
        for start in stride(from: 0, to: tuples.count, by: KeySets.rowsPerStatement) {
            let part = tuples[start..<min(start + KeySets.rowsPerStatement, tuples.count)]
            let text = "WITH \(table) AS (VALUES " + Array(repeating: row, count: part.count).joined(separator: ", ") + ") " + sql
            found += try cached(text).bind(part.flatMap { $0 }).map(transform)
        }
        return found
    }

    /// Runs a gather statement. On PostgreSQL it is planned for its values each time: a plan
    /// kept for every value, made while a table was small, read the whole `events` table for
    /// each run (46 ms a run at 25,000 events).
    func gatherQuery<T>(_ sql: String, _ values: [SQLBindable], _ transform: (Row) throws -> T) throws -> [T] {
        dialect.writersSideBySide ? try prepare(sql).bind(values).map(transform) : try query(sql, values, transform)
    }

    /// Runs `sql`, whose `IN (%)` stands for the set of `keys`, gathering every row: one
    /// parameter, an array (`unnest`) on PostgreSQL, a JSON array (`json_each`) on SQLite.
    ///
    /// On PostgreSQL `= ANY(array)` was planned as a scan of every partition of `inboxes` and of
    /// all of `devices` (70 ms and 4 ms a run); `IN (SELECT unnest(array))` probes the index. A
    /// hash-partitioned table is best read with a list of one parameter per key (`spelled`):
    /// each partition is given only its own keys.
    ///
    /// `leading`: values of the `?` that come before the set in `sql`.
    func keyed<K: SQLBindable & Hashable, T>(_ sql: String, _ keys: [K], spelled: Bool = false, leading: [SQLBindable] = [],
                                                     _ transform: (Row) throws -> T) throws -> [T] {
        let unique = Array(Set(keys))
        guard !unique.isEmpty else { return [] }
        if dialect.writersSideBySide {
            if spelled {
                let text = KeySets.replacing(setIn: sql, with: "IN (" + Array(repeating: "?", count: unique.count).joined(separator: ", ") + ")")
                return try gatherQuery(text, leading + unique, transform)
            }
            let type: String
            if case .integer = unique[0].sqlValue { type = "BIGINT" } else { type = "TEXT" }
            let text = KeySets.replacing(setIn: sql, with: "IN (SELECT unnest(CAST(? AS \(type)[])))")
            return try gatherQuery(text, leading + [KeySets.array(unique.map(\.sqlValue))], transform)
        }
        let text = KeySets.replacing(setIn: sql, with: "IN (SELECT value FROM json_each(?))")
        return try gatherQuery(text, leading + [JSON.array(unique.map { KeySets.json($0.sqlValue) }).serialized], transform)
    }
}

extension Connection {
    /// Runs `sql` (a write), whose `IN (%)` stands for the set of `keys`, as `keyed` reads.
    func runKeyed(_ sql: String, _ keys: [Int], leading: [SQLBindable] = []) throws {
        guard !keys.isEmpty else { return }
        if dialect.writersSideBySide {
            let text = KeySets.replacing(setIn: sql, with: "IN (SELECT unnest(CAST(? AS BIGINT[])))")
            return try run(text, binding: leading + [KeySets.array(keys.map(\.sqlValue))])
        }
        let text = KeySets.replacing(setIn: sql, with: "IN (SELECT value FROM json_each(?))")
        try run(text, binding: leading + [JSON.array(keys.map { KeySets.json($0.sqlValue) }).serialized])
    }
}

enum KeySets {
    /// How many rows one SQLite statement of `matching` carries.
    static let rowsPerStatement = 64

    /// `sql` with every `IN (%)` made `replacement`, on its UTF-8 bytes: Foundation's
    /// `replacingOccurrences` goes through UTF-16 on Linux, and with a gather's dozen calls a
    /// batch it was 6% of the push worker's CPU. The standard library's `replacing(_:with:)` is
    /// no better (on a gather's statement, release build: 10.5 µs a call, Foundation 12.4, this 1.5).
    static func replacing(setIn sql: String, with replacement: String) -> String {
        let marker = Array("IN (%)".utf8)
        var out: [UInt8] = []
        var found = false
        let bytes = Array(sql.utf8)
        out.reserveCapacity(bytes.count + replacement.utf8.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == marker[0], i + marker.count <= bytes.count, bytes[i..<(i + marker.count)].elementsEqual(marker) {
                out.append(contentsOf: replacement.utf8)
                i += marker.count
                found = true
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return found ? String(decoding: out, as: UTF8.self) : sql
    }

    /// Values as a PostgreSQL array literal (integers, or texts quoted).
    static func array(_ values: [SQLValue]) -> String {
        "{" + values.map { value -> String in
            switch value {
            case .integer(let i): return String(i)
            case .text(let t): return "\"" + t.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
            case .real(let d): return String(d)
            case .null, .blob: return "NULL"
            }
        }.joined(separator: ",") + "}"
    }

    static func json(_ value: SQLValue) -> JSON {
        switch value {
        case .integer(let i): return .int(Int(i))
        case .text(let t): return .string(t)
        default: return .null
        }
    }
}
