import CCrypto
import Foundation
import Notifications
import Synchronization

/// The checks and answers of APNs and FCM as their references define them, for the push
/// bench's own HTTP/2 stand-in (`HTTP2StandInServer`). The same rules as the tests' Granian
/// stand-in (Tests/Standins/standins.py), which also makes the keys both load: Apple's .p8, a
/// Google service account whose `token_uri` points here, and the certificate. A differential
/// test (PushDeliveryTests) runs the worker against both and compares what each answered.
///
/// Answers, by device token prefix: `gone-` Unregistered; `bad-` BadDeviceToken; `busy-` 429
/// the first time each token is seen, 200 after; `down-` 500 the first time, 200 after;
/// anything else 200. A request that breaks a rule is answered 400 (403 for a bad provider
/// token, 401 for a wrong access token, 413 for a payload over 4,096 bytes) and logged with
/// its "violation".
public final class ProviderStandIn: Sendable {
    public static let team = "TEAM123456", keyId = "KEY1234567", project = "stepo-test", topic = "app.stepo.ios"
    public static let accessToken = "stand-in-access-token"

    /// One request as the server read it: names in lower case, as HTTP/2 carries them.
    public struct Request {
        public var method = ""
        public var path = ""
        public var headers: [(String, String)] = []
        public var body: [UInt8] = []

        public init() {}

        func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
    }

    /// What to answer, and the request's line in the log.
    public struct Answer {
        public var status: Int
        public var headers: [(String, String)] = []
        public var body: [UInt8]
        public var record: [(String, JSON)]
    }

    private struct Keys: @unchecked Sendable {
        let apns: OpaquePointer
        let fcm: OpaquePointer
    }

    private struct Shared {
        /// Tokens answered once already (busy-, down-).
        var seen: Set<String> = []
        /// Provider tokens that verified, with their claims: each is checked once, as APNs does.
        var verified: [String: JSON] = [:]
        var answered = 0
    }

    private let keys: Keys
    private let shared = Mutex(Shared())

    /// Loads the keys `standins.py --keys-only` wrote into `folder`.
    public init(folder: String) throws {
        func key(_ pem: String, _ file: String) throws -> OpaquePointer {
            let bytes = Array(pem.utf8)
            guard let key = stepo_read_private_key(bytes.map { CChar(bitPattern: $0) }, Int32(bytes.count)) else {
                throw StandInError(description: "cannot read the private key in \(file)")
            }
            return key
        }
        let p8 = folder + "/apns.p8", account = folder + "/service.json"
        guard let apnsPEM = FileManager.default.contents(atPath: p8),
              let accountData = FileManager.default.contents(atPath: account),
              let fcmPEM = try JSON.parse(accountData)["private_key"]?.string else {
            throw StandInError(description: "no keys in \(folder): make them with standins.py --keys-only")
        }
        keys = Keys(apns: try key(String(decoding: apnsPEM, as: UTF8.self), p8), fcm: try key(fcmPEM, account))
    }

    deinit {
        EVP_PKEY_free(keys.apns)
        EVP_PKEY_free(keys.fcm)
    }

    struct Violation: Error { let reason: String }

    /// Checks `request` and says what to answer; `connection` numbers the connection it came on.
    public func answer(_ request: Request, connection: Int) -> Answer {
        let base: [(String, JSON)] = [("method", .string(request.method)), ("path", .string(request.path)),
                                      ("headers", .object(request.headers.map { ($0.0, .string($0.1)) })),
                                      ("bytes", .int(request.body.count)), ("at", .double(Date().timeIntervalSince1970)),
                                      ("connection", .int(connection))]
        var answer: Answer
        do {
            if request.path.hasPrefix("/3/device/") {
                answer = try apns(String(request.path.dropFirst("/3/device/".count)), request)
            } else if request.path == "/token" {
                answer = try grant(request)
            } else if request.path == "/v1/projects/\(Self.project)/messages:send" {
                answer = try fcm(request)
            } else {
                answer = Answer(status: 404, body: Array("{}".utf8), record: [])
            }
        } catch let violation as Violation {
            answer = Answer(status: 400, body: JSON.object([("reason", .string(violation.reason))]).bytes,
                            record: [("violation", .string(violation.reason))])
        } catch {
            answer = Answer(status: 400, body: Array(#"{"reason":"not JSON"}"#.utf8), record: [("violation", .string("\(error)"))])
        }
        answer.record = base + answer.record + [("status", .int(answer.status))]
        return answer
    }

    private func firstTime(_ token: String) -> Bool {
        shared.withLock { $0.seen.insert(token).inserted }
    }

    private func apns(_ token: String, _ request: Request) throws -> Answer {
        for name in ["apns-topic", "apns-push-type", "apns-priority", "authorization"] where request.header(name) == nil {
            throw Violation(reason: "missing header \(name)")
        }
        if request.header("apns-topic") != Self.topic { throw Violation(reason: "apns-topic") }
        if !["5", "10"].contains(request.header("apns-priority")) { throw Violation(reason: "apns-priority must be 5 or 10") }
        if (request.header("apns-collapse-id")?.utf8.count ?? 0) > 64 { throw Violation(reason: "apns-collapse-id over 64 bytes") }
        if request.body.count > 4096 {
            return Answer(status: 413, body: Array(#"{"reason":"PayloadTooLarge"}"#.utf8), record: [("violation", .string("PayloadTooLarge"))])
        }
        let payload = try request.body.withUnsafeBufferPointer { try JSON.parse(bytes: $0) }
        if payload["aps"] == nil { throw Violation(reason: "no aps dictionary") }
        let bearer = request.header("authorization") ?? ""
        let claims: JSON
        do {
            // Whatever is wrong with the provider token — no `bearer `, not a JWT, not JSON, a
            // bad signature or claims — APNs answers 403, which the worker meets with a new one.
            guard bearer.hasPrefix("bearer ") else { throw Violation(reason: "no bearer token") }
            claims = try verified(bearer) { try Self.jwt(String(bearer.dropFirst("bearer ".count)), key: keys.apns, algorithm: "ES256") }
            guard claims["kid"]?.string == Self.keyId, claims["iss"]?.string == Self.team,
                  let iat = claims["iat"]?.number, abs(Date().timeIntervalSince1970 - iat) <= 3600 else {
                throw Violation(reason: "kid, iss or iat")
            }
        } catch {
            let reason = (error as? Violation)?.reason ?? "not a JWT"
            return Answer(status: 403, body: Array(#"{"reason":"InvalidProviderToken"}"#.utf8),
                          record: [("violation", .string("InvalidProviderToken: \(reason)"))])
        }
        let record: [(String, JSON)] = [("iat", claims["iat"] ?? .null), ("token", .string(token)), ("payload", payload)]
        func reason(_ status: Int, _ reason: String, _ headers: [(String, String)] = []) -> Answer {
            Answer(status: status, headers: headers, body: JSON.object([("reason", .string(reason))]).bytes, record: record)
        }
        if token.hasPrefix("gone-") {
            return Answer(status: 410, body: JSON.object([("reason", .string("Unregistered")),
                                                          ("timestamp", .int(Int(Date().timeIntervalSince1970 * 1000)))]).bytes, record: record)
        }
        if token.hasPrefix("bad-") { return reason(400, "BadDeviceToken") }
        if token.hasPrefix("busy-"), firstTime(token) { return reason(429, "TooManyRequests", [("retry-after", "1")]) }
        if token.hasPrefix("down-"), firstTime(token) { return reason(500, "InternalServerError") }
        let number = shared.withLock { $0.answered += 1; return $0.answered }
        return Answer(status: 200, headers: [("apns-id", "apns-\(number)-\(DispatchTime.now().uptimeNanoseconds)")], body: [], record: record)
    }

    private func grant(_ request: Request) throws -> Answer {
        var form: [String: String] = [:]
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else { throw Violation(reason: "grant_type") }
        let claims = try Self.jwt(form["assertion"] ?? "", key: keys.fcm, algorithm: "RS256")
        guard claims["scope"]?.string == "https://www.googleapis.com/auth/firebase.messaging",
              claims["aud"]?.string?.hasSuffix("/token") == true else { throw Violation(reason: "scope or aud") }
        let body = JSON.object([("access_token", .string(Self.accessToken)), ("expires_in", .int(3599)), ("token_type", .string("Bearer"))])
        return Answer(status: 200, headers: [("content-type", "application/json")], body: body.bytes, record: [("grant", claims)])
    }

    private func fcm(_ request: Request) throws -> Answer {
        guard request.header("authorization") == "Bearer \(Self.accessToken)" else {
            return Answer(status: 401, body: Array(#"{"error":{"status":"UNAUTHENTICATED"}}"#.utf8), record: [("violation", .string("UNAUTHENTICATED"))])
        }
        let message = try request.body.withUnsafeBufferPointer { try JSON.parse(bytes: $0) }["message"]
        guard let message, let token = message["token"]?.string else { throw Violation(reason: "no message.token") }
        let record: [(String, JSON)] = [("token", .string(token)), ("payload", message)]
        func error(_ status: Int, _ name: String, _ code: String) -> Answer {
            let details = JSON.object([("@type", .string("type.googleapis.com/google.firebase.fcm.v1.FcmError")), ("errorCode", .string(code))])
            let body = JSON.object([("error", .object([("code", .int(status)), ("status", .string(name)), ("details", .array([details]))]))])
            return Answer(status: status, body: body.bytes, record: record)
        }
        if token.hasPrefix("gone-") { return error(404, "NOT_FOUND", "UNREGISTERED") }
        if token.hasPrefix("bad-") { return error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT") }
        if token.hasPrefix("busy-"), firstTime(token) { return error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED") }
        if token.hasPrefix("down-"), firstTime(token) { return error(500, "INTERNAL", "INTERNAL") }
        let name = JSON.object([("name", .string("projects/\(Self.project)/messages/\(DispatchTime.now().uptimeNanoseconds)"))])
        return Answer(status: 200, body: name.bytes, record: record)
    }

    /// A provider token's claims, checked the first time it is seen and remembered.
    private func verified(_ bearer: String, check: () throws -> JSON) throws -> JSON {
        try shared.withLock { shared in
            if let claims = shared.verified[bearer] { return claims }
            let claims = try check()
            shared.verified[bearer] = claims
            return claims
        }
    }

    /// A JWS in compact form checked with `key`: its header's members and its claims, in one
    /// object.
    static func jwt(_ token: String, key: OpaquePointer, algorithm: String) throws -> JSON {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = base64URL(parts[0]), let claimBytes = base64URL(parts[1]),
              let signature = base64URL(parts[2]) else { throw Violation(reason: "not a JWT") }
        let header = try JSON.parse(Data(headerBytes)), claims = try JSON.parse(Data(claimBytes))
        guard header["alg"]?.string == algorithm else { throw Violation(reason: "alg is \(header["alg"]?.string ?? "missing"), not \(algorithm)") }
        let signed = Array("\(parts[0]).\(parts[1])".utf8)
        let holds: Bool
        if algorithm == "ES256" {
            guard signature.count == 64 else { throw Violation(reason: "an ES256 signature is 64 bytes r || s") }
            holds = stepo_verify_es256(key, signed, signed.count, signature) == 1
        } else {
            holds = stepo_digest_verify(key, signed, signed.count, signature, signature.count) == 1
        }
        guard holds else { throw Violation(reason: "the signature does not verify") }
        guard case .object(let headerMembers) = header, case .object(let claimMembers) = claims else { throw Violation(reason: "not a JWT") }
        return .object(headerMembers + claimMembers)
    }

    static func base64URL(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map(Array.init)
    }
}

public struct StandInError: Error, CustomStringConvertible {
    public let description: String
}

extension JSON {
    var bytes: [UInt8] {
        var out: [UInt8] = []
        write(to: &out)
        return out
    }
}
