import Foundation

/// A JSON value whose objects keep their key order, so contract output reads as documented.
///
/// Parsing uses Foundation's `JSONSerialization`; writing is ours because Foundation cannot
/// keep key order.
public indirect enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])
    /// JSON text already written (by this writer), emitted verbatim: for values stored as JSON.
    case fragment(String)

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b
        case let (.int(a), .double(b)), let (.double(b), .int(a)): return Double(a) == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.fragment(a), .fragment(b)): return a == b
        case let (.fragment(text), other), let (other, .fragment(text)):
            return (try? JSON.parse(text)) == other
        case let (.object(a), .object(b)):
            guard a.count == b.count else { return false }
            let right = Dictionary(b, uniquingKeysWith: { first, _ in first })
            return a.allSatisfy { right[$0.0] == $0.1 }
        default: return false
        }
    }

    /// The member `key` of an object, or nil.
    public subscript(key: String) -> JSON? {
        if case .fragment(let text) = self { return (try? JSON.parse(text))?[key] }
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    public var string: String? { if case .string(let s) = self { return s }; return nil }
    public var bool: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var int: Int? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9e15: return Int(d)
        default: return nil
        }
    }
    public var array: [JSON]? { if case .array(let a) = self { return a }; return nil }
    public var isNull: Bool { if case .null = self { return true }; return false }

    /// An object built from members whose nil values are left out.
    public static func members(_ pairs: [(String, JSON?)]) -> JSON {
        .object(pairs.compactMap { key, value in value.map { (key, $0) } })
    }

    // MARK: Parsing

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Parses one JSON text. Errors say what was wrong in plain words.
    public static func parse(_ data: Data) throws -> JSON {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw ParseError(description: "malformed JSON")
        }
        return JSON(foundation: object)
    }

    public static func parse(_ text: String) throws -> JSON { try parse(Data(text.utf8)) }

    init(foundation value: Any) {
        // Containers first: casting a Swift dictionary to NSNumber would bridge it to an
        // NSDictionary just to fail, which costs more than the parse.
        switch value {
        case let dictionary as [String: Any]:
            self = .object(dictionary.keys.sorted().map { ($0, JSON(foundation: dictionary[$0]!)) })
        case let array as [Any]: self = .array(array.map(JSON.init(foundation:)))
        case let string as String: self = .string(string)
        case is NSNull: self = .null
        case let number as NSNumber:
            let type = String(cString: number.objCType)
            if type == "c" { self = .bool(number.boolValue) }
            else if type == "d" || type == "f" {
                let d = number.doubleValue
                self = (d.rounded() == d && abs(d) < 9e15) ? .int(Int(d)) : .double(d)
            } else { self = .int(number.intValue) }
        default: self = .null
        }
    }

    // MARK: Writing

    /// Compact JSON text with keys in their stored order.
    public var serialized: String {
        var out = ""
        write(to: &out)
        return out
    }

    /// Indented JSON text, for people.
    public var pretty: String {
        var out = ""
        writePretty(to: &out, indent: 0)
        return out
    }

    public func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): out += d.isFinite ? String(d) : "null"
        case .string(let s): JSON.writeString(s, to: &out)
        case .fragment(let text): out += text
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                JSON.writeString(key, to: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    private func writePretty(to out: inout String, indent: Int) {
        let pad = String(repeating: "  ", count: indent + 1)
        let close = String(repeating: "  ", count: indent)
        switch self {
        case .array(let items) where !items.isEmpty:
            out += "[\n"
            for (i, item) in items.enumerated() {
                out += pad
                item.writePretty(to: &out, indent: indent + 1)
                out += i < items.count - 1 ? ",\n" : "\n"
            }
            out += close + "]"
        case .object(let members) where !members.isEmpty:
            out += "{\n"
            for (i, (key, value)) in members.enumerated() {
                out += pad
                JSON.writeString(key, to: &out)
                out += ": "
                value.writePretty(to: &out, indent: indent + 1)
                out += i < members.count - 1 ? ",\n" : "\n"
            }
            out += close + "}"
        default: write(to: &out)
        }
    }

    static func writeString(_ s: String, to out: inout String) {
        out += "\""
        // Most text needs no escaping: copy it whole.
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0x7F || $0 == 0xC2 || $0 == 0xE2 }) {
            out += s
            out += "\""
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value)
                || scalar.value == 0x2028 || scalar.value == 0x2029:
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
