/// One event of the NDJSON contract: an `id` (a repeat is a no-op), a `type`, an `at`.
public struct Event: Sendable {
    public let id: String
    public let at: Int64
    public let body: Body

    public var type: String { body.type }

    /// An event made in code (a client's mutation turned into the world's language).
    public init(id: String, at: Int64, body: Body) {
        self.id = id
        self.at = at
        self.body = body
    }

    public enum AccountState: String, Sendable { case active, banned, deactivated }
    public enum Audience: String, Sendable { case everyone, signedIn }

    /// What one person does about another.
    public enum Relation: String, CaseIterable, Sendable {
        case follow, unfollow, followRequestAccepted, followRequestDeclined, block, unblock, mute, unmute
    }

    /// What one person does to a step without words.
    public enum Interaction: String, CaseIterable, Sendable {
        case heart, share
    }

    public struct UserInfo: Sendable {
        public var id: String
        public var username: String
        public var name: String
        public var avatarUrl: String?
        public var isPrivate: Bool?
        public var signedIn: Bool?
    }

    public enum Body: Sendable {
        case user(UserInfo)
        case account(user: String, state: AccountState)
        case privacy(user: String, isPrivate: Bool)
        case relation(Relation, actor: String, target: String)
        case journey(id: String, owner: String, title: String)
        case journeyFollow(actor: String, journey: String)
        case step(id: String, journey: String, caption: String, photoUrl: String?, isFinal: Bool)
        case mediaReady(step: String)
        case interaction(Interaction, actor: String, step: String)
        case comment(actor: String, step: String, id: String, text: String, parent: String?)
        case deleteStep(String)
        case deleteComment(String)
        case tierCrossed(actor: String, journey: String, tier: String)
        case announcement(text: String, audience: Audience, link: String?)
        /// Switches turned on or off, and quiet hours set or turned off (nil: left as they are).
        case preferences(user: String, changes: [(Category?, Bool)], quietHours: QuietHoursChange? = nil)
        /// A custom follow alert: a person or a journey set to all, default or off.
        case alert(user: String, target: AlertTarget, mode: AlertMode)

        public var type: String {
            switch self {
            case .user: return "user"
            case .account: return "account"
            case .privacy: return "privacy"
            case .relation(let relation, _, _): return relation.rawValue
            case .journey: return "journey"
            case .journeyFollow: return "journeyFollow"
            case .step: return "step"
            case .mediaReady: return "mediaReady"
            case .interaction(let interaction, _, _): return interaction.rawValue
            case .comment: return "comment"
            case .deleteStep, .deleteComment: return "delete"
            case .tierCrossed: return "tierCrossed"
            case .announcement: return "announcement"
            case .preferences: return "preferences"
            case .alert: return "alert"
            }
        }
    }

    /// Limits on producer text, so every push fits its 4096 bytes and no field is absurd.
    ///
    /// Text is limited twice: in grapheme clusters (what a reader counts as characters) and in
    /// UTF-8 bytes, four per character. A name of 100 letters each under 50 combining marks
    /// is 100 characters but 10,000 bytes: the bytes refuse it.
    public enum Limits {
        /// Ids are machine names: bytes.
        public static let idBytes = 128
        public static let nameLength = 100
        public static let usernameLength = 30
        public static let urlBytes = 512
        public static let textLength = 10_000
        /// Bytes allowed per character of a text limit.
        public static let bytesPerCharacter = 4
    }
}

/// Why an event line was rejected, in words for the person who produced it.
public struct EventError: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension Event {
    /// Parses one event from its JSON object, checking every field the contract names.
    public init(json: JSON) throws {
        guard case .object = json else { throw EventError("an event must be a JSON object") }
        let fields = Fields(json: json, path: "")
        id = try fields.id("id")
        let type = try fields.string("type")
        let atText = try fields.string("at")
        guard let at = Timestamp.parse(atText) else {
            throw EventError("field 'at' is not an RFC 3339 time: \(Fields.quoted(atText))")
        }
        guard Event.acceptedTimes.contains(at) else {
            throw EventError("field 'at' must fall in \(Timestamp.format(Event.acceptedTimes.lowerBound).prefix(4))–"
                             + "\(Timestamp.format(Event.acceptedTimes.upperBound).prefix(4)): \(Fields.quoted(atText))")
        }
        self.at = at
        body = try Event.body(type: type, fields)
    }

    private static func body(type: String, _ f: Fields) throws -> Body {
        if let relation = Relation(rawValue: type) {
            return .relation(relation, actor: try f.id("actor"), target: try f.id("target"))
        }
        if let interaction = Interaction(rawValue: type) {
            return .interaction(interaction, actor: try f.id("actor"), step: try f.id("step"))
        }
        switch type {
        case "user":
            let u = try f.object("user")
            let username = try u.string("username")
            guard Event.isValidUsername(username) else {
                throw EventError("field 'user.username' must be 1–\(Limits.usernameLength) letters, digits, '_' or '.': \(Fields.quoted(username))")
            }
            return .user(UserInfo(id: try u.id("id"), username: username.lowercased(),
                                  name: try u.text("name", limit: Limits.nameLength),
                                  avatarUrl: try u.optionalURL("avatarUrl"),
                                  isPrivate: try u.optionalBool("private"), signedIn: try u.optionalBool("signedIn")))
        case "account":
            let text = try f.string("state")
            guard let state = AccountState(rawValue: text) else {
                throw EventError("field 'state' must be active, banned or deactivated: \(Fields.quoted(text))")
            }
            return .account(user: try f.id("user"), state: state)
        case "privacy":
            return .privacy(user: try f.id("user"), isPrivate: try f.bool("private"))
        case "journey":
            let j = try f.object("journey")
            return .journey(id: try j.id("id"), owner: try j.id("owner"), title: try j.text("title", limit: Limits.nameLength))
        case "journeyFollow":
            return .journeyFollow(actor: try f.id("actor"), journey: try f.id("journey"))
        case "step":
            let s = try f.object("step")
            return .step(id: try s.id("id"), journey: try s.id("journey"),
                         caption: try s.text("caption", limit: Limits.textLength, allowEmpty: true),
                         photoUrl: try s.optionalURL("photoUrl"), isFinal: try s.optionalBool("final") ?? false)
        case "mediaReady":
            return .mediaReady(step: try f.id("step"))
        case "comment":
            let c = try f.object("comment")
            return .comment(actor: try f.id("actor"), step: try f.id("step"), id: try c.id("id"),
                            text: try c.text("text", limit: Limits.textLength), parent: try c.optionalId("parent"))
        case "delete":
            let step = try f.optionalId("step")
            let comment = try f.optionalId("comment")
            switch (step, comment) {
            case let (step?, nil): return .deleteStep(step)
            case let (nil, comment?): return .deleteComment(comment)
            default: throw EventError("a delete names exactly one of 'step' or 'comment'")
            }
        case "tierCrossed":
            return .tierCrossed(actor: try f.id("actor"), journey: try f.id("journey"),
                                tier: try f.text("tier", limit: Limits.nameLength))
        case "announcement":
            let text = try f.string("audience")
            guard let audience = Audience(rawValue: text) else {
                throw EventError("field 'audience' must be everyone or signedIn: \(Fields.quoted(text))")
            }
            return .announcement(text: try f.text("text", limit: Limits.textLength), audience: audience,
                                 link: try f.optionalURL("link"))
        case "preferences":
            var changes: [(Category?, Bool)] = []
            for key in Preferences.switchNames {
                if let value = try f.optionalBool(key) { changes.append((Category(rawValue: key), value)) }
            }
            let quietHours = try QuietHoursChange(json: f.json["quietHours"])
            guard !changes.isEmpty || quietHours != nil else {
                throw EventError("a preferences event sets at least one of all, stepWith, social, engagement, journeys, quietHours")
            }
            return .preferences(user: try f.id("user"), changes: changes, quietHours: quietHours)
        case "alert":
            return .alert(user: try f.id("user"), target: try AlertTarget(f), mode: try AlertMode(f))
        default:
            throw EventError("unknown event type \(Fields.quoted(type))")
        }
    }

    /// The times an event may carry: 2000 to the end of 2099. A year 1 or 9999 is a
    /// producer's bug, and would sit at either end of every span the rules measure.
    public static let acceptedTimes = Timestamp.parse("2000-01-01T00:00:00Z")!...Timestamp.parse("2099-12-31T23:59:59.999Z")!

    public static func isValidUsername(_ name: String) -> Bool {
        !name.isEmpty && name.count <= Limits.usernameLength && name.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == ".")
        }
    }
}

/// Typed access to an event object's fields, with errors naming the field's path.
struct Fields {
    let json: JSON
    let path: String

    private func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    private func value(_ key: String) throws -> JSON {
        guard let value = json[key], !value.isNull else { throw EventError("missing field '\(name(key))'") }
        return value
    }

    func string(_ key: String) throws -> String {
        guard let text = try value(key).string else { throw EventError("field '\(name(key))' must be a string") }
        // A NUL cuts the text short wherever C reads it (a terminal, a push provider).
        guard !text.utf8.contains(0) else { throw EventError("field '\(name(key))' holds a NUL character") }
        return text
    }

    func id(_ key: String) throws -> String {
        let text = try string(key)
        guard !text.isEmpty, text.utf8.count <= Event.Limits.idBytes,
              !text.unicodeScalars.contains(where: { Preview.isControl($0) || $0.properties.isWhitespace }) else {
            throw EventError("field '\(name(key))' must be a non-empty id of at most \(Event.Limits.idBytes) bytes without spaces or controls")
        }
        return text
    }

    func optionalId(_ key: String) throws -> String? {
        guard let value = json[key], !value.isNull else { return nil }
        return try id(key)
    }

    func text(_ key: String, limit: Int, allowEmpty: Bool = false) throws -> String {
        let text = try string(key)
        guard allowEmpty || !Preview.clean(text).isEmpty else { throw EventError("field '\(name(key))' is empty") }
        let bytes = limit * Event.Limits.bytesPerCharacter
        guard text.utf8.count <= bytes, text.count <= limit else {
            throw EventError("field '\(name(key))' is longer than \(limit) characters or \(bytes) bytes")
        }
        return text
    }

    func bool(_ key: String) throws -> Bool {
        guard let flag = try value(key).bool else { throw EventError("field '\(name(key))' must be true or false") }
        return flag
    }

    func optionalBool(_ key: String) throws -> Bool? {
        guard let value = json[key], !value.isNull else { return nil }
        return try bool(key)
    }

    func optionalURL(_ key: String) throws -> String? {
        guard let value = json[key], !value.isNull else { return nil }
        let url = try string(key)
        guard url.utf8.count <= Event.Limits.urlBytes,
              url.hasPrefix("https://") || url.hasPrefix("http://") || url.hasPrefix("stepo://"),
              !url.unicodeScalars.contains(where: { Preview.isControl($0) || $0 == " " }) else {
            throw EventError("field '\(name(key))' must be an http(s) or stepo:// URL of at most \(Event.Limits.urlBytes) bytes")
        }
        return url
    }

    func object(_ key: String) throws -> Fields {
        let value = try value(key)
        guard case .object = value else { throw EventError("field '\(name(key))' must be an object") }
        return Fields(json: value, path: name(key))
    }

    /// A producer's value quoted for an error message: shortened, controls made visible.
    static func quoted(_ text: String) -> String {
        let visible = String(String.UnicodeScalarView(text.unicodeScalars.map { Preview.isControl($0) ? "\u{FFFD}" : $0 }))
        return "\"" + Preview.shorten(visible, to: 40) + "\""
    }
}

extension AlertTarget {
    /// Exactly one of `person` or `journey`, from an event or a mutation.
    init(_ f: Fields) throws {
        switch (try f.optionalId("person"), try f.optionalId("journey")) {
        case let (person?, nil): self = .person(person)
        case let (nil, journey?): self = .journey(journey)
        default: throw EventError("an alert names exactly one of 'person' or 'journey'")
        }
    }

    /// Reads the target of an alert mutation or event.
    public init(json: JSON, path: String = "") throws { try self.init(Fields(json: json, path: path)) }
}

extension AlertMode {
    init(_ f: Fields) throws {
        let text = try f.string("mode")
        guard let mode = AlertMode(rawValue: text) else {
            throw EventError("field 'mode' must be all, default or off: \(Fields.quoted(text))")
        }
        self = mode
    }

    /// Reads the mode of an alert mutation or event.
    public init(json: JSON, path: String = "") throws { try self.init(Fields(json: json, path: path)) }
}
