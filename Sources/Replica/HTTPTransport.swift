import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Wire

/// The API over HTTP with Foundation's URLSession: a bearer token on every request.
public final class HTTPTransport: Transport, @unchecked Sendable {
    public let baseURL: URL
    private let token: String
    private let session: URLSession
    /// Above the longest long-poll the API holds (60 s).
    static let timeout: TimeInterval = 75

    public init(baseURL: URL, token: String) {
        self.baseURL = baseURL
        self.token = token
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = HTTPTransport.timeout
        // Every page is fetched once: a response cache would only keep each in memory.
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    deinit { session.invalidateAndCancel() }

    public var serverName: String { baseURL.absoluteString }

    public func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data) {
        var components = URLComponents(url: baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)!
        if !query.isEmpty { components.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) } }
        var request = URLRequest(url: components.url!)
        request.httpMethod = method
        request.httpBody = body
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        let done = DispatchSemaphore(value: 0)
        let answer = Answer()
        session.dataTask(with: request) { data, response, error in
            if let response = response as? HTTPURLResponse {
                answer.result = .success((response.statusCode, data ?? Data()))
            } else {
                answer.result = .failure(Unreachable(description: error?.localizedDescription ?? "no answer from \(self.serverName)"))
            }
            done.signal()
        }.resume()
        done.wait()
        return try answer.result!.get()
    }
}

/// The completion handler's result, handed to the waiting caller (the semaphore orders them).
private final class Answer: @unchecked Sendable {
    var result: Result<(Int, Data), Error>?
}
