import CCrypto
import Foundation
import SQLite

/// Bearer tokens: random, shown once, stored only as a SHA-256.
extension Store {
    /// Who a token speaks for.
    public struct Holder: Sendable {
        public var user: UserRecord?
        public var isAdmin: Bool
    }

    /// A new token for `user` (nil with `admin` for an events-only admin token). The token is
    /// returned once; the store keeps its hash.
    public func createToken(for user: UserRecord?, admin: Bool, at: Int64) throws -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else {
            throw SQLiteError(code: 1, message: "the system's random source failed")
        }
        let token = "stp_" + bytes.map { String(format: "%02x", $0) }.joined()
        try db.run("INSERT INTO tokens(hash, user, admin, created_at) VALUES (?, ?, ?, ?)",
                   SQLValue.blob(Store.hash(token)), user?.key, admin, at)
        return token
    }

    /// The holder of `token`, or nil when it is not one of ours.
    public func holder(ofToken token: String) throws -> Holder? {
        guard let row = try db.first("SELECT user, admin FROM tokens WHERE hash = ?", [SQLValue.blob(Store.hash(token))], {
            (user: $0.optionalInt(0), admin: $0.bool(1))
        }) else { return nil }
        return Holder(user: try row.user.flatMap { try user(key: $0) }, isAdmin: row.admin)
    }

    static func hash(_ token: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        let bytes = Array(token.utf8)
        _ = SHA256(bytes, bytes.count, &digest)
        return digest
    }
}
