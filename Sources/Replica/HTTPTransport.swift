import Foundation
import HTTPClient
import Synchronization
import Wire

/// The API over HTTP through libcurl (the same client the push worker uses): a bearer token on
/// every request, warm keep-alive connections reused across requests and threads.
///
/// A refused, reset or half-answered connection is `Unreachable`, never a crash: the sync
/// engine counts itself offline and tries again later. (URLSession on Linux ended in SIGILL
/// in 10–60% of runs against a server that refused connections: invalidating its session from
/// the session's own delegate queue.)
public final class HTTPTransport: Transport, Sendable {
    public let baseURL: URL
    private let token: String
    private let client: HTTPClient
    /// A request that is not a long-poll: a page of 5,000 rows is well under a second, so a
    /// server silent this long is counted unreachable (the sync tries again later).
    static let requestTimeout: TimeInterval = 20
    /// A long-poll: what it asked the server to wait, and this much more.
    static let longPollMargin: TimeInterval = 15
    /// A server that does not accept a connection in this long is counted unreachable.
    static let connectTimeout: TimeInterval = 5

    /// The last page read without waiting, with its `ETag`: asked for again (a sync with
    /// nothing new asks for the same page), it is sent with `If-None-Match`, and a 304 answers
    /// it from here without the server reading or sending the page again.
    private let lastPage = Mutex<(url: String, tag: String, body: Data)?>(nil)
    private let unchanged = Atomic<Int>(0)

    /// Pages the server answered 304 (the page held here still stands) since this transport began.
    public var notModified: Int { unchanged.load(ordering: .relaxed) }

    public init(baseURL: URL, token: String) {
        self.baseURL = baseURL
        self.token = token
        // A page of 5,000 rows with its entities is a few MB; 256 MiB bounds a lying server.
        client = HTTPClient(version: .http1, largestBody: 256 << 20)
    }

    public var serverName: String { baseURL.absoluteString }

    public func perform(method: String, path: String, query: [String: String], body: Data?) throws -> (status: Int, body: Data) {
        let timeout = query["wait"].flatMap(Double.init).map { $0 + HTTPTransport.longPollMargin } ?? HTTPTransport.requestTimeout
        return try perform(method: method, path: path, query: query, body: body, timeout: timeout)
    }

    /// As `perform`, giving up after `timeout` seconds.
    public func perform(method: String, path: String, query: [String: String], body: Data?,
                        timeout: TimeInterval) throws -> (status: Int, body: Data) {
        // The path is encoded already (`Transport.segment`): joined to the base as it is, never
        // encoded a second time (`appendingPathComponent` turned an id's "%C3" into "%25C3").
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        guard var components = URLComponents(string: base + path) else {
            throw Unreachable(description: "\(serverName) is not a URL this client can use")
        }
        if !query.isEmpty { components.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) } }
        guard let url = components.url?.absoluteString else { throw Unreachable(description: "cannot make a URL of \(path)") }
        var headers = [("Authorization", "Bearer \(token)")]
        if body != nil { headers.append(("Content-Type", "application/json")) }
        let page = method == "GET" && path == "/v1/activity" && query["wait"] == nil
        let held = page ? lastPage.withLock { $0 }.flatMap { $0.url == url ? $0 : nil } : nil
        if let held { headers.append(("If-None-Match", held.tag)) }
        do {
            let answer = try client.perform(method: method, url: url, headers: headers, body: body,
                                            timeout: timeout, connectTimeout: HTTPTransport.connectTimeout)
            if answer.status == 304, let held {
                unchanged.add(1, ordering: .relaxed)
                return (200, held.body)
            }
            if page, answer.status == 200, let tag = answer.headers.first(where: { $0.name.lowercased() == "etag" })?.value {
                lastPage.withLock { $0 = (url, tag, answer.body) }
            }
            return (answer.status, answer.body)
        } catch let failure as HTTPFailure {
            switch failure.reason {
            case .timeout: throw Unreachable(description: "no answer from \(serverName) within \(Int(timeout)) s")
            case .connect: throw Unreachable(description: "cannot connect to \(serverName)")
            case .tooLarge, .other: throw Unreachable(description: "no answer from \(serverName): \(failure.description)")
            }
        }
    }
}
