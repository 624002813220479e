import Notifications
import SQLite

/// What the `/` filter lets through: a small language, as mutt's limit and GitHub's search
/// have. Terms are separated by spaces and all must hold:
///
/// - a word, or a "quoted phrase": in the row's name or copy (case and accents aside);
/// - `kind:A,B`: a kind whose name begins with A or B (a batch counts as what its people did);
/// - `from:PERSON`: the person's name (any part of it) or their id;
/// - `category:NAME` (`cat:`): step-with, social, engagement, journeys or stepo;
/// - `is:unread`, `is:read`;
/// - `-TERM`: rows that do not match TERM.
///
/// A key given twice widens it (`kind:heart kind:share` is `kind:heart,share`): a row has one
/// kind, so asking for two can only mean either.
public struct RowFilter: Equatable, Sendable {
    /// One condition on a row.
    public enum Term: Equatable, Sendable {
        /// Folded text (`SearchKey`) the row's name and copy contain.
        case text(String)
        case kinds([Kind])
        /// Folded text a part of the person's name contains, or their id.
        case people([String])
        case unread
        case read
    }

    /// Terms a row must match.
    public var required: [Term]
    /// Terms a row must not match.
    public var excluded: [Term]

    public init(required: [Term], excluded: [Term] = []) {
        self.required = required
        self.excluded = excluded
    }

    /// What was typed, read; nil when nothing was (no filter). A term it cannot read is an
    /// error that says what it takes.
    public static func parse(_ typed: String) throws(FilterError) -> RowFilter? {
        var required: [Term] = [], excluded: [Term] = []
        for token in tokens(typed) {
            var body = token.text
            var negated = token.negated
            if !token.quoted, body.hasPrefix("-"), body.count > 1 {
                negated = true
                body.removeFirst()
            }
            let term = token.quoted ? Term.text(SearchKey.of(body)) : try self.term(body)
            if negated { merge(term, into: &excluded) } else { merge(term, into: &required) }
        }
        guard !required.isEmpty || !excluded.isEmpty else { return nil }
        return RowFilter(required: required, excluded: excluded)
    }

    /// The filter with rows of `category` only (a tab of the list).
    public func within(_ category: Category) -> RowFilter {
        var filter = self
        filter.required.append(.kinds(RowFilter.kinds(of: category)))
        return filter
    }

    /// A filter of one category's rows alone.
    public static func category(_ category: Category) -> RowFilter {
        RowFilter(required: [.kinds(kinds(of: category))])
    }

    /// The kinds whose rows belong to `category` (a batch by what its people did).
    public static func kinds(of category: Category) -> [Kind] {
        Kind.allCases.filter { $0 != .batch && $0.category == category }
    }

    /// The categories the filter and the tabs name, by the words a reader types.
    public static let categoryNames: [(name: String, category: Category)] = [
        ("step-with", .stepWith), ("social", .social), ("engagement", .engagement), ("journeys", .journeys),
        ("stepo", .announcement),
    ]

    /// The grammar, for the help screen and the errors.
    public static let grammar = "words · \"a phrase\" · kind:A,B · from:NAME · category:NAME · is:unread · -TERM excludes"

    // MARK: Reading what was typed

    private struct Token {
        var text: String
        var quoted: Bool
        var negated = false
    }

    /// Words split at spaces; a double-quoted run is one token, spaces and all, and a `-` just
    /// before its opening quote excludes it. A `-` alone is nothing.
    private static func tokens(_ typed: String) -> [Token] {
        var tokens: [Token] = []
        var current = ""
        var quoting = false
        var negating = false
        func flush(quoted: Bool) {
            if !current.isEmpty, quoted || current != "-" { tokens.append(Token(text: current, quoted: quoted, negated: quoted && negating)) }
            current = ""
            negating = false
        }
        for character in typed {
            if character == "\"" {
                if !quoting {
                    let minus = current == "-"
                    if minus { current = "" }
                    flush(quoted: false)
                    negating = minus
                } else {
                    flush(quoted: true)
                }
                quoting.toggle()
            } else if character.isWhitespace && !quoting {
                flush(quoted: false)
            } else {
                current.append(character)
            }
        }
        flush(quoted: quoting)
        return tokens
    }

    private static func term(_ text: String) throws(FilterError) -> Term {
        guard let colon = text.firstIndex(of: ":") else { return .text(SearchKey.of(text)) }
        let key = text[..<colon].lowercased()
        let values = text[text.index(after: colon)...].split(separator: ",").map(String.init)
        switch key {
        case "kind":
            guard !values.isEmpty else { throw FilterError("kind: takes a kind, e.g. kind:heart,share") }
            var kinds: [Kind] = []
            for value in values {
                let found = Kind.allCases.filter { $0.rawValue.lowercased().hasPrefix(value.lowercased()) }
                guard !found.isEmpty else {
                    throw FilterError("No kind begins with “\(value)”: kind: takes one of "
                                      + Kind.allCases.map(\.rawValue).joined(separator: ", "))
                }
                kinds += found.filter { !kinds.contains($0) }
            }
            return .kinds(kinds)
        case "category", "cat":
            guard !values.isEmpty else { throw FilterError("category: takes a category, e.g. category:social") }
            var kinds: [Kind] = []
            for value in values {
                let wanted = value.lowercased().filter { $0 != "-" }
                let found = categoryNames.filter { $0.name.filter { $0 != "-" }.hasPrefix(wanted) }
                guard !found.isEmpty else {
                    throw FilterError("No category begins with “\(value)”: category: takes one of "
                                      + categoryNames.map(\.name).joined(separator: ", "))
                }
                for category in found.map(\.category) { kinds += RowFilter.kinds(of: category).filter { !kinds.contains($0) } }
            }
            return .kinds(kinds)
        case "from":
            guard !values.isEmpty else { throw FilterError("from: takes a person, e.g. from:marco") }
            return .people(values)
        case "is":
            switch values.first?.lowercased() {
            case "unread" where values.count == 1: return .unread
            case "read" where values.count == 1: return .read
            default: throw FilterError("is: takes unread or read")
            }
        default:
            // Not a key this filter knows (a time, a link): the text itself.
            return .text(SearchKey.of(text))
        }
    }

    /// A key given twice widens: its values join the first one's.
    private static func merge(_ term: Term, into terms: inout [Term]) {
        for (index, existing) in terms.enumerated() {
            switch (existing, term) {
            case let (.kinds(a), .kinds(b)):
                terms[index] = .kinds(a + b.filter { !a.contains($0) })
                return
            case let (.people(a), .people(b)):
                terms[index] = .people(a + b.filter { !a.contains($0) })
                return
            default: continue
            }
        }
        terms.append(term)
    }

    // MARK: As SQL

    /// The filter as a condition on the replica's `rows`, with its values; `readThrough` is
    /// the furthest read mark (rows up to it are read however their own stamps stand).
    func condition(readThrough: Int) -> (sql: String, values: [SQLBindable]) {
        var parts: [String] = []
        var values: [SQLBindable] = []
        for term in required {
            let (sql, bound) = RowFilter.condition(term, readThrough: readThrough)
            parts.append(sql)
            values += bound
        }
        for term in excluded {
            let (sql, bound) = RowFilter.condition(term, readThrough: readThrough)
            parts.append("NOT coalesce(\(sql), 0)")
            values += bound
        }
        return (parts.isEmpty ? "1" : parts.joined(separator: " AND "), values)
    }

    private static func condition(_ term: Term, readThrough: Int) -> (String, [SQLBindable]) {
        switch term {
        case .text(let folded):
            return ("search LIKE ? ESCAPE '\\'", [like(folded)])
        case .kinds(let kinds):
            let names = kinds.map(\.rawValue)
            let marks = names.map { _ in "?" }.joined(separator: ", ")
            return ("(kind IN (\(marks)) OR (kind = 'batch' AND action IN (\(marks))))", names + names)
        case .people(let people):
            let each = people.map { _ in "(actor = ? OR stepo_search_key(title) LIKE ? ESCAPE '\\')" }
            return ("(" + each.joined(separator: " OR ") + ")", people.flatMap { [$0, like(SearchKey.of($0))] as [SQLBindable] })
        case .unread:
            return ("(read_at IS NULL AND id > ?)", [readThrough])
        case .read:
            return ("(read_at IS NOT NULL OR id <= ?)", [readThrough])
        }
    }

    /// `%text%`, with LIKE's own characters escaped.
    private static func like(_ folded: String) -> String {
        "%" + folded.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_") + "%"
    }
}

/// A filter that cannot be read, in words for the reader.
public struct FilterError: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
