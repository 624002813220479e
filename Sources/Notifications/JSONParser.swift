import Foundation

/// A strict JSON reader (RFC 8259) over bytes.
///
/// Foundation's `JSONSerialization` reads about 20 MB/s on this toolchain and turns an
/// integer past `Int64.max` into `Int.min`; a sync of a million rows is half a gigabyte of
/// JSON. This reader keeps members in the order written, refuses what RFC 8259 refuses
/// (invalid UTF-8, lone surrogates, leading zeros, trailing commas, bare controls in
/// strings), turns an integer that does not fit 64 bits into a double (which `JSON.int`
/// then refuses), and stops nesting at a fixed depth so hostile input cannot exhaust the
/// stack.
struct JSONParser {
    static let maximumDepth = 64

    fileprivate let bytes: UnsafeBufferPointer<UInt8>
    fileprivate var i = 0
    private var depth = 0

    fileprivate init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    static func parse(_ data: Data) throws -> JSON {
        try data.withUnsafeBytes { raw in
            try parse(raw.bindMemory(to: UInt8.self))
        }
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws -> JSON {
        var parser = JSONParser(bytes)
        parser.skipSpace()
        let value = try parser.value()
        parser.skipSpace()
        guard parser.i == bytes.count else { throw parser.error("extra text after the JSON value") }
        return value
    }

    fileprivate func error(_ what: String) -> JSON.ParseError {
        JSON.ParseError(description: "malformed JSON at byte \(i): \(what)")
    }

    fileprivate mutating func skipSpace() {
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    fileprivate mutating func value() throws -> JSON {
        guard i < bytes.count else { throw error("unexpected end") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character")
        }
    }

    fileprivate mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard i + count <= bytes.count else { throw error("unexpected end") }
        for k in 0..<count where bytes[i + k] != word.utf8Start[k] { throw error("unknown literal") }
        i += count
    }

    private mutating func enter() throws {
        depth += 1
        guard depth <= JSONParser.maximumDepth else { throw error("nested deeper than \(JSONParser.maximumDepth) levels") }
    }

    private mutating func object() throws -> JSON {
        try enter()
        defer { depth -= 1 }
        i += 1
        var members: [(String, JSON)] = []
        // A name given twice is refused, not resolved one way or the other ("actor" twice:
        // which one acted?). Small objects are searched; large ones keep a set.
        var names: Set<String>?
        skipSpace()
        if i < bytes.count && bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try string()
            if members.count < 16 {
                if members.contains(where: { $0.0 == key }) { throw error("the member name \(Fields.quoted(key)) appears twice") }
            } else {
                if names == nil { names = Set(members.map(\.0)) }
                guard names!.insert(key).inserted else { throw error("the member name \(Fields.quoted(key)) appears twice") }
            }
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw error("expected ':'") }
            i += 1
            skipSpace()
            members.append((key, try value()))
            skipSpace()
            guard i < bytes.count else { throw error("unexpected end") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            throw error("expected ',' or '}'")
        }
    }

    private mutating func array() throws -> JSON {
        try enter()
        defer { depth -= 1 }
        i += 1
        var items: [JSON] = []
        skipSpace()
        if i < bytes.count && bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
        while true {
            skipSpace()
            items.append(try value())
            skipSpace()
            guard i < bytes.count else { throw error("unexpected end") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            throw error("expected ',' or ']'")
        }
    }

    fileprivate mutating func number() throws -> JSON {
        let start = i
        var negative = false
        if bytes[i] == UInt8(ascii: "-") { negative = true; i += 1 }
        guard i < bytes.count, isDigit(bytes[i]) else { throw error("a number needs digits") }
        if bytes[i] == UInt8(ascii: "0"), i + 1 < bytes.count, isDigit(bytes[i + 1]) {
            throw error("a number may not start with 0")
        }
        var magnitude: UInt64 = 0
        var overflow = false
        while i < bytes.count, isDigit(bytes[i]) {
            let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (plus, o2) = times.addingReportingOverflow(UInt64(bytes[i] - 48))
            overflow = overflow || o1 || o2
            magnitude = plus
            i += 1
        }
        var integral = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            integral = false
            i += 1
            guard i < bytes.count, isDigit(bytes[i]) else { throw error("a fraction needs digits") }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            integral = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, isDigit(bytes[i]) else { throw error("an exponent needs digits") }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        if integral && !overflow {
            if !negative && magnitude <= UInt64(Int64.max) { return .int(Int(magnitude)) }
            if negative && magnitude <= UInt64(Int64.max) + 1 {
                return .int(magnitude == UInt64(Int64.max) + 1 ? Int.min : -Int(magnitude))
            }
        }
        // Past 64 bits, or a fraction: a double (`JSON.int` refuses one that is not whole and small).
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let double = Double(text), double.isFinite else { throw error("number out of range") }
        return .double(double)
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }

    fileprivate mutating func string() throws -> String {
        i += 1  // the opening quote
        let start = i
        // The common case: no escapes. Find the closing quote, checking for controls.
        var high: UInt8 = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<i])
                i += 1
                return try text(slice, ascii: high < 0x80)
            }
            high |= b
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw error("a control character inside a string") }
            i += 1
        }
        guard i < bytes.count else { throw error("unterminated string") }
        // Escapes: build the bytes.
        var out = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<i]))
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                i += 1
                return try out.withUnsafeBufferPointer { try text($0, ascii: false) }
            }
            if b < 0x20 { throw error("a control character inside a string") }
            if b != UInt8(ascii: "\\") { out.append(b); i += 1; continue }
            i += 1
            guard i < bytes.count else { throw error("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw error("a lone surrogate")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("a lone surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw error("a lone surrogate")
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw error("an invalid escape") }
                out.append(contentsOf: Array(String(Character(unicode)).utf8))
            default:
                throw error("an unknown escape")
            }
        }
        throw error("unterminated string")
    }

    /// The string these bytes spell, refused when they are not valid UTF-8. (`String(validating:)`
    /// is generic and costs a metadata lookup per call; decoding and comparing is not.)
    private func text(_ slice: UnsafeBufferPointer<UInt8>, ascii: Bool) throws -> String {
        let text = String(decoding: slice, as: UTF8.self)
        // Decoding replaces what is not UTF-8; a text that reads back as its bytes had none.
        guard ascii || text.utf8.elementsEqual(slice) else { throw error("invalid UTF-8 in a string") }
        return text
    }

    private mutating func hex4() throws -> UInt32 {
        guard i + 4 <= bytes.count else { throw error("a short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[i]
            let digit: UInt32
            switch b {
            case 48...57: digit = UInt32(b - 48)
            case 65...70: digit = UInt32(b - 55)
            case 97...102: digit = UInt32(b - 87)
            default: throw error("a bad \\u escape")
            }
            value = value * 16 + digit
            i += 1
        }
        return value
    }
}

/// A pull reader over JSON text, for decoding a large document straight into typed values
/// without building the `JSON` tree first (a sync page is two thousand rows).
///
/// Same grammar and limits as `JSON.parse`. Read an object with `beginObject` and
/// `nextKey` until it answers nil; an array with `beginArray` and `nextElement`; anything
/// else with `value()`.
public struct JSONReader {
    private var parser: JSONParser
    /// Whether the container just begun has had a member or element yet.
    private var fresh = false

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { parser = JSONParser(bytes) }

    /// Reads `data` with `body`, which must read exactly one value; throws on what is left.
    public static func read<T>(_ data: Data, _ body: (inout JSONReader) throws -> T) throws -> T {
        try data.withUnsafeBytes { raw in
            var reader = JSONReader(raw.bindMemory(to: UInt8.self))
            reader.parser.skipSpace()
            let result = try body(&reader)
            reader.parser.skipSpace()
            guard reader.parser.i == reader.parser.bytes.count else { throw reader.parser.error("extra text after the JSON value") }
            return result
        }
    }

    private var next: UInt8? {
        parser.i < parser.bytes.count ? parser.bytes[parser.i] : nil
    }

    /// A `ParseError` at the current byte.
    public func error(_ what: String) -> JSON.ParseError { parser.error(what) }

    public mutating func beginObject() throws {
        guard next == UInt8(ascii: "{") else { throw error("expected an object") }
        parser.i += 1
        fresh = true
    }

    /// The next member's name (the reader then stands at its value), or nil at the object's end.
    public mutating func nextKey() throws -> String? {
        parser.skipSpace()
        if next == UInt8(ascii: "}") { parser.i += 1; fresh = false; return nil }
        if !fresh {
            guard next == UInt8(ascii: ",") else { throw error("expected ',' or '}'") }
            parser.i += 1
            parser.skipSpace()
        }
        fresh = false
        guard next == UInt8(ascii: "\"") else { throw error("expected a member name") }
        let key = try parser.string()
        parser.skipSpace()
        guard next == UInt8(ascii: ":") else { throw error("expected ':'") }
        parser.i += 1
        parser.skipSpace()
        return key
    }

    public mutating func beginArray() throws {
        guard next == UInt8(ascii: "[") else { throw error("expected an array") }
        parser.i += 1
        fresh = true
    }

    /// Whether another element follows (the reader then stands at it); false at the array's end.
    public mutating func nextElement() throws -> Bool {
        parser.skipSpace()
        if next == UInt8(ascii: "]") { parser.i += 1; fresh = false; return false }
        if !fresh {
            guard next == UInt8(ascii: ",") else { throw error("expected ',' or ']'") }
            parser.i += 1
            parser.skipSpace()
        }
        fresh = false
        return true
    }

    /// Whether the value here is `null`; if so it is read.
    public mutating func null() throws -> Bool {
        guard next == UInt8(ascii: "n") else { return false }
        try parser.literal("null")
        return true
    }

    public mutating func string() throws -> String {
        guard next == UInt8(ascii: "\"") else { throw error("expected a string") }
        return try parser.string()
    }

    public mutating func optionalString() throws -> String? {
        try null() ? nil : try string()
    }

    public mutating func int() throws -> Int {
        guard let int = try value().int else { throw error("expected a whole number") }
        return int
    }

    public mutating func optionalInt() throws -> Int? {
        try null() ? nil : try int()
    }

    public mutating func bool() throws -> Bool {
        guard let bool = try value().bool else { throw error("expected true or false") }
        return bool
    }

    /// The value here, whole, as a tree.
    public mutating func value() throws -> JSON {
        try parser.value()
    }
}
