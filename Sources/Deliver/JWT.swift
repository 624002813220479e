import CCrypto
import Foundation
import Notifications

/// A signing key that could not be used: not PEM, or not the kind the provider wants.
public struct SigningError: Error, CustomStringConvertible {
    public let description: String
}

/// JSON Web Tokens as the push providers want them: ES256 for APNs provider tokens, RS256 for
/// Google's service-account grant. libcrypto signs.
public enum JWT {
    public static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// `header.claims.signature`, signed ES256 with the P-256 key in `pem` (PKCS#8, a .p8 file).
    public static func es256(header: JSON, claims: JSON, pem: String) throws -> String {
        let signing = signingInput(header, claims)
        var signature = [UInt8](repeating: 0, count: 64)
        let input = Array(signing.utf8)
        let result = pem.withCString { key in
            input.withUnsafeBufferPointer { bytes in
                stepo_sign_es256(key, Int32(strlen(key)), bytes.baseAddress, bytes.count, &signature)
            }
        }
        guard result == 0 else { throw SigningError(description: "the APNs key is not a P-256 private key in PEM") }
        return signing + "." + base64URL(Data(signature))
    }

    /// `header.claims.signature`, signed RS256 with the RSA key in `pem`.
    public static func rs256(header: JSON, claims: JSON, pem: String) throws -> String {
        let signing = signingInput(header, claims)
        var signature = [UInt8](repeating: 0, count: 1024)
        var length = signature.count
        let input = Array(signing.utf8)
        let result = pem.withCString { key in
            input.withUnsafeBufferPointer { bytes in
                stepo_sign_rs256(key, Int32(strlen(key)), bytes.baseAddress, bytes.count, &signature, &length)
            }
        }
        guard result == 0 else { throw SigningError(description: "the service-account key is not an RSA private key in PEM") }
        return signing + "." + base64URL(Data(signature.prefix(length)))
    }

    private static func signingInput(_ header: JSON, _ claims: JSON) -> String {
        base64URL(Data(header.serialized.utf8)) + "." + base64URL(Data(claims.serialized.utf8))
    }
}
