import Notifications
import Testing
@testable import Inbox
@testable import Replica

@Suite("Terminal text")
struct TextWidthTests {
    @Test("combining marks take no cell, CJK and emoji take two, ASCII one")
    func widths() {
        #expect(TextWidth.cells("Trần") == 4)
        #expect(TextWidth.cells("Nguye\u{0302}\u{0303}n") == 6)
        #expect(TextWidth.cells("日本") == 4)
        #expect(TextWidth.cells("run 🏃") == 6)
        #expect(TextWidth.cells("♥ ↗") == 3)
        #expect(TextWidth.cells("❤️") == 2)
    }

    @Test("fitting cuts between characters, never inside one, and marks the cut")
    func fit() {
        #expect(TextWidth.fit("日本語のテキスト", width: 6) == "日本…")
        #expect(TextWidth.fit("Nguye\u{0302}\u{0303}n Thi\u{0323} Mai", width: 6) == "Nguyễ…")
        #expect(TextWidth.fit("short", width: 10) == "short")
    }

    @Test("a grid never splits a wide character at its edge, and escapes arrive inert")
    func grid() {
        var grid = Grid(width: 5, height: 1)
        grid.put("ab日本", x: 0, y: 0, role: .body)
        #expect(grid.lines == ["ab日 "])
        var evil = Grid(width: 12, height: 1)
        evil.put("x\u{1B}[2Jy", x: 0, y: 0, role: .body)
        #expect(evil.lines[0].hasPrefix("x␛[2Jy"))
    }
}

@Suite("The Activity tab's state")
struct InboxStateTests {
    static let now = Timestamp.parse("2026-11-29T12:00:00Z")!

    static func row(_ id: Int, _ title: String, _ body: String, minutesAgo: Int64, thread: String, kind: String = "heart",
                    seen: Bool = false) -> ReplicaRow {
        let actor = title.split(separator: " ").first.map { String($0).lowercased() } ?? ""
        return ReplicaRow(id: id, version: id, createdAt: now - minutesAgo * 60_000, kind: kind, title: title, body: body,
                          seenAt: seen ? now - 1 : nil, readAt: nil, deleted: false,
                          json: .object([("thread", .string(thread)), ("actor", .string(actor))]))
    }

    static let rows = [
        row(5, "Maya Okonkwo", "Stepped with you by heart: Trail run", minutesAgo: 2, thread: "step:s1"),
        row(4, "Kofi Asante", "Stepped with you by share: Trail run", minutesAgo: 5, thread: "step:s1"),
        row(3, "An Nguyễn", "Requested to follow you", minutesAgo: 60, thread: "user:an", kind: "followRequest"),
        row(2, "Priya Nair", "Hearted your step: Swim", minutesAgo: 60 * 30, thread: "step:s2", seen: true),
        row(1, "Stepo", "Share your journey with a link — new in Stepo", minutesAgo: 60 * 24 * 10, thread: "stepo", kind: "announcement", seen: true),
    ]

    func opened() -> (InboxState, [Effect]) {
        var state = InboxState(now: Self.now)
        state.width = 80
        state.height = 20
        let effects = Inbox.reduce(&state, .rowsLoaded(Self.rows))
        return (state, effects)
    }

    @Test("opening the tab puts the unseen rows in New, stacks a step's rows into one thread, and stamps all seen")
    func opening() {
        let (state, effects) = opened()
        #expect(effects == [.markAllSeen])
        #expect(state.newIds == [5, 4, 3])
        #expect(state.lines == [
            .header(.new), .card(Card(key: "New|step:s1", rowIds: [5, 4], section: .new)),
            .card(Card(key: "row:3", rowIds: [3], section: .new)),
            .header(.thisWeek), .card(Card(key: "This week|step:s2", rowIds: [2], section: .thisWeek)),
            .header(.earlier), .card(Card(key: "row:1", rowIds: [1], section: .earlier)),
        ])
        #expect(state.selection == 1)
    }

    @Test("j and k move over cards, skipping headers; g and G jump to the ends")
    func moving() {
        var (state, _) = opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        #expect(state.selection == 2)
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        #expect(state.selection == 4)
        _ = Inbox.reduce(&state, .keyPressed(.character("G")))
        #expect(state.selection == 6)
        _ = Inbox.reduce(&state, .keyPressed(.character("k")))
        #expect(state.selection == 4)
        _ = Inbox.reduce(&state, .keyPressed(.character("g")))
        #expect(state.selection == 1)
    }

    @Test("Space expands a thread into its rows and collapses it again")
    func threads() {
        var (state, _) = opened()
        _ = Inbox.reduce(&state, .keyPressed(.space))
        #expect(state.lines[2] == .member(rowId: 5, threadKey: "New|step:s1"))
        #expect(state.lines[3] == .member(rowId: 4, threadKey: "New|step:s1"))
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        _ = Inbox.reduce(&state, .keyPressed(.left))
        #expect(state.selection == 1)
        #expect(state.lines.count == 7)
    }

    @Test("Enter opens the row's destination and stamps it read; q goes back, then quits")
    func opening_a_row() {
        var (state, _) = opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        #expect(Inbox.reduce(&state, .keyPressed(.enter)) == [.markRead(3), .loadDestination(3)])
        #expect(state.screen == .destination(rowId: 3))
        #expect(Inbox.reduce(&state, .keyPressed(.character("q"))) == [])
        #expect(state.screen == .activity)
        #expect(Inbox.reduce(&state, .keyPressed(.character("q"))) == [.quit])
    }

    @Test("the drawn list shows the New section, dots, the thread card and the times")
    func drawing() {
        var (state, _) = opened()
        _ = Inbox.reduce(&state, .syncChanged(status: "synced 3s ago", counts: ServerCounts(unseen: 3, unread: 5, stale: false)))
        let lines = ActivityView.render(state).lines
        #expect(lines[0].hasPrefix(" Activity  3 "))
        #expect(lines[0].hasSuffix("synced 3s ago "))
        #expect(lines[1].hasPrefix(" New"))
        #expect(lines[2].hasPrefix(" ● Maya Okonkwo and 1 other · Trail run  (2 new)  ▸"))
        #expect(lines[2].hasSuffix("(MO KA) 2m "))
        #expect(lines[3].hasPrefix(" ● An Nguyễn Requested to follow you"))
        #expect(lines[5].contains("Priya Nair Hearted your step: Swim"))
        #expect(lines[7].contains("Stepo Share your journey with a link"))
        #expect(lines[7].hasSuffix("Nov 19 "))
        #expect(lines[19].contains("Space expand"))
    }

    @Test("below 40×10 the window says it is too small")
    func tooSmall() {
        var (state, _) = opened()
        _ = Inbox.reduce(&state, .resized(width: 30, height: 8))
        #expect(ActivityView.render(state).lines[0].hasPrefix("Window too small"))
    }

    @Test("? lists every key, and scrolls when the window is short")
    func help() {
        var (state, _) = opened()
        _ = Inbox.reduce(&state, .resized(width: 60, height: 10))
        _ = Inbox.reduce(&state, .keyPressed(.character("?")))
        var text = ActivityView.render(state).lines.joined(separator: "\n")
        #expect(text.contains("j/k ↑/↓  move"))
        #expect(!text.contains("?  this help"))
        for _ in 0..<10 { _ = Inbox.reduce(&state, .keyPressed(.character("j"))) }
        text = ActivityView.render(state).lines.joined(separator: "\n")
        #expect(text.contains("?  this help"))
        _ = Inbox.reduce(&state, .keyPressed(.character("g")))
        _ = Inbox.reduce(&state, .resized(width: 60, height: 30))
        text = ActivityView.render(state).lines.joined(separator: "\n")
        #expect(text.contains("a / d  accept / decline a follow request"))
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        #expect(state.screen == .activity)
    }

    @Test("a accepts a follow request; d asks first and declines only on y; f follows back a new follower")
    func actions() {
        var (state, _) = opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))  // An's request
        #expect(Inbox.reduce(&state, .keyPressed(.character("d"))) == [])
        #expect(state.confirming == Confirmation(user: "an", name: "An Nguyễn"))
        #expect(ActivityView.render(state).lines[19].contains("Decline An Nguyễn's request? y / n"))
        #expect(Inbox.reduce(&state, .keyPressed(.character("n"))) == [])
        #expect(Inbox.reduce(&state, .keyPressed(.character("d"))) == [])
        #expect(Inbox.reduce(&state, .keyPressed(.character("y"))) == [.act(type: "declineRequest", user: "an")])
        #expect(Inbox.reduce(&state, .keyPressed(.character("a"))) == [.act(type: "acceptRequest", user: "an")])
        #expect(Inbox.reduce(&state, .keyPressed(.character("f"))) == [])  // not a new-follower row
    }

    @Test("a deleted row is struck through")
    func deleted() {
        var rows = Self.rows
        rows[3].deleted = true
        var state = InboxState(now: Self.now)
        state.height = 20
        _ = Inbox.reduce(&state, .rowsLoaded(rows))
        let line = ActivityView.render(state).lines[5]
        #expect(line.contains("H\u{0336}e\u{0336}a\u{0336}r\u{0336}"))
    }

    @Test("s opens the settings; Space toggles a switch and asks for it to be saved; custom alerts stay off-limits")
    func settings() {
        var (state, _) = opened()
        #expect(Inbox.reduce(&state, .keyPressed(.character("s"))) == [.loadSettings])
        #expect(state.screen == .settings)
        _ = Inbox.reduce(&state, .settingsLoaded(["all": true, "stepWith": true, "social": true, "engagement": true, "journeys": true]))
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        #expect(Inbox.reduce(&state, .keyPressed(.space)) == [.setPreference("stepWith", false)])
        #expect(state.settings?["stepWith"] == false)
        let lines = ActivityView.render(state).lines
        #expect(lines[5].hasPrefix("  [ ] Step-with alerts"))
        for _ in 0..<5 { _ = Inbox.reduce(&state, .keyPressed(.character("j"))) }
        #expect(Inbox.reduce(&state, .keyPressed(.space)) == [])
        #expect(Inbox.reduce(&state, .keyPressed(.character("q"))) == [])
        #expect(state.screen == .activity)
    }

    @Test("p previews the selected row's push from its real payloads")
    func pushPreview() {
        var (state, _) = opened()
        #expect(Inbox.reduce(&state, .keyPressed(.character("p"))) == [.loadPush(5)])
        let content = PushContent(rowId: 5, kind: .steppedWithHeart, title: "Maya Okonkwo", body: "Stepped with you by heart: Trail run",
                                  image: "https://cdn/s1.jpg", face: "https://cdn/maya.jpg", thread: "step:s1",
                                  deepLink: "stepo://step/s1", badge: 3)
        let preview = PushPreview.destination(apns: Payload.apns(content), fcm: Payload.fcm(content), width: 80)
        _ = Inbox.reduce(&state, .resized(width: 80, height: 40))
        _ = Inbox.reduce(&state, .destinationLoaded(preview))
        let text = ActivityView.render(state).lines.joined(separator: "\n")
        #expect(text.contains("│ STEPO · now   [photo]"))
        #expect(text.contains("│ (face) Maya Okonkwo · now"))
        #expect(text.contains("│ thread step:s1 · badge 3 · active"))
        #expect(preview.lines.contains { $0.text.contains("\"apns-priority\": \"10\"") })

        // The grouped card stacks the thread's other pushed rows under this one.
        let grouped = PushPreview.destination(apns: Payload.apns(content), fcm: Payload.fcm(content), width: 80,
                                              thread: [Self.rows[1]]).lines.map(\.text)
        let card = grouped.drop { !$0.contains("Grouped · thread") }.prefix(6)
        #expect(Array(card.dropFirst()) == ["│ Maya Okonkwo", "│ Stepped with you by heart: Trail run", "│ 1 more notification",
                                            "│   Kofi Asante: Stepped with you by share: Trail run",
                                            "│ thread step:s1 · badge 3 · active"])
    }

    @Test("i on a step asks for the people behind its hearts and shares; elsewhere it does nothing")
    func interactions() {
        var (state, _) = opened()
        var row = Self.rows[0]
        row.json = .object([("thread", "step:s1"), ("tap", .object([("screen", "step"), ("step", "s1")]))])
        _ = Inbox.reduce(&state, .rowsLoaded([row] + Self.rows.dropFirst()))
        state.screen = .destination(rowId: row.id)
        _ = Inbox.reduce(&state, .destinationLoaded(Destination(title: "Step", lines: [("Trail run", .body)], focus: 0)))
        #expect(Inbox.reduce(&state, .keyPressed(.character("i"))) == [.loadInteractions(step: "s1")])
        _ = Inbox.reduce(&state, .destinationLoaded(Destination(title: "Interactions", lines: [("♥ Maya", .actor)], focus: 0)))
        #expect(Inbox.reduce(&state, .keyPressed(.character("i"))) == [])
    }

    @Test("a profile's inline Accept / Decline acts for the row that opened it, and gives way to what was done")
    func profileButtons() {
        var (state, _) = opened()
        let request = Self.rows[2]  // An Nguyễn's follow request
        state.screen = .destination(rowId: request.id)
        let profile = Destination(title: "Profile", lines: [("An Nguyễn", .title), ("[ a  Accept ]   [ d  Decline ]", .badge)], focus: 0)
        _ = Inbox.reduce(&state, .destinationLoaded(profile))
        #expect(ActivityView.render(state).lines.last?.contains("a accept  d decline") == true)
        #expect(Inbox.reduce(&state, .keyPressed(.character("f"))) == [])  // not a new-follower row
        #expect(Inbox.reduce(&state, .keyPressed(.character("d"))) == [])
        #expect(ActivityView.render(state).lines.last?.contains("Decline An Nguyễn's request? y / n") == true)
        #expect(Inbox.reduce(&state, .keyPressed(.character("y"))) == [.act(type: "declineRequest", user: "an")])
        #expect(state.destination?.lines.map(\.text) == ["An Nguyễn", "Declined ✓"])
        #expect(state.screen == .destination(rowId: request.id))

        _ = Inbox.reduce(&state, .destinationLoaded(profile))
        #expect(Inbox.reduce(&state, .keyPressed(.character("a"))) == [.act(type: "acceptRequest", user: "an")])
        #expect(state.destination?.lines.map(\.text) == ["An Nguyễn", "Accepted ✓"])
    }

    @Test("/ filters the list by text or by kind; Esc clears it")
    func filtering() {
        var (state, _) = opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("/")))
        for c in "maya" { _ = Inbox.reduce(&state, .keyPressed(.character(c))) }
        #expect(state.lines.count == 2)
        #expect(state.selectedRowIds == [5])
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        #expect(!state.typingFilter && state.filter == "maya")
        _ = Inbox.reduce(&state, .keyPressed(.escape))
        #expect(state.filter == nil && state.lines.count == 7)
        _ = Inbox.reduce(&state, .keyPressed(.character("/")))
        for c in "kind:follow" { _ = Inbox.reduce(&state, .keyPressed(.character(c))) }
        #expect(state.selectedRowIds == [3])
        _ = Inbox.reduce(&state, .keyPressed(.backspace))
        #expect(state.filter == "kind:follo")
    }

    @Test("the mouse: the wheel moves, a click selects the row under it, a double click opens it")
    func mouse() {
        var (state, _) = opened()
        _ = Inbox.reduce(&state, .keyPressed(.wheelDown))
        #expect(state.selection == 4)
        _ = Inbox.reduce(&state, .keyPressed(.click(row: 3)))
        #expect(state.selection == 2)
        _ = Inbox.reduce(&state, .keyPressed(.click(row: 1)))  // a section header: nothing to select
        #expect(state.selection == 2)
        #expect(Inbox.reduce(&state, .keyPressed(.doubleClick(row: 3))) == [.markRead(3), .loadDestination(3)])
    }

    @Test("near the end of a full window of rows, the tab asks for older ones")
    func paging() {
        var (state, _) = opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        #expect(!Inbox.reduce(&state, .keyPressed(.character("G"))).contains(.loadMore))
        state.rowWindowFull = true
        #expect(Inbox.reduce(&state, .keyPressed(.character("G"))) == [.loadMore])
    }

    @Test("a row arriving while the tab is open joins New, and is stamped seen")
    func arriving() {
        var (state, _) = opened()
        let newcomer = Self.row(6, "Zed Okafor", "Requested to follow you", minutesAgo: 0, thread: "user:zed", kind: "followRequest")
        #expect(Inbox.reduce(&state, .rowsLoaded([newcomer] + Self.rows)) == [.markAllSeen])
        #expect(state.newIds.contains(6))
        #expect(state.lines[1] == .card(Card(key: "row:6", rowIds: [6], section: .new)))
    }
}

@Suite("An ASCII-only terminal")
struct ASCIITerminalTests {
    @Test("letters lose their marks, glyphs get stand-ins, the rest is a question mark")
    func standIns() {
        let shown = { (text: String) in String(text.map(Terminal.asciiStandIn)) }
        #expect(shown("Linh Trần") == "Linh Tran")
        #expect(shown("An Nguyễn") == "An Nguyen")
        #expect(shown("Vy Đặng") == "Vy Dang")
        #expect(shown("● New ▸ ♥") == "* New > <")
        #expect(shown("中文 🏃") == "?? ?")
    }
}
