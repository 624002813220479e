import Foundation
import Notifications
import Storage
import Wire

/// A device a user registered for pushes.
public struct DeviceRecord: Equatable, Sendable {
    public enum Platform: String, Sendable, CaseIterable { case apns, fcm }
    public enum Environment: String, Sendable, CaseIterable { case sandbox, production }

    public var token: String
    public var user: String
    public var platform: Platform
    public var environment: Environment
    public var registeredAt: Int64
    public var disabledAt: Int64?

    public var json: JSON {
        .members([("token", .string(token)), ("platform", .string(platform.rawValue)),
                  ("environment", .string(environment.rawValue)), ("registeredAt", .string(Timestamp.format(registeredAt))),
                  ("disabledAt", disabledAt.map { .string(Timestamp.format($0)) })])
    }
}

extension Store {
    /// The devices users registered for pushes.
    public var devices: Devices { Devices(store: self) }
}

/// The devices users register for pushes (docs/delivery.md); the providers' answers that
/// disable or forget one are the outbox's (`Outbox.disableDevice`, `Outbox.forgetDevice`).
public struct Devices {
    let store: Store
    var db: Connection { store.db }

    /// The longest token a provider issues is 200 bytes (FCM's); a little room beyond.
    public static let longestToken = 512

    /// Whether `token` can be a device token: 1–512 printable ASCII characters, no space and
    /// no '/' (it travels in a URL path).
    public static func isValidToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= longestToken
            && token.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value < 0x7F && $0 != "/" }
    }

    /// Registers `token` for `user`. A token registered again moves to its new owner, and a
    /// token the provider had given up on is live again. A token that changes hands takes
    /// nothing of its former owner's with it: what was still waiting for it is dropped
    /// (`deviceChanged`); the same person registering it again keeps theirs.
    public func register(_ token: String, platform: DeviceRecord.Platform, environment: DeviceRecord.Environment,
                         for user: UserRecord, at: Int64) throws {
        try db.transaction {
            let owner = try db.first("SELECT user FROM devices WHERE token = ?\(db.dialect.lockingRead)", [token]) { $0.int(0) }
            if let owner, owner != user.key { try dropWaiting(for: token, at: at) }
            try db.run("""
                INSERT INTO devices(token, user, platform, environment, registered_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (token) DO UPDATE SET user = excluded.user, platform = excluded.platform,
                    environment = excluded.environment, registered_at = excluded.registered_at, disabled_at = NULL
                """, token, user.key, platform.rawValue, environment.rawValue, at)
        }
    }

    /// Removes one of `user`'s own tokens (they signed out on that device); false when it is
    /// not theirs (or not there). What was still waiting for it is dropped (`deviceChanged`):
    /// a push queued in a session that ended does not arrive when they sign in again.
    public func remove(_ token: String, of user: UserRecord, at: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) throws -> Bool {
        try db.transaction {
            try db.run("DELETE FROM devices WHERE token = ? AND user = ?", token, user.key)
            guard db.changes > 0 else { return false }
            try dropWaiting(for: token, at: at)
            return true
        }
    }

    /// Drops the entries still due for `token` (one being sent now is the worker's: the
    /// send-time rule judges it). The send-time rule is the guarantee; this keeps a sign-out
    /// final when the same token comes back.
    private func dropWaiting(for token: String, at: Int64) throws {
        for entry in try store.outbox.entries(ofDevice: token) where entry.state == .due {
            try store.outbox.drop(entry, reason: PushUnavailable.deviceChangedReason, at: at)
        }
    }

    /// `user`'s devices, newest registration first.
    public func list(of user: UserRecord) throws -> [DeviceRecord] {
        try db.query("""
            SELECT token, platform, environment, registered_at, disabled_at FROM devices WHERE user = ?
            ORDER BY registered_at DESC, token
            """, [user.key]) { r in
            DeviceRecord(token: r.string(0), user: user.id, platform: try r.decoded(1, table: "devices", column: "platform", DeviceRecord.Platform.init(rawValue:)),
                         environment: try r.decoded(2, table: "devices", column: "environment", DeviceRecord.Environment.init(rawValue:)),
                         registeredAt: r.int64(3), disabledAt: r.optionalInt64(4))
        }
    }
}
