import Foundation
import Testing
@testable import Inbox

/// Every ink the inbox draws text in reads at WCAG AA (4.5:1 against what is under it), in
/// every shipped theme, on 256 colours and on 8, on the background the theme is drawn on —
/// measured from the theme files themselves through the same resolution the terminal uses.
@Suite("Contrast")
struct ContrastTests {
    typealias RGB = (r: Double, g: Double, b: Double)

    static func rgb(_ n: Int) -> RGB { ThemeColor.rgb(n) }
    static func luminance(_ c: RGB) -> Double { ThemeColor.luminance(c) }

    static func contrast(_ a: RGB, _ b: RGB) -> Double {
        let (x, y) = (luminance(a), luminance(b))
        return (max(x, y) + 0.05) / (min(x, y) + 0.05)
    }

    /// A terminal's own colours: a dark one light grey on black, a light one black on white.
    static func defaults(light: Bool) -> (foreground: RGB, background: RGB) {
        let black: RGB = (0, 0, 0), white: RGB = (255, 255, 255), grey: RGB = (229, 229, 229)
        return light ? (black, white) : (grey, black)
    }

    /// The colours a cell of `role` under `tint` is drawn in, as xterm draws them: the theme
    /// resolved and degraded as the terminal does (`Palette`), bold brightening the eight
    /// colours (xterm's boldColors), reverse swapping, dim halfway to the background.
    static func drawn(_ theme: Theme, _ role: Role, tint: Role?, colours: Int, light: Bool) -> (text: RGB, under: RGB) {
        let style = Palette.resolve(theme, role, tint: tint, colourful: true, colours: colours, light: light)
        let (fgColour, bgColour) = Palette.inks(style, colours: colours, light: light)
        let terminal = defaults(light: light)
        var fg: RGB
        switch fgColour {
        case .default: fg = terminal.foreground
        case .indexed(let n): fg = rgb(style.attributes.contains("bold") && n < 8 ? n + 8 : n)
        }
        var bg: RGB
        switch bgColour {
        case .default: bg = terminal.background
        case .indexed(let n): bg = rgb(n)
        }
        if style.attributes.contains("reverse") { swap(&fg, &bg) }
        if style.attributes.contains("dim") { fg = ((fg.r + bg.r) / 2, (fg.g + bg.g) / 2, (fg.b + bg.b) / 2) }
        return (fg, bg)
    }

    /// Where each role draws text, and under which tints.
    static let uses: [(role: Role, tints: [Role?])] = [
        // A list row: plain, New, selected.
        (.dot, [nil, .newRow, .selected]), (.actor, [nil, .newRow, .selected]), (.body, [nil, .newRow, .selected]),
        (.time, [nil, .newRow, .selected]), (.dim, [nil, .newRow, .selected]),
        // The header bar.
        (.title, [nil, .header]), (.badge, [nil, .header]), (.status, [.header]),
        // Headings, the footer, a lit line.
        (.section, [nil]), (.footer, [nil]), (.selected, [.selected]),
    ]

    static let themes: [(name: String, light: [Bool])] = [
        ("tangerine", [false]), ("high-contrast", [false, true]), ("light", [true]), ("mono", [false, true]),
    ]

    @Test("every role's text reads at 4.5:1 or better in every theme, on 256 colours and on 8",
          arguments: ["tangerine", "high-contrast", "light", "mono"])
    func aa(name: String) throws {
        let theme = try Theme.load(name, folders: [ThemeTests.folder])
        let backgrounds = try #require(Self.themes.first { $0.name == name }).light
        var failures: [String] = []
        for light in backgrounds {
            for colours in [256, 8] {
                for (role, tints) in Self.uses {
                    for tint in tints {
                        let (text, under) = Self.drawn(theme, role, tint: tint, colours: colours, light: light)
                        let ratio = Self.contrast(text, under)
                        if ratio < 4.5 {
                            failures.append(String(format: "%@ on %@, %d colours: %@ under %@ %.2f:1", name, light ? "light" : "dark",
                                                   colours, role.rawValue, tint?.rawValue ?? "nothing", ratio))
                        }
                    }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    @Test("the measure itself: black on white is 21:1, grey 244 on black about 5.3:1, xterm's red on black about 4:1")
    func measure() {
        #expect(abs(Self.contrast((0, 0, 0), (255, 255, 255)) - 21) < 0.01)
        #expect(abs(Self.contrast(Self.rgb(244), Self.rgb(0)) - 5.32) < 0.05)
        #expect(Self.contrast(Self.rgb(1), Self.rgb(0)) < 4.5)
    }

    @Test("struck-through text is exempt from 4.5:1 (inactive content), yet never drawn in the colour under it")
    func deletedShows() throws {
        for (name, backgrounds) in Self.themes {
            let theme = try Theme.load(name, folders: [ThemeTests.folder])
            for light in backgrounds {
                for colours in [256, 8] {
                    for tint in [nil, Role.newRow, .selected] {
                        let (text, under) = Self.drawn(theme, .deleted, tint: tint, colours: colours, light: light)
                        #expect(Self.contrast(text, under) >= 2, "\(name) \(light ? "light" : "dark") \(colours) under \(tint?.rawValue ?? "nothing")")
                    }
                }
            }
        }
    }

    @Test("on eight colours a New row is no red slab, and a dark bar is not drawn as a colour the eight have not")
    func noSlab() throws {
        let theme = try Theme.load("tangerine", folders: [ThemeTests.folder])
        let (_, under) = Self.drawn(theme, .body, tint: .newRow, colours: 8, light: false)
        #expect(Self.luminance(under) < 0.05, "a New row's background on 8 colours: \(under)")
    }
}
