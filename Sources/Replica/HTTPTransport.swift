import Foundation
import HTTPClient
import Wire

/// The API over HTTP/1.1 (libcurl, with keep-alive): a bearer token on every request.
public final class HTTPTransport: Transport, @unchecked Sendable {
    public let baseURL: URL
    private let token: String
    private let client = HTTPClient()
    /// Above the longest long-poll the API holds (60 s).
    static let timeout: TimeInterval = 75

    public init(baseURL: URL, token: String) {
        self.baseURL = baseURL
        self.token = token
    }

    public var serverName: String { baseURL.absoluteString }

    public func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data) {
        var components = URLComponents(url: baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)!
        if !query.isEmpty { components.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) } }
        var headers = [("Authorization", "Bearer \(token)")]
        if body != nil { headers.append(("Content-Type", "application/json")) }
        do {
            let answer = try client.perform(method: method, url: components.url!.absoluteString, headers: headers, body: body,
                                            timeout: HTTPTransport.timeout)
            return (answer.status, answer.body)
        } catch let failure as HTTPFailure {
            throw Unreachable(description: failure.description)
        }
    }
}
