import Foundation
import Testing
@testable import Inbox

@Suite("Themes")
struct ThemeTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("themes").path

    @Test("the shipped themes load and style every element", arguments: ["tangerine", "light", "high-contrast", "mono"])
    func shipped(name: String) throws {
        let theme = try Theme.load(name, folders: [Self.folder])
        #expect(theme.name == name)
        #expect(Set(theme.styles.keys) == Set(Role.allCases))
    }

    @Test("a huge theme file is refused before it is read, a long line is refused, and an error quotes at most 40 characters of it")
    func hugeThemes() throws {
        let folder = NSTemporaryDirectory() + "stepo-theme-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let huge = folder + "/huge.theme"
        try Data(repeating: UInt8(ascii: "x"), count: 8 << 20).write(to: URL(fileURLWithPath: huge))
        let started = Date()
        #expect { try Theme.load(huge, folders: []) } throws: { error in
            let text = "\(error)"
            return text.contains("8388608 bytes; a theme is at most 64 KiB") && text.count < 200
        }
        #expect(Date().timeIntervalSince(started) < 1)
        let long = folder + "/long.theme"
        try ("color " + String(repeating: "y", count: 5000) + "\n").write(toFile: long, atomically: true, encoding: .utf8)
        #expect { try Theme.load(long, folders: []) } throws: { "\($0)".contains("the line is 5006 bytes; at most 1024") && "\($0)".count < 200 }
        let word = folder + "/word.theme"
        try ("color " + String(repeating: "z", count: 900) + " red black\n").write(toFile: word, atomically: true, encoding: .utf8)
        #expect { try Theme.load(word, folders: []) } throws: { "\($0)".contains("unknown element \"" + String(repeating: "z", count: 40) + "…\"") }
    }

    @Test("tangerine is colour 208, and degrades to yellow on 8 colours")
    func degrade() throws {
        let theme = try Theme.load("tangerine", folders: [Self.folder])
        #expect(theme.styles[.dot]?.foreground == .indexed(208))
        #expect(theme.styles[.dot]?.foreground.degraded(to: 8) == .indexed(3))
        #expect(theme.styles[.dot]?.foreground.degraded(to: 256) == .indexed(208))
    }

    @Test("on eight colours the light theme's oranges turn red, not a yellow unreadable on white")
    func lightOnEight() throws {
        let theme = try Theme.load("light", folders: [Self.folder])
        for role in [Role.section, .title, .dot] {
            let colour = try #require(theme.styles[role]?.foreground)
            #expect(colour.degraded(to: 8, light: true) == .indexed(1), "\(role)")
            #expect(colour.degraded(to: 8, light: false) == .indexed(3), "\(role)")
        }
    }

    @Test("on eight colours the selection is reversed in every theme, so it shows on black and on white")
    func selectionOnEight() throws {
        for name in ["tangerine", "light", "high-contrast"] {
            let theme = try Theme.load(name, folders: [Self.folder])
            for role in [Role.actor, .body, .time] {
                let style = Palette.resolve(theme, role, tint: .selected, colourful: true, colours: 8)
                #expect(style.attributes.contains("reverse"), "\(name) \(role)")
                #expect(style.background == theme.styles[role]?.background, "\(name) \(role)")
                // On 256 colours: the bar's own background.
                let rich = Palette.resolve(theme, role, tint: .selected, colourful: true, colours: 256)
                #expect(rich.background == theme.styles[.selected]?.background)
            }
        }
    }

    @Test("a selection that names its ink draws the whole row in it: high contrast is black on yellow")
    func selectionInk() throws {
        let theme = try Theme.load("high-contrast", folders: [Self.folder])
        for role in [Role.actor, .body, .dot, .time] {
            let style = theme.resolve(role, tint: .selected, colourful: true)
            #expect(style.foreground == theme.styles[.selected]?.foreground, "\(role)")
            #expect(style.background == theme.styles[.selected]?.background, "\(role)")
        }
        // A selection without ink of its own keeps each role's (tangerine); light names black, so
        // an orange dot on its grey bar does not fall below 4.5:1.
        let tangerine = try Theme.load("tangerine", folders: [Self.folder])
        #expect(tangerine.resolve(.actor, tint: .selected, colourful: true).foreground == tangerine.styles[.actor]?.foreground)
        let light = try Theme.load("light", folders: [Self.folder])
        #expect(light.resolve(.dot, tint: .selected, colourful: true).foreground == .indexed(16))
    }

    @Test("a broken theme is an error naming the file and the line", arguments: [
        ("color dot orange default", 1, "unknown colour \"orange\""),
        ("# ok\ncolour dot red default", 2, "expected `color ELEMENT FG BG [ATTR…]`, found \"colour\""),
        ("color sparkle red default", 1, "unknown element \"sparkle\""),
        ("color dot red default blink", 1, "unknown attribute \"blink\""),
        ("color dot red", 1, "`color` needs an element, a foreground and a background"),
    ])
    func broken(text: String, line: Int, message: String) {
        do {
            _ = try Theme.parse(text, name: "x", file: "x.theme")
            Issue.record("expected an error")
        } catch let error as ThemeError {
            #expect(error.line == line)
            #expect(error.message.hasPrefix(message))
            #expect(error.description == "x.theme:\(line): \(error.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("a theme must style every element")
    func incomplete() {
        #expect(throws: ThemeError.self) { try Theme.parse("color dot red default", name: "x", file: "x.theme") }
    }

    @Test("themes are listed with tangerine first")
    func listing() {
        #expect(Theme.available(in: [Self.folder]) == ["tangerine", "high-contrast", "light", "mono"])
    }

    @Test("in every theme, with colour or without, the selected row differs from a plain row and from a New one",
          arguments: ["tangerine", "high-contrast", "light", "mono"])
    func selectionShows(name: String) throws {
        let named = try Theme.load(name, folders: [Self.folder])
        // Without colour the terminal draws the monochrome theme whatever was named.
        for (theme, colourful) in [(named, true), (Theme.mono, false)] {
            for role in [Role.actor, .body, .time, .dot] {
                let selected = theme.resolve(role, tint: .selected, colourful: colourful)
                #expect(selected != theme.resolve(role, tint: nil, colourful: colourful), "\(name) \(role) colourful \(colourful)")
                if colourful || theme.styles[.newRow]?.attributes.isEmpty == false {
                    #expect(selected != theme.resolve(role, tint: .newRow, colourful: colourful), "\(name) \(role) over New")
                }
            }
        }
    }

    @Test("the background a terminal answers picks the theme: light for a white one, tangerine for a dark one")
    func background() {
        let white: [UInt8] = Array("\u{1B}]11;rgb:ffff/ffff/ffff\u{1B}\\\u{1B}[3;1R".utf8)
        let (found, rest) = try! #require(Background.takeAnswer(white))
        #expect(found == .light && rest == Array("\u{1B}[3;1R".utf8))
        #expect(Background.takeAnswer(Array("\u{1B}]11;rgb:1e1e/1e1e/2020\u{7}".utf8))?.0 == .dark)
        #expect(Background.takeAnswer(Array("\u{1B}]11;rgb:ffff/ff".utf8)) == nil)  // not whole yet
        #expect(Background.chosen(answered: nil, environment: ["COLORFGBG": "0;15"]) == .light)
        #expect(Background.chosen(answered: nil, environment: ["COLORFGBG": "15;0"]) == .dark)
        #expect(Background.chosen(answered: .dark, environment: ["STEPO_BACKGROUND": "light"]) == .light)
        #expect(Background.chosen(answered: nil, environment: [:]).defaultTheme == "tangerine")
        #expect(Background.light.defaultTheme == "light")
    }
}

@Suite("The reader's config")
struct ConfigTests {
    @Test("bind maps a key to a function, color goes over the theme, set names the theme")
    func reads() throws {
        let config = try InboxConfig.parse("""
            # mine
            bind x quit
            bind <Tab> move-down      # why not
            color newRow default color22 bold
            set theme high-contrast
            """, file: "config")
        #expect(config.map(.character("x")) == .character("q"))
        #expect(config.map(.tab) == .character("j"))
        #expect(config.map(.character("k")) == .character("k"))
        #expect(config.theme == "high-contrast")
        #expect(config.colors[.newRow] == Style(foreground: .default, background: .indexed(22), attributes: ["bold"]))
        #expect(config.dress(Theme.mono).styles[.newRow]?.background == .indexed(22))
        #expect(config.helpLines.contains("x  quit  (your config)"))
    }

    @Test("a line that cannot be read names its file and line, and what was wrong",
          arguments: [("bind", "config:1: `bind` takes a key and a function: bind KEY FUNCTION"),
                      ("bind xx quit", "config:1: unknown key \"xx\""),
                      ("bind x fly", "config:1: unknown function \"fly\""),
                      ("\ncolor nowhere red black", "config:2: unknown element \"nowhere\""),
                      ("set colour red", "config:1: `set` takes: set theme NAME"),
                      ("macro x y", "config:1: unknown command \"macro\"")])
    func errors(text: String, said: String) {
        do {
            _ = try InboxConfig.parse(text, file: "config")
            Issue.record("\(text) was accepted")
        } catch {
            #expect("\(error)".hasPrefix(said), "\(error)")
        }
    }

    @Test("a key bound to other work is not offered for its old one: the footer and the help name the keys that do it now")
    func hintsFollowBindings() throws {
        let config = try InboxConfig.parse("bind q move-down\nbind x quit\nbind j theme\n", file: "config")
        #expect(config.labels == ["q": "x", "j": "q"])
        var state = Fixture.opened()
        state.keyLabels = config.labels
        let footer = ActivityView.render(state).lines.last ?? ""
        #expect(footer.contains("x quit") && !footer.contains("q quit"), "\(footer)")
        #expect(footer.contains("q/k move") && !footer.contains("j/k"), "\(footer)")
        _ = Inbox.reduce(&state, .keyPressed(.character("?")))
        let help = ActivityView.render(state).lines.joined(separator: "\n")
        #expect(help.contains("q/k ↑/↓  move"), "\(help)")
        #expect(ActivityView.relabel("q Esc ←  back one screen / quit", config.labels, separator: "  ") == "x Esc ←  back one screen / quit")
        // Unbound, nothing changes.
        #expect(ActivityView.relabel("q quit", [:]) == "q quit")
        #expect(ActivityView.relabel("/ filter", ["/": ""]) == nil)
    }

    @Test("a config named with --config must exist and be a readable text file; a bad byte names its line")
    func unreadable() throws {
        let folder = NSTemporaryDirectory() + "stepo-config-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(throws: ThemeError.self) { try InboxConfig.load(folder + "/none", required: true) }
        #expect(try InboxConfig.load(folder + "/none") == InboxConfig())
        do { _ = try InboxConfig.load(folder, required: true); Issue.record("a folder was read") } catch {
            #expect("\(error)".contains("this is a folder"), "\(error)")
        }
        try Data("bind x quit\n# ok\nbind \u{FF}".utf8.map { $0 == 0xC3 ? 0xFF : $0 }).write(to: URL(fileURLWithPath: folder + "/bad"))
        do { _ = try InboxConfig.load(folder + "/bad"); Issue.record("invalid UTF-8 was read") } catch let error as ThemeError {
            #expect(error.line == 3 && error.message == "this line is not UTF-8 text", "\(error)")
        }
    }

    @Test("a config that is not there is an empty one; the default lives under XDG_CONFIG_HOME")
    func absent() throws {
        #expect(try InboxConfig.load("/nonexistent/stepo/config") == InboxConfig())
        #expect(InboxConfig.defaultPath(environment: ["XDG_CONFIG_HOME": "/x/conf"]) == "/x/conf/stepo/config")
        #expect(InboxConfig.defaultPath(environment: ["HOME": "/home/me"]) == "/home/me/.config/stepo/config")
    }
}
