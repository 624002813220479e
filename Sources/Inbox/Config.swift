import Foundation

/// The reader's own keys and colours, from `$XDG_CONFIG_HOME/stepo/config`
/// (`~/.config/stepo/config`), written as mutt's are:
///
///     # comments
///     bind x quit              # a key, then what it does
///     bind <Tab> next-unread
///     color newRow default color22
///     set theme high-contrast
///
/// A key is one character or a name in angle brackets (`<Tab>`, `<Space>`, `<Enter>`, `<Esc>`,
/// `<Up>`, `<Down>`, `<Left>`, `<Right>`, `<PageUp>`, `<PageDown>`, `<Home>`, `<End>`,
/// `<BackTab>`, `<Backspace>`). A colour line is a theme's (`color ELEMENT FG BG [ATTR…]`) and
/// goes over whatever theme is drawn. Any error names the file and the line.
public struct InboxConfig: Equatable, Sendable {
    /// Pressed key → the key whose function it takes.
    public var bindings: [Key: Key] = [:]
    /// Styles drawn over the theme's.
    public var colors: [Role: Style] = [:]
    /// The theme named by `set theme`.
    public var theme: String?

    public init() {}

    /// What a key may be bound to, each by the key that does it by default.
    public static let functions: [(name: String, key: Key)] = [
        ("move-down", .character("j")), ("move-up", .character("k")), ("page-down", .pageDown), ("page-up", .pageUp),
        ("first", .character("g")), ("last", .character("G")), ("next-unread", .character("n")),
        ("previous-unread", .character("N")), ("expand", .space), ("open", .enter), ("interactions", .character("i")),
        ("accept", .character("a")), ("decline", .character("d")), ("follow-back", .character("f")),
        ("alerts", .character("b")), ("filter", .character("/")), ("mark-all-read", .character("A")),
        ("preview", .character("p")), ("copy-link", .character("y")), ("open-link", .character("o")),
        ("sync", .character("r")), ("settings", .character("s")), ("theme", .character("t")),
        ("help", .character("?")), ("quit", .character("q")), ("back", .escape),
        ("tab-all", .character("0")), ("tab-step-with", .character("1")), ("tab-social", .character("2")),
        ("tab-engagement", .character("3")), ("tab-journeys", .character("4")), ("tab-stepo", .character("5")),
    ]

    static let keyNames: [String: Key] = [
        "Tab": .tab, "BackTab": .backTab, "Space": .space, "Enter": .enter, "Esc": .escape, "Up": .up, "Down": .down,
        "Left": .left, "Right": .right, "PageUp": .pageUp, "PageDown": .pageDown, "Home": .home, "End": .end,
        "Backspace": .backspace,
    ]

    /// The default config file's path (it need not exist).
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        return base + "/stepo/config"
    }

    /// Reads `path`. A file that is not there is an empty config, unless it was asked for by
    /// name (`required`: `--config FILE`).
    public static func load(_ path: String, required: Bool = false) throws -> InboxConfig {
        var folder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &folder) else {
            if required { throw ThemeError(file: path, line: 0, message: "there is no such file") }
            return InboxConfig()
        }
        guard !folder.boolValue else { throw ThemeError(file: path, line: 0, message: "this is a folder, not a config file") }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ThemeError(file: path, line: 0, message: "cannot be read (\(String(cString: strerror(errno))))")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            // Name the first line that is not UTF-8.
            let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            let bad = lines.firstIndex { String(data: Data($0), encoding: .utf8) == nil } ?? 0
            throw ThemeError(file: path, line: bad + 1, message: "this line is not UTF-8 text")
        }
        return try parse(text, file: path)
    }

    public static func parse(_ text: String, file: String) throws -> InboxConfig {
        var config = InboxConfig()
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            func fail(_ message: String) -> ThemeError { ThemeError(file: file, line: number + 1, message: message) }
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = line.split(whereSeparator: \.isWhitespace).map(String.init)
            guard let command = words.first else { continue }
            switch command {
            case "bind":
                guard words.count == 3 else { throw fail("`bind` takes a key and a function: bind KEY FUNCTION") }
                guard let key = parseKey(words[1]) else {
                    throw fail("unknown key \(quoted(words[1])) (one character, or one of <\(keyNames.keys.sorted().joined(separator: "> <"))>)")
                }
                guard let function = functions.first(where: { $0.name == words[2] }) else {
                    throw fail("unknown function \(quoted(words[2])) (one of: \(functions.map(\.name).joined(separator: ", ")))")
                }
                config.bindings[key] = function.key
            case "color":
                // A theme's line, checked as a theme checks it.
                let one = try Theme.parseStyles(String(line), file: file, line: number + 1)
                config.colors.merge(one) { _, new in new }
            case "set":
                guard words.count == 3, words[1] == "theme" else { throw fail("`set` takes: set theme NAME") }
                config.theme = words[2]
            default:
                throw fail("unknown command \(quoted(command)) (bind, color or set)")
            }
        }
        return config
    }

    static func parseKey(_ word: String) -> Key? {
        if word.hasPrefix("<"), word.hasSuffix(">"), word.count > 2 { return keyNames[String(word.dropFirst().dropLast())] }
        guard word.count == 1, let character = word.first, !character.isWhitespace else { return nil }
        return character == " " ? .space : .character(character)
    }

    private static func quoted(_ word: String) -> String {
        "\"" + String(String.UnicodeScalarView(word.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : $0 }).prefix(40)) + "\""
    }

    /// The key a pressed one stands for.
    public func map(_ key: Key) -> Key { bindings[key] ?? key }

    /// The help screen's lines for the reader's own bindings.
    public var helpLines: [String] {
        bindings.sorted { "\($0.key)" < "\($1.key)" }.compactMap { key, target in
            guard let name = InboxConfig.functions.first(where: { $0.key == target })?.name else { return nil }
            return "\(InboxConfig.describe(key))  \(name)  (your config)"
        }
    }

    /// For each default key that no longer does its work (bound to another), the keys that do
    /// it now, as the footer and the help name keys ("" when none does).
    public var labels: [String: String] {
        var labels: [String: String] = [:]
        for (_, key) in InboxConfig.functions {
            guard let now = bindings[key], now != key else { continue }
            let doers = bindings.filter { $0.value == key }.map(\.key).map(InboxConfig.label).sorted()
            labels[InboxConfig.label(key)] = doers.joined(separator: "/")
        }
        return labels
    }

    /// A key as the footer names it: `q`, `Enter`, `Tab`.
    static func label(_ key: Key) -> String {
        if case .character(let c) = key { return String(c) }
        return keyNames.first { $0.value == key }?.key ?? "?"
    }

    static func describe(_ key: Key) -> String {
        if case .character(let c) = key { return String(c) }
        return "<" + (keyNames.first { $0.value == key }?.key ?? "?") + ">"
    }

    /// `theme` with this config's colours over it.
    public func dress(_ theme: Theme) -> Theme {
        var dressed = theme
        dressed.styles.merge(colors) { _, mine in mine }
        return dressed
    }
}
