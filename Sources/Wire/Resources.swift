import Notifications

// The documents of the tap destinations and the settings, as the router writes them and the
// client reads them: one type each, so the two cannot drift apart.

/// `GET /v1/steps/{id}`: a step as its reader may see it, with the comments they may see.
public struct StepDetail: Equatable, Sendable {
    public var step: StepEntity
    public var comments: [CommentEntity]

    public init(step: StepEntity, comments: [CommentEntity]) {
        self.step = step
        self.comments = comments
    }

    public var json: JSON { .object([("step", step.json), ("comments", .array(comments.map(\.json)))]) }

    public init(json: JSON) throws {
        let m = try Members(json, "step detail")
        guard let step = m.json["step"] else { throw WireError("step detail.step is missing") }
        self.init(step: try StepEntity(json: step), comments: try m.array("comments", optional: true).map(CommentEntity.init(json:)))
    }
}

/// `GET /v1/steps/{id}/interactions`: who hearted and shared a step, newest first, and the
/// counts as the reader may see them (people out of their sight left out of both).
public struct InteractionList: Equatable, Sendable {
    /// One heart or share.
    public struct Item: Equatable, Sendable {
        public enum Kind: String, Sendable { case heart, share }
        public var kind: Kind
        public var user: String
        public var name: String
        public var at: Int64

        public init(kind: Kind, user: String, name: String, at: Int64) {
            self.kind = kind
            self.user = user
            self.name = name
            self.at = at
        }
    }

    public var step: String
    public var hearts: Int
    public var shares: Int
    public var items: [Item]

    public init(step: String, hearts: Int, shares: Int, items: [Item]) {
        self.step = step
        self.hearts = hearts
        self.shares = shares
        self.items = items
    }

    public var json: JSON {
        .object([("step", .string(step)), ("hearts", .int(hearts)), ("shares", .int(shares)),
                 ("interactions", .array(items.map { item in
                     .object([("type", .string(item.kind.rawValue)), ("user", .string(item.user)),
                              ("name", .string(item.name)), ("at", .string(Timestamp.format(item.at)))])
                 }))])
    }

    public init(json: JSON) throws {
        let m = try Members(json, "interactions")
        let items = try m.array("interactions").enumerated().map { index, item -> Item in
            let i = try Members(item, "interactions[\(index)]")
            let type = try i.string("type")
            guard let kind = Item.Kind(rawValue: type) else { throw WireError("interactions[\(index)].type must be heart or share") }
            let user = try i.string("user")
            return Item(kind: kind, user: user, name: try i.optionalString("name") ?? user, at: try i.time("at"))
        }
        self.init(step: try m.string("step"), hearts: try m.int("hearts"), shares: try m.int("shares"), items: items)
    }
}

/// `GET /v1/users/{id}`: a profile, and how its reader and they stand.
public struct ProfileDetail: Equatable, Sendable {
    public var user: PersonEntity

    public init(user: PersonEntity) { self.user = user }

    public var json: JSON { .object([("user", user.json)]) }

    public init(json: JSON) throws {
        let m = try Members(json, "profile")
        guard let user = m.json["user"] else { throw WireError("profile.user is missing") }
        self.init(user: try PersonEntity(json: user))
    }
}

/// `GET /v1/journeys/{id}`: a journey, its steps' captions, and (with the people panel) its
/// supporters.
public struct JourneyDetail: Equatable, Sendable {
    public var journey: JourneyEntity

    public init(journey: JourneyEntity) { self.journey = journey }

    public var json: JSON { .object([("journey", journey.json)]) }

    public init(json: JSON) throws {
        let m = try Members(json, "journey detail")
        guard let journey = m.json["journey"] else { throw WireError("journey detail.journey is missing") }
        self.init(journey: try JourneyEntity(json: journey))
    }
}

/// `GET|PUT /v1/preferences`: the master switch, the four categories, and the custom follow
/// alerts (each person or journey set to all or off).
public struct PreferencesDocument: Equatable, Sendable {
    public struct Alert: Equatable, Sendable {
        public var target: AlertTarget
        public var mode: AlertMode

        public init(target: AlertTarget, mode: AlertMode) {
            self.target = target
            self.mode = mode
        }
    }

    /// The switches, and the quiet hours (`switches.quietHours`).
    public var switches: Preferences
    public var alerts: [Alert]

    public init(switches: Preferences, alerts: [Alert]) {
        self.switches = switches
        self.alerts = alerts
    }

    public var json: JSON {
        let alerts = alerts.map { alert -> JSON in
            switch alert.target {
            case .person(let id): return .object([("person", .string(id)), ("mode", .string(alert.mode.rawValue))])
            case .journey(let id): return .object([("journey", .string(id)), ("mode", .string(alert.mode.rawValue))])
            }
        }
        return .object(Preferences.Switch.allCases.map { ($0.rawValue, .bool(switches[$0])) }
                       + [("quietHours", switches.quietHours?.json ?? .null), ("customFollow", .array(alerts))])
    }

    public init(json: JSON) throws {
        let m = try Members(json, "preferences")
        var switches = Preferences()
        for name in Preferences.Switch.allCases { switches[name] = try m.bool(name.rawValue, default: true) }
        do {
            switches.quietHours = try QuietHoursChange(json: m.json["quietHours"])?.value
        } catch let error as EventError {
            throw WireError("preferences: \(error.description)")
        }
        let alerts = try m.array("customFollow", optional: true).enumerated().map { index, item -> Alert in
            do {
                return Alert(target: try AlertTarget(json: item), mode: try AlertMode(json: item))
            } catch let error as EventError {
                throw WireError("preferences.customFollow[\(index)]: \(error.description)")
            }
        }
        self.init(switches: switches, alerts: alerts)
    }
}

/// `GET /v1/rows/{id}/push?platform=…`: a row's push as it would go out now — the request for
/// the provider, kept whole to be shown as sent, and what a lock screen draws from it.
public struct PushPreview: Equatable, Sendable {
    public enum Platform: String, Sendable, CaseIterable { case apns, fcm }

    public var platform: Platform
    /// The provider's request (APNs headers and payload, or the FCM message), as sent.
    public var request: JSON
    public var title: String
    public var body: String
    public var badge: Int
    public var thread: String
    /// The photo a rich push shows, if any.
    public var image: String?
    /// Android's large icon: the actor's face, if shown.
    public var face: String?
    /// A batch's faces, newest first (APNs `facepile`, FCM `data.facepileUrls`).
    public var facepile: [String]?
    /// APNs's interruption level (FCM: its priority).
    public var urgency: String

    public init(platform: Platform, request: JSON) throws {
        self.platform = platform
        self.request = request
        switch platform {
        case .apns:
            let payload = try Members(request, "apns").object("payload")
            let aps = try payload.object("aps")
            let alert = try aps.object("alert")
            title = try alert.string("title")
            body = try alert.string("body")
            badge = try aps.optionalInt("badge") ?? 0
            thread = try aps.optionalString("thread-id") ?? ""
            urgency = try aps.optionalString("interruption-level") ?? ""
            image = try payload.optionalString("contentImageUrl")
            face = nil
            facepile = payload.present("facepile")?.array?.compactMap(\.string)
        case .fcm:
            let message = try Members(request, "fcm").object("message")
            let notification = try message.object("notification")
            title = try notification.string("title")
            body = try notification.string("body")
            image = try notification.optionalString("image")
            let data = message.present("data").flatMap { try? Members($0, "fcm.message.data") }
            face = try data?.optionalString("largeIconUrl")
            facepile = (try data?.optionalString("facepileUrls")).flatMap { $0 }
                .flatMap { try? JSON.parse($0) }?.array?.compactMap(\.string)
            badge = (try data?.optionalString("badge")).flatMap { $0.flatMap { Int($0) } } ?? 0
            thread = try data?.optionalString("threadId") ?? ""
            urgency = (try? message.object("android").optionalString("priority")) ?? nil ?? ""
        }
    }

    /// The request as text, indented: what the preview shows beneath the lock screens.
    public var requestLines: [String] { request.pretty.split(separator: "\n").map(String.init) }
}
