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

    /// Takes over the terminal. Colours: 256 when offered (tangerine), 8, or none (no colour
    /// support, or NO_COLOR set).
    static func start() {
        setlocale(LC_ALL, "")
        window = initscr()
        cbreak()
        noecho()
        nonl()
        keypad(window, true)
        wtimeout(window, 100)
        curs_set(0)
        let colourful = has_colors() && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
        if colourful {
            start_color()
            use_default_colors()
        }
        let many = colourful && stepo_colors() >= 256
        let tangerine: Int16 = many ? 208 : Int16(COLOR_YELLOW)
        let tint: Int16 = many ? 52 : -1
        let pairs: [(Role, Int16, Int16, attr_t)] = [
            (.normal, -1, -1, stepo_a_normal()), (.title, tangerine, -1, stepo_a_bold()),
            (.header, -1, many ? 236 : -1, stepo_a_normal()), (.footer, -1, many ? 236 : -1, stepo_a_normal()),
            (.section, tangerine, -1, stepo_a_bold()), (.actor, -1, -1, stepo_a_bold()), (.body, -1, -1, stepo_a_normal()),
            (.time, -1, -1, stepo_a_dim()), (.dot, tangerine, -1, stepo_a_bold()), (.newRow, -1, tint, stepo_a_normal()),
            (.selected, -1, -1, stepo_a_reverse()), (.dim, -1, -1, stepo_a_dim()), (.deleted, -1, -1, stepo_a_dim()),
            (.badge, Int16(COLOR_BLACK), tangerine, stepo_a_bold()), (.status, -1, -1, stepo_a_dim()),
        ]
        for (index, (role, fg, bg, attr)) in pairs.enumerated() {
            if colourful {
                init_pair(Int16(index + 1), fg, bg)
                attributes[role] = (attr, Int16(index + 1))
            } else {
                // No colour: the badge and new rows speak through attributes alone.
                let plain: attr_t = role == .badge ? stepo_a_reverse() : (role == .newRow ? stepo_a_bold() : attr)
                attributes[role] = (plain, 0)
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
                guard let character = cell.character else { continue }
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
            case KEY_RESIZE:
                let size = self.size
                return .resized(width: size.width, height: size.height)
            default: return .none
            }
        }
        switch wide {
        case 10, 13: return .key(.enter)
        case 27: return .key(.escape)
        case 32: return .key(.space)
        default:
            guard let scalar = Unicode.Scalar(UInt32(wide)) else { return .none }
            return .key(.character(Character(scalar)))
        }
    }
}
