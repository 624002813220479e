import Notifications
import CCrypto
import Foundation
import Storage

extension Store {
    /// The store's bearer tokens.
    public var tokens: Tokens { Tokens(store: self) }
}

/// Bearer tokens: random, shown once, stored only as a SHA-256; they may expire and be revoked.
public struct Tokens {
    let store: Store
    var db: Connection { store.db }

    /// Who a token speaks for.
    public struct Holder: Sendable {
        public var user: UserRecord?
        public var isAdmin: Bool
    }

    /// A token as listed: never the secret, only an id made from its hash.
    public struct Info: Sendable {
        /// The first 12 hex digits of the token's SHA-256: enough to name it, useless to use it.
        public var id: String
        public var user: String?
        public var isAdmin: Bool
        public var label: String?
        public var createdAt: Int64
        public var expiresAt: Int64?
        public var revokedAt: Int64?
    }

    /// A new token for `user` (nil with `admin` for an events-only admin token), valid until
    /// `expiresAt` when given. The token is returned once; the store keeps its hash.
    public func create(for user: UserRecord?, admin: Bool, at: Int64, expiresAt: Int64? = nil,
                            label: String? = nil) throws -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else {
            throw EventError("the system's random source failed")
        }
        let token = "stp_" + Tokens.hex(bytes)
        try db.run("INSERT INTO tokens(hash, user, admin, created_at, expires_at, label) VALUES (?, ?, ?, ?, ?, ?)",
                   SQLValue.blob(Tokens.hash(token)), user?.key, admin, at, expiresAt, label)
        return token
    }

    /// The holder of `token` at `now`, or nil when it is not one of ours, was revoked, or has
    /// expired. The account's state is the caller's to check: a banned holder is known, and
    /// refused for what they are rather than for their token.
    /// `UserRecord.columns` of the users table named `u`.
    static let userColumns = UserRecord.columns.split(separator: ",")
        .map { "u." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", ")

    public func holder(of token: String, at now: Int64) throws -> Holder? {
        // The token and its user in one statement: every request asks it.
        guard let row = try db.first("""
            SELECT t.admin, t.expires_at, t.revoked_at, t.user IS NOT NULL AND u.id IS NOT NULL, \(Tokens.userColumns)
            FROM tokens AS t LEFT JOIN users AS u ON u.id = t.user WHERE t.hash = ?
            """, [SQLValue.blob(Tokens.hash(token))], {
            (admin: $0.bool(0), expires: $0.optionalInt64(1), revoked: $0.optionalInt64(2), user: $0.bool(3) ? try UserRecord($0, at: 4) : nil)
        }) else { return nil }
        guard row.revoked == nil, row.expires.map({ now < $0 }) ?? true else { return nil }
        return Holder(user: row.user, isAdmin: row.admin)
    }

    /// The tokens of `user` (every token when nil), newest first.
    public func list(of user: UserRecord?) throws -> [Info] {
        let sql = """
            SELECT t.hash, u.ext, t.admin, t.label, t.created_at, t.expires_at, t.revoked_at
            FROM tokens AS t LEFT JOIN users AS u ON u.id = t.user
            \(user == nil ? "" : "WHERE t.user = ?") ORDER BY t.created_at DESC
            """
        let values: [SQLBindable] = user.map { [$0.key] } ?? []
        return try db.query(sql, values) { row in
            guard case .blob(let hash) = row.value(0) else { return nil }
            return Info(id: String(Tokens.hex(hash).prefix(12)), user: row.optionalString(1), isAdmin: row.bool(2),
                             label: row.optionalString(3), createdAt: row.int64(4), expiresAt: row.optionalInt64(5),
                             revokedAt: row.optionalInt64(6))
        }.compactMap { $0 }
    }

    /// Revokes the tokens whose id (`Info.id`) starts with `prefix` (8 hex digits at
    /// least), or the token itself when given whole. Returns how many were revoked now.
    public func revoke(_ idOrToken: String, at now: Int64) throws -> Int {
        if idOrToken.hasPrefix("stp_") {
            try db.run("UPDATE tokens SET revoked_at = ? WHERE hash = ? AND revoked_at IS NULL",
                       now, SQLValue.blob(Tokens.hash(idOrToken)))
            return db.changes
        }
        let prefix = idOrToken.lowercased()
        guard prefix.count >= 8, prefix.allSatisfy({ $0.isHexDigit }) else { return 0 }
        // The id is a prefix of the hash: compare the hex form of the hashes.
        let hex = db.dialect.hex("hash")
        try db.run("UPDATE tokens SET revoked_at = ? WHERE revoked_at IS NULL AND substr(\(hex), 1, CAST(? AS INTEGER)) = ?",
                   now, prefix.count, prefix)
        return db.changes
    }

    /// Revokes every token of `user`. Returns how many were revoked now.
    public func revokeAll(of user: UserRecord, at now: Int64) throws -> Int {
        try db.run("UPDATE tokens SET revoked_at = ? WHERE user = ? AND revoked_at IS NULL", now, user.key)
        return db.changes
    }

    static func hash(_ token: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        let bytes = Array(token.utf8)
        _ = SHA256(bytes, bytes.count, &digest)
        return digest
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var out = ""
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return out
    }
}
