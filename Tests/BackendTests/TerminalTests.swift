import BenchSupport
import Foundation
import Notifications
import Wire
import Testing
import TestSupport
@testable import Backend

/// The real binary in a pseudo-terminal (tmux): keys typed, the screen read.
@Suite("The inbox in a terminal")
struct TerminalTests {
    let folder = NSTemporaryDirectory() + "stepo-tty-" + UUID().uuidString

    @Test("in a locale without UTF-8 the inbox draws ASCII only: names lose their marks, glyphs their shapes")
    func asciiLocale() throws {
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox(locale: "C"))
        defer { tmux.stop() }
        let text = try tmux.waitFor { $0.contains(" New") && $0.contains("synced") }
        #expect(text.contains("* Linh Tran and 2 others - Trail run before work - up the ridge and back."))
        #expect(text.contains("* An Nguyen Requested to follow you"))
        let nonASCII = text.unicodeScalars.filter { !$0.isASCII }
        #expect(nonASCII.isEmpty)
        try tmux.keys("q")
    }

    /// Names that carry the clusters terminals find hard, each between plain letters.
    static let clusterNames: [(kind: String, name: String)] = [
        ("flag", "Flag\u{1F1FA}\u{1F1F8}Zed"),
        ("zwj family", "Fam\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}Zed"),
        ("VS16", "Love\u{2764}\u{FE0F}Zed"),
        ("skin tone", "Thumb\u{1F44D}\u{1F3FD}Zed"),
        ("fifty marks", "Marks" + "e" + String(repeating: "\u{0301}", count: 50) + "Zed"),
        ("CJK", "\u{65E5}\u{672C}Zed"),
        ("emoji", "Run\u{1F3C3}Zed"),
    ]

    @Test("whole grapheme clusters are drawn, each in the cells this terminal gives it: nothing dropped, nothing shifted")
    func clusters() throws {
        // A store of our own: chaucao's step, commented on by people whose names and words
        // carry the clusters terminals find hard. (Row titles drop emoji, by the copy rules; a
        // step's comments show names and words as written.)
        let data = folder + "/data/stepo"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let at = Timestamp.format(now - 60_000)
        var lines = [
            #"{"id":"u0","type":"user","at":"\#(at)","user":{"id":"chaucao","username":"chaucao","name":"Chau Cao"}}"#,
            #"{"id":"j0","type":"journey","at":"\#(at)","journey":{"id":"j","owner":"chaucao","title":"Run"}}"#,
            #"{"id":"s0","type":"step","at":"\#(at)","step":{"id":"s","journey":"j","caption":"Hard words"}}"#,
            #"{"id":"m0","type":"mediaReady","at":"\#(at)","step":"s"}"#,
        ]
        for (index, person) in Self.clusterNames.enumerated() {
            let when = Timestamp.format(now - 50_000 + Int64(index) * 1000)
            let user = JSON.object([("id", .string("p\(index)")), ("username", .string("p\(index)")), ("name", .string(person.name))])
            lines.append(JSON.object([("id", .string("u\(index + 1)")), ("type", "user"), ("at", .string(when)), ("user", user)]).serialized)
            let comment = JSON.object([("id", .string("c\(index)")), ("text", .string("said " + person.name + " here"))])
            lines.append(JSON.object([("id", .string("k\(index)")), ("type", "comment"), ("at", .string(when)), ("actor", .string("p\(index)")),
                                      ("step", "s"), ("comment", comment)]).serialized)
        }
        let ingested = try Stepo.run(["ingest", "--db", data + "/stepo.db", "-"], stdin: Data(lines.joined(separator: "\n").utf8))
        #expect(ingested.status == 0, "\(ingested.stderr)")

        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox(), width: 90, height: 40)
        defer { tmux.stop() }
        _ = try tmux.waitFor { $0.contains(" New") && $0.contains("synced") }
        try tmux.keys("Enter")
        let text = try tmux.waitFor { $0.contains(" Step") && $0.contains("said Run") }
        let rows = text.split(separator: "\n").map(String.init)
        for person in Self.clusterNames where person.kind != "fifty marks" {
            // Content: the whole cluster, then the rest of the words, untouched.
            let said = rows.first { $0.contains("said " + String(person.name.prefix(3))) }
            #expect(said?.contains("said " + person.name + " here") == true, "\(person.kind): \(said ?? "missing")")
            // Alignment: the author's line goes on to the time after the name, nothing overdrawn.
            let author = rows.first { $0.hasPrefix("  " + person.name + " · ") }
            #expect(author?.hasSuffix(" · now") == true || author?.trimmingCharacters(in: .whitespaces).hasSuffix("now") == true,
                    "\(person.kind): \(author ?? "missing")")
            #expect(!(said ?? "").contains("\u{2800}") && !(author ?? "").contains("\u{2800}"), "\(person.kind): a reserved cell shows")
        }
        // Fifty marks on one letter: more than ncurses keeps in a cell (four) reach the terminal,
        // as many as tmux itself stores, and the words after them stay whole.
        let marked = try #require(rows.first { $0.contains("said Marks") })
        let marks = marked.unicodeScalars.filter { $0 == "\u{0301}" }.count
        #expect(marks > 4, "\(marks) marks: \(marked)")
        #expect(marked.contains("Zed here"))
        try tmux.keys("q", "q")
    }

    @Test("p after a block shows why no push goes out, not an endless 'Opening…'; before it, the push as the phone would show it")
    func pushWithheld() throws {
        let data = folder + "/data/stepo"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let at = { (ago: Int64) in Timestamp.format(Int64(Date().timeIntervalSince1970 * 1000) - ago) }
        let lines = [
            #"{"id":"u0","type":"user","at":"\#(at(600_000))","user":{"id":"chaucao","username":"chaucao","name":"Chau Cao"}}"#,
            #"{"id":"u1","type":"user","at":"\#(at(600_000))","user":{"id":"maya","username":"maya","name":"Maya Okonkwo"}}"#,
            #"{"id":"j0","type":"journey","at":"\#(at(500_000))","journey":{"id":"j","owner":"chaucao","title":"Run"}}"#,
            #"{"id":"s0","type":"step","at":"\#(at(400_000))","step":{"id":"s","journey":"j","caption":"Ridge at dawn"}}"#,
            #"{"id":"m0","type":"mediaReady","at":"\#(at(300_000))","step":"s"}"#,
            #"{"id":"h0","type":"heart","at":"\#(at(200_000))","actor":"maya","step":"s"}"#,
        ]
        #expect(try Stepo.run(["ingest", "--db", data + "/stepo.db", "-"], stdin: Data(lines.joined(separator: "\n").utf8)).status == 0)
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox())
        defer { tmux.stop() }
        _ = try tmux.waitFor { $0.contains("Maya Okonkwo") && $0.contains("synced") }
        try tmux.keys("p")
        let preview = try tmux.waitFor { $0.contains("iOS · collapsed") }
        #expect(preview.contains("Stepped with you by heart: Ridge at dawn"))
        try tmux.keys("Escape")
        _ = try tmux.waitFor { !$0.contains("iOS · collapsed") }
        let block = #"{"id":"b0","type":"block","at":"\#(at(100_000))","actor":"chaucao","target":"maya"}"#
        #expect(try Stepo.run(["ingest", "--db", data + "/stepo.db", "-"], stdin: Data(block.utf8)).status == 0)
        try tmux.keys("p")
        let withheld = try tmux.waitFor(seconds: 10) { $0.contains("No push to preview") }
        #expect(withheld.contains("No push to preview"), "\(withheld)")
        #expect(withheld.contains("a block stands between"))
        #expect(!withheld.contains("row ") && !withheld.contains("suppressed:"), "an internal id or code reached the reader")
        #expect(!withheld.contains("Ridge at dawn"))
        try tmux.keys("q", "q")
    }

    @Test("y puts the row's link on the terminal's clipboard through OSC 52 (here tmux's, with set-clipboard on)")
    func copiesLink() throws {
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox())
        defer { tmux.stop() }
        try tmux.run(["set-option", "-s", "set-clipboard", "on"])
        _ = try tmux.waitFor { $0.contains(" New") && $0.contains("synced") }
        try tmux.keys("y")
        let screen = try tmux.waitFor { $0.contains("Copied stepo://") }
        let said = try #require(screen.split(separator: "\n").last { $0.contains("Copied stepo://") })
        let link = String(said.split(separator: " ").first { $0.hasPrefix("stepo://") } ?? "")
        var buffer = ""
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            buffer = (try? tmux.run(["show-buffer"])) ?? ""
            if !buffer.isEmpty { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(!link.isEmpty && buffer == link, "clipboard: \(buffer), said: \(said)")
        try tmux.keys("q")
    }

    @Test("the reader's config binds keys (x quits here); a broken one stops the inbox naming its file and line; --open lands on a row")
    func configAndOpen() throws {
        let tmux = try Tmux(folder: folder)
        let config = folder + "/config"
        try Data("bind x quit\nbind <Tab> move-down\n".utf8).write(to: URL(fileURLWithPath: config))
        try tmux.start(tmux.inbox() + " inbox --config \(config)")
        defer { tmux.stop() }
        _ = try tmux.waitFor { $0.contains(" New") && $0.contains("synced") }
        try tmux.keys("?")
        #expect(try tmux.waitFor { $0.contains("(your config)") }.contains("x  quit  (your config)"))
        try tmux.keys("q")
        _ = try tmux.waitFor { !$0.contains(" Keys") }
        try tmux.keys("x")
        // The inbox quits, and its session with it.
        let deadline = Date().addingTimeInterval(10)
        var quit = false
        while Date() < deadline, !quit {
            quit = (try? tmux.screen()).map { !$0.contains(" Activity") } ?? true
            if !quit { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(quit, "x did not quit")

        try Data("bind x quit\nbind q fly\n".utf8).write(to: URL(fileURLWithPath: config))
        let broken = try Stepo.run(["inbox", "--config", config], environment: ["XDG_DATA_HOME": folder + "/data", "XDG_STATE_HOME": folder + "/state"])
        #expect(broken.status == 1)
        #expect(broken.stderr.contains("\(config):2: unknown function \"fly\""), "\(broken.stderr)")
    }

    @Test("stepo inbox --open ROW lands on that row's destination")
    func openRow() throws {
        let tmux = try Tmux(folder: folder)
        // The sample world's newest follow request: An Nguyễn's, which taps to her profile.
        try tmux.start(tmux.inbox() + " inbox")
        _ = try tmux.waitFor { $0.contains(" New") && $0.contains("synced") }
        try tmux.keys("q")
        tmux.stop()
        let store = try Store(path: folder + "/data/stepo/stepo.db")
        let me = try #require(try store.user("chaucao"))
        let request = try #require(try store.inboxes.activity(of: me).first { $0.kind == .followRequest })
        let again = try Tmux(folder: folder + "/again")
        try again.start("env LANG=C.UTF-8 LC_ALL=C.UTF-8 XDG_DATA_HOME=\(folder)/data XDG_STATE_HOME=\(folder)/state TERM=xterm-256color \(Stepo.binary) inbox --open \(request.id)")
        defer { again.stop() }
        let landed = try again.waitFor { $0.contains(" Profile") }
        #expect(landed.contains(request.title))
    }

    @Test("quiet hours typed on the settings screen reach the store: a bad zone is refused on screen, a good one is kept, x turns them off")
    func quietHoursByKeyboard() throws {
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox())
        defer { tmux.stop() }
        _ = try tmux.waitFor { $0.contains(" New") && $0.contains("synced") }
        try tmux.keys("s")
        _ = try tmux.waitFor { $0.contains("Quiet hours  off") }
        for _ in 0..<5 { try tmux.keys("j") }
        try tmux.keys("Enter")
        _ = try tmux.waitFor { $0.contains("Enter set  Esc cancel") }
        try tmux.keys("C-u")
        try tmux.type("23:00-06:30 Mars/Base")
        try tmux.keys("Enter")
        _ = try tmux.waitFor { $0.contains("is not an IANA time zone name") }
        for _ in 0..<9 { try tmux.keys("BSpace") }
        try tmux.type("Asia/Tokyo")
        try tmux.keys("Enter")
        _ = try tmux.waitFor { $0.contains("Quiet hours  23:00–06:30 Asia/Tokyo") }
        // Sent behind the screen: the store has them once the sync says so.
        let store = try Store(path: folder + "/data/stepo/stepo.db")
        func stored() throws -> QuietHours? { try store.user("chaucao")?.preferences.quietHours }
        let deadline = Date().addingTimeInterval(10)
        while try stored() == nil, Date() < deadline { usleep(100_000) }
        #expect(try stored()?.stored == "23:00-06:30 Asia/Tokyo")
        try tmux.keys("x")
        _ = try tmux.waitFor { $0.contains("Quiet hours  off") }
        let later = Date().addingTimeInterval(10)
        while try stored() != nil, Date() < later { usleep(100_000) }
        #expect(try stored() == nil)
        try tmux.keys("q", "q")
    }

    @Test("a new replica knows what was seen elsewhere: after stepo seen, nothing is New on its first open")
    func seenElsewhere() throws {
        let data = folder + "/data/stepo"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let at = { (ago: Int64) in Timestamp.format(Int64(Date().timeIntervalSince1970 * 1000) - ago) }
        let lines = [
            #"{"id":"u0","type":"user","at":"\#(at(900_000))","user":{"id":"chaucao","username":"chaucao","name":"Chau Cao"}}"#,
            #"{"id":"u1","type":"user","at":"\#(at(900_000))","user":{"id":"maya","username":"maya","name":"Maya Okonkwo"}}"#,
            #"{"id":"u2","type":"user","at":"\#(at(900_000))","user":{"id":"kofi","username":"kofi","name":"Kofi Asante"}}"#,
            #"{"id":"f1","type":"follow","at":"\#(at(800_000))","actor":"maya","target":"chaucao"}"#,
            #"{"id":"f2","type":"follow","at":"\#(at(700_000))","actor":"kofi","target":"chaucao"}"#,
        ]
        // Minutes ago, so both are today — but for a run in the first quarter hour of a day.
        let today = Calendar.current.isDate(Date().addingTimeInterval(-800), inSameDayAs: Date())
        #expect(try Stepo.run(["ingest", "--db", data + "/stepo.db", "-"], stdin: Data(lines.joined(separator: "\n").utf8)).status == 0)
        #expect(try Stepo.run(["seen", "--db", data + "/stepo.db", "--user", "chaucao"]).stdout.contains(#""unseen":0"#))
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox())
        defer { tmux.stop() }
        let screen = try tmux.waitFor { $0.contains("Kofi Asante") && $0.contains("synced") }
        #expect(!screen.contains(" New"), "\(screen)")
        #expect(!screen.contains("●"), "\(screen)")
        #expect(screen.contains(today ? " Today" : " This week"), "\(screen)")
        try tmux.keys("q")
    }

    @Test("a resize reaches the inbox even when it was started with SIGWINCH blocked")
    func resizeWithBlockedSignal() throws {
        // A program started from a thread pool's thread inherits its blocked signals; tmux
        // passes the mask on to what it runs.
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox(), blocking: [SIGWINCH])
        defer { tmux.stop() }
        let text = try tmux.waitFor { $0.contains(" New") && $0.contains("synced") }
        #expect(text.contains(" New"))
        let (small, restored) = try tmux.tooSmallAndBack()
        #expect(small.contains("Window too small"))
        #expect(restored.contains("● An Nguyễn Requested to follow you"))
        try tmux.keys("q")
    }

    @Test("stepo opens the Activity tab: New with dots, a thread expands, a row opens, stamps reach the store",
          arguments: ["xterm-256color", "screen-256color", "tmux-256color", "vt100", "linux"])
    func inbox(term: String) throws {
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox(term: term))
        defer { tmux.stop() }

        var text = try tmux.waitFor { $0.contains(" New") && $0.contains("synced") }
        #expect(text.contains(" Activity"))
        #expect(text.contains("● Linh Trần and 2 others"))
        #expect(text.contains("● An Nguyễn Requested to follow you"))

        try tmux.keys("Space")
        text = try tmux.waitFor { $0.contains("▾") }
        #expect(text.contains("Kofi Asante Stepped with you: that light on the ridge!"))

        // The thread's newest row is Linh's comment: "comments open" lands on the comments.
        try tmux.keys("j", "Enter")
        text = try tmux.waitFor { $0.contains(" Step") && $0.contains("Comments (2)") }
        #expect(text.contains("Linh Trần · "))
        #expect(text.contains("so proud of this one"))
        try tmux.keys("k", "k", "k", "k", "k", "k", "k", "k", "k", "k")
        text = try tmux.waitFor { $0.contains("Trail run before work — up the ridge and back.") }
        // Counted as the reader may see them: the sample's blocked and banned hearts are left out.
        #expect(text.contains("♥ 1 heart · ↗ 0 shares"))
        // i: the people behind the step's hearts and shares (the batch's interactions list).
        try tmux.keys("i")
        text = try tmux.waitFor { $0.contains(" Interactions") && $0.contains("♥ Maya Okonkwo") }
        #expect(text.contains("♥ Maya Okonkwo · stepped with you · "))
        // q goes back exactly one screen: the step, then the list.
        try tmux.keys("q")
        text = try tmux.waitFor { $0.contains(" Step") && $0.contains("♥ 1 heart") }
        #expect(text.contains(" Step"))
        try tmux.keys("q")
        text = try tmux.waitFor { $0.contains(" New") }
        // The selection is back on the row that was opened.
        #expect(text.split(separator: "\n").contains { $0.contains("Linh Trần Stepped with you: so proud of this one") })

        // The stamps reach the store: everything seen, the opened row read.
        let store = try Store(path: folder + "/data/stepo/stepo.db")
        let me = try #require(try store.user("chaucao"))
        let deadline = Date().addingTimeInterval(15)
        var counts = try store.inboxes.counts(for: me.key)
        while Date() < deadline, counts.unseen > 0 || counts.unread == 106 {
            Thread.sleep(forTimeInterval: 0.2)
            counts = try store.inboxes.counts(for: me.key)
        }
        #expect(try store.inboxes.counts(for: me.key).unseen == 0)
        #expect(try store.inboxes.counts(for: me.key).unread == 105)

        // A new row written while the tab is open arrives within a second or two, with the badge.
        // Now: the seeded world was moved to today, so a live row is the newest whatever the date.
        let at = Timestamp.format(Int64(Date().timeIntervalSince1970 * 1000))
        let newcomer = #"{"id":"live-u","type":"user","at":"\#(at)","user":{"id":"zed","username":"zed","name":"Zed Okafor"}}"#
        let follow = #"{"id":"live-f","type":"follow","at":"\#(at)","actor":"zed","target":"chaucao"}"#
        for line in [newcomer, follow] { _ = try Ingestor(store: store).apply(Data(line.utf8)) }
        let arrived = Date()
        text = try tmux.waitFor { $0.contains("Zed Okafor Requested to follow you") }
        #expect(text.contains("Zed Okafor Requested to follow you"))
        #expect(Date().timeIntervalSince(arrived) < 3)

        // Each kind of destination: a profile (An's request), a journey (Marco's finale), a link.
        try tmux.filter("An Ng", then: "Enter")
        text = try tmux.waitFor { $0.contains(" Profile") }
        #expect(text.contains("@an.nguyen"))
        #expect(text.contains("They asked to follow you"))
        #expect(text.contains("Accept"))
        try tmux.keys("q", "Escape")
        try tmux.filter("finale", then: "Enter")
        // (Not " Journey" alone: the profile just left says "your Journey updates setting", and a
        // slow redraw let the wait end on it.)
        text = try tmux.waitFor { $0.contains(" Journey") && !$0.contains(" Profile") }
        #expect(text.contains("Learn to play guitar"))
        try tmux.keys("q", "Escape")
        try tmux.filter("kind:announcement", then: "G", "Enter")
        text = try tmux.waitFor { $0.contains("Link: ") }
        #expect(text.contains("https://stepo.app/new/journey-links"))
        try tmux.keys("q", "Escape")

        // Deleted content: the board's words, then the actor's profile beneath. (Its rows no
        // longer quote the deleted caption: Hana's third row is the struck-through heart.)
        try tmux.filter("Hana", then: "j", "j", "Enter")
        text = try tmux.waitFor { $0.contains(" Not available") && $0.contains("@hana") }
        #expect(text.contains("This content is no longer available"))
        #expect(text.contains("Falling back to their profile:"))
        #expect(text.contains("Hana Watanabe"))
        try tmux.keys("q", "Escape")

        // A decline, from the Decline the request's profile offers: it asks first, then the
        // request is gone from the store.
        try tmux.filter("An Ng", then: "Enter")
        text = try tmux.waitFor { $0.contains(" Profile") && $0.contains("a accept  d decline") }
        try tmux.keys("d")
        text = try tmux.waitFor { $0.contains("Decline An Nguyễn's request? y / n") }
        #expect(text.contains("Decline An Nguyễn's request? y / n"))
        try tmux.keys("y")
        text = try tmux.waitFor { $0.contains("Declined An Nguyễn's request") }
        #expect(text.contains("Declined An Nguyễn's request"))
        #expect(!text.contains("[ a  Accept ]"))
        let an = try #require(try store.user("an"))
        let until = Date().addingTimeInterval(15)
        while Date() < until, try store.hasPendingRequest(from: an.key, to: me.key) { Thread.sleep(forTimeInterval: 0.2) }
        #expect(try !store.hasPendingRequest(from: an.key, to: me.key))
        #expect(try !store.follows(an.key, me.key))
        try tmux.keys("q")
    }

    @Test("a TERM this machine does not know, or none, draws as a known terminal and says so in one line",
          arguments: ["xterm-kitty", nil])
    func unknownTerm(term: String?) throws {
        let tmux = try Tmux(folder: folder)
        let command = tmux.inbox(term: nil).replacingOccurrences(of: "env ", with: term.map { "env TERM=\($0) " } ?? "env -u TERM ")
        try tmux.start(command + "; sleep 30")
        defer { tmux.stop() }
        let text = try tmux.waitFor { $0.contains("synced") && $0.contains("drawing as") }
        let notice = term.map { "TERM=\($0) is unknown here: drawing as xterm-256color" } ?? "TERM is not set: drawing as xterm-256color"
        #expect(text.contains(notice))
        #expect(text.contains("● An Nguyễn Requested to follow you"))
        try tmux.keys("q")
    }

    @Test("an idle inbox is idle: under 2% of a core over three seconds with nothing happening")
    func idle() throws {
        let tmux = try Tmux(folder: folder)
        try tmux.start("exec " + tmux.inbox())
        defer { tmux.stop() }
        _ = try tmux.waitFor { $0.contains("synced") }
        Thread.sleep(forTimeInterval: 2)  // the stamps of the first look go out
        let pid = try tmux.run(["list-panes", "-t", tmux.session, "-F", "#{pane_pid}"]).trimmingCharacters(in: .whitespacesAndNewlines)
        func ticks() throws -> Int {
            let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            let fields = stat[stat.range(of: ")")!.upperBound...].split(separator: " ")
            return Int(fields[11])! + Int(fields[12])!  // utime, stime (fields 14 and 15 of the line)
        }
        #expect(try String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8).hasPrefix("stepo"))
        let before = try ticks()
        Thread.sleep(forTimeInterval: 3)
        let used = try ticks() - before
        #expect(used < 5, "the idle inbox used \(used) ticks of CPU in 3 s")
        try tmux.keys("q")
    }

    @Test("TERM=dumb cannot place text: the activity is printed as text instead, with why, and stepo exits 0")
    func dumbTerm() throws {
        let tmux = try Tmux(folder: folder)
        let command = tmux.inbox(term: "dumb") + " 2>\(folder)/err.txt; echo exit=$? >>\(folder)/err.txt; sleep 30"
        try tmux.start(command)
        defer { tmux.stop() }
        let deadline = Date().addingTimeInterval(30)
        var err = ""
        while Date() < deadline, !err.contains("exit=") {
            Thread.sleep(forTimeInterval: 0.2)
            err = (try? String(contentsOfFile: folder + "/err.txt", encoding: .utf8)) ?? ""
        }
        #expect(err.contains("TERM=dumb cannot place text on the screen; showing the activity as text"))
        #expect(err.contains("exit=0"))
        // The listing ends with the oldest rows: the first followers.
        #expect(try tmux.screen().contains("Maya Okonkwo — Started following you"))
    }

    @Test("TERM=dumb is asked nothing: no colour or cursor question reaches a terminal that would show it as text")
    func dumbTermIsNotProbed() throws {
        let terminal = try PseudoTerminal(rows: 24, columns: 80)
        let pid = try terminal.spawn([Stepo.binary], environment: [
            "TERM": "dumb", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "XDG_DATA_HOME": folder + "/data",
            "XDG_STATE_HOME": folder + "/state", "XDG_CONFIG_HOME": folder + "/config", "HOME": folder,
        ])
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        terminal.settle(quiet: 0.3, timeout: 5)
        let text = String(decoding: terminal.bytes, as: UTF8.self)
        #expect(text.contains("Maya Okonkwo"), "\(text.suffix(300))")
        #expect(!text.contains("\u{1B}]11;?"), "the background was asked")
        #expect(!text.contains("\u{1B}[6n"), "the cursor's place was asked")
        #expect((status >> 8) & 0xff == 0)
    }

    @Test("a server that accepts and never answers: the inbox draws within seconds, says it is waiting, and q quits")
    func silentServer() throws {
        let server = try FaultyServer(.silent)
        defer { server.stop() }
        let tmux = try Tmux(folder: folder)
        let started = Date()
        try tmux.start(tmux.inbox() + " inbox --server \(server.url) --token stp_silent", width: 100, height: 30)
        defer { tmux.stop() }
        let text = try tmux.waitFor(seconds: 10) { $0.contains("Activity") }
        #expect(Date().timeIntervalSince(started) < 8, "the first screen took \(Date().timeIntervalSince(started)) s")
        #expect(text.contains("syncing"))
        try tmux.keys("q")
        // Quit: the inbox ends, and its tmux session with it.
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, let screen = try? tmux.screen(), screen.contains("Activity") { Thread.sleep(forTimeInterval: 0.1) }
        #expect((try? tmux.screen())?.contains("Activity") != true, "q did not quit while the server was silent")
    }

    @Test("a key sequence the terminal's description does not know (Home as ESC [1~, End as ESC [4~) never quits; ^C ends as q does")
    func unknownSequences() throws {
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox(), width: 100, height: 30)
        defer { tmux.stop() }
        _ = try tmux.waitFor { $0.contains(" New") && $0.contains("synced") }
        try tmux.keys("j", "j")
        try tmux.run(["send-keys", "-t", tmux.session, "-l", "\u{1B}[1~"])   // Home, as tmux sends it
        let home = try tmux.waitFor { $0.split(separator: "\n").contains { $0.hasPrefix("›") && $0.contains("Linh Trần and") } }
        #expect(home.contains(" Activity"), "the inbox quit on an unknown sequence")
        try tmux.run(["send-keys", "-t", tmux.session, "-l", "\u{1B}[4~"])   // End
        let end = try tmux.waitFor { !$0.split(separator: "\n").contains { $0.hasPrefix("›") && $0.contains("Linh Trần and") } }
        #expect(end.contains(" Activity"))
        // ^C: the screen given back, as q gives it.
        try tmux.keys("C-c")
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, let screen = try? tmux.screen(), screen.contains(" Activity") { Thread.sleep(forTimeInterval: 0.1) }
        #expect((try? tmux.screen())?.contains(" Activity") != true, "^C did not end the inbox")
    }

    @Test("accepting a request from the list changes its row on screen at once: the dot and the bold go, and it says accepted")
    func acceptedRowChanges() throws {
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox(), width: 100, height: 30)
        defer { tmux.stop() }
        _ = try tmux.waitFor { $0.contains(" New") && $0.contains("synced") }
        try tmux.filter("An Ng")
        _ = try tmux.waitFor { $0.contains("filter /An Ng") }
        let line = { () throws -> String in
            try #require(try tmux.styledScreen().split(separator: "\n").map(String.init).first { $0.contains("Requested to follow you") })
        }
        let before = try line()
        #expect(before.contains("●"))
        try tmux.keys("a")
        let text = try tmux.waitFor { $0.contains("Requested to follow you · accepted") }
        #expect(text.contains("Accepted An Nguyễn"))
        let after = try line()
        #expect(after != before)
        #expect(!after.contains("●"), "\(after.debugDescription)")
    }

    @Test("stepo inbox --open ROW stamps only that row until the list is drawn; q shows the list with that row selected")
    func openRowStampsOnlyIt() throws {
        // The default store, seeded by a first run that only syncs (`stepo sync`); An Nguyễn's
        // request is the row landed on.
        let seeded = try Stepo.run(["sync"], environment: ["XDG_DATA_HOME": folder + "/data", "XDG_STATE_HOME": folder + "/state"])
        #expect(seeded.status == 0, "\(seeded.stderr)")
        let store = try Store(path: folder + "/data/stepo/stepo.db")
        let me = try #require(try store.user("chaucao"))
        let id = try #require(try store.inboxes.activity(of: me).first { $0.kind == .followRequest }).id
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox() + " inbox --open \(id)", width: 100, height: 30)
        defer { tmux.stop() }
        _ = try tmux.waitFor { $0.contains(" Profile") && $0.contains("@an.nguyen") }
        // The row is read (and so seen); nothing else is, however long the screen stays.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, try store.inboxes.counts(for: me.key).unseen == 106 { Thread.sleep(forTimeInterval: 0.2) }
        Thread.sleep(forTimeInterval: 1)
        #expect(try store.inboxes.counts(for: me.key).unseen == 105)
        try tmux.keys("q")
        let list = try tmux.waitFor { $0.contains(" New") && $0.contains("›") }
        let selected = try #require(list.split(separator: "\n").first { $0.hasPrefix("›") })
        #expect(selected.contains("An Nguyễn Requested to follow you"), "\(list)")
    }

    @Test("an inbox on an address where nothing listens, then q: nothing of a replica is left; a trailing / names the same server")
    func nothingListens() throws {
        // A port the system gave and took back: nothing listens there now.
        let closed = try FaultyServer(.silent)
        let url = closed.url
        closed.stop()
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox() + " inbox --server \(url)/ --token stp_nowhere", width: 100, height: 30)
        defer { tmux.stop() }
        _ = try tmux.waitFor(seconds: 10) { $0.contains("Cannot sync with the server") }
        try tmux.keys("q")
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, let screen = try? tmux.screen(), screen.contains("Activity") { Thread.sleep(forTimeInterval: 0.1) }
        let replicas = folder + "/state/stepo/replicas"
        let left = (try? FileManager.default.contentsOfDirectory(atPath: replicas)) ?? []
        #expect(left.isEmpty, "left behind: \(left)")
        // Nor when it is ended by ^C.
        let again = try Tmux(folder: folder + "/again")
        try again.start(again.inbox().replacingOccurrences(of: folder + "/again/state", with: folder + "/state")
                        + " inbox --server \(url) --token stp_nowhere", width: 100, height: 30)
        _ = try again.waitFor(seconds: 10) { $0.contains("Cannot sync with the server") }
        try again.keys("C-c")
        let stopped = Date().addingTimeInterval(5)
        while Date() < stopped, let screen = try? again.screen(), screen.contains("Activity") { Thread.sleep(forTimeInterval: 0.1) }
        again.stop()
        let after = (try? FileManager.default.contentsOfDirectory(atPath: replicas)) ?? []
        #expect(after.isEmpty, "left behind after ^C: \(after)")
        // A real server, asked with and without a trailing slash: one replica, synced once.
        let db = folder + "/served.db"
        #expect(try Stepo.run(["ingest", "--db", db, Stepo.sampleEvents]).status == 0)
        let token = try Stepo.run(["token", "--db", db, "--user", "chaucao"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let (server, address) = try Stepo.serve(db, log: folder + "/serve.log")
        defer { server.stop() }
        for spelled in [address, address + "/", address + "//"] {
            let synced = try Stepo.run(["sync", "--server", spelled, "--token", token], environment: ["XDG_STATE_HOME": folder + "/state"])
            #expect(synced.status == 0, "\(spelled): \(synced.stderr)")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: replicas).filter { $0.hasSuffix(".db") }
        #expect(files.count == 1, "\(files)")
    }

    @Test("without colour (NO_COLOR, LANG=C) the header's reverse runs unbroken under the title, the badge and the words, and a deleted row says so")
    func monoHeaderAndDeleted() throws {
        let tmux = try Tmux(folder: folder)
        try tmux.start("env NO_COLOR=1 " + tmux.inbox(term: "xterm-256color", locale: "C"), width: 100, height: 30)
        defer { tmux.stop() }
        _ = try tmux.waitFor { $0.contains("synced") && $0.contains(" New") }
        let header = try #require(try tmux.styledScreen().split(separator: "\n").first.map(String.init))
        let cells = Tmux.reversed(header)
        #expect(cells.count >= 90, "\(cells.count) cells")
        let broken = cells.enumerated().filter { !$0.element.1 }.map(\.offset)
        #expect(broken.isEmpty, "not reversed at \(broken.prefix(10)): \(header.debugDescription)")
        // A deleted row cannot be struck through without UTF-8: it says [deleted] in words.
        try tmux.filter("mateo")
        let filtered = try tmux.waitFor { $0.contains("filter /mateo") }
        let mateo = try #require(filtered.split(separator: "\n").first { $0.contains("Mateo Rossi") && $0.contains("Stepped") })
        #expect(mateo.contains("[deleted] Stepped with you"), "\(mateo)")
    }

    @Test("a server whose answers are not JSON: the inbox says it cannot sync and why, and shows none of its bytes")
    func nonsenseServer() throws {
        let server = try FaultyServer(.nonsense)
        defer { server.stop() }
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox() + " inbox --server \(server.url) --token stp_nonsense", width: 120, height: 30)
        defer { tmux.stop() }
        let text = try tmux.waitFor(seconds: 15) { $0.contains("Cannot sync with the server") }
        #expect(text.contains("not understood"))
        #expect(text.contains("offline"))
        #expect(!text.contains("pwned") || text.contains("␛"), "the server's escape reached the screen raw")
        try tmux.keys("q")
    }

    @Test("a first sync paints as it goes: rows on screen under 'syncing N%', then all of them, synced")
    func paintsWhileSyncing() throws {
        // One person with 40,000 unseen rows on the embedded default, never opened before.
        let data = folder + "/data/stepo"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let store = try Store(path: data + "/stepo.db")
        let bulk = BulkWorld(store)
        try bulk.build {
            try bulk.addUsers(1...301)
            try bulk.addJourneys(3, owners: 1)
            try bulk.addSteps(30, journeys: 3, publishedAt: Timestamp.parse("2026-11-01T00:00:00Z")!)
            try bulk.addRows(recipient: 1, count: 40_000, newest: Int64(Date().timeIntervalSince1970 * 1000) - 60_000,
                             spacing: 1000, actors: 2...301, steps: 30)
        }
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox() + " --user u1", width: 100, height: 30)
        defer { tmux.stop() }
        // Read as it changes (not waiting for a settled screen: the percentage moves).
        var during: String?
        let deadline = Date().addingTimeInterval(60)
        var text = ""
        while Date() < deadline {
            text = try tmux.screen()
            // During a first sync nothing is New yet (what was seen elsewhere comes with the rows).
            if during == nil, text.range(of: #"syncing \d+%"#, options: .regularExpression) != nil, text.contains(" User ") {
                during = text
            }
            if text.contains("synced") { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let painted = try #require(during, "never saw rows under 'syncing N%': last screen \(text)")
        #expect(painted.split(separator: "\n").first?.contains("Activity") == true)
        text = try tmux.waitFor { $0.contains("synced") }
        #expect(text.contains("synced"))
        try tmux.keys("q")
    }
}
