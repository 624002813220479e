import Foundation
import Synchronization

/// The copy rules for user text that rides in a notification: no emoji, no controls, one
/// space between words, at most 150 characters cut at a word with `…`.
public enum Preview {
    public static let limit = 150
    public static let ellipsis: Character = "…"

    /// The preview of `text`: cleaned, then shortened to `limit` grapheme clusters.
    public static func of(_ text: String, limit: Int = limit) -> String {
        shorten(clean(text), to: limit)
    }

    /// Combining marks kept on one character. Vietnamese stacks two (ệ); more than a few is
    /// "zalgo" text, which would crowd a lock screen's line into a smear.
    public static let maximumMarks = 4

    /// Removes emoji and control characters, keeps at most `maximumMarks` combining marks on
    /// a character, turns every whitespace run into one space, trims.
    public static func clean(_ text: String) -> String {
        if isPlainASCII(text) { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count)
        var pendingSpace = false
        for character in text {
            if character.unicodeScalars.allSatisfy(\.properties.isWhitespace) {
                pendingSpace = !out.isEmpty
                continue
            }
            if isEmoji(character) { continue }
            var marks = 0
            let kept = String.UnicodeScalarView(character.unicodeScalars.filter { scalar in
                guard !isControl(scalar) else { return false }
                guard isMark(scalar) else { return true }
                marks += 1
                return marks <= maximumMarks
            })
            guard !kept.isEmpty else { continue }
            if pendingSpace { out.append(" "); pendingSpace = false }
            out.unicodeScalars.append(contentsOf: kept)
        }
        return out
    }

    /// Printable ASCII with single inner spaces: already clean, and by far the common case.
    static func isPlainASCII(_ text: String) -> Bool {
        var previousSpace = true  // a leading space is not clean
        for byte in text.utf8 {
            if byte == 0x20 {
                if previousSpace { return false }
                previousSpace = true
            } else if byte > 0x20 && byte < 0x7F {
                previousSpace = false
            } else {
                return false
            }
        }
        return !previousSpace || text.isEmpty
    }

    /// Cuts `text` to at most `limit` characters, including the ellipsis, at the last word
    /// boundary that leaves room for it; a single overlong word is cut inside itself.
    public static func shorten(_ text: String, to limit: Int) -> String {
        // No more bytes than the limit means no more characters: skip counting graphemes.
        guard text.utf8.count > limit, text.count > limit else { return text }
        guard limit > 1 else { return limit == 1 ? String(ellipsis) : "" }
        let room = text.prefix(limit - 1)
        let cut: Substring
        if text[room.endIndex] == " " {
            cut = room  // the room ends exactly at the end of a word
        } else if let space = room.lastIndex(of: " ") {
            cut = room[..<space]
        } else {
            cut = room  // one word longer than the limit is cut inside itself
        }
        let trimmed = cut.trimmingTrailingSpaces()
        return (trimmed.isEmpty ? String(room) : trimmed) + String(ellipsis)
    }

    /// Emoji: pictographs with emoji presentation, anything forced to emoji style (U+FE0F),
    /// keycaps, flags, skin tones, and the symbol blocks from U+2190 up that are emoji.
    /// Letters, digits and typographic symbols such as ©, ® and ™ stay.
    public static func isEmoji(_ character: Character) -> Bool {
        character.unicodeScalars.contains { scalar in
            let v = scalar.value
            if v == 0xFE0F || v == 0x20E3 || (0x1F1E6...0x1F1FF).contains(v) || (0x1F3FB...0x1F3FF).contains(v) {
                return true
            }
            let p = scalar.properties
            return p.isEmojiPresentation || (p.isEmoji && v >= 0x2190)
        }
    }

    /// A combining mark (nonspacing, spacing or enclosing).
    public static func isMark(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return true
        default: return false
        }
    }

    /// C0 and C1 controls, DEL, bidi embeddings/overrides/isolates, zero-width and BOM marks.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        return v < 0x20 || (0x7F...0x9F).contains(v) || (0x202A...0x202E).contains(v)
            || (0x2066...0x2069).contains(v) || v == 0x200E || v == 0x200F || v == 0x061C
            || v == 0xFEFF || v == 0x200B || v == 0x2028 || v == 0x2029
    }
}

extension Substring {
    func trimmingTrailingSpaces() -> String {
        var end = endIndex
        while end > startIndex, self[index(before: end)] == " " { end = index(before: end) }
        return String(self[startIndex..<end])
    }
}

extension Preview {
    /// `text` made inert for a terminal: every control, escape and bidi override becomes a
    /// visible placeholder (␛ for ESC, ␍ for CR, � for the rest), so it can never act.
    public static func visible(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let v = scalar.value
            if v < 0x20 {
                out.append(Unicode.Scalar(0x2400 + v)!)
            } else if v == 0x7F {
                out.append("\u{2421}")
            } else if isControl(scalar) {
                out.append("\u{FFFD}")
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }
}

/// Counts in words: "1 heart", "3 hearts", "0 rows".
public enum Plural {
    public static func count(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(n) " + (n == 1 ? singular : (plural ?? singular + "s"))
    }
}

/// Text as a search compares it: lower case, without accents or marks, wide forms narrowed
/// ("Nguyễn" and "Nguye\u{0302}\u{0303}n" both "nguyen"; "Trần" is "tran"). ASCII goes through
/// by arithmetic; every other character is folded once and remembered.
public enum SearchKey {
    private static let folded = Mutex<[UInt32: String]>([:])

    public static func of(_ text: String) -> String {
        // Most text is ASCII: lowered a byte at a time, with no scalar decoded (a first sync
        // folds a million rows; the scalar walk was a tenth of its time).
        var text = text
        if let lowered = text.withUTF8({ bytes -> String? in
            guard !bytes.contains(where: { $0 >= 0x80 }) else { return nil }
            return String(unsafeUninitializedCapacity: bytes.count) { out in
                for (i, byte) in bytes.enumerated() { out[i] = byte >= 65 && byte <= 90 ? byte + 32 : byte }
                return bytes.count
            }
        }) { return lowered }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let value = scalar.value
            if value < 0x80 {
                out.append(value >= 65 && value <= 90 ? Unicode.Scalar(value + 32)! : scalar)
                continue
            }
            out.append(contentsOf: fold(scalar).unicodeScalars)
        }
        return String(out)
    }

    private static func fold(_ scalar: Unicode.Scalar) -> String {
        if let known = folded.withLock({ $0[scalar.value] }) { return known }
        let result: String
        if Preview.isMark(scalar) {
            result = ""
        } else {
            let special: [UInt32: String] = [0x0111: "d", 0x0110: "d", 0x00F8: "o", 0x00D8: "o", 0x0142: "l", 0x0141: "l",
                                             0x00DF: "ss", 0x00E6: "ae", 0x00C6: "ae", 0x0153: "oe", 0x0152: "oe"]
            result = special[scalar.value]
                ?? String(scalar).folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
        }
        folded.withLock { if $0.count < 100_000 { $0[scalar.value] = result } }
        return result
    }
}
