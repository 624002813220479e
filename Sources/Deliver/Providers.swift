import Backend
import Foundation
import Synchronization
import HTTPClient
import Notifications

/// What a provider made of one push.
public enum SendResult: Equatable, Sendable {
    /// Accepted; the provider's id for it (APNs `apns-id`, FCM's message name).
    case sent(providerId: String?)
    /// The token is gone as of `since` (Unix milliseconds): never send to it again.
    case gone(since: Int64, reason: String)
    /// Refused for good (a bad token, a payload too large): retrying cannot help.
    case permanent(String)
    /// Try again, no sooner than `after` seconds (the provider's Retry-After, or a floor).
    case retry(after: Double?, reason: String)
    /// The provider refused this worker's credential, a fresh one too (a wrong key, key id,
    /// team or service account): nothing wrong with the push or the device. The provider rests
    /// and the entry waits for it, no attempt counted, until someone mends the credential or
    /// the push expires.
    case credentialRefused(String)
}

extension SendResult {
    /// No answer came (the connection failed or timed out): worth a later try.
    static func unanswered(_ failure: HTTPFailure) -> SendResult {
        .retry(after: nil, reason: "network: \(failure.description)")
    }
}

/// A push provider: builds each push's HTTP/2 request and says what its answer means. The
/// worker sends the requests, many at a time over one connection per provider.
public protocol PushProvider: AnyObject, Sendable {
    var platform: DeviceRecord.Platform { get }
    /// How to reach it: HTTP/2 over TLS, or prior knowledge for an `http://` stand-in.
    var version: HTTPClient.Version { get }
    /// Certificates to trust instead of the system's (a stand-in's).
    var caFile: String? { get }
    /// Whether it can take pushes now, or only from a moment on (a credential being fetched):
    /// entries for it are then given back, due again then, without an attempt.
    func readiness(now: Int64) -> ProviderReadiness
    /// The request for one push; `renew`: with a fresh credential (the last was refused).
    func request(for content: PushContent, to token: String, now: Int64, renew: Bool) throws -> HTTPRequest
    /// What the provider's answer means: `nil` when it refused our credential and a fresh one
    /// is worth one more try. (No answer at all is the worker's to retry.)
    func outcome(of answer: HTTPAnswer, now: Int64, renewed: Bool) -> (result: SendResult, status: Int?)?
}

/// Whether a provider can take pushes at a moment.
public enum ProviderReadiness: Equatable, Sendable {
    case ready
    /// Not before this moment (Unix ms).
    case waiting(until: Int64)
}

extension PushProvider {
    public func readiness(now: Int64) -> ProviderReadiness { .ready }
}

/// The error a provider's JSON answer names.
private func reason(in body: Data) -> String? {
    guard let json = try? JSON.parse(body) else { return nil }
    if let reason = json["reason"]?.string { return reason }
    if let details = json["error"]?["details"]?.array {
        for detail in details { if let code = detail["errorCode"]?.string { return code } }
    }
    return json["error"]?["status"]?.string
}

// MARK: APNs

/// Apple's push service: HTTP/2, token authentication (an ES256 JWT from a .p8 key).
public final class APNsProvider: PushProvider, Sendable {
    public struct Settings: Sendable {
        /// `https://api.push.apple.com` (or `api.sandbox…`); `http://` is a stand-in, spoken with
        /// HTTP/2 prior knowledge.
        public var url: String
        public var keyPEM: String
        public var keyId: String
        public var teamId: String
        public var topic: String
        /// Certificates to trust instead of the system's (a stand-in's).
        public var caFile: String?

        public init(url: String, keyPEM: String, keyId: String, teamId: String, topic: String = Payload.apnsTopic,
                    caFile: String? = nil) {
            self.caFile = caFile
            self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
            self.keyPEM = keyPEM
            self.keyId = keyId
            self.teamId = teamId
            self.topic = topic
        }
    }

    /// A provider token is reused this long: Apple refuses a new one more often than every 20
    /// minutes (429 TooManyProviderTokenUpdates) and an older one than 60 (ExpiredProviderToken).
    public static let tokenLifetime: Int64 = 50 * 60_000

    public let platform = DeviceRecord.Platform.apns
    public let settings: Settings
    public var version: HTTPClient.Version { settings.url.hasPrefix("http://") ? .http2PriorKnowledge : .http2 }
    public var caFile: String? { settings.caFile }
    /// The token in hand, and how many were made so far (tests check the reuse).
    private let tokens = Mutex<(current: (jwt: String, issuedAt: Int64)?, issued: Int)>((nil, 0))
    public var tokensIssued: Int { tokens.withLock { $0.issued } }

    public init(settings: Settings) throws {
        self.settings = settings
        _ = try bearer(now: Int64(Date().timeIntervalSince1970 * 1000))  // a bad key fails here, not at the first push
    }

    /// The provider token: the one in hand while younger than `tokenLifetime`, else a new one.
    func bearer(now: Int64, renew: Bool = false) throws -> String {
        try tokens.withLock { tokens in
            if !renew, let token = tokens.current, now - token.issuedAt < APNsProvider.tokenLifetime { return token.jwt }
            let jwt = try JWT.es256(header: .object([("alg", "ES256"), ("kid", .string(settings.keyId))]),
                                    claims: .object([("iss", .string(settings.teamId)), ("iat", .int(Int(now / 1000)))]),
                                    pem: settings.keyPEM)
            tokens.current = (jwt, now)
            tokens.issued += 1
            return jwt
        }
    }

    public func request(for content: PushContent, to deviceToken: String, now: Int64, renew: Bool) throws -> HTTPRequest {
        let request = Payload.apns(content, deviceToken: deviceToken)
        guard let path = request["headers"]?[":path"]?.string, let payload = request["payload"] else {
            throw SigningError(description: "no APNs request for this push")
        }
        var headers: [(String, String)] = []
        if case .object(let members)? = request["headers"] {
            for (name, value) in members where !name.hasPrefix(":") {
                headers.append((name, name == "apns-topic" ? settings.topic : (value.string ?? "")))
            }
        }
        headers.append(("content-type", "application/json"))
        headers.append(("authorization", "bearer \(try bearer(now: now, renew: renew))"))
        return HTTPRequest(method: "POST", url: settings.url + path, headers: headers, body: Data(payload.serialized.utf8))
    }

    public func outcome(of answer: HTTPAnswer, now: Int64, renewed: Bool) -> (result: SendResult, status: Int?)? {
        if answer.status == 200 { return (.sent(providerId: answer.header("apns-id")), 200) }  // no body to read
        let why = reason(in: answer.body) ?? "HTTP \(answer.status)"
        switch answer.status {
        case 410:
            let since = (try? JSON.parse(answer.body))?["timestamp"]?.int.map(Int64.init) ?? now
            return (.gone(since: since, reason: why), 410)
        case 403 where why == "ExpiredProviderToken" || why == "InvalidProviderToken":
            return renewed ? (.credentialRefused("APNs refused the provider token: \(why)"), 403) : nil  // a fresh one, once
        case 429: return (.retry(after: answer.header("retry-after").flatMap(Double.init), reason: why), 429)
        case 500...599: return (.retry(after: answer.header("retry-after").flatMap(Double.init), reason: why), answer.status)
        default: return (.permanent(why), answer.status)  // BadDeviceToken, PayloadTooLarge, …
        }
    }
}

// MARK: FCM

/// Firebase Cloud Messaging, HTTP v1: `messages:send` with an OAuth2 access token obtained by
/// a service account's RS256 JWT grant, cached until it expires.
public final class FCMProvider: PushProvider, Sendable {
    public struct Settings: Sendable {
        /// `https://fcm.googleapis.com`; `http://` is a stand-in.
        public var url: String
        public var projectId: String
        public var clientEmail: String
        public var privateKeyPEM: String
        public var tokenURI: String
        /// Certificates to trust instead of the system's (a stand-in's).
        public var caFile: String?

        /// From a service-account key file, as Google issues it.
        public init(url: String, serviceAccount json: JSON, caFile: String? = nil) throws {
            self.caFile = caFile
            guard let project = json["project_id"]?.string, let email = json["client_email"]?.string,
                  let key = json["private_key"]?.string, let tokenURI = json["token_uri"]?.string else {
                throw SigningError(description: "a service-account key needs project_id, client_email, private_key and token_uri")
            }
            self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
            projectId = project
            clientEmail = email
            privateKeyPEM = key
            self.tokenURI = tokenURI
        }
    }

    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    public let platform = DeviceRecord.Platform.fcm
    public let settings: Settings
    public var version: HTTPClient.Version { settings.url.hasPrefix("http://") ? .http2PriorKnowledge : .http2 }
    public var caFile: String? { settings.caFile }
    /// The OAuth2 grant goes one request at a time, about once an hour.
    private let grantClient: HTTPClient
    /// The access token in hand, and the grant under way or failed last.
    private let access = Mutex(Access())

    /// A token is asked for again this long before it expires, in the background, so the
    /// worker never waits on Google's token endpoint while it has a token.
    static let refreshAhead: Int64 = 5 * 60_000
    /// A grant that failed is not asked again for this long: the pushes meanwhile fail at once
    /// with its reason (and the worker's breaker rests the provider), where each would have
    /// waited on the endpoint in turn.
    static let failedGrantRest: Int64 = 30_000

    struct Access {
        var token: String?
        var expiresAt: Int64 = 0
        var granting = false
        var failure: (error: any Error, at: Int64)?
        /// Whether a grant was ever made: the first is made in line (before the first push),
        /// the rest in the background.
        var started = false
    }

    public init(settings: Settings) throws {
        self.settings = settings
        grantClient = HTTPClient(version: settings.tokenURI.hasPrefix("http://") ? .http2PriorKnowledge : .http2, largestBody: 64 << 10,
                                 caFile: settings.caFile)
        // A key that cannot sign fails here, not at the first push.
        _ = try JWT.rs256(header: .object([("alg", "RS256")]), claims: .object([]), pem: settings.privateKeyPEM)
    }

    /// Ready with a token in hand (a fresh one asked for in the background when it nears its
    /// end); the first time, after a grant made in line; waiting while a later grant is under way.
    public func readiness(now: Int64) -> ProviderReadiness {
        enum Next { case ready, waiting, grantInLine, grantInBackground }
        let next: Next = access.withLock { access in
            if access.token != nil, now < access.expiresAt {
                if now >= access.expiresAt - FCMProvider.refreshAhead, !access.granting, !recentlyFailed(access, now) {
                    access.granting = true
                    return .grantInBackground
                }
                return .ready
            }
            if access.granting { return .waiting }
            if recentlyFailed(access, now) { return .ready }  // each push fails at once with why
            access.granting = true
            defer { access.started = true }
            return access.started ? .grantInBackground : .grantInLine
        }
        switch next {
        case .ready: return .ready
        case .waiting: return .waiting(until: now + 1_000)
        case .grantInLine:
            grant(now: now)
            return .ready
        case .grantInBackground:
            Thread { [self] in grant(now: now) }.start()
            return access.withLock { $0.token != nil && now < $0.expiresAt } ? .ready : .waiting(until: now + 1_000)
        }
    }

    private func recentlyFailed(_ access: Access, _ now: Int64) -> Bool {
        access.failure.map { now - $0.at < FCMProvider.failedGrantRest } ?? false
    }

    /// One OAuth2 grant: its token (or why there is none) kept for the pushes.
    private func grant(now: Int64) {
        let result = Result { try askForToken(now: now) }
        access.withLock { access in
            access.granting = false
            switch result {
            case .success(let (token, lifetime)):
                access.token = token
                access.expiresAt = now + lifetime - 60_000
                access.failure = nil
            case .failure(let error):
                access.failure = (error, now)
            }
        }
    }

    private func askForToken(now: Int64) throws -> (String, Int64) {
        let seconds = Int(now / 1000)
        let assertion = try JWT.rs256(header: .object([("alg", "RS256"), ("typ", "JWT")]), claims: .object([
            ("iss", .string(settings.clientEmail)), ("scope", .string(FCMProvider.scope)), ("aud", .string(settings.tokenURI)),
            ("iat", .int(seconds)), ("exp", .int(seconds + 3600)),
        ]), pem: settings.privateKeyPEM)
        let form = "grant_type=" + "urn:ietf:params:oauth:grant-type:jwt-bearer".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            + "&assertion=" + assertion
        let answer = try grantClient.perform(method: "POST", url: settings.tokenURI,
                                             headers: [("content-type", "application/x-www-form-urlencoded")],
                                             body: Data(form.utf8), timeout: 10, connectTimeout: 5)
        guard answer.status == 200, let json = try? JSON.parse(answer.body), let token = json["access_token"]?.string else {
            throw SigningError(description: "the OAuth2 grant was refused: HTTP \(answer.status) \(reason(in: answer.body) ?? "")")
        }
        return (token, Int64(json["expires_in"]?.int ?? 3600) * 1000)
    }

    /// The access token in hand. Never waits on the token endpoint: with none (or `renew`, the
    /// last refused), a grant is started and the push fails for now, to be tried again.
    func accessToken(now: Int64, renew: Bool = false) throws -> String {
        enum Next { case token(String), failed(any Error), grant, wait }
        let next: Next = access.withLock { access in
            if renew { access.token = nil }
            if let token = access.token, now < access.expiresAt { return .token(token) }
            if let failure = access.failure, recentlyFailed(access, now) { return .failed(failure.error) }
            if access.granting { return .wait }
            access.granting = true
            access.started = true
            return .grant
        }
        switch next {
        case .token(let token): return token
        case .failed(let error): throw SigningError(description: "no FCM access token: \(error)")
        case .wait: throw SigningError(description: "no FCM access token yet: a grant is under way")
        case .grant:
            Thread { [self] in grant(now: now) }.start()
            throw SigningError(description: "no FCM access token yet: a grant is under way")
        }
    }

    public func request(for content: PushContent, to deviceToken: String, now: Int64, renew: Bool) throws -> HTTPRequest {
        let token = try accessToken(now: now, renew: renew)
        return HTTPRequest(method: "POST", url: settings.url + "/v1/projects/\(settings.projectId)/messages:send",
                           headers: [("authorization", "Bearer \(token)"), ("content-type", "application/json")],
                           body: Data(Payload.fcm(content, deviceToken: deviceToken).serialized.utf8))
    }

    public func outcome(of answer: HTTPAnswer, now: Int64, renewed: Bool) -> (result: SendResult, status: Int?)? {
        // The common answer first, its body read once.
        if answer.status == 200 { return (.sent(providerId: (try? JSON.parse(answer.body))?["name"]?.string), 200) }
        let why = reason(in: answer.body) ?? "HTTP \(answer.status)"
        switch answer.status {
        case 401: return renewed ? (.credentialRefused("FCM refused the access token: UNAUTHENTICATED"), 401) : nil
        case _ where why == "UNREGISTERED": return (.gone(since: now, reason: why), answer.status)
        case 429:
            // QUOTA_EXCEEDED: the first retry no sooner than a minute.
            let after = answer.header("retry-after").flatMap(Double.init) ?? 0
            return (.retry(after: why == "QUOTA_EXCEEDED" ? max(60, after) : after, reason: why), 429)
        case 500...599: return (.retry(after: answer.header("retry-after").flatMap(Double.init), reason: why), answer.status)
        default: return (.permanent(why), answer.status)
        }
    }
}
