import Foundation

/// How a client reaches its server: a request in, a status and a body out.
///
/// Every implementation must answer with the server's status and body for any answer the
/// server gave (an error status is an answer), and throw `Unreachable` only when no answer
/// came: the client then counts itself offline and keeps its queue.
public protocol Transport: Sendable {
    /// A name for this server, for people (and logs).
    var serverName: String { get }
    func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data)
}

/// The server could not be reached.
public struct Unreachable: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(description: String) { self.description = description }
}
