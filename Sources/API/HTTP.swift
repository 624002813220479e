import Foundation
import Notifications
import Storage

/// An HTTP request as the router sees it: the same value from libmicrohttpd or in-process.
public struct HTTPRequest: Sendable {
    public var method: String
    public var path: String
    public var query: [String: String]
    public var headers: [String: String]
    public var body: Data
    /// The user an in-process caller acts for, trusted without a token. The HTTP server never
    /// sets it, so nothing from the network can.
    public var trustedUser: String?
    /// Set only in this process, for the embedded inbox, whose reader owns the store file: it
    /// may read what an admin token may (the trust budget).
    public var trustedAdmin = false
    /// When a long-poll started for this request: asked again after a wait, it keeps its
    /// original deadline.
    public var deadline: Date?

    /// `headers` keys are lower-cased here, as HTTP header names are case-insensitive.
    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:], body: Data = Data()) {
        self.method = method.uppercased()
        self.path = path
        self.query = query
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        self.body = body
    }

    /// The bearer token of the `Authorization` header, if any.
    public var bearerToken: String? {
        headers["authorization"].flatMap(HTTPRequest.bearer(in:))
    }

    /// The token of an `Authorization` value `Bearer TOKEN` (the scheme in any case, spaces and
    /// tabs around the token), or nil. Read on every request, so by hand: Foundation's
    /// `trimmingCharacters` went through NSString and took a sixth of a server's CPU.
    public static func bearer(in value: String) -> String? {
        let scheme = Array("bearer".utf8)
        let head = Array(value.utf8.prefix(scheme.count + 1))
        // Letters compared without case (ASCII: bit 0x20), then one space.
        guard head.count == scheme.count + 1, head.last == 0x20,
              zip(head, scheme).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        var token = Substring(value).utf8.dropFirst(scheme.count + 1)
        while let first = token.first, first == 0x20 || first == 0x09 { token = token.dropFirst() }
        while let last = token.last, last == 0x20 || last == 0x09 { token = token.dropLast() }
        return token.isEmpty ? nil : String(Substring(token))
    }
}

/// A response: a status and a JSON body.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var body: Data
    public var contentType = "application/json"
    /// Headers beyond the content type (`Retry-After` on a retryable failure).
    public var headers: [(name: String, value: String)] = []
    /// Set when the answer is "nothing yet": the caller waits (without holding a thread, over
    /// HTTP) for a change or the deadline, then asks again.
    public var longPoll: LongPoll?

    public init(status: Int, json: JSON) {
        self.status = status
        self.body = Data(json.serialized.utf8)
    }

    /// JSON text already written.
    public init(status: Int, jsonBytes: [UInt8]) {
        self.status = status
        self.body = Data(jsonBytes)
    }

    public static func ok(_ json: JSON) -> HTTPResponse { HTTPResponse(status: 200, json: json) }
}

/// An API failure: a status, a machine code and a message, answered as
/// `{"error": {"code": …, "message": …}}`. Bad input never becomes a 500.
public struct APIError: Error, Sendable {
    public var status: Int
    public var code: String
    public var message: String
    /// Where to go instead (a 410's fallback: the actor's profile, or the feed).
    public var fallback: JSON?
    /// Seconds after which the same request may succeed (a 429 or 503): sent as the
    /// `Retry-After` header and as `retryAfter` in the body.
    public var retryAfter: Int?
    /// The methods the resource answers (a 405's `Allow` header).
    public var allow: [String]?

    public init(_ status: Int, _ code: String, _ message: String, fallback: JSON? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.fallback = fallback
    }

    func with(message: String) -> APIError {
        var copy = self
        copy.message = message
        return copy
    }

    /// Deleted, or no longer visible to this user: the board's words, and where to fall back.
    public static func gone(fallbackTo user: String?) -> APIError {
        APIError(410, "gone", "This content is no longer available",
                 fallback: user.map { .object([("screen", "profile"), ("user", .string($0))]) } ?? .object([("screen", "feed")]))
    }

    public static func malformed(_ message: String) -> APIError { APIError(400, "malformed", message) }
    public static let unauthorized = APIError(401, "unauthorized", "a valid bearer token is required")
    public static let forbidden = APIError(403, "forbidden", "this token may not do that")
    public static func accountInactive(_ state: Event.AccountState) -> APIError {
        APIError(403, "accountInactive", "this account is \(state.rawValue): its tokens no longer work")
    }
    public static func notFound(_ what: String = "no such resource") -> APIError { APIError(404, "notFound", what) }
    public static func methodNotAllowed(_ allowed: [String]) -> APIError {
        var error = APIError(405, "methodNotAllowed", "use \(allowed.joined(separator: " or "))")
        error.allow = allowed.contains("GET") ? allowed + ["HEAD"] : allowed
        return error
    }
    public static let tooLarge = APIError(413, "tooLarge", "the request body is over 1 MiB")
    public static func invalid(_ message: String) -> APIError { APIError(400, "invalid", message) }

    public var response: HTTPResponse {
        var response = HTTPResponse(status: status, json: .object([("error", .members([
            ("code", .string(code)), ("message", .string(message)), ("fallback", fallback),
            ("retryAfter", retryAfter.map { .int($0) })]))]))
        if let retryAfter { response.headers.append((name: "Retry-After", value: String(retryAfter))) }
        if let allow { response.headers.append((name: "Allow", value: allow.joined(separator: ", "))) }
        return response
    }

    /// The store failed in a way that clears by itself: 503 with when to try again. Nothing
    /// of the request was stored (its transaction rolled back whole).
    public static func unavailable(_ fault: Connection.Fault) -> APIError {
        var error: APIError
        switch fault {
        case .full:
            error = APIError(503, "storeFull", "the server's disk is full: nothing of this request was stored; try again later")
            error.retryAfter = 30
        case .unavailable:
            error = APIError(503, "storeUnavailable", "the server's database cannot be reached just now; try again shortly")
            error.retryAfter = 2
        case .busy:
            error = APIError(503, "storeBusy", "the store is busy with another write; try again")
            error.retryAfter = 1
        }
        return error
    }
}
