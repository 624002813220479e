import Backend
import Foundation
import Notifications

/// The tap destinations: a step, its interactions, a profile, a journey; and preferences.
extension Router {
    /// A step the viewer may open: 404 when unknown, 410 when deleted or no longer visible.
    private func visibleStep(_ request: HTTPRequest, _ id: String) throws -> (StepRecord, UserRecord) {
        let viewer = try user(request)
        guard let step = try store.step(id), step.publishedAt != nil || step.ownerKey == viewer.key else {
            throw APIError.notFound("no step \(id)")
        }
        let owner = try store.user(key: step.ownerKey)
        guard step.deletedAt == nil, let owner, try store.canView(contentOf: owner, viewer: viewer) else {
            throw APIError.gone(fallbackTo: owner.flatMap { $0.isActive ? $0.id : nil })
        }
        return (step, viewer)
    }

    func step(_ request: HTTPRequest, _ id: String) throws -> HTTPResponse {
        let (step, _) = try visibleStep(request, id)
        return .ok(.object([("step", try store.stepJSON(step)), ("comments", .array(try store.commentsJSON(ofStep: step)))]))
    }

    func interactions(_ request: HTTPRequest, _ id: String) throws -> HTTPResponse {
        let (step, _) = try visibleStep(request, id)
        return .ok(.object([("step", .string(step.id)), ("interactions", .array(try store.interactionsJSON(ofStep: step)))]))
    }

    func profile(_ request: HTTPRequest, _ id: String) throws -> HTTPResponse {
        let viewer = try user(request)
        guard let person = try store.user(id) else { throw APIError.notFound("no user \(id)") }
        guard person.isActive, try person.key == viewer.key || !store.blocked(person.key, viewer.key) else {
            throw APIError.gone(fallbackTo: nil)
        }
        return .ok(.object([("user", try store.userJSON(person, viewer: viewer))]))
    }

    func journey(_ request: HTTPRequest, _ id: String) throws -> HTTPResponse {
        let viewer = try user(request)
        guard let journey = try store.journey(id) else { throw APIError.notFound("no journey \(id)") }
        let owner = try store.user(key: journey.ownerKey)
        guard let owner, try store.canView(contentOf: owner, viewer: viewer) else {
            throw APIError.gone(fallbackTo: owner.flatMap { $0.isActive ? $0.id : nil })
        }
        return .ok(.object([("journey", try store.journeyJSON(journey, people: request.query["panel"] != "none"))]))
    }

    /// `GET /v1/rows/{id}/push?platform=apns|fcm`: the push of one of the user's rows, as it
    /// would go out now (absolute badge, masking, 4096-byte fitting).
    func push(_ request: HTTPRequest, _ id: String) throws -> HTTPResponse {
        let viewer = try user(request)
        guard let rowId = Int(id), try store.row(rowId, of: viewer) != nil else { throw APIError.notFound("no row \(id)") }
        let content: PushContent
        do {
            content = try store.pushContent(row: rowId)
        } catch let error as PushUnavailable {
            throw APIError.gone(fallbackTo: nil).with(message: error.description)
        }
        switch request.query["platform"] ?? "apns" {
        case "apns": return .ok(Payload.apns(content))
        case "fcm": return .ok(Payload.fcm(content))
        default: throw APIError.invalid("platform must be apns or fcm")
        }
    }

    /// `GET|PUT /v1/preferences`: the four categories and the master switch (custom follow
    /// alerts are shown as coming later). PUT takes any of them as booleans.
    func preferences(_ request: HTTPRequest) throws -> HTTPResponse {
        var viewer = try user(request)
        if request.method == "PUT" {
            let changes = try Router.preferenceChanges(try jsonBody(request), in: "the preferences")
            try writing {
                _ = try store.apply(Event(id: "preferences:\(viewer.id):\(UUID().uuidString)", at: now(),
                                          body: .preferences(user: viewer.id, changes: changes)))
            }
            viewer = try store.user(key: viewer.key) ?? viewer
        }
        let p = viewer.preferences
        return .ok(.object([("all", .bool(p.all)), ("stepWith", .bool(p.stepWith)), ("social", .bool(p.social)),
                            ("engagement", .bool(p.engagement)), ("journeys", .bool(p.journeys)),
                            ("customFollow", "comingLater")]))
    }
}
