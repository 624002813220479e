import Synchronization
/// The few rewrites that turn the backend's shared SQL into PostgreSQL's.
///
/// - `?` becomes `$1`, `$2` … in order (`?2` becomes `$2`); `:name` becomes `$k`, one number per distinct name
///   (PostgreSQL's `::type` casts are left alone).
/// - The column name `user`, reserved in PostgreSQL, is quoted.
///
/// String literals, quoted identifiers and comments pass through untouched. Everything else
/// the two engines already share, and SQL that cannot be shared asks `Connection.engine`.
public enum PostgresDialect {
    public struct Translation: Sendable {
        public let sql: String
        /// The `:name` parameters in `$k` order (empty for `?` parameters).
        public let names: [String]
        public let parameterCount: Int
    }

    private static let cache = TranslationCache()

    /// `sql` in PostgreSQL's dialect, translated once per text.
    public static func translate(_ sql: String) -> Translation {
        if let known = cache[sql] { return known }
        let translation = rewrite(sql)
        cache[sql] = translation
        return translation
    }

    static func rewrite(_ sql: String) -> Translation {
        let chars = Array(sql.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(chars.count + 16)
        var names: [String] = []
        var positional = 0
        var i = 0
        func isWord(_ c: UInt8) -> Bool {
            (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c == 95
        }
        func append(_ text: String) { out.append(contentsOf: Array(text.utf8)) }
        while i < chars.count {
            let c = chars[i]
            switch c {
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                // A literal or quoted identifier, through its closing quote (doubled quotes stay inside).
                out.append(c)
                i += 1
                while i < chars.count {
                    out.append(chars[i])
                    if chars[i] == c {
                        if i + 1 < chars.count && chars[i + 1] == c { out.append(c); i += 2; continue }
                        i += 1
                        break
                    }
                    i += 1
                }
            case UInt8(ascii: "-") where i + 1 < chars.count && chars[i + 1] == UInt8(ascii: "-"):
                while i < chars.count && chars[i] != UInt8(ascii: "\n") { out.append(chars[i]); i += 1 }
            case UInt8(ascii: "?"):
                // `?NNN` names its place (SQLite's numbered parameter); a bare `?` takes the next.
                var j = i + 1
                var number = 0
                while j < chars.count && chars[j] >= 48 && chars[j] <= 57 { number = number * 10 + Int(chars[j] - 48); j += 1 }
                if j == i + 1 {
                    positional += 1
                    number = positional
                } else {
                    positional = max(positional, number)
                }
                append("$\(number)")
                i = j
            case UInt8(ascii: ":") where i + 1 < chars.count && chars[i + 1] == UInt8(ascii: ":"):
                out.append(c); out.append(c)
                i += 2
            case UInt8(ascii: ":") where i + 1 < chars.count && isWord(chars[i + 1]) && !(chars[i + 1] >= 48 && chars[i + 1] <= 57)
                                        && (i == 0 || chars[i - 1] != UInt8(ascii: ":")):
                var j = i + 1
                while j < chars.count && isWord(chars[j]) { j += 1 }
                let name = String(decoding: chars[i..<j], as: UTF8.self)
                if let index = names.firstIndex(of: name) {
                    append("$\(index + 1)")
                } else {
                    names.append(name)
                    append("$\(names.count)")
                }
                i = j
            default:
                if isWord(c) && (i == 0 || !isWord(chars[i - 1])) {
                    var j = i
                    while j < chars.count && isWord(chars[j]) { j += 1 }
                    let word = chars[i..<j]
                    if word.count == 4, String(decoding: word, as: UTF8.self).lowercased() == "user" {
                        append("\"user\"")
                    } else {
                        out.append(contentsOf: word)
                    }
                    i = j
                } else {
                    out.append(c)
                    i += 1
                }
            }
        }
        return Translation(sql: String(decoding: out, as: UTF8.self), names: names, parameterCount: names.isEmpty ? positional : names.count)
    }
}

/// Translations by SQL text, shared by every connection of the process.
private final class TranslationCache: Sendable {
    private let entries = Mutex<[String: PostgresDialect.Translation]>([:])

    subscript(sql: String) -> PostgresDialect.Translation? {
        get { entries.withLock { $0[sql] } }
        set { entries.withLock { $0[sql] = newValue } }
    }
}

import Foundation
