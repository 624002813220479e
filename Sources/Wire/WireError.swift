import Notifications

/// A document of the API that does not have the shape the contract gives it.
public struct WireError: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Typed reads of a JSON object's members, each failure naming the member.
struct Members {
    let json: JSON
    let path: String

    init(_ json: JSON, _ path: String) throws {
        guard case .object = json else { throw WireError("\(path) must be an object") }
        self.json = json
        self.path = path
    }

    private func name(_ key: String) -> String { "\(path).\(key)" }

    func present(_ key: String) -> JSON? {
        guard let value = json[key], !value.isNull else { return nil }
        return value
    }

    func string(_ key: String) throws -> String {
        guard let text = json[key]?.string else { throw WireError("\(name(key)) must be a string") }
        return text
    }

    func optionalString(_ key: String) throws -> String? {
        guard let value = present(key) else { return nil }
        guard let text = value.string else { throw WireError("\(name(key)) must be a string or null") }
        return text
    }

    func int(_ key: String) throws -> Int {
        guard let number = json[key]?.int else { throw WireError("\(name(key)) must be a whole number") }
        return number
    }

    func optionalInt(_ key: String) throws -> Int? {
        guard let value = present(key) else { return nil }
        guard let number = value.int else { throw WireError("\(name(key)) must be a whole number or null") }
        return number
    }

    func bool(_ key: String, default fallback: Bool? = nil) throws -> Bool {
        guard let value = present(key) else {
            if let fallback { return fallback }
            throw WireError("\(name(key)) must be true or false")
        }
        guard let flag = value.bool else { throw WireError("\(name(key)) must be true or false") }
        return flag
    }

    func time(_ key: String) throws -> Int64 {
        let text = try string(key)
        guard let at = Timestamp.parse(text) else { throw WireError("\(name(key)) must be an RFC 3339 time") }
        return at
    }

    func optionalTime(_ key: String) throws -> Int64? {
        guard present(key) != nil else { return nil }
        return try time(key)
    }

    func array(_ key: String, optional: Bool = false) throws -> [JSON] {
        guard let value = present(key) else {
            if optional { return [] }
            throw WireError("\(name(key)) must be an array")
        }
        guard let items = value.array else { throw WireError("\(name(key)) must be an array") }
        return items
    }

    func object(_ key: String) throws -> Members {
        guard let value = json[key] else { throw WireError("\(name(key)) is missing") }
        return try Members(value, name(key))
    }

    func strings(_ key: String) throws -> [String] {
        try array(key, optional: true).enumerated().map { index, item in
            guard let text = item.string else { throw WireError("\(name(key))[\(index)] must be a string") }
            return text
        }
    }
}

extension Optional where Wrapped == Int64 {
    /// An optional time as JSON: the RFC 3339 text, or null.
    var timeJSON: JSON { map { .string(Timestamp.format($0)) } ?? .null }
}
