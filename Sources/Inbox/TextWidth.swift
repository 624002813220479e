import Foundation
import CNcursesw
import Notifications

/// The kinds of grapheme cluster terminals disagree on, and the cells each takes in this one.
///
/// Unicode says a flag, a ZWJ family, a skin-toned emoji and an emoji asked for with U+FE0F
/// each take two cells; tmux 3.3 gives the skin-toned one four and ❤️ one, and older
/// terminals draw a family as its members side by side. The inbox asks the terminal (see
/// `Terminal.measure`) and decides every such cluster's width from the answer, once.
public struct ClusterWidths: Equatable, Sendable {
    public var flag = 2
    public var joined = 2
    public var skinTone = 2
    public var emojiVariation = 2

    public init() {}

    /// One sample of each kind, in the order they are measured.
    static var samples: [(WritableKeyPath<ClusterWidths, Int>, String)] { [
        (\.flag, "\u{1F1FA}\u{1F1F8}"), (\.joined, "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}"),
        (\.skinTone, "\u{1F44D}\u{1F3FD}"), (\.emojiVariation, "\u{2764}\u{FE0F}"),
    ] }
}

/// Text measured in terminal cells: combining marks take none, East Asian wide characters and
/// emoji take two, and the clusters terminals disagree on what this terminal said. Text is cut
/// only between characters (whole grapheme clusters), never inside one.
public enum TextWidth {
    /// What this terminal answered when measured (Unicode's widths until then). Measured once
    /// at start, before any other thread draws or measures.
    nonisolated(unsafe) public static var clusters = ClusterWidths()

    /// The cells `character` takes: one decision for the whole cluster.
    public static func cells(_ character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if first.value < 0x7F && scalars.count == 1 { return first.value < 0x20 ? 0 : 1 }
        if scalars.count > 1 {
            if (0x1F1E6...0x1F1FF).contains(first.value) { return clusters.flag }
            if scalars.contains("\u{200D}") && first.properties.isEmoji { return clusters.joined }
            if scalars.contains(where: { (0x1F3FB...0x1F3FF).contains($0.value) }) { return clusters.skinTone }
            if scalars.contains("\u{FE0F}") && !first.properties.isEmojiPresentation { return clusters.emojiVariation }
        }
        // Emoji take two cells when shown as emoji by default; text-style symbols (♥, ↗, ©) one.
        if first.properties.isEmojiPresentation || (0x1F1E6...0x1F1FF).contains(first.value) { return 2 }
        if first.value < 0x7F { return 1 }  // a letter under marks
        // The base decides: marks after it take no cell.
        var width = Int(stepo_wcwidth(first.value))
        // wcwidth knows nothing without a UTF-8 locale: fall back on Unicode's own properties.
        if width < 0 || (width == 0 && !Preview.isMark(first)) {
            width = isWide(first) ? 2 : (Preview.isMark(first) ? 0 : 1)
        }
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
