import Foundation
import Testing
@testable import Backend

/// The real binary in a pseudo-terminal (tmux): keys typed, the screen read.
@Suite("The inbox in a terminal")
struct TerminalTests {
    let folder = NSTemporaryDirectory() + "stepo-tty-" + UUID().uuidString
    let session = "stepo-e2e-" + UUID().uuidString.prefix(8)

    /// tmux on a socket of this test's own, so parallel tests and a tmux the developer runs
    /// never meet, in a UTF-8 locale whatever the caller's is.
    @discardableResult
    func tmux(_ arguments: String..., blocking: [Int32] = []) throws -> String {
        let result = try Spawn.run(["tmux", "-u", "-S", folder + "/tmux.sock"] + arguments, environment: ["LC_ALL": "C.UTF-8"],
                                   blocking: blocking)
        guard result.status == 0 else {
            throw Spawn.Failure(description: "tmux \(arguments.joined(separator: " ")): \(result.stderr)")
        }
        return result.stdout
    }

    func screen() throws -> String { try tmux("capture-pane", "-p", "-t", session) }

    /// Waits (up to 15 s) until the screen satisfies `condition`; returns the last screen.
    func waitFor(_ condition: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(15)
        var text = try screen()
        while !condition(text) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.2)
            text = try screen()
        }
        return text
    }

    @Test("in a locale without UTF-8 the inbox draws ASCII only: names lose their marks, glyphs their shapes")
    func asciiLocale() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let command = "env LANG=C LC_ALL=C XDG_DATA_HOME=\(folder)/data XDG_STATE_HOME=\(folder)/state TERM=xterm-256color \(Stepo.binary)"
        try tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", command)
        defer { _ = try? tmux("kill-server") }
        let text = try waitFor { $0.contains(" New") && $0.contains("synced") }
        #expect(text.contains("* Linh Tran and 1 other - Trail run before work - up the ridge and back."))
        #expect(text.contains("* An Nguyen Requested to follow you"))
        let nonASCII = text.unicodeScalars.filter { !$0.isASCII }
        #expect(nonASCII.isEmpty)
        try tmux("send-keys", "-t", session, "q")
    }

    @Test("a resize reaches the inbox even when it was started with SIGWINCH blocked")
    func resizeWithBlockedSignal() throws {
        // A program started from a thread pool's thread inherits its blocked signals; tmux
        // passes the mask on to what it runs.
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let command = "env LC_ALL=C.UTF-8 XDG_DATA_HOME=\(folder)/data XDG_STATE_HOME=\(folder)/state TERM=xterm-256color \(Stepo.binary)"
        try tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", command, blocking: [SIGWINCH])
        defer { _ = try? tmux("kill-server") }
        var text = try waitFor { $0.contains(" New") && $0.contains("synced") }
        #expect(text.contains(" New"))
        try tmux("resize-window", "-t", session, "-x", "30", "-y", "8")
        text = try waitFor { $0.contains("Window too small") }
        #expect(text.contains("Window too small"))
        try tmux("resize-window", "-t", session, "-x", "100", "-y", "30")
        text = try waitFor { $0.contains(" New") }
        #expect(text.contains("● An Nguyễn Requested to follow you"))
        try tmux("send-keys", "-t", session, "q")
    }

    @Test("stepo opens the Activity tab: New with dots, a thread expands, a row opens, stamps reach the store",
          arguments: ["xterm-256color", "screen-256color", "vt100", "linux"])
    func inbox(term: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let command = "env LC_ALL=C.UTF-8 XDG_DATA_HOME=\(folder)/data XDG_STATE_HOME=\(folder)/state TERM=\(term) \(Stepo.binary)"
        try tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", command)
        defer { _ = try? tmux("kill-server") }

        var text = try waitFor { $0.contains(" New") && $0.contains("synced") }
        #expect(text.contains(" Activity"))
        #expect(text.contains("● Linh Trần and 1 other"))
        #expect(text.contains("● An Nguyễn Requested to follow you"))

        try tmux("send-keys", "-t", session, "Space")
        text = try waitFor { $0.contains("▾") }
        #expect(text.contains("Maya Okonkwo Stepped with you by heart: Trail run before work — up the ridge and back."))

        // The thread's newest row is Linh's comment: "comments open" lands on the comments.
        try tmux("send-keys", "-t", session, "j", "Enter")
        text = try waitFor { $0.contains(" Step") && $0.contains("Comments (1)") }
        #expect(text.contains("Linh Trần · "))
        #expect(text.contains("so proud of this one"))
        try tmux("send-keys", "-t", session, "k", "k", "k", "k", "k", "k", "k", "k", "k", "k")
        text = try waitFor { $0.contains("Trail run before work — up the ridge and back.") }
        #expect(text.contains("♥ 3 hearts · ↗ 0 shares"))
        try tmux("send-keys", "-t", session, "q")
        text = try waitFor { $0.contains(" New") }

        // The stamps reach the store: everything seen, the opened row read.
        let store = try Store(path: folder + "/data/stepo/stepo.db")
        let me = try #require(try store.user("chaucao"))
        let deadline = Date().addingTimeInterval(15)
        var counts = try store.counts(for: me.key)
        while Date() < deadline, counts.unseen > 0 || counts.unread == 104 {
            Thread.sleep(forTimeInterval: 0.2)
            counts = try store.counts(for: me.key)
        }
        #expect(try store.counts(for: me.key).unseen == 0)
        #expect(try store.counts(for: me.key).unread == 103)

        // A new row written while the tab is open arrives within a second or two, with the badge.
        let newcomer = #"{"id":"live-u","type":"user","at":"2026-11-29T12:30:00Z","user":{"id":"zed","username":"zed","name":"Zed Okafor"}}"#
        let follow = #"{"id":"live-f","type":"follow","at":"2026-11-29T12:31:00Z","actor":"zed","target":"chaucao"}"#
        for line in [newcomer, follow] { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
        let arrived = Date()
        text = try waitFor { $0.contains("Zed Okafor Requested to follow you") }
        #expect(text.contains("Zed Okafor Requested to follow you"))
        #expect(Date().timeIntervalSince(arrived) < 3)

        // Each kind of destination: a profile (An's request), a journey (Marco's finale), a link.
        try tmux("send-keys", "-t", session, "/")
        for character in "An Ng" { try tmux("send-keys", "-t", session, "-l", String(character)) }
        try tmux("send-keys", "-t", session, "Enter", "Enter")
        text = try waitFor { $0.contains(" Profile") }
        #expect(text.contains("@an.nguyen"))
        #expect(text.contains("They asked to follow you"))
        #expect(text.contains("Accept"))
        try tmux("send-keys", "-t", session, "q", "Escape")
        try tmux("send-keys", "-t", session, "/")
        for character in "finale" { try tmux("send-keys", "-t", session, "-l", String(character)) }
        try tmux("send-keys", "-t", session, "Enter", "Enter")
        text = try waitFor { $0.contains(" Journey") }
        #expect(text.contains("Learn to play guitar"))
        try tmux("send-keys", "-t", session, "q", "Escape")
        try tmux("send-keys", "-t", session, "/")
        for character in "kind:announcement" { try tmux("send-keys", "-t", session, "-l", String(character)) }
        try tmux("send-keys", "-t", session, "Enter", "G", "Enter")
        text = try waitFor { $0.contains("Link: ") }
        #expect(text.contains("https://stepo.app/new/journey-links"))
        try tmux("send-keys", "-t", session, "q", "Escape")

        // A decline: it asks first, then the request is gone from the store.
        try tmux("send-keys", "-t", session, "/")
        for character in "An Ng" { try tmux("send-keys", "-t", session, "-l", String(character)) }
        try tmux("send-keys", "-t", session, "Enter", "d")
        text = try waitFor { $0.contains("Decline An Nguyễn's request? y / n") || $0.contains("Decline An Nguy") }
        try tmux("send-keys", "-t", session, "y")
        let an = try #require(try store.user("an"))
        let until = Date().addingTimeInterval(15)
        while Date() < until, try store.hasPendingRequest(from: an.key, to: me.key) { Thread.sleep(forTimeInterval: 0.2) }
        #expect(try !store.hasPendingRequest(from: an.key, to: me.key))
        #expect(try !store.follows(an.key, me.key))
        try tmux("send-keys", "-t", session, "q")
    }
}
