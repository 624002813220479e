import Foundation
import Notifications
import Replica
import Wire

/// Runs the Activity tab in the terminal: the runner (`InboxRunner`) holds the state and runs
/// the effects against the replica and the server; this draws it, reads keys, keeps the
/// replica synced in the background, and is the runner's host (clipboard, browser, themes).
public final class InboxApp: InboxHost {
    private let replica: Replica
    private let engine: SyncEngine
    private var runner: InboxRunner!
    private var theme: Theme
    /// Whether the theme was named (else it follows the terminal's background).
    private let themeNamed: Bool
    private let themeFolders: [String]
    private var lastDrawn: Grid?

    /// The reader's keys and colours.
    private let config: InboxConfig
    /// The row to land on once the tab is open (`--open ROW`).
    public var landOn: Int?

    /// `theme` is drawn first — when nil, the one for the terminal's background (`light` on a
    /// light one, else `tangerine`); `t` cycles through the themes in `themeFolders`. `config`'s
    /// keys stand for the functions they are bound to, and its colours go over every theme.
    public init(replica: Replica, engine: SyncEngine, theme: Theme?, themeFolders: [String], config: InboxConfig = InboxConfig()) {
        self.replica = replica
        self.engine = engine
        self.config = config
        self.theme = theme.map(config.dress) ?? .mono
        themeNamed = theme != nil
        self.themeFolders = themeFolders
    }

    /// Opens the tab at once from the replica, syncs behind it, returns the exit status on quit.
    /// Throws `TerminalUnavailable` before drawing anything when this terminal cannot be drawn in.
    public func run() throws -> Int32 {
        let notice = try Terminal.start(theme: theme)
        defer { Terminal.stop() }
        if !themeNamed {
            // The terminal said what its background is (or the environment did): its theme.
            theme = config.dress((try? Theme.load(Terminal.background.defaultTheme, folders: themeFolders))
                ?? (try? Theme.load("tangerine", folders: themeFolders)) ?? .mono)
            Terminal.apply(theme)
        }
        let runner = InboxRunner(replica: replica, engine: engine, host: self)
        self.runner = runner
        let size = Terminal.size
        let (config, browser) = (self.config, !(ProcessInfo.processInfo.environment["BROWSER"] ?? "").isEmpty)
        runner.configure { state in
            state.ownHelp = config.helpLines
            state.keyLabels = config.labels
            state.browser = browser
        }
        runner.landOn = landOn
        runner.send(.resized(width: size.width, height: size.height))
        runner.send(.themeChanged(theme.name, announce: false))
        runner.open()
        if let notice { runner.send(.failed(notice)) }
        Thread { [engine] in engine.run(longPoll: 25) }.start()
        var lastTick = Date()
        while true {
            draw()
            var keys: [Action] = []
            for input in Terminal.next(timeout: 1.0) {
                switch input {
                case .key(let key):
                    // The reader's bindings first: a key stands for the function it is bound to
                    // (the filter's typing takes keys as they are). Keys that came together are
                    // reduced together (a paste is one read of the list, not one a key).
                    let typing = runner.state.filter?.typing == true && runner.state.screens.isEmpty
                    let action = Action.keyPressed(typing ? key : config.map(key))
                    // Only text is held back: Enter, Esc and the rest act on the list as read.
                    let text: Bool = switch key {
                    case .character, .space, .backspace: true
                    default: false
                    }
                    if typing && text { keys.append(action); continue }
                    runner.send(contentsOf: keys)
                    keys = []
                    runner.send(action)
                case let .resized(width, height):
                    runner.send(contentsOf: keys)
                    keys = []
                    runner.send(.resized(width: width, height: height))
                case .woken:
                    break
                }
                if runner.quitting { break }
            }
            runner.send(contentsOf: keys)
            if runner.quitting || Terminal.stopAsked { runner.drawn(); engine.stop(); return 0 }
            // The clock, once a second: relative times and the sync line.
            let tick = Date().timeIntervalSince(lastTick) >= 1
            if tick { lastTick = Date() }
            runner.poll(now: tick ? WallClock.now : nil)
        }
    }

    /// Draws when the screen would change, and only then: an idle inbox is idle.
    private func draw() {
        // Then the stamps this frame earned, written after it, and their counts drawn at once.
        repeat {
            let grid = runner.render()
            if grid != lastDrawn {
                Terminal.draw(grid)
                lastDrawn = grid
            }
        } while runner.drawn()
    }

    // MARK: InboxHost

    public func copy(_ text: String) { Terminal.copyToClipboard(text) }

    public func open(_ url: String) {
        if let browser = ProcessInfo.processInfo.environment["BROWSER"], !browser.isEmpty {
            Terminal.launch([browser, url])
        }
    }

    public func nextTheme() -> String? {
        let names = Theme.available(in: themeFolders)
        let next = names.isEmpty ? nil : names[((names.firstIndex(of: theme.name) ?? -1) + 1) % names.count]
        guard let next, let loaded = try? Theme.load(next, folders: themeFolders) else { return nil }
        theme = config.dress(loaded)
        Terminal.apply(theme)
        lastDrawn = nil
        return theme.name
    }

    public func wake() { Terminal.wake() }
}
