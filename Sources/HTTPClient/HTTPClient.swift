import CCurl
import Foundation
import Synchronization

/// An HTTP answer: its status, its headers (names lowercased, in order) and its body.
public struct HTTPAnswer: Sendable {
    public let status: Int
    public let headers: [(name: String, value: String)]
    public let body: Data

    /// The first header called `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name == wanted }?.value
    }
}

/// No answer came: the connection failed, timed out, or the answer was not HTTP.
public struct HTTPFailure: Error, CustomStringConvertible, Sendable {
    public enum Reason: Sendable { case connect, timeout, tooLarge, other }
    public let reason: Reason
    public let description: String
}

/// HTTP requests through libcurl: HTTP/1.1 with keep-alive, or HTTP/2 (over TLS, or in clear
/// text with prior knowledge, as a local stand-in speaks it). Connections are kept per handle
/// and handles are reused, so a client of one server talks over a few warm connections.
/// Safe from several threads: each request takes a handle of its own.
public final class HTTPClient: @unchecked Sendable {  // owns libcurl handles: each lent to one request at a time
    public enum Version: Sendable {
        case http1
        /// HTTP/2 negotiated over TLS (ALPN), as APNs and FCM speak it.
        case http2
        /// HTTP/2 in clear text without an upgrade: for a local stand-in server.
        case http2PriorKnowledge
    }

    public let version: Version
    /// The largest body accepted; a larger answer fails with `.tooLarge`.
    public let largestBody: Int
    /// Certificates to trust instead of the system's (a stand-in's self-signed one).
    public let caFile: String?
    private let idle = Mutex<[EasyHandle]>([])

    static let initialized: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    public init(version: Version = .http1, largestBody: Int = 256 << 20, caFile: String? = nil) {
        _ = HTTPClient.initialized
        self.version = version
        self.largestBody = largestBody
        self.caFile = caFile
    }

    deinit {
        for handle in idle.withLock({ $0 }) { curl_easy_cleanup(handle.raw) }
    }

    /// Sends one request and waits for its whole answer, at most `timeout` seconds.
    public func perform(method: String, url: String, headers: [(String, String)] = [], body: Data? = nil,
                        timeout: TimeInterval, connectTimeout: TimeInterval = 10) throws -> HTTPAnswer {
        let handle = take()
        var reusable = true
        defer { give(handle, reusable: reusable) }
        let received = Received(limit: largestBody)
        let list = configure(handle, HTTPRequest(method: method, url: url, headers: headers, body: body), received: received,
                             version: version, caFile: caFile, timeout: timeout, connectTimeout: connectTimeout)
        defer { curl_slist_free_all(list) }
        let code = curl_easy_perform(handle)
        guard code == CURLE_OK else {
            reusable = false
            throw HTTPFailure(code, url: url, timeout: timeout, received: received)
        }
        var status = 0
        stepo_curl_info_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return HTTPAnswer(status: status, headers: received.headers, body: received.data)
    }

    private func take() -> UnsafeMutableRawPointer {
        idle.withLock { $0.popLast() }?.raw ?? curl_easy_init()
    }

    private func give(_ handle: UnsafeMutableRawPointer, reusable: Bool) {
        guard reusable else { curl_easy_cleanup(handle); return }
        let idled = EasyHandle(raw: handle)
        idle.withLock { $0.append(idled) }
    }
}

/// A libcurl easy handle kept for reuse: one request at a time holds it.
private struct EasyHandle: @unchecked Sendable { let raw: UnsafeMutableRawPointer }

