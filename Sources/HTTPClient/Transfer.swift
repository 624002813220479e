import CCurl
import Foundation

/// One HTTP request, as the clients send it.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [(String, String)]
    public var body: Data?

    public init(method: String, url: String, headers: [(String, String)] = [], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

extension HTTPClient.Version {
    var curlValue: Int {
        switch self {
        case .http1: return Int(CURL_HTTP_VERSION_1_1)
        case .http2: return Int(CURL_HTTP_VERSION_2TLS)
        case .http2PriorKnowledge: return Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        }
    }
}

/// Sets an easy handle up for `request`, its answer going to `received`; returns the header
/// list, which must outlive the transfer (the caller frees it).
func configure(_ handle: UnsafeMutableRawPointer, _ request: HTTPRequest, received: Received, version: HTTPClient.Version,
               caFile: String?, timeout: TimeInterval, connectTimeout: TimeInterval) -> UnsafeMutablePointer<curl_slist>? {
    curl_easy_reset(handle)
    let context = Unmanaged.passUnretained(received).toOpaque()
    let list = headerList(request)

    stepo_curl_string(handle, CURLOPT_URL, request.url)
    stepo_curl_long(handle, CURLOPT_NOSIGNAL, 1)
    stepo_curl_long(handle, CURLOPT_TIMEOUT_MS, max(1, Int(timeout * 1000)))
    stepo_curl_long(handle, CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(connectTimeout * 1000)))
    stepo_curl_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
    if let caFile { stepo_curl_string(handle, CURLOPT_CAINFO, caFile) }
    stepo_curl_long(handle, CURLOPT_HTTP_VERSION, version.curlValue)
    stepo_curl_list(handle, CURLOPT_HTTPHEADER, list)
    stepo_curl_callback(handle, CURLOPT_WRITEFUNCTION, { data, size, count, context in
        Unmanaged<Received>.fromOpaque(context!).takeUnretainedValue().body(data!, size * count)
    })
    stepo_curl_pointer(handle, CURLOPT_WRITEDATA, context)
    stepo_curl_callback(handle, CURLOPT_HEADERFUNCTION, { data, size, count, context in
        Unmanaged<Received>.fromOpaque(context!).takeUnretainedValue().header(data!, size * count)
    })
    stepo_curl_pointer(handle, CURLOPT_HEADERDATA, context)
    switch request.method {
    case "GET": stepo_curl_long(handle, CURLOPT_HTTPGET, 1)
    case "HEAD": stepo_curl_long(handle, CURLOPT_NOBODY, 1)
    default:
        if request.method != "POST" { stepo_curl_string(handle, CURLOPT_CUSTOMREQUEST, request.method) }
    }
    if let body = request.body {
        stepo_curl_long(handle, CURLOPT_POST, 1)
        setBody(handle, body)
    } else if request.method != "GET" && request.method != "HEAD" {
        stepo_curl_long(handle, CURLOPT_POSTFIELDSIZE, 0)
        stepo_curl_string(handle, CURLOPT_POSTFIELDS, "")
    }
    return list
}

/// The request's headers as libcurl takes them, without the wait of `Expect: 100-continue`.
private func headerList(_ request: HTTPRequest) -> UnsafeMutablePointer<curl_slist>? {
    var list: UnsafeMutablePointer<curl_slist>?
    for (name, value) in request.headers { list = curl_slist_append(list, "\(name): \(value)") }
    return curl_slist_append(list, "Expect:")
}

/// A POST's body, copied by libcurl (its size first, as libcurl asks).
private func setBody(_ handle: UnsafeMutableRawPointer, _ body: Data) {
    stepo_curl_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
    body.withUnsafeBytes { raw in
        _ = stepo_curl_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
    }
}

extension HTTPFailure {
    /// What a failed transfer's libcurl code means.
    init(_ code: CURLcode, url: String, timeout: TimeInterval, received: Received) {
        let what = String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            self.init(reason: .connect, description: "cannot connect to \(url): \(what)")
        case CURLE_OPERATION_TIMEDOUT:
            self.init(reason: .timeout, description: "no answer from \(url) within \(Int(timeout)) s")
        case CURLE_WRITE_ERROR where received.overflowed:
            self.init(reason: .tooLarge, description: "the answer from \(url) is larger than \(received.limit) bytes")
        default:
            self.init(reason: .other, description: "\(url): \(what)")
        }
    }
}

/// What one request received, filled by libcurl's callbacks.
final class Received {
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

    /// One header line, read as bytes: its name lowercased, its value without the blanks and
    /// line end around it. (Through Foundation's trimming this was a fifteenth of a push
    /// worker's CPU.)
    func header(_ bytes: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        bytes.withMemoryRebound(to: UInt8.self, capacity: count) { start in
            let line = UnsafeBufferPointer(start: start, count: count)
            if count >= 5, line[0] == UInt8(ascii: "H"), line[1] == UInt8(ascii: "T"), line[2] == UInt8(ascii: "T"),
               line[3] == UInt8(ascii: "P"), line[4] == UInt8(ascii: "/") {
                headers = []  // a new answer (after a 100 Continue or a redirect)
                return
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
            func blank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
            var first = colon + 1, end = count
            while first < end, blank(line[first]) { first += 1 }
            while end > first, blank(line[end - 1]) { end -= 1 }
            let name = String(decoding: line[..<colon].lazy.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
            headers.append((name, String(decoding: UnsafeBufferPointer(rebasing: line[first..<end]), as: UTF8.self)))
        }
        return count
    }
}
