import CNcursesw
import Foundation

/// The real terminal, through ncursesw: platform calls kept behind one namespace.
enum Terminal {
    /// What a read returned.
    enum Input: Equatable {
        case key(Key)
        case resized(width: Int, height: Int)
        case none
    }

    nonisolated(unsafe) static var window: UnsafeMutablePointer<WINDOW>?
    nonisolated(unsafe) static var attributes: [Role: (attr: attr_t, pair: Int16)] = [:]
    /// A locale without UTF-8: draw ASCII stand-ins for the inbox's glyphs, letters without
    /// their marks ("Trần" as "Tran"), `?` for the rest.
    nonisolated(unsafe) static var asciiOnly = false

    /// ASCII stand-ins for the glyphs the inbox draws, and for the letters that folding their
    /// marks away does not reach.
    static let asciiStandIns: [Character: Character] = [
        "●": "*", "▸": ">", "▾": "v", "▏": "|", "…": ".", "—": "-", "·": "-", "♥": "<", "↗": "^", "★": "*",
        "┌": "+", "└": "+", "─": "-", "│": "|", "␛": "^", "�": "?",
        "Đ": "D", "đ": "d", "Ø": "O", "ø": "o", "Ł": "L", "ł": "l", "ß": "s", "Æ": "A", "æ": "a", "Œ": "O", "œ": "o",
    ]

    nonisolated(unsafe) private static var standIns: [Character: Character] = [:]

    /// What an ASCII-only terminal shows for `character`: itself when ASCII, the glyph's stand-in,
    /// the letter without its marks, or `?`.
    static func asciiStandIn(_ character: Character) -> Character {
        if character.isASCII { return character }
        if let known = standIns[character] { return known }
        var result: Character = "?"
        if let standIn = asciiStandIns[character] {
            result = standIn
        } else {
            let folded = String(character).folding(options: [.diacriticInsensitive, .widthInsensitive], locale: nil)
            if folded.count == 1, let first = folded.first, first.isASCII, !first.isWhitespace || character.isWhitespace {
                result = first
            }
        }
        standIns[character] = result
        return result
    }

    /// Takes over the terminal, in `theme`.
    static func start(theme: Theme) {
        // A parent may hand down a blocked SIGWINCH (a program started from a thread pool's
        // thread inherits its mask); resizes must reach ncurses all the same.
        var winch = sigset_t()
        sigemptyset(&winch)
        sigaddset(&winch, SIGWINCH)
        pthread_sigmask(SIG_UNBLOCK, &winch, nil)
        setlocale(LC_ALL, "")
        asciiOnly = stepo_locale_is_utf8() == 0
        window = initscr()
        cbreak()
        noecho()
        nonl()
        keypad(window, true)
        wtimeout(window, 100)
        curs_set(0)
        mousemask(stepo_mouse_events(), nil)
        mouseinterval(200)
        if has_colors() && ProcessInfo.processInfo.environment["NO_COLOR"] == nil {
            start_color()
            use_default_colors()
        }
        apply(theme)
    }

    /// Uses `theme` from now on: its colours degraded to what the terminal has (256, 8), or
    /// the monochrome theme's attributes alone when it has none or NO_COLOR is set.
    static func apply(_ theme: Theme) {
        let colourful = has_colors() && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
        let colours = Int(stepo_colors())
        let effective = colourful ? theme : Theme.mono
        func number(_ colour: ThemeColor) -> Int16 {
            switch colour.degraded(to: colours) {
            case .default: return -1
            case .indexed(let n): return Int16(n)
            }
        }
        for (index, role) in Role.allCases.enumerated() {
            guard let style = effective.styles[role] else { continue }
            var attr = stepo_a_normal()
            for name in style.attributes {
                switch name {
                case "bold": attr |= stepo_a_bold()
                case "dim": attr |= stepo_a_dim()
                case "reverse": attr |= stepo_a_reverse()
                case "underline": attr |= stepo_a_underline()
                case "italic": attr |= stepo_a_italic()
                default: break
                }
            }
            if colourful {
                init_pair(Int16(index + 1), number(style.foreground), number(style.background))
                attributes[role] = (attr, Int16(index + 1))
            } else {
                attributes[role] = (attr, 0)
            }
        }
    }

    static func stop() {
        endwin()
    }

    static var size: (width: Int, height: Int) {
        guard let window else { return (80, 24) }
        return (Int(getmaxx(window)), Int(getmaxy(window)))
    }

    /// Copies the grid out and flushes once.
    static func draw(_ grid: Grid) {
        guard let window else { return }
        werase(window)
        for y in 0..<grid.height {
            for x in 0..<grid.width {
                let cell = grid.cells[y * grid.width + x]
                guard var character = cell.character else { continue }
                if asciiOnly { character = asciiStandIn(character) }
                let style = attributes[cell.role] ?? (stepo_a_normal(), 0)
                var wide = character.unicodeScalars.map { wchar_t(bitPattern: $0.value) } + [0]
                var cc = cchar_t()
                setcchar(&cc, &wide, style.attr, style.pair, nil)
                mvwadd_wch(window, Int32(y), Int32(x), &cc)
            }
        }
        wnoutrefresh(window)
        doupdate()
    }

    /// The next key (or resize) within the read timeout.
    static func read() -> Input {
        guard let window else { return .none }
        var wide: wint_t = 0
        let result = wget_wch(window, &wide)
        if result == ERR { return .none }
        if result == KEY_CODE_YES {
            switch Int32(wide) {
            case KEY_UP: return .key(.up)
            case KEY_DOWN: return .key(.down)
            case KEY_LEFT: return .key(.left)
            case KEY_RIGHT: return .key(.right)
            case KEY_NPAGE: return .key(.pageDown)
            case KEY_PPAGE: return .key(.pageUp)
            case KEY_HOME: return .key(.home)
            case KEY_END: return .key(.end)
            case KEY_ENTER: return .key(.enter)
            case KEY_BACKSPACE: return .key(.backspace)
            case KEY_MOUSE:
                var event = MEVENT()
                guard getmouse(&event) == OK else { return .none }
                if stepo_mouse_wheel_up(event.bstate) != 0 { return .key(.wheelUp) }
                if stepo_mouse_wheel_down(event.bstate) != 0 { return .key(.wheelDown) }
                if stepo_mouse_double_click(event.bstate) != 0 { return .key(.doubleClick(row: Int(event.y))) }
                if stepo_mouse_click(event.bstate) != 0 { return .key(.click(row: Int(event.y))) }
                return .none
            case KEY_RESIZE:
                let size = self.size
                return .resized(width: size.width, height: size.height)
            default: return .none
            }
        }
        switch wide {
        case 10, 13: return .key(.enter)
        case 27: return .key(.escape)
        case 8, 127: return .key(.backspace)
        case 32: return .key(.space)
        default:
            guard let scalar = Unicode.Scalar(UInt32(wide)) else { return .none }
            return .key(.character(Character(scalar)))
        }
    }
}
