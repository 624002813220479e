import CNcursesw
import Foundation
import Notifications

/// Why the inbox cannot draw in this terminal (it prints the activity as text instead).
public struct TerminalUnavailable: Error, CustomStringConvertible {
    public let description: String
}

/// The real terminal, through ncursesw: platform calls kept behind one namespace.
enum Terminal {
    /// What a read returned.
    enum Input: Equatable {
        case key(Key)
        case resized(width: Int, height: Int)
        /// Another thread asked for the loop's attention (`wake()`).
        case woken
    }

    // ncurses drives one terminal per process, from the inbox's own thread: these statics are
    // its state, set at start and read and changed on that thread only (`wake()` writes to the
    // pipe made at start, from any thread, and changes nothing here).
    nonisolated(unsafe) static var window: UnsafeMutablePointer<WINDOW>?
    nonisolated(unsafe) static var screen: OpaquePointer?
    nonisolated(unsafe) static var palette = Palette(theme: .mono, colours: 0, colourful: false)
    /// A locale without UTF-8: draw ASCII stand-ins for the inbox's glyphs, letters without
    /// their marks ("Trần" as "Tran"), `?` for the rest.
    nonisolated(unsafe) static var asciiOnly = false
    /// A pipe whose write end wakes a read waiting on the keyboard.
    nonisolated(unsafe) private static var wakePipe: [Int32] = [-1, -1]

    /// Terminal descriptions tried when `TERM` is unknown here (or unset).
    static let fallbacks = ["xterm-256color", "xterm", "vt100"]

    /// Takes over the terminal, in `theme`. Returns a notice when `TERM` was unknown and a
    /// fallback description is used; throws `TerminalUnavailable` when nothing can draw here
    /// (a dumb terminal, no description at all).
    static func start(theme: Theme) throws -> String? {
        // A parent may hand down a blocked SIGWINCH (a program started from a thread pool's
        // thread inherits its mask); resizes must reach ncurses all the same.
        var winch = sigset_t()
        sigemptyset(&winch)
        sigaddset(&winch, SIGWINCH)
        pthread_sigmask(SIG_UNBLOCK, &winch, nil)
        setlocale(LC_ALL, "")
        asciiOnly = stepo_locale_is_utf8() == 0
        let asked = ProcessInfo.processInfo.environment["TERM"].flatMap { $0.isEmpty ? nil : $0 }
        var notice: String?
        var chosen: String?
        if let asked {
            switch stepo_term_usable(asked) {
            case 1: chosen = asked
            case 0: throw TerminalUnavailable(description: "TERM=\(asked) cannot place text on the screen")
            default: break
            }
        }
        if chosen == nil {
            chosen = fallbacks.first { stepo_term_usable($0) == 1 }
            guard let chosen else { throw TerminalUnavailable(description: "no terminal description works here") }
            notice = asked.map { "TERM=\($0) is unknown here: drawing as \(chosen)" } ?? "TERM is not set: drawing as \(chosen)"
        }
        // Asked only of a terminal that can place text: a dumb one (Emacs' shell) would show the
        // questions as they are.
        let probed = probe(measuring: !asciiOnly)
        if let measured = probed.widths { TextWidth.clusters = measured }
        background = Background.chosen(answered: probed.background, environment: ProcessInfo.processInfo.environment)
        guard let made = newterm(chosen, stepo_stdout(), stepo_stdin()) else {
            throw TerminalUnavailable(description: "the terminal could not be opened")
        }
        screen = made
        set_term(made)
        hyperlinks = hyperlinksWanted(term: chosen ?? "", environment: ProcessInfo.processInfo.environment)
        window = stepo_stdscr()
        set_escdelay(25)  // Esc answers at once, not after the default second
        cbreak()
        noecho()
        nonl()
        keypad(window, true)
        nodelay(window, true)
        curs_set(0)
        mousemask(stepo_mouse_events(), nil)
        mouseinterval(200)
        if has_colors() && ProcessInfo.processInfo.environment["NO_COLOR"] == nil {
            start_color()
            use_default_colors()
        }
        if wakePipe[0] < 0 {
            var fds: [Int32] = [-1, -1]
            if pipe(&fds) == 0 {
                _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
                _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
                wakePipe = fds
            }
        }
        // ^C, a closed terminal, a kill: the inbox ends as q ends it (the screen given back,
        // an empty replica removed), not in the middle of a frame.
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            _ = Glibc.signal(signal) { _ in
                Terminal.stopFlag = 1
                Terminal.wake()
            }
        }
        apply(theme)
        return notice
    }

    /// Uses `theme` from now on: its colours degraded to what the terminal has (256, 8), or
    /// the monochrome theme's attributes alone when it has none or NO_COLOR is set.
    static func apply(_ theme: Theme) {
        let colourful = has_colors() && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
        palette = Palette(theme: colourful ? theme : .mono, colours: Int(stepo_colors()), colourful: colourful,
                          light: background == .light || theme.name == "light")
    }

    static func stop() {
        endwin()
        if let screen { delscreen(screen) }
        screen = nil
        window = nil
    }

    static var size: (width: Int, height: Int) {
        guard let window else { return (80, 24) }
        return (Int(getmaxx(window)), Int(getmaxy(window)))
    }

    /// Whether to draw links as terminal hyperlinks (OSC 8): not where the terminal is known to
    /// print unknown sequences, nor in an ASCII-only locale, nor with STEPO_HYPERLINKS=0.
    nonisolated(unsafe) static var hyperlinks = false

    static func hyperlinksWanted(term: String, environment: [String: String]) -> Bool {
        guard environment["STEPO_HYPERLINKS"] != "0", !asciiOnly else { return false }
        return !(term == "dumb" || term.hasPrefix("linux") || term.hasPrefix("vt") || term.hasPrefix("cons"))
    }

    /// Writes every run of linked cells again, wrapped in OSC 8, after ncurses drew them: the
    /// same characters in the same style at the same place, so only the link is new.
    static func writeLinks(_ grid: Grid) {
        var out = ""
        for y in 0..<grid.height {
            var x = 0
            while x < grid.width {
                guard let link = grid.cells[y * grid.width + x].link, link.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { x += 1; continue }
                let start = x
                var text = ""
                while x < grid.width, grid.cells[y * grid.width + x].link == link {
                    if let character = grid.cells[y * grid.width + x].character { text.append(character) }
                    x += 1
                }
                let first = grid.cells[y * grid.width + start]
                let style = palette.style(first.role, tint: first.tint)
                out += "\u{1B}[\(y + 1);\(start + 1)H" + style.sgr + "\u{1B}]8;;\(link)\u{1B}\\" + text + "\u{1B}]8;;\u{1B}\\\u{1B}[0m"
            }
        }
        guard !out.isEmpty else { return }
        FileHandle.standardOutput.write(Data(("\u{1B}7" + out + "\u{1B}8").utf8))
    }

    /// Puts `text` on the clipboard of the terminal the reader sits at (OSC 52), wherever that
    /// is: over SSH, inside tmux with `set-clipboard on`, the local one.
    static func copyToClipboard(_ text: String) {
        let sequence = "\u{1B}]52;c;" + Data(text.utf8).base64EncodedString() + "\u{07}"
        FileHandle.standardOutput.write(Data(sequence.utf8))
    }

    /// Starts `arguments` detached from the terminal (no input, output discarded): a browser.
    static func launch(_ arguments: [String]) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in Int32(0)...2 { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, 0x80)  // POSIX_SPAWN_SETSID (a GNU flag Swift does not import)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        if posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ) == 0 {
            // Reaped when it ends, without waiting for it here.
            let child = pid
            Thread { var status: Int32 = 0; waitpid(child, &status, 0) }.start()
        }
    }

    /// Set by a signal asking the inbox to end (^C, SIGTERM, SIGHUP).
    nonisolated(unsafe) static var stopFlag: sig_atomic_t = 0

    /// Whether a signal asked the inbox to end.
    static var stopAsked: Bool { stopFlag != 0 }

    /// Wakes a `next` waiting on the keyboard (safe from any thread, and from a signal handler).
    static func wake() {
        guard wakePipe[1] >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(wakePipe[1], &byte, 1)
    }

    /// The terminal's background, as it answered (or `COLORFGBG`, or `STEPO_BACKGROUND`, said).
    nonisolated(unsafe) static var background = Background.unknown

    /// Asks the terminal, in one round trip: its background colour (OSC 11), and — when
    /// `measuring` — how wide it draws each kind of cluster terminals disagree on (a sample of
    /// each written at the start of the line, then where the cursor went, DSR). The last
    /// question is always a DSR, which every terminal answers: once its answer is in, nothing
    /// more will come. Nothing is waited for past half a second.
    static func probe(measuring: Bool) -> (widths: ClusterWidths?, background: Background?) {
        guard isatty(0) == 1, isatty(1) == 1 else { return (nil, nil) }
        var saved = termios()
        guard tcgetattr(0, &saved) == 0 else { return (nil, nil) }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(0, TCSANOW, &raw)
        defer { tcsetattr(0, TCSANOW, &saved) }
        var out = "\u{1B}]11;?\u{1B}\\"
        let samples = measuring ? ClusterWidths.samples : []
        for (_, sample) in samples { out += "\r" + sample + "\u{1B}[6n" }
        if samples.isEmpty { out += "\u{1B}[6n" }
        out += "\r\u{1B}[2K"  // the line left blank
        FileHandle.standardOutput.write(Data(out.utf8))
        let expected = max(1, samples.count)
        var answers: [Int] = []
        var background: Background?
        var pending: [UInt8] = []
        let deadline = Date().addingTimeInterval(0.5)
        while answers.count < expected, Date() < deadline {
            var pfd = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { break }
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = read(0, &buffer, buffer.count)
            guard count > 0 else { break }
            pending += buffer[0..<count]
            // The colour answer: ESC ] 11 ; rgb:RRRR/GGGG/BBBB, ended by BEL or ESC \.
            if let (colour, rest) = Background.takeAnswer(pending) {
                background = colour
                pending = rest
            }
            // Each position answer is ESC [ row ; column R.
            while let end = pending.firstIndex(of: UInt8(ascii: "R")) {
                let answer = String(decoding: pending[..<end], as: UTF8.self)
                pending.removeFirst(end + 1)
                if let column = answer.split(separator: ";").last.flatMap({ Int($0) }) { answers.append(column - 1) }
            }
        }
        guard measuring, answers.count == ClusterWidths.samples.count else { return (nil, background) }
        var widths = ClusterWidths()
        for ((keyPath, _), width) in zip(ClusterWidths.samples, answers) where (1...4).contains(width) {
            widths[keyPath: keyPath] = width
        }
        return (widths, background)
    }

    /// What ncurses holds in the cells of a cluster written past it: a blank it has never drawn
    /// for anything else, so whatever later takes those cells differs, and is drawn.
    static let reserved: Character = "\u{2800}"

    /// Copies the grid out and flushes once. Characters ncurses keeps in one cell (a letter with
    /// up to four marks) go through it; any other grapheme cluster — a flag, a ZWJ family, a
    /// skin tone, a long stack of marks — has its cells reserved and is written whole after
    /// the refresh, at its place, so the terminal draws it as one character.
    static func draw(_ grid: Grid) {
        guard let window else { return }
        var whole: [(y: Int, x: Int, cluster: Character, style: Palette.Ink)] = []
        werase(window)
        for y in 0..<grid.height {
            for x in 0..<grid.width {
                let cell = grid.cells[y * grid.width + x]
                guard var character = cell.character else { continue }
                if asciiOnly { character = asciiStandIn(character) }
                let style = palette.style(cell.role, tint: cell.tint)
                let scalars = Array(character.unicodeScalars)
                if scalars.count > 1 && !fitsOneCell(scalars) {
                    whole.append((y, x, character, style))
                    // ncurses holds the cells, each as a blank of our own.
                    for extra in 1..<max(1, TextWidth.cells(character)) where x + extra < grid.width {
                        var blank = [wchar_t(bitPattern: Terminal.reserved.unicodeScalars.first!.value), 0]
                        var cc = cchar_t()
                        setcchar(&cc, &blank, style.attributes, style.pair, nil)
                        mvwadd_wch(window, Int32(y), Int32(x + extra), &cc)
                    }
                    character = Terminal.reserved
                }
                var wide = character.unicodeScalars.map { wchar_t(bitPattern: $0.value) } + [0]
                var cc = cchar_t()
                setcchar(&cc, &wide, style.attributes, style.pair, nil)
                mvwadd_wch(window, Int32(y), Int32(x), &cc)
            }
        }
        wnoutrefresh(window)
        doupdate()
        if hyperlinks { writeLinks(grid) }
        guard !whole.isEmpty else { return }
        var out = "\u{1B}7"  // save the cursor ncurses believes in
        for item in whole {
            out += "\u{1B}[\(item.y + 1);\(item.x + 1)H" + item.style.sgr + String(item.cluster) + "\u{1B}[0m"
        }
        out += "\u{1B}8"
        FileHandle.standardOutput.write(Data(out.utf8))
    }

    /// Whether ncurses keeps `scalars` in one cell: one spacing character and at most four
    /// that take no cell.
    static func fitsOneCell(_ scalars: [Unicode.Scalar]) -> Bool {
        scalars.count <= 5 && scalars.dropFirst().allSatisfy { stepo_wcwidth($0.value) == 0 }
            && !scalars.contains("\u{200D}") && !scalars.contains("\u{FE0F}")
    }

    /// The keys (and resizes) waiting, after sleeping up to `timeout` seconds for one to come
    /// or for `wake()`.
    static func next(timeout: Double) -> [Input] {
        var inputs = drain()
        guard inputs.isEmpty else { return inputs }
        var fds = [pollfd(fd: 0, events: Int16(POLLIN), revents: 0), pollfd(fd: wakePipe[0], events: Int16(POLLIN), revents: 0)]
        _ = poll(&fds, wakePipe[0] >= 0 ? 2 : 1, Int32(timeout * 1000))
        if wakePipe[0] >= 0, fds[1].revents & Int16(POLLIN) != 0 {
            var buffer = [UInt8](repeating: 0, count: 64)
            while read(wakePipe[0], &buffer, buffer.count) > 0 {}
            inputs.append(.woken)
        }
        return drain() + inputs
    }

    /// Every key ncurses has ready now.
    private static func drain() -> [Input] {
        var inputs: [Input] = []
        while let input = readOne() { inputs.append(input) }
        return inputs
    }

    private static func readOne() -> Input? {
        guard let window else { return nil }
        var wide: wint_t = 0
        let result = wget_wch(window, &wide)
        if result == ERR { return nil }
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
            case KEY_BTAB: return .key(.backTab)
            case KEY_MOUSE:
                var event = MEVENT()
                guard getmouse(&event) == OK else { return readOne() }
                if stepo_mouse_wheel_up(event.bstate) != 0 { return .key(.wheelUp) }
                if stepo_mouse_wheel_down(event.bstate) != 0 { return .key(.wheelDown) }
                if stepo_mouse_double_click(event.bstate) != 0 { return .key(.doubleClick(row: Int(event.y))) }
                if stepo_mouse_click(event.bstate) != 0 { return .key(.click(row: Int(event.y))) }
                return readOne()
            case KEY_RESIZE:
                let size = self.size
                return .resized(width: size.width, height: size.height)
            default: return readOne()
            }
        }
        switch wide {
        case 9: return .key(.tab)
        case 10, 13: return .key(.enter)
        case 27: return escapeSequence()
        case 8, 127: return .key(.backspace)
        case 32: return .key(.space)
        default:
            guard let scalar = Unicode.Scalar(UInt32(wide)) else { return readOne() }
            return .key(.character(Character(scalar)))
        }
    }

    /// An Esc ncurses did not read as a key: Esc alone, or the start of a sequence it does
    /// not know for this TERM (Home as `ESC [1~` under tmux). A sequence (`ESC [` or `ESC O`
    /// and what follows) is read whole: the ones a terminal sends for keys the inbox answers
    /// become those keys, any other is dropped — never taken as Esc, which would quit. Esc and
    /// another key that came with it are two keys (a script's Esc then `/`); so is Alt+j.
    private static func escapeSequence() -> Input? {
        guard let window else { return .key(.escape) }
        var wide: wint_t = 0
        let first = wget_wch(window, &wide)
        guard first != ERR else { return .key(.escape) }
        guard first != KEY_CODE_YES, wide == 91 || wide == 79 else {
            // The key that came with it is read next, as itself.
            if first == KEY_CODE_YES { _ = ungetch(Int32(wide)) } else { _ = unget_wch(wchar_t(bitPattern: UInt32(wide))) }
            return .key(.escape)
        }
        var body = ""
        while true {
            var next: wint_t = 0
            guard wget_wch(window, &next) != ERR, let scalar = Unicode.Scalar(UInt32(next)) else { break }
            body.unicodeScalars.append(scalar)
            if (0x40...0x7E).contains(next) || body.count > 16 { break }
        }
        let known: [String: Key] = [
            "1~": .home, "7~": .home, "H": .home, "4~": .end, "8~": .end, "F": .end, "5~": .pageUp, "6~": .pageDown,
            "A": .up, "B": .down, "C": .right, "D": .left, "Z": .backTab,
        ]
        if let key = known[body] { return .key(key) }
        return readOne()
    }

    // MARK: An ASCII-only terminal

    /// ASCII stand-ins for the glyphs the inbox draws, and for the letters that folding their
    /// marks away does not reach.
    static let asciiStandIns: [Character: Character] = [
        "●": "*", "○": "o", "▸": ">", "›": ">", "▾": "v", "▏": "|", "…": ".", "—": "-", "·": "-", "♥": "<", "↗": "^", "★": "*",
        "┌": "+", "└": "+", "─": "-", "│": "|", "␛": "^", "�": "?", "▣": "#", "×": "x", "–": "-", "⚑": "!",
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
            } else if let first = character.unicodeScalars.first, first.isASCII,
                      character.unicodeScalars.dropFirst().allSatisfy({ Preview.isMark($0) }) {
                // A letter under more marks than folding knows: the letter.
                result = Character(first)
            }
        }
        standIns[character] = result
        return result
    }
}

/// Colour pairs and attributes for each (role, tint): the role gives the foreground and the
/// attributes, the tint (a row's New warmth or the selection) the background under every cell.
struct Palette {
    struct Ink {
        var attributes: attr_t
        var pair: Int16
        /// The same as an SGR sequence, for what is written past ncurses.
        var sgr: String
    }

    let theme: Theme
    let colours: Int
    let colourful: Bool
    /// Drawn on a light background (what eight colours become depends on it).
    let light: Bool
    private var inks: [String: Ink] = [:]
    private var nextPair: Int16 = 1

    init(theme: Theme, colours: Int, colourful: Bool, light: Bool = false) {
        self.theme = theme
        self.colours = colours
        self.colourful = colourful
        self.light = light
    }

    mutating func style(_ role: Role, tint: Role?) -> Ink {
        let key = role.rawValue + "|" + (tint?.rawValue ?? "")
        if let known = inks[key] { return known }
        let resolved = Palette.resolve(theme, role, tint: tint, colourful: colourful, colours: colours, light: light)
        let names = resolved.attributes
        var attributes = stepo_a_normal()
        var sgr = "\u{1B}[0"
        for name in names.sorted() {
            switch name {
            case "bold": attributes |= stepo_a_bold(); sgr += ";1"
            case "dim": attributes |= stepo_a_dim(); sgr += ";2"
            case "italic": attributes |= stepo_a_italic(); sgr += ";3"
            case "underline": attributes |= stepo_a_underline(); sgr += ";4"
            case "reverse": attributes |= stepo_a_reverse(); sgr += ";7"
            default: break
            }
        }
        var pair: Int16 = 0
        if colourful {
            let (fg, bg) = Palette.inks(resolved, colours: colours, light: light)
            let foreground = number(fg)
            let background = number(bg)
            pair = nextPair
            nextPair += 1
            init_pair(pair, foreground, background)
            if foreground >= 0 { sgr += ";38;5;\(foreground)" }
            if background >= 0 { sgr += ";48;5;\(background)" }
        }
        let ink = Ink(attributes: attributes, pair: pair, sgr: sgr + "m")
        inks[key] = ink
        return ink
    }

    /// The colours a resolved style is drawn in on a terminal of `colours` colours (on a light
    /// background or a dark one).
    static func inks(_ style: Style, colours: Int, light: Bool) -> (foreground: ThemeColor, background: ThemeColor) {
        (style.foreground.degraded(to: colours, light: light), style.background.degraded(to: colours, light: light, background: true))
    }

    /// The theme's style for `role` under `tint`, on a terminal of `colours` colours.
    static func resolve(_ theme: Theme, _ role: Role, tint: Role?, colourful: Bool, colours: Int, light: Bool = false) -> Style {
        if colours < 16, tint == .header, colourful, let bar = theme.styles[.header],
           bar.background != .default, bar.background.degraded(to: colours, light: light, background: true) == .default {
            // A bar darker than the eight colours have vanishes into the terminal's own
            // background: it is reversed instead, everything on it with it.
            var style = theme.resolve(role, tint: nil, colourful: colourful)
            if style.background.degraded(to: colours, light: light, background: true) == .default { style.background = .default }
            style.attributes.insert("reverse")
            return style
        }
        guard colours < 16, tint == .selected || role == .selected else {
            return theme.resolve(role, tint: tint, colourful: colourful)
        }
        // Eight colours have no grey to lay under a row that stays readable on both
        // backgrounds (the bar vanished on black): the selection is reversed instead.
        var style = theme.resolve(role == .selected ? .body : role, tint: nil, colourful: colourful)
        style.attributes.insert("reverse")
        return style
    }

    private func number(_ colour: ThemeColor) -> Int16 {
        switch colour {
        case .default: return -1
        case .indexed(let n): return Int16(n)
        }
    }
}
