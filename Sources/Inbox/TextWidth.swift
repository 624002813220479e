import Foundation
import CNcursesw
import Notifications

/// Text measured in terminal cells: combining marks take none, East Asian wide characters and
/// emoji take two. Text is cut only between characters, never inside one.
public enum TextWidth {
    /// The cells `character` takes (0, 1 or 2).
    public static func cells(_ character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if first.value < 0x7F { return first.value < 0x20 ? 0 : 1 }
        // Emoji take two cells when shown as emoji: emoji presentation by default, or asked
        // for with U+FE0F. Text-style symbols (♥, ↗, ©) take one.
        if first.properties.isEmojiPresentation || scalars.contains("\u{FE0F}")
            || (0x1F1E6...0x1F1FF).contains(first.value) { return 2 }
        var width = 0
        for scalar in scalars {
            let w = Int(stepo_wcwidth(scalar.value))
            width = max(width, w)
        }
        // wcwidth knows nothing without a UTF-8 locale: fall back on Unicode's own properties.
        if width <= 0 { width = isWide(first) ? 2 : (first.properties.generalCategory == .nonspacingMark ? 0 : 1) }
        return min(width, 2)
    }

    public static func cells(_ text: String) -> Int { text.reduce(0) { $0 + cells($1) } }

    /// `text` cut to at most `width` cells, with `…` when it was cut.
    public static func fit(_ text: String, width: Int) -> String {
        guard width > 0 else { return "" }
        guard cells(text) > width else { return text }
        var out = ""
        var used = 0
        for character in text {
            let w = cells(character)
            if used + w > width - 1 { break }
            out.append(character)
            used += w
        }
        return out + "…"
    }

    /// `text` in at most `lines` lines of `width` cells, broken at spaces (inside a word only
    /// when it is longer than a line); the last line ends with `…` when text is left over.
    public static func wrap(_ text: String, width: Int, lines count: Int) -> [String] {
        guard width > 0, count > 0 else { return [] }
        var out: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty && out.count < count {
            if out.count == count - 1 || cells(String(rest)) <= width {
                out.append(fit(String(rest), width: width))
                break
            }
            // The longest run of whole words that fits; a single long word is cut.
            var used = 0
            var end = rest.startIndex
            var lastSpace: Substring.Index?
            for index in rest.indices {
                let w = cells(rest[index])
                if used + w > width { break }
                used += w
                end = rest.index(after: index)
                if rest[index] == " " { lastSpace = index }
            }
            let cut = (end < rest.endIndex && rest[end] != " ") ? (lastSpace ?? end) : end
            out.append(String(rest[..<cut]).trimmingCharacters(in: .whitespaces))
            rest = rest[cut...].drop { $0 == " " }
        }
        return out
    }

    /// East Asian wide and fullwidth ranges (when the locale cannot say).
    static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        return (0x1100...0x115F).contains(v) || (0x2E80...0xA4CF).contains(v) || (0xAC00...0xD7A3).contains(v)
            || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v) || (0xFF00...0xFF60).contains(v)
            || (0xFFE0...0xFFE6).contains(v) || (0x20000...0x3FFFD).contains(v)
    }
}
