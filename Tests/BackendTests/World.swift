import Foundation
import TestSupport
import Notifications
import Wire
import SQLite
@testable import Backend

/// A store in a fresh temporary folder, and a terse way to feed it events through the real
/// line path (bytes → JSON → Event → store).
final class World {
    let folder: String
    let store: Store
    private var counter = 0
    /// Event times are minutes after this instant unless given.
    static let origin = Timestamp.parse("2026-11-01T00:00:00Z")!
    var clock: Int64 = World.origin

    init() throws {
        folder = NSTemporaryDirectory() + "stepo-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        path = try TestEngine.location(folder, "stepo.db")
        store = try Store(location: path)
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    /// The store's file, or its PostgreSQL URL.
    let path: String

    /// References that point at nothing (see `Audit.referenceViolations`).
    func referenceViolations() throws -> [String] {
        try store.audit.referenceViolations()
    }

    /// Applies one event; `at` defaults to one minute after the previous event.
    @discardableResult
    func event(_ type: String, id: String? = nil, at: Int64? = nil, _ fields: [(String, JSON)]) throws -> EventOutcome {
        counter += 1
        clock = at ?? clock + 60_000
        let json = JSON.object([("id", .string(id ?? "t\(counter)")), ("type", .string(type)),
                                ("at", .string(Timestamp.format(clock)))] + fields)
        guard let outcome = try Ingestor(store: store).apply(Data(json.serialized.utf8)) else {
            fatalError("blank event")
        }
        return outcome
    }

    func user(_ id: String, name: String? = nil, private isPrivate: Bool = false) throws {
        try event("user", [("user", .object([("id", .string(id)), ("username", .string(id)),
                                            ("name", .string(name ?? id.capitalized)),
                                            ("avatarUrl", .string("https://cdn/\(id).jpg")),
                                            ("private", .bool(isPrivate))]))])
    }

    func users(_ ids: String...) throws { for id in ids { try user(id) } }

    @discardableResult
    func follow(_ actor: String, _ target: String, at: Int64? = nil) throws -> EventOutcome {
        try event("follow", at: at, [("actor", .string(actor)), ("target", .string(target))])
    }

    func relation(_ type: String, _ actor: String, _ target: String) throws {
        try event(type, [("actor", .string(actor)), ("target", .string(target))])
    }

    func journey(_ id: String, owner: String, title: String? = nil) throws {
        try event("journey", [("journey", .object([("id", .string(id)), ("owner", .string(owner)),
                                                  ("title", .string(title ?? "Journey \(id)"))]))])
    }

    func followJourney(_ actor: String, _ journey: String) throws {
        try event("journeyFollow", [("actor", .string(actor)), ("journey", .string(journey))])
    }

    /// Creates a step and publishes it (media ready); returns the publish outcome.
    @discardableResult
    /// `at`: when it is created and published (else a minute apart each, after the last event).
    func step(_ id: String, journey: String, caption: String? = nil, final: Bool = false, publish: Bool = true,
              at: Int64? = nil) throws -> EventOutcome {
        let created = try event("step", at: at, [("step", .object([("id", .string(id)), ("journey", .string(journey)),
                                                         ("caption", .string(caption ?? "Caption \(id)")),
                                                         ("photoUrl", .string("https://cdn/\(id).jpg")),
                                                         ("final", .bool(final))]))])
        return publish ? try mediaReady(id, at: at) : created
    }

    @discardableResult
    func mediaReady(_ step: String, at: Int64? = nil) throws -> EventOutcome {
        try event("mediaReady", at: at, [("step", .string(step))])
    }

    @discardableResult
    func interact(_ type: String, _ actor: String, _ step: String, at: Int64? = nil) throws -> EventOutcome {
        try event(type, at: at, [("actor", .string(actor)), ("step", .string(step))])
    }

    @discardableResult
    func comment(_ actor: String, on step: String, _ id: String, _ text: String, parent: String? = nil,
                 at: Int64? = nil) throws -> EventOutcome {
        try event("comment", at: at, [("actor", .string(actor)), ("step", .string(step)),
                                      ("comment", .members([("id", .string(id)), ("text", .string(text)),
                                                            ("parent", parent.map(JSON.string))]))])
    }

    func rows(_ outcome: EventOutcome) throws -> [ActivityRow] { try store.inboxes.rows(ofEvent: outcome) }

    func activity(_ user: String) throws -> [ActivityRow] {
        try store.inboxes.activity(of: try requireUser(user), limit: 100_000)
    }

    func record(_ id: String) throws -> UserRecord { try requireUser(id) }

    private func requireUser(_ id: String) throws -> UserRecord {
        guard let user = try store.user(id) else { throw EventError("test world has no user \(id)") }
        return user
    }

    /// Each candidate's outcome for an event: "row" + push, or the reason.
    func explain(_ outcome: EventOutcome) throws -> [String: String] {
        let report = try store.explanations.event(outcome.eventId)
        var result: [String: String] = [:]
        for c in report?.candidates ?? [] {
            result[c.recipient] = c.rowId != nil ? "\(c.kind.rawValue) \(c.push!.description)" : "no row: \(c.reason!.rawValue)"
        }
        return result
    }
}
