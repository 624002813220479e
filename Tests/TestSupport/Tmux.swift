import Foundation

/// A tmux server of one test's own: its own socket (parallel tests and a developer's tmux
/// never meet) and a UTF-8 locale whatever the caller's is. One session, read as text.
public struct Tmux {
    public let folder: String
    public let session = "stepo-e2e-" + UUID().uuidString.prefix(8)

    public init(folder: String) throws {
        self.folder = folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        Reaper.shared.register(tmuxSocket: folder + "/tmux.sock")
    }

    /// Runs a tmux command; `blocking` are signals it starts with blocked.
    @discardableResult
    public func run(_ arguments: [String], blocking: [Int32] = []) throws -> String {
        let result = try Spawn.run(["tmux", "-u", "-S", folder + "/tmux.sock"] + arguments, environment: ["LC_ALL": "C.UTF-8"],
                                   blocking: blocking)
        guard result.status == 0 else {
            throw Spawn.Failure(description: "tmux \(arguments.joined(separator: " ")): \(result.stderr)")
        }
        return result.stdout
    }

    /// Starts the session running `command` (a shell command line) in a window of that size.
    public func start(_ command: String, width: Int = 100, height: Int = 30, blocking: [Int32] = []) throws {
        try run(["new-session", "-d", "-s", session, "-x", "\(width)", "-y", "\(height)", command], blocking: blocking)
    }

    /// `stepo` with no arguments, on data and state folders of this test's own.
    public func inbox(term: String? = "xterm-256color", locale: String = "C.UTF-8") -> String {
        let terminal = term.map { " TERM=\($0)" } ?? ""
        return "env LANG=\(locale) LC_ALL=\(locale) XDG_DATA_HOME=\(folder)/data XDG_STATE_HOME=\(folder)/state XDG_CONFIG_HOME=\(folder)/config\(terminal) \(Stepo.binary)"
    }

    public func keys(_ keys: String...) throws { try run(["send-keys", "-t", session] + keys) }

    /// Types `text` literally, a character at a time.
    public func type(_ text: String) throws {
        for character in text { try run(["send-keys", "-t", session, "-l", String(character)]) }
    }

    /// Filters the inbox's list by `text` (its `/`), then presses `keys` on what is left.
    public func filter(_ text: String, then keys: String...) throws {
        try self.keys("/")
        try type(text)
        try run(["send-keys", "-t", session, "Enter"] + keys)
    }

    public func resize(width: Int, height: Int) throws {
        try run(["resize-window", "-t", session, "-x", "\(width)", "-y", "\(height)"])
    }

    public func screen() throws -> String { try run(["capture-pane", "-p", "-t", session]) }

    /// The screen with its attributes and colours, as SGR escapes (`capture-pane -e`).
    public func styledScreen() throws -> String { try run(["capture-pane", "-p", "-e", "-t", session]) }

    /// For each character of a styled line, whether reverse video is on under it.
    public static func reversed(_ styled: String) -> [(Character, Bool)] {
        var out: [(Character, Bool)] = []
        var reverse = false
        var index = styled.startIndex
        while index < styled.endIndex {
            if styled[index] == "\u{1B}", let end = styled[index...].firstIndex(where: { $0.isLetter }) {
                if styled[end] == "m" {
                    let params = styled[styled.index(index, offsetBy: 2)..<end].split(separator: ";", omittingEmptySubsequences: false)
                    for param in params.isEmpty ? [""] : params {
                        switch param {
                        case "", "0": reverse = false
                        case "7": reverse = true
                        case "27": reverse = false
                        default: break
                        }
                    }
                }
                index = styled.index(after: end)
                continue
            }
            out.append((styled[index], reverse))
            index = styled.index(after: index)
        }
        return out
    }

    /// Waits (up to `seconds`) until the screen satisfies `condition` and has settled (the same
    /// on a second look: a capture can land halfway through a redraw); returns the last screen.
    public func waitFor(seconds: Double = 15, _ condition: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        var text = try screen()
        while Date() < deadline {
            if condition(text) {
                Thread.sleep(forTimeInterval: 0.1)
                let again = try screen()
                if again == text { return text }
                text = again
                continue
            }
            Thread.sleep(forTimeInterval: 0.2)
            text = try screen()
        }
        return text
    }

    /// Shrinks the window below the inbox's minimum, then restores it to 100×30; returns the
    /// screen each time, once the inbox has redrawn for it.
    public func tooSmallAndBack() throws -> (tooSmall: String, restored: String) {
        try resize(width: 30, height: 8)
        let small = try waitFor { $0.contains("Window too small") }
        try resize(width: 100, height: 30)
        let restored = try waitFor { $0.contains(" New") && $0.split(separator: "\n").last?.contains("q quit") == true }
        return (small, restored)
    }

    /// Ends the server and everything running in it.
    public func stop() { _ = try? run(["kill-server"]) }
}
