import Foundation

/// How a client reaches its server: a request in, a status and a body out.
///
/// Every implementation must answer with the server's status and body for any answer the
/// server gave (an error status is an answer), and throw `Unreachable` only when no answer
/// came: the client then counts itself offline and keeps its queue.
public protocol Transport: Sendable {
    /// A name for this server, for people (and logs).
    var serverName: String { get }
    /// `path` is percent-encoded already, each id in it by `Transport.segment` (the transport
    /// sends it as it is); `query` values are plain text (the transport encodes them).
    func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data)
}

extension Transport {
    /// An id as one path segment of a request: every byte but ASCII letters, digits, `-`, `_`
    /// and `~` percent-encoded, so a `/`, `?`, `#`, `%`, `;`, a quote, a backslash or a letter
    /// beyond ASCII stays part of the id — and a `.` too, so an id `..` is never taken for a
    /// step up the path. The router decodes each segment on its own; the one function every
    /// client call escapes an id with.
    public static func segment(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: unreserved) ?? id
    }
}

private let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~")

/// The server could not be reached.
public struct Unreachable: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(description: String) { self.description = description }
}
