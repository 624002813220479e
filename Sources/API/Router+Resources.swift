import Backend
import Foundation
import Notifications
import Wire

/// The tap destinations: a step, its interactions, a profile, a journey; and preferences.
/// Each asks `Visibility`, as a sync does.
extension Router {
    /// Where a reader goes when `owner`'s content is gone: their profile while they may see
    /// them, else the feed.
    private func gone(owner: UserRecord?, _ visibility: Visibility) throws -> APIError {
        guard let owner, try visibility.canSee(person: owner) else { return .gone(fallbackTo: nil) }
        return .gone(fallbackTo: owner.id)
    }

    /// A step the viewer may open: 404 when unknown, 410 when deleted or no longer visible.
    private func visibleStep(_ store: Store, _ viewer: UserRecord, _ id: String) throws -> (StepRecord, Visibility) {
        let visibility = Visibility(store: store, viewer: viewer)
        guard let step = try store.step(id), step.publishedAt != nil || step.ownerKey == visibility.viewer.key else {
            throw APIError.notFound("no step \(id)")
        }
        guard try visibility.canSee(step: step) else { throw try gone(owner: try store.user(key: step.ownerKey), visibility) }
        return (step, visibility)
    }

    // The destinations are reads: a standby answers them when there is one (see `reading`).

    func step(_ request: HTTPRequest, _ id: String) throws -> HTTPResponse {
        let viewer = try user(request)
        return try reading { store in
            let (step, visibility) = try visibleStep(store, viewer, id)
            return .ok(StepDetail(step: try store.entities.step(step, countedBy: visibility),
                                  comments: try store.entities.comments(ofStep: step, visibility: visibility)).json)
        }
    }

    func interactions(_ request: HTTPRequest, _ id: String) throws -> HTTPResponse {
        let viewer = try user(request)
        return try reading { store in
            let (step, visibility) = try visibleStep(store, viewer, id)
            let items = try store.entities.interactions(onStep: step, visibility: visibility).map { item in
                InteractionList.Item(kind: item.interaction == .share ? .share : .heart, user: item.user, name: item.name, at: item.at)
            }
            let counted = try store.entities.step(step, countedBy: visibility)
            return .ok(InteractionList(step: step.id, hearts: counted.hearts, shares: counted.shares, items: items).json)
        }
    }

    func profile(_ request: HTTPRequest, _ id: String) throws -> HTTPResponse {
        let viewer = try user(request)
        return try reading { store in
            let visibility = Visibility(store: store, viewer: viewer)
            guard let person = try store.user(id) else { throw APIError.notFound("no user \(id)") }
            guard try visibility.canSee(person: person) else { throw APIError.gone(fallbackTo: nil) }
            return .ok(ProfileDetail(user: try store.entities.person(person, seenBy: visibility.viewer)).json)
        }
    }

    func journey(_ request: HTTPRequest, _ id: String) throws -> HTTPResponse {
        let viewer = try user(request)
        let panel = request.query["panel"] ?? "people"
        guard panel == "people" || panel == "none" else { throw APIError.invalid("panel must be people or none") }
        return try reading { store in
            let visibility = Visibility(store: store, viewer: viewer)
            guard let journey = try store.journey(id) else { throw APIError.notFound("no journey \(id)") }
            guard try visibility.canSee(journey: journey) else { throw try gone(owner: try store.user(key: journey.ownerKey), visibility) }
            let entity = try store.entities.journey(journey, people: panel == "people", captions: true, visibility: visibility)
            return .ok(JourneyDetail(journey: entity).json)
        }
    }

    /// `GET /v1/rows/{id}/push?platform=apns|fcm`: the push of one of the user's rows, as it
    /// would go out now (absolute badge, masking, 4096-byte fitting).
    func push(_ request: HTTPRequest, _ id: String) throws -> HTTPResponse {
        let viewer = try user(request)
        guard let rowId = Int(id), let row = try store.inboxes.row(rowId, of: viewer) else { throw APIError.notFound("no row \(id)") }
        let platform = request.query["platform"] ?? "apns"
        guard platform == "apns" || platform == "fcm" else { throw APIError.invalid("platform must be apns or fcm") }
        var content: PushContent
        do {
            content = try store.outbox.pushContent(row: rowId)
            switch request.query["silent"] {
            case nil, "0": content.silent = false
            case "1": content.silent = true
            default: throw APIError.invalid("silent must be 0 or 1")
            }
        } catch let error as PushUnavailable {
            // The rules, judged now, forbid it: nothing of it is drawn (the reason is said).
            switch error.reason {
            case nil, .deleted?:
                // Its content is gone: fall back as a tap on the row would, to its actor.
                let actor = try row.actor.flatMap { try store.user($0) }
                throw try gone(owner: actor, Visibility(store: store, viewer: viewer)).with(message: error.sentence)
            case .some: throw APIError(410, "pushWithheld", error.sentence)
            }
        }
        return .ok(platform == "apns" ? Payload.apns(content) : Payload.fcm(content))
    }

    /// `GET|PUT /v1/preferences`: the four categories, the master switch, quiet hours and the
    /// custom follow alerts. PUT takes any of the switches as booleans, and `quietHours`.
    func preferences(_ request: HTTPRequest) throws -> HTTPResponse {
        var viewer = try user(request)
        if request.method == "PUT" {
            let (changes, quietHours) = try Mutation.preferenceUpdate(try jsonBody(request), in: "the preferences")
            try writing {
                _ = try store.apply(Event(id: "preferences:\(viewer.id):\(UUID().uuidString)", at: now(),
                                          body: .preferences(user: viewer.id, changes: changes.map { ($0.category, $0.on) },
                                                             quietHours: quietHours)))
            }
            viewer = try store.user(key: viewer.key) ?? viewer
        }
        // The custom follow alerts: each person or journey set to all or off.
        let alerts = try store.alerts(of: viewer).map { PreferencesDocument.Alert(target: $0.target, mode: $0.mode) }
        return .ok(PreferencesDocument(switches: viewer.preferences, alerts: alerts).json)
    }

    /// `GET|POST /v1/devices`: the user's devices; POST registers one (a token registered
    /// again moves to this user).
    func devices(_ request: HTTPRequest) throws -> HTTPResponse {
        let viewer = try user(request)
        if request.method == "POST" {
            let body = try jsonBody(request)
            guard let platformName = body["platform"]?.string, let platform = DeviceRecord.Platform(rawValue: platformName) else {
                throw APIError.invalid("platform must be apns or fcm")
            }
            guard let token = body["token"]?.string, Devices.isValidToken(token) else {
                throw APIError.invalid("token must be 1–\(Devices.longestToken) printable ASCII characters without spaces or '/'")
            }
            let environmentName = body["environment"]?.string ?? "production"
            guard let environment = DeviceRecord.Environment(rawValue: environmentName) else {
                throw APIError.invalid("environment must be sandbox or production")
            }
            try writing { try store.devices.register(token, platform: platform, environment: environment, for: viewer, at: now()) }
        }
        return .ok(.object([("devices", .array(try store.devices.list(of: viewer).map(\.json)))]))
    }

    /// `DELETE /v1/devices/{token}`: one of the user's own tokens; another's is 404.
    func removeDevice(_ request: HTTPRequest, _ token: String) throws -> HTTPResponse {
        let viewer = try user(request)
        guard try writing({ try store.devices.remove(token, of: viewer) }) else { throw APIError.notFound("no device \(token) of yours") }
        return .ok(.object([("devices", .array(try store.devices.list(of: viewer).map(\.json)))]))
    }

    /// `GET /v1/stats?since=T&until=T`: the trust budget (admin token only). T is RFC 3339;
    /// the span defaults to the 7 days up to the newest event, both ends included.
    func stats(_ request: HTTPRequest) throws -> HTTPResponse {
        try admin(request)
        func time(_ name: String) throws -> Int64? {
            guard let text = request.query[name] else { return nil }
            guard let at = Timestamp.parse(text) else { throw APIError.invalid("\(name) must be an RFC 3339 time") }
            return at
        }
        let since = try time("since"), until = try time("until")
        let end = try until ?? store.stats.newestEventTime() ?? now()
        let start = since ?? end - 7 * Timestamp.day
        guard start <= end else { throw APIError.invalid("since must not be after until") }
        guard end - start <= StatsSpan.longest else { throw APIError.invalid("a span of at most \(StatsSpan.longestDays) days") }
        // The marks made since the last look are counted first: a write, so it takes its turn.
        try writing { try store.stats.catchUpStamps() }
        return .ok(try store.stats.trustBudget(since: start, until: end, fromRows: false).json)
    }
}
