import CCurl
import Foundation

/// Many requests at once over one HTTP/2 connection per host, through libcurl's multi
/// interface: each request is a stream of that connection (up to `streams` at a time; more
/// wait for a free one), as APNs and FCM expect a sender to use them. The connection stays
/// open between calls.
///
/// Not thread-safe: one owner starts requests and polls for their answers.
public final class HTTPMultiplexer {
    public let largestBody: Int
    public let timeout: TimeInterval
    private let multi: UnsafeMutableRawPointer
    private var idle: [UnsafeMutableRawPointer] = []
    private var running: [UnsafeMutableRawPointer: Transfer] = [:]
    /// What each handle was last set up for, when that was a POST with a body: its HTTP
    /// version and CA file. Another such POST on it sets only what differs (`reconfigure`).
    private var setUp: [UnsafeMutableRawPointer: String] = [:]
    /// Whether requests were started since libcurl last ran.
    private var startedSincePerform = false
    /// The sockets libcurl has open for these transfers: corked while libcurl writes a burst.
    fileprivate var sockets: Set<Int32> = []

    /// A request on its way.
    private struct Transfer {
        let tag: Int
        let url: String
        let received: Received
        let headers: UnsafeMutablePointer<curl_slist>?
    }

    /// What came of one request started with `tag`.
    public struct Completion {
        public let tag: Int
        public let result: Result<HTTPAnswer, HTTPFailure>
    }

    /// Requests started and not yet answered.
    public var inFlight: Int { running.count }

    /// `streams`: how many requests share the connection at once (a server may allow fewer;
    /// libcurl keeps to the smaller). `timeout`: the longest wait for one answer, queueing
    /// included.
    public init(largestBody: Int = 64 << 10, streams: Int = 200, timeout: TimeInterval = 15) {
        _ = HTTPClient.initialized
        self.largestBody = largestBody
        self.timeout = timeout
        multi = curl_multi_init()
        stepo_curl_multi_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        stepo_curl_multi_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1)
        stepo_curl_multi_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, streams)
    }

    deinit {
        for (handle, transfer) in running {
            curl_multi_remove_handle(multi, handle)
            curl_slist_free_all(transfer.headers)
            curl_easy_cleanup(handle)
        }
        for handle in idle { curl_easy_cleanup(handle) }
        curl_multi_cleanup(multi)
    }

    /// Starts `request` (HTTP/2 over TLS, or prior knowledge for a clear-text stand-in;
    /// trusting `caFile` instead of the system's certificates); its answer comes back from
    /// `poll` under `tag`.
    public func start(_ request: HTTPRequest, tag: Int, version: HTTPClient.Version = .http2, caFile: String? = nil) {
        let handle = idle.popLast() ?? curl_easy_init()!
        let received = Received(limit: largestBody)
        let shape = "\(version.curlValue)|\(caFile ?? "")"
        if request.method == "POST", let body = request.body, setUp[handle] == shape {
            let headers = reconfigure(handle, request, body: body, received: received)
            running[handle] = Transfer(tag: tag, url: request.url, received: received, headers: headers)
            curl_multi_add_handle(multi, handle)
            startedSincePerform = true
            return
        }
        let headers = configure(handle, request, received: received, version: version, caFile: caFile,
                                timeout: timeout, connectTimeout: min(10, timeout))
        setUp[handle] = request.method == "POST" && request.body != nil ? shape : nil
        // Wait for the connection being made rather than open a second one beside it.
        stepo_curl_long(handle, CURLOPT_PIPEWAIT, 1)
        // libcurl gives each transfer a 16 KB receive and a 64 KB send buffer, held for the
        // handle's life; a push and its answer are a few KB, and hundreds are in flight.
        stepo_curl_long(handle, CURLOPT_BUFFERSIZE, 4 << 10)
        stepo_curl_long(handle, CURLOPT_UPLOAD_BUFFERSIZE, 16 << 10)
        stepo_curl_sockopt(handle, { context, socket, _ in
            Unmanaged<HTTPMultiplexer>.fromOpaque(context!).takeUnretainedValue().sockets.insert(socket)
            return Int32(CURL_SOCKOPT_OK)
        }, { context, socket in
            Unmanaged<HTTPMultiplexer>.fromOpaque(context!).takeUnretainedValue().sockets.remove(socket)
            return close(socket)
        }, Unmanaged.passUnretained(self).toOpaque())
        running[handle] = Transfer(tag: tag, url: request.url, received: received, headers: headers)
        curl_multi_add_handle(multi, handle)
        startedSincePerform = true
    }

    /// Moves the transfers on, waiting at most `wait` seconds for something to happen, and
    /// returns the requests answered (or failed) since the last call.
    public func poll(wait: TimeInterval) -> [Completion] {
        // libcurl walks every transfer on each perform: only when requests were started since
        // (they must be sent), not also before every wait.
        var done: [Completion] = []
        if startedSincePerform {
            perform()
            done = drain()
        }
        if done.isEmpty, !running.isEmpty || wait > 0 {
            var events: Int32 = 0
            curl_multi_poll(multi, nil, 0, Int32(max(0, wait * 1000)), &events)
            perform()
            done = drain()
        }
        return done
    }

    /// Lets libcurl read and write what it can. Its sockets are corked meanwhile: libcurl
    /// writes each stream's frames with a send of their own, and a burst of a few hundred
    /// requests would otherwise leave as a few hundred small packets. Uncorking sends the lot
    /// at once, without Nagle's wait for an acknowledgement.
    private func perform() {
        startedSincePerform = false
        var on: Int32 = 1, off: Int32 = 0
        for socket in sockets { setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &on, socklen_t(MemoryLayout<Int32>.size)) }
        var active: Int32 = 0
        curl_multi_perform(multi, &active)
        for socket in sockets { setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &off, socklen_t(MemoryLayout<Int32>.size)) }
    }

    private func drain() -> [Completion] {
        var done: [Completion] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            var finished: UnsafeMutableRawPointer?
            var code = CURLE_OK
            guard stepo_curl_done(message, &finished, &code) == 1, let handle = finished,
                  let transfer = running.removeValue(forKey: handle) else { continue }
            curl_multi_remove_handle(multi, handle)
            curl_slist_free_all(transfer.headers)
            if code == CURLE_OK {
                var status = 0
                stepo_curl_info_long(handle, CURLINFO_RESPONSE_CODE, &status)
                done.append(Completion(tag: transfer.tag, result: .success(HTTPAnswer(
                    status: status, headers: transfer.received.headers, body: transfer.received.data))))
                idle.append(handle)
            } else {
                done.append(Completion(tag: transfer.tag, result: .failure(
                    HTTPFailure(code, url: transfer.url, timeout: timeout, received: transfer.received))))
                setUp[handle] = nil
                curl_easy_cleanup(handle)
            }
        }
        return done
    }
}
