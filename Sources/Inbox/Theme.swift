import Foundation
import Notifications

/// A colour in a theme: the terminal's default, one of the eight, or one of 256.
public enum ThemeColor: Equatable, Sendable {
    case `default`
    case indexed(Int)

    static let names = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"]

    init?(_ word: String) {
        if word == "default" { self = .default; return }
        if let index = ThemeColor.names.firstIndex(of: word) { self = .indexed(index); return }
        guard word.hasPrefix("color"), let n = Int(word.dropFirst(5)), (0...255).contains(n) else { return nil }
        self = .indexed(n)
    }

    /// The nearest colour a terminal of `colors` colours has (256 → 8: a rough map by hue).
    /// The nearest of the first `colors` colours. On a light background (`light`) an orange
    /// becomes red: the eight-colour yellow is unreadable on white. A `background` too dark
    /// for any of the eight (a dark red, a dark grey) is the terminal's own on a dark one:
    /// the eight-colour red is a slab, not a warmth.
    func degraded(to colors: Int, light: Bool = false, background: Bool = false) -> ThemeColor {
        guard case .indexed(let n) = self, n >= colors else { return self }
        if colors < 8 { return .default }
        if background, !light, ThemeColor.luminance(n) < 0.05 { return .default }
        switch n {
        case 16: return .indexed(0)   // the cube's black (not brightened by bold on 256 colours)
        case 202...214, 166...172, 130...136, 94...100, 58...64: return .indexed(light ? 1 : 3)   // oranges, browns: yellow (red on light)
        case 52...57, 88...93, 124...129, 160...165, 196...201: return .indexed(1)    // reds
        // A grey as a background: the darkest black, the rest white. As ink it is text, which
        // must show: black on a light background, white on a dark one (a dark grey drawn black
        // on black vanished).
        case 232...243 where background: return .indexed(0)
        case 232...249: return .indexed(light ? 0 : 7)
        case 250...255: return .indexed(7)
        default: return .indexed(7)
        }
    }
}

extension ThemeColor {
    /// xterm's colour `n` as red, green and blue (0–255): the sixteen, the 6×6×6 cube, the greys.
    public static func rgb(_ n: Int) -> (r: Double, g: Double, b: Double) {
        let sixteen: [(Double, Double, Double)] = [
            (0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205), (229, 229, 229),
            (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255), (255, 0, 255), (0, 255, 255), (255, 255, 255),
        ]
        if n < 16 { return sixteen[max(0, n)] }
        if n < 232 {
            let steps: [Double] = [0, 95, 135, 175, 215, 255]
            let i = n - 16
            return (steps[i / 36], steps[(i / 6) % 6], steps[i % 6])
        }
        let v = Double(8 + (min(n, 255) - 232) * 10)
        return (v, v, v)
    }

    /// WCAG's relative luminance of xterm's colour `n` (0 black … 1 white).
    public static func luminance(_ n: Int) -> Double {
        luminance(rgb(n))
    }

    public static func luminance(_ c: (r: Double, g: Double, b: Double)) -> Double {
        func linear(_ v: Double) -> Double {
            let s = v / 255
            return s <= 0.03928 ? s / 12.92 : pow((s + 0.055) / 1.055, 2.4)
        }
        return 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b)
    }
}

/// How one role is drawn.
public struct Style: Equatable, Sendable {
    public var foreground: ThemeColor
    public var background: ThemeColor
    public var attributes: Set<String>
}

/// A broken theme file: which line, and what was wrong with it.
public struct ThemeError: Error, CustomStringConvertible {
    public let file: String
    public let line: Int
    public let message: String
    public var description: String { Preview.visible("\(file):\(line): \(message)") }
}

/// A colour theme: a style for every role, read from a `.theme` file.
public struct Theme: Equatable, Sendable {
    public var name: String
    public var styles: [Role: Style]

    public static let attributes: Set<String> = ["bold", "dim", "reverse", "underline", "italic", "normal"]
    /// The largest theme file read (the shipped ones are under 2 KiB).
    static let largestFile = 64 * 1024
    /// The longest line of a theme file.
    static let longestLine = 1024

    /// Parses `color ELEMENT FG BG [ATTR…]` lines; `#` starts a comment. Every role must be given.
    public static func parse(_ text: String, name: String, file: String) throws -> Theme {
        var styles: [Role: Style] = [:]
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            styles.merge(try parseStyles(String(raw), file: file, line: number + 1)) { _, new in new }
        }
        let missing = Role.allCases.filter { styles[$0] == nil }
        if !missing.isEmpty {
            throw ThemeError(file: file, line: 0, message: "no style for \(missing.map(\.rawValue).joined(separator: ", "))")
        }
        return Theme(name: name, styles: styles)
    }

    /// One line of a theme (or a config's `color` line): its style, or none for a blank line.
    static func parseStyles(_ raw: String, file: String, line number: Int) throws -> [Role: Style] {
        let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let words = line.split(whereSeparator: \.isWhitespace).map(String.init)
        guard !words.isEmpty else { return [:] }
        func fail(_ message: String) -> ThemeError { ThemeError(file: file, line: number, message: message) }
        guard raw.utf8.count <= Theme.longestLine else { throw fail("the line is \(raw.utf8.count) bytes; at most \(Theme.longestLine)") }
        guard words[0] == "color" else { throw fail("expected `color ELEMENT FG BG [ATTR…]`, found \"\(Theme.echo(words[0]))\"") }
        guard words.count >= 4 else { throw fail("`color` needs an element, a foreground and a background") }
        guard let role = Role(rawValue: words[1]) else {
            throw fail("unknown element \"\(Theme.echo(words[1]))\" (one of: \(Role.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        guard let fg = ThemeColor(words[2]) else { throw fail("unknown colour \"\(Theme.echo(words[2]))\"") }
        guard let bg = ThemeColor(words[3]) else { throw fail("unknown colour \"\(Theme.echo(words[3]))\"") }
        let attributes = Set(words.dropFirst(4))
        if let bad = attributes.subtracting(Theme.attributes).first { throw fail("unknown attribute \"\(Theme.echo(bad))\"") }
        return [role: Style(foreground: fg, background: bg, attributes: attributes)]
    }

    /// A word of a broken line, as an error quotes it: at most 40 characters.
    static func echo(_ word: String) -> String { word.count > 40 ? word.prefix(40) + "…" : word }

    /// Loads a theme by name (from the themes folders) or by path.
    public static func load(_ nameOrPath: String, folders: [String]) throws -> Theme {
        let path = nameOrPath.contains("/") ? nameOrPath
            : folders.map { "\($0)/\(nameOrPath).theme" }.first { FileManager.default.isReadableFile(atPath: $0) }
        guard let path, FileManager.default.isReadableFile(atPath: path) else {
            throw ThemeError(file: nameOrPath, line: 0, message: "no such theme (looked in \(folders.joined(separator: ", ")))")
        }
        // A theme is a few hundred bytes: a huge file is a mistake, refused before it is read.
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        if let size, size > Theme.largestFile {
            throw ThemeError(file: path, line: 0, message: "the file is \(size) bytes; a theme is at most \(Theme.largestFile / 1024) KiB")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ThemeError(file: path, line: 0, message: "cannot be read as UTF-8 text")
        }
        return try parse(text, name: URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent, file: path)
    }

    /// The themes found in `folders`, by name.
    public static func available(in folders: [String]) -> [String] {
        Array(Set(folders.flatMap { folder in
            ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".theme") }
                .map { String($0.dropLast(6)) }
        })).sorted { a, b in a == "tangerine" || (b != "tangerine" && a < b) }
    }

    /// How a cell of `role` under a row's `tint` is drawn: the role's foreground and attributes
    /// over the tint's background. A tint without a background of its own (or any tint, without
    /// colour) shows by its attributes instead — the selection reversed — so it is never
    /// invisible, whatever the theme.
    public func resolve(_ role: Role, tint: Role?, colourful: Bool) -> Style {
        var style = styles[role] ?? Style(foreground: .default, background: .default, attributes: [])
        if !colourful { style.foreground = .default; style.background = .default }
        guard let tint, let under = styles[tint] else { return style }
        if colourful, under.background != .default {
            // A bar (the header) lies under what is drawn on it: a role with a background of its
            // own (the badge) keeps it. A row's tint (New, the selection) covers the whole row.
            if tint != .header || style.background == .default { style.background = under.background }
            // A selection that names its ink draws the whole row in it (black on yellow).
            if tint == .selected, under.foreground != .default {
                style.foreground = under.foreground
                style.attributes.formUnion(under.attributes)
            }
        } else {
            style.attributes.formUnion(under.attributes)
        }
        return style
    }

    /// Attributes only, for terminals without colour (and when no theme file can be found).
    public static let mono = Theme(name: "mono", styles: Dictionary(uniqueKeysWithValues: Role.allCases.map { role in
        let attributes: Set<String> = switch role {
        case .title, .actor, .dot, .newRow: ["bold"]
        case .header, .footer, .selected, .badge: ["reverse"]
        // Faint text falls below 4.5:1 on either background: only what is struck through is faint.
        case .deleted: ["dim"]
        case .section: ["bold", "underline"]
        default: []
        }
        return (role, Style(foreground: .default, background: .default, attributes: attributes))
    }))
}

/// A terminal's background, for the theme drawn when none is named: light or dark.
public enum Background: String, Equatable, Sendable {
    case light, dark, unknown

    /// The theme for it: `light` on a light background, `tangerine` otherwise.
    public var defaultTheme: String { self == .light ? "light" : "tangerine" }

    /// From a colour answer's three channels (0…1): light when its luminance passes the middle.
    public init(red: Double, green: Double, blue: Double) {
        self = 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.5 ? .light : .dark
    }

    /// What decides: `STEPO_BACKGROUND` (light or dark) when set, else the terminal's answer to
    /// the colour question, else `COLORFGBG` ("15;0": foreground 15 on background 0), else unknown.
    public static func chosen(answered: Background?, environment: [String: String]) -> Background {
        if let forced = environment["STEPO_BACKGROUND"].flatMap(Background.init(rawValue:)), forced != .unknown { return forced }
        if let answered, answered != .unknown { return answered }
        if let pair = environment["COLORFGBG"], let last = pair.split(separator: ";").last, let index = Int(last) {
            return index == 7 || (9...15).contains(index) ? .light : .dark
        }
        return .unknown
    }

    /// Finds an OSC 11 answer (`ESC ] 11 ; rgb:RRRR/GGGG/BBBB` ended by BEL or `ESC \`) in
    /// `bytes`: the background it says, and the bytes without it. Nil when none is whole yet.
    public static func takeAnswer(_ bytes: [UInt8]) -> (Background, [UInt8])? {
        let start: [UInt8] = [0x1B, 0x5D, 0x31, 0x31, 0x3B]  // ESC ] 1 1 ;
        guard bytes.count >= start.count, let at = (0...(bytes.count - start.count)).first(where: { Array(bytes[$0..<($0 + start.count)]) == start }) else {
            return nil
        }
        var end = at + start.count
        var terminator = 0
        while end < bytes.count {
            if bytes[end] == 0x07 { terminator = 1; break }
            if bytes[end] == 0x1B, end + 1 < bytes.count, bytes[end + 1] == 0x5C { terminator = 2; break }
            end += 1
        }
        guard terminator > 0 else { return nil }
        let text = String(decoding: bytes[(at + start.count)..<end], as: UTF8.self)
        let rest = Array(bytes[..<at]) + Array(bytes[(end + terminator)...])
        guard text.hasPrefix("rgb:") else { return (.unknown, rest) }
        let channels = text.dropFirst(4).split(separator: "/").map { part -> Double? in
            guard let value = UInt64(part, radix: 16), !part.isEmpty else { return nil }
            return Double(value) / Double((1 << (4 * part.count)) - 1)
        }
        guard channels.count == 3, let r = channels[0], let g = channels[1], let b = channels[2] else { return (.unknown, rest) }
        return (Background(red: r, green: g, blue: b), rest)
    }
}
