import CCurl
import Foundation

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
public final class HTTPClient: @unchecked Sendable {
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
    private let lock = NSLock()
    private var idle: [UnsafeMutableRawPointer] = []

    private static let initialized: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    public init(version: Version = .http1, largestBody: Int = 256 << 20, caFile: String? = nil) {
        _ = HTTPClient.initialized
        self.version = version
        self.largestBody = largestBody
        self.caFile = caFile
    }

    deinit {
        for handle in idle { curl_easy_cleanup(handle) }
    }

    /// Sends one request and waits for its whole answer, at most `timeout` seconds.
    public func perform(method: String, url: String, headers: [(String, String)] = [], body: Data? = nil,
                        timeout: TimeInterval, connectTimeout: TimeInterval = 10) throws -> HTTPAnswer {
        let handle = take()
        var reusable = true
        defer { give(handle, reusable: reusable) }
        curl_easy_reset(handle)
        let received = Received(limit: largestBody)
        let context = Unmanaged.passUnretained(received).toOpaque()
        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") }
        // No "Expect: 100-continue" wait before a body.
        list = curl_slist_append(list, "Expect:")

        stepo_curl_string(handle, CURLOPT_URL, url)
        stepo_curl_long(handle, CURLOPT_NOSIGNAL, 1)
        stepo_curl_long(handle, CURLOPT_TIMEOUT_MS, max(1, Int(timeout * 1000)))
        stepo_curl_long(handle, CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(connectTimeout * 1000)))
        stepo_curl_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        if let caFile { stepo_curl_string(handle, CURLOPT_CAINFO, caFile) }
        switch version {
        case .http1: stepo_curl_long(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1)
        case .http2: stepo_curl_long(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        case .http2PriorKnowledge: stepo_curl_long(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        }
        stepo_curl_list(handle, CURLOPT_HTTPHEADER, list)
        stepo_curl_callback(handle, CURLOPT_WRITEFUNCTION, { data, size, count, context in
            Unmanaged<Received>.fromOpaque(context!).takeUnretainedValue().body(data!, size * count)
        })
        stepo_curl_pointer(handle, CURLOPT_WRITEDATA, context)
        stepo_curl_callback(handle, CURLOPT_HEADERFUNCTION, { data, size, count, context in
            Unmanaged<Received>.fromOpaque(context!).takeUnretainedValue().header(data!, size * count)
        })
        stepo_curl_pointer(handle, CURLOPT_HEADERDATA, context)
        switch method {
        case "GET": stepo_curl_long(handle, CURLOPT_HTTPGET, 1)
        case "HEAD": stepo_curl_long(handle, CURLOPT_NOBODY, 1)
        default:
            if method != "POST" { stepo_curl_string(handle, CURLOPT_CUSTOMREQUEST, method) }
        }
        if let body {
            stepo_curl_long(handle, CURLOPT_POST, 1)
            stepo_curl_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            body.withUnsafeBytes { raw in
                _ = stepo_curl_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            }
        } else if method != "GET" && method != "HEAD" {
            stepo_curl_long(handle, CURLOPT_POSTFIELDSIZE, 0)
            stepo_curl_string(handle, CURLOPT_POSTFIELDS, "")
        }

        let code = curl_easy_perform(handle)
        guard code == CURLE_OK else {
            reusable = false
            let what = String(cString: curl_easy_strerror(code))
            switch code {
            case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
                throw HTTPFailure(reason: .connect, description: "cannot connect to \(url): \(what)")
            case CURLE_OPERATION_TIMEDOUT:
                throw HTTPFailure(reason: .timeout, description: "no answer from \(url) within \(Int(timeout)) s")
            case CURLE_WRITE_ERROR where received.overflowed:
                throw HTTPFailure(reason: .tooLarge, description: "the answer from \(url) is larger than \(largestBody) bytes")
            default:
                throw HTTPFailure(reason: .other, description: "\(url): \(what)")
            }
        }
        var status = 0
        stepo_curl_info_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return HTTPAnswer(status: status, headers: received.headers, body: received.data)
    }

    private func take() -> UnsafeMutableRawPointer {
        lock.lock()
        defer { lock.unlock() }
        if let handle = idle.popLast() { return handle }
        return curl_easy_init()
    }

    private func give(_ handle: UnsafeMutableRawPointer, reusable: Bool) {
        guard reusable else { curl_easy_cleanup(handle); return }
        lock.lock()
        idle.append(handle)
        lock.unlock()
    }
}

/// What one request received, filled by libcurl's callbacks.
private final class Received {
    let limit: Int
    var data = Data()
    var headers: [(name: String, value: String)] = []
    var overflowed = false

    init(limit: Int) { self.limit = limit }

    func body(_ bytes: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        guard data.count + count <= limit else { overflowed = true; return 0 }
        bytes.withMemoryRebound(to: UInt8.self, capacity: count) { data.append($0, count: count) }
        return count
    }

    func header(_ bytes: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        let line = bytes.withMemoryRebound(to: UInt8.self, capacity: count) {
            String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
        }
        if line.hasPrefix("HTTP/") {
            headers = []  // a new answer (after a 100 Continue or a redirect)
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            headers.append((name, value))
        }
        return count
    }
}
