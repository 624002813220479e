import Foundation

/// A JSON value whose objects keep their key order, so contract output reads as documented.
///
/// Reading and writing are both ours: Foundation cannot keep key order, and its reader is
/// too slow for a sync of a million rows (see `JSONParser`).
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
    /// A number, whole or not.
    public var number: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
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

    /// Parses one JSON text (strictly, in order: see `JSONParser`). Errors say what was wrong.
    public static func parse(_ data: Data) throws -> JSON {
        try JSONParser.parse(data)
    }

    public static func parse(_ text: String) throws -> JSON {
        var text = text
        return try text.withUTF8 { try JSONParser.parse($0) }
    }

    /// Parses JSON held in a byte buffer without copying it.
    public static func parse(bytes: UnsafeBufferPointer<UInt8>) throws -> JSON {
        try JSONParser.parse(bytes)
    }

    // MARK: Writing

    /// Compact JSON text with keys in their stored order.
    public var serialized: String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Indented JSON text, for people.
    public var pretty: String {
        var out = ""
        writePretty(to: &out, indent: 0)
        return out
    }

    /// Appends the compact text. Bytes, not String appends: a row's JSON is written for every
    /// row `stepo ingest` prints, and a hundred small String appends cost ten times as much.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d): out.append(contentsOf: (d.isFinite ? String(d) : "null").utf8)
        case .string(let s): JSON.writeString(s, to: &out)
        case .fragment(let text): out.append(contentsOf: text.utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSON.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
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
        default: out += serialized
        }
    }

    /// Appends `s` as a JSON string literal.
    static func writeString(_ s: String, to out: inout String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count + 2)
        writeString(s, to: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `s` as a JSON string literal. Escaped: the quote, the backslash, C0 and C1
    /// controls, DEL, and U+2028/U+2029 (which end a line in JavaScript).
    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let utf8 = s.utf8
        // Most text needs no escaping: copy it whole.
        let special = { (b: UInt8) in b < 0x20 || b == 0x22 || b == 0x5C || b == 0x7F || b == 0xC2 || b == 0xE2 }
        if !(utf8.withContiguousStorageIfAvailable { $0.contains(where: special) } ?? utf8.contains(where: special)) {
            out.append(contentsOf: utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        let bytes = Array(utf8)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case 0x22: out.append(contentsOf: #"\""#.utf8)
            case 0x5C: out.append(contentsOf: #"\\"#.utf8)
            case 0x0A: out.append(contentsOf: #"\n"#.utf8)
            case 0x0D: out.append(contentsOf: #"\r"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20, 0x7F: appendEscape(UInt32(b), to: &out)
            case 0xC2 where i + 1 < bytes.count && (0x80...0x9F).contains(bytes[i + 1]):
                // A C1 control, U+0080…U+009F.
                appendEscape(UInt32(bytes[i + 1]), to: &out)
                i += 1
            case 0xE2 where i + 2 < bytes.count && bytes[i + 1] == 0x80 && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9):
                appendEscape(bytes[i + 2] == 0xA8 ? 0x2028 : 0x2029, to: &out)
                i += 2
            default: out.append(b)
            }
            i += 1
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `\u` and four lowercase hex digits.
    private static func appendEscape(_ value: UInt32, to out: inout [UInt8]) {
        let digits = Array("0123456789abcdef".utf8)
        out.append(contentsOf: #"\u"#.utf8)
        for shift in stride(from: 12, through: 0, by: -4) { out.append(digits[Int((value >> UInt32(shift)) & 0xF)]) }
    }
}

/// Writes JSON text straight into bytes, for documents too large to build as a tree first
/// (a sync page). Commas go where they belong; keys are written as given.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    public init(capacity: Int = 1024) { bytes.reserveCapacity(capacity) }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
    }

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A member's name; its value comes next.
    public mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: "\":".utf8)
        needsComma = false
    }

    public mutating func string(_ text: String) {
        separate()
        JSON.writeString(text, to: &bytes)
    }

    public mutating func int(_ value: Int) {
        separate()
        if value >= 0 && value < 10 { bytes.append(UInt8(48 + value)); return }
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
    }

    /// A value as a tree.
    public mutating func value(_ json: JSON) {
        separate()
        json.write(to: &bytes)
    }

    /// JSON text written elsewhere, verbatim.
    public mutating func fragment(_ text: String) {
        separate()
        bytes.append(contentsOf: text.utf8)
    }

    /// What was written, as text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
