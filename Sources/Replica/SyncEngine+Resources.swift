import Foundation
import Notifications
import Wire

/// What the server says of a thing asked for live: here it is, or it is gone for this reader
/// (deleted, or out of their sight now: 404 and 410 alike), with the server's words.
public enum Live<Value: Sendable>: Sendable {
    case found(Value)
    case gone(String)

    public var value: Value? {
        if case .found(let value) = self { return value }
        return nil
    }
}

extension Live: Equatable where Value: Equatable {}

/// The reads the inbox's screens make straight to the server, typed: each owns its path, the
/// escaping of its ids, and what a 404 or 410 means. Each throws `Unreachable` offline, and
/// `SyncError` for any other refusal; a document of the wrong shape is a `WireError`.
extension SyncEngine {
    /// A step as its reader may see it now, with every comment they may see.
    public func step(_ id: String) throws -> Live<StepDetail> {
        try live("/v1/steps/\(Self.segment(id))", StepDetail.init(json:))
    }

    /// Who hearted and shared a step, by name, newest first.
    public func interactions(onStep id: String) throws -> Live<InteractionList> {
        try live("/v1/steps/\(Self.segment(id))/interactions", InteractionList.init(json:))
    }

    /// A person's profile and how the reader and they stand.
    public func person(_ id: String) throws -> Live<ProfileDetail> {
        try live("/v1/users/\(Self.segment(id))", ProfileDetail.init(json:))
    }

    /// A journey, with its supporters when `people`.
    public func journey(_ id: String, people: Bool = true) throws -> Live<JourneyDetail> {
        try live("/v1/journeys/\(Self.segment(id))", query: ["panel": people ? "people" : "none"], JourneyDetail.init(json:))
    }

    /// The reader's switches and custom follow alerts.
    public func preferences() throws -> PreferencesDocument {
        try PreferencesDocument(json: fetch("GET", "/v1/preferences"))
    }

    /// The trust budget of the last 7 days (an admin's session only: 403 otherwise).
    public func stats() throws -> TrustBudget {
        try TrustBudget(json: fetch("GET", "/v1/stats"))
    }

    /// A row's push as it would go out now; gone when the rules withhold it now, or its
    /// content is gone (the server's words say which).
    public func pushPreview(row: Int, platform: PushPreview.Platform) throws -> Live<PushPreview> {
        try live("/v1/rows/\(row)/push", query: ["platform": platform.rawValue]) { try PushPreview(platform: platform, request: $0) }
    }

    private func live<Value>(_ path: String, query: [String: String] = [:], _ read: (JSON) throws -> Value) throws -> Live<Value> {
        do {
            return .found(try read(fetch("GET", path, query: query)))
        } catch let error as SyncError where error.status == 404 || error.status == 410 {
            return .gone(error.message)
        }
    }

    /// An id as one path segment (see `Transport.segment`).
    static func segment(_ id: String) -> String { HTTPTransport.segment(id) }
}
