import Foundation
import Notifications
import Testing
import Wire
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

    @Test("wrapping breaks at spaces and ends the last line with … when text is left")
    func wrap() {
        #expect(TextWidth.wrap("one two three four", width: 9, lines: 2) == ["one two", "three fo…"])
        #expect(TextWidth.wrap("short", width: 9, lines: 2) == ["short"])
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

/// Rows and cards for the reducer's tests.
enum Fixture {
    static let now = Timestamp.parse("2026-11-29T12:00:00Z")!

    static func row(_ id: Int, _ title: String, _ body: String, minutesAgo: Int64, thread: String, kind: Kind = .heart,
                    read: Bool = false, deleted: Bool = false) -> ActivityRow {
        let actor = title.split(separator: " ").first.map { String($0).lowercased() }
        let tap: Tap = thread.hasPrefix("step:") ? .step(String(thread.dropFirst(5)), comments: .closed, comment: nil)
            : (kind == .announcement ? .link(Tap.feedLink) : .profile(actor ?? "", action: kind == .followRequest ? .acceptDecline : .none))
        return ActivityRow(id: id, event: "e\(id)", recipient: "me", kind: kind, actor: kind == .announcement ? nil : actor,
                           title: title, body: body, media: Media(), tap: tap, thread: thread, push: .sent,
                           subject: RowSubject(step: tap.stepId), createdAt: now - minutesAgo * 60_000, version: id,
                           seenAt: nil, readAt: read ? now - 1 : nil, deleted: deleted)
    }

    static let maya = row(5, "Maya Okonkwo", "Stepped with you by heart: Trail run", minutesAgo: 2, thread: "step:s1", kind: .steppedWithHeart)
    static let kofi = row(4, "Kofi Asante", "Stepped with you by share: Trail run", minutesAgo: 5, thread: "step:s1", kind: .steppedWithShare)
    static let an = row(3, "An Nguyễn", "Requested to follow you", minutesAgo: 60, thread: "user:an", kind: .followRequest)
    static let priya = row(2, "Priya Nair", "Hearted your step: Swim", minutesAgo: 60 * 30, thread: "step:s2", read: true)
    static let stepo = row(1, "Stepo", "Share your journey with a link — new in Stepo", minutesAgo: 60 * 24 * 10, thread: "stepo",
                           kind: .announcement)

    static let thread = ListCard(key: "step:s1|1", newest: maya, rows: 2, people: 2, faces: ["Maya Okonkwo", "Kofi Asante"],
                                 caption: "Trail run", newRows: 2, allDeleted: false, unreadRows: 2, newUnread: true)
    static let request = ListCard(single: an, newAbove: 2)
    static let swim = ListCard(single: priya, newAbove: 2)
    static let news = ListCard(single: stepo, newAbove: 2)
    static let cards = [thread, request, swim, news]

    /// Step s1 as its destination shows it: no comments, closed.
    static func stepPage(offline: Bool = true) -> StepPage {
        let step = StepEntity(id: "s1", journey: "j1", journeyTitle: "Trail", owner: "me", caption: "Trail run", photoUrl: nil,
                              isFinal: false, publishedAt: now, deleted: false, hearts: 1, shares: 1)
        return StepPage(step: step, ownerName: "Me", comments: [], commentsMode: .closed, highlight: nil, offline: offline)
    }

    /// The tab opened over these cards: rows above 2 were unseen.
    static func opened(height: Int = 20) -> InboxState {
        var state = InboxState(now: now)
        _ = Inbox.reduce(&state, .resized(width: 80, height: height))
        _ = Inbox.reduce(&state, .opened(seenThrough: 2))
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: cards, reachedEnd: true)))
        return state
    }
}

@Suite("The Activity tab's state")
struct InboxStateTests {
    @Test("opening the tab asks for the newest cards, and stamps everything seen once they are drawn")
    func opening() {
        var state = InboxState(now: Fixture.now)
        let effects = Inbox.reduce(&state, .opened(seenThrough: 2))
        #expect(effects == [.loadList(.top, newAbove: 2, filter: nil)])
        var expected = InboxState(now: Fixture.now)
        expected.newAbove = 2
        expected.arrivedUnseen = true
        #expect(state == expected)
        #expect(Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: Fixture.cards, reachedEnd: true))) == [.markAllSeen])
    }

    @Test("the cards arrive in sections: New holds what came since the last visit; a step's rows stack")
    func sections() {
        let state = Fixture.opened()
        #expect(state.list.lines == [
            .header(.new), .card(Fixture.thread, section: .new), .card(Fixture.request, section: .new),
            .header(.thisWeek), .card(Fixture.swim, section: .thisWeek),
            .header(.earlier), .card(Fixture.news, section: .earlier),
        ])
        #expect(state.list.selection == 1 && state.list.atTop && state.list.atEnd && state.list.loaded)
    }

    @Test("j and k move over cards, skipping headers; g and G jump to the ends")
    func moving() {
        var state = Fixture.opened()
        var expected = state
        #expect(Inbox.reduce(&state, .keyPressed(.character("j"))) == [])
        expected.list.selection = 2
        #expect(state == expected)
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        #expect(state.list.selection == 4)
        _ = Inbox.reduce(&state, .keyPressed(.character("G")))
        #expect(state.list.selection == 6)
        _ = Inbox.reduce(&state, .keyPressed(.character("k")))
        #expect(state.list.selection == 4)
        _ = Inbox.reduce(&state, .keyPressed(.character("g")))
        #expect(state.list.selection == 1)
    }

    @Test("far from the cards held, G asks for the oldest and lands on the last when they come")
    func farEnd() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: Fixture.cards, reachedEnd: false)))
        #expect(Inbox.reduce(&state, .keyPressed(.character("G"))) == [.loadList(.bottom, newAbove: 2, filter: nil)])
        #expect(state.jump == .bottom)
        let old = ListCard(single: Fixture.row(0, "Old Timer", "Hearted your step: Swim", minutesAgo: 60 * 24 * 90, thread: "step:s9"),
                           newAbove: 2)
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .bottom, cards: [old], reachedEnd: false)))
        #expect(state.list.lines == [.header(.earlier), .card(old, section: .earlier)])
        #expect(state.list.selection == 1 && state.jump == nil && state.list.atEnd && !state.list.atTop)
    }

    @Test("near the end of the cards held, the tab reads older ones; the window never grows past its bound")
    func paging() {
        var state = Fixture.opened(height: 10)
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: Fixture.cards, reachedEnd: false)))
        let effects = Inbox.reduce(&state, .keyPressed(.character("j")))
        #expect(effects == [.loadList(.older(before: 1), newAbove: 2, filter: nil)])
        let older = (1...ListWindow.held).map { i in
            ListCard(single: Fixture.row(-i, "Person \(i)", "Hearted your step: Swim", minutesAgo: 60 * 24 * 30, thread: "user:\(i)"),
                     newAbove: 2)
        }
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .older(before: 1), cards: older, reachedEnd: false)))
        // What is on screen stays, even past the bound.
        #expect(state.list.cards.count == ListWindow.held + 4 && state.list.atTop)
        #expect(state.list.selectedLine?.row?.id == Fixture.an.id)
        // Far down, the next page pushes the top cards out.
        _ = Inbox.reduce(&state, .keyPressed(.pageDown))
        for _ in 0..<ListWindow.held { _ = Inbox.reduce(&state, .keyPressed(.character("j"))) }
        let selected = state.list.selectedLine
        let more = (1...ListWindow.page).map { i in
            ListCard(single: Fixture.row(-1000 - i, "Later \(i)", "Hearted your step", minutesAgo: 60 * 24 * 40, thread: "user:l\(i)"),
                     newAbove: 2)
        }
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .older(before: older.last!.newest.id), cards: more, reachedEnd: true)))
        #expect(state.list.cards.count == ListWindow.held)
        #expect(!state.list.atTop && state.list.atEnd)
        #expect(state.list.selectedLine == selected)
    }

    @Test("Space opens a thread and asks for its rows; they show under the card; ← closes it")
    func threads() {
        var state = Fixture.opened()
        #expect(Inbox.reduce(&state, .keyPressed(.space)) == [.loadMembers(card: "step:s1|1")])
        _ = Inbox.reduce(&state, .membersLoaded(card: "step:s1|1", rows: [Fixture.maya, Fixture.kofi], more: 0))
        #expect(state.list.lines[2] == .member(Fixture.maya, card: "step:s1|1"))
        #expect(state.list.lines[3] == .member(Fixture.kofi, card: "step:s1|1"))
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        _ = Inbox.reduce(&state, .keyPressed(.left))
        #expect(state.list.selection == 1 && state.list.lines.count == 7 && state.expanded.isEmpty)
    }

    @Test("Enter stamps the row read and opens where its tap lands; q goes back one screen, then quits")
    func openingARow() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        let before = state
        #expect(Inbox.reduce(&state, .keyPressed(.enter)) == [.markRead(3), .loadDestination(.tap(Fixture.an))])
        var expected = before
        expected.screens = [.destination(DestinationScreen(request: .tap(Fixture.an)))]
        Inbox.readCard(&expected.list.cards[1], at: Fixture.now)   // read at once: the list shows it so on return
        Inbox.relist(&expected)
        #expect(state == expected)
        #expect(Inbox.reduce(&state, .keyPressed(.character("q"))) == [])
        expected.screens = []
        #expect(state == expected)
        #expect(Inbox.reduce(&state, .keyPressed(.character("q"))) == [.quit])
    }

    @Test("a destination the replica cannot read closes its loading screen and says why; a late failure leaves the screen after it alone")
    func destinationFailed() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        let before = state
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        #expect(state.screens.count == 1)
        // A failure for another request changes nothing.
        _ = Inbox.reduce(&state, .destinationFailed("other", for: .interactions(step: "elsewhere")))
        #expect(state.screens.count == 1)
        _ = Inbox.reduce(&state, .destinationFailed("cannot be read", for: .tap(Fixture.an)))
        #expect(state.screens.isEmpty && state.notice == "cannot be read")
        #expect(state.list.selection == before.list.selection)
        // Opened, loaded, then a failure for it comes late: the open screen stays.
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .destinationLoaded(.link(LinkPage(text: "News", url: "https://stepo.app/news"))))
        _ = Inbox.reduce(&state, .destinationFailed("late", for: .tap(Fixture.an)))
        #expect(state.screens.count == 1)
    }

    @Test("q from the interactions list goes back to the step, not the list")
    func backOneLevel() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .destinationLoaded(.step(Fixture.stepPage())))
        #expect(Inbox.reduce(&state, .keyPressed(.character("i"))) == [.loadDestination(.interactions(step: "s1"))])
        #expect(state.screens.count == 2)
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        #expect(state.screens.count == 1)
        if case .destination(let screen)? = state.screens.last, case .step? = screen.destination {} else {
            Issue.record("not back on the step: \(state.screens)")
        }
    }

    @Test("back from a member of an open thread, the selection is on that member")
    func selectionReturns() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.space))
        _ = Inbox.reduce(&state, .membersLoaded(card: "step:s1|1", rows: [Fixture.maya, Fixture.kofi], more: 0))
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        #expect(state.list.selectedLine == .member(Fixture.kofi, card: "step:s1|1"))
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        var read = Fixture.kofi
        read.readAt = Fixture.now
        #expect(state.list.selectedLine == .member(read, card: "step:s1|1"))
    }

    static let page = ListPage(request: .top, cards: Fixture.cards, reachedEnd: true)

    @Test("rows arriving while the list's top is drawn are seen once drawn; while a screen covers it, when it is back")
    func arriving() {
        var state = Fixture.opened()
        #expect(Inbox.reduce(&state, .replicaChanged(unseenArrived: true)) == [.loadList(.top, newAbove: 2, filter: nil)])
        #expect(Inbox.reduce(&state, .listLoaded(Self.page)) == [.markAllSeen])
        _ = Inbox.reduce(&state, .keyPressed(.character("s")))
        #expect(Inbox.reduce(&state, .replicaChanged(unseenArrived: true)) == [])
        #expect(state.listStale)
        #expect(Inbox.reduce(&state, .keyPressed(.character("q"))) == [.loadList(.top, newAbove: 2, filter: nil)])
        #expect(!state.listStale)
        #expect(Inbox.reduce(&state, .listLoaded(Self.page)) == [.markAllSeen])
    }

    @Test("rows arriving while the list is filtered or scrolled away are not stamped seen until the top is drawn; a hint says they came")
    func arrivingOffScreen() {
        var state = Fixture.opened(height: 12)
        _ = Inbox.reduce(&state, .keyPressed(.character("/")))
        for c in "Kofi" { _ = Inbox.reduce(&state, .keyPressed(.character(c))) }
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        #expect(!Inbox.reduce(&state, .replicaChanged(unseenArrived: true)).contains(.markAllSeen))
        #expect(!Inbox.reduce(&state, .listLoaded(Self.page)).contains(.markAllSeen))
        #expect(ActivityView.listFooter(state).contains("new rows: Esc clears the filter"))
        // The filter cleared: the list around the row that was selected, here the top, drawn
        // again, and what came is seen.
        #expect(Inbox.reduce(&state, .keyPressed(.escape)) == [.loadList(.around(row: 5), newAbove: 2, filter: nil)])
        #expect(Inbox.reduce(&state, .listLoaded(Self.page)) == [.markAllSeen])

        // Scrolled down, away from the top.
        for _ in 0..<6 { _ = Inbox.reduce(&state, .keyPressed(.down)) }
        state.list.top = 3
        #expect(Inbox.reduce(&state, .replicaChanged(unseenArrived: true)) == [.loadList(.top, newAbove: 2, filter: nil)])
        #expect(!Inbox.reduce(&state, .listLoaded(Self.page)).contains(.markAllSeen))
        #expect(ActivityView.listFooter(state).contains("↑ new rows: g"))
        #expect(Inbox.reduce(&state, .keyPressed(.character("g"))).contains(.markAllSeen))
        #expect(!state.arrivedUnseen)
    }

    @Test("a accepts a follow request; d asks first and declines only on y; f follows back only a new follower")
    func actions() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))  // An's request
        #expect(Inbox.reduce(&state, .keyPressed(.character("d"))) == [])
        #expect(state.confirming == .decline(user: "an", name: "An Nguyễn"))
        #expect(ActivityView.render(state).lines[19].contains("Decline An Nguyễn's request? y / n"))
        #expect(Inbox.reduce(&state, .keyPressed(.character("n"))) == [])
        #expect(Inbox.reduce(&state, .keyPressed(.character("d"))) == [])
        #expect(Inbox.reduce(&state, .keyPressed(.character("y"))) == [.act(.declineRequest(user: "an")), .markRead(3)])
        // Answered: the row offers nothing more.
        #expect(Inbox.reduce(&state, .keyPressed(.character("a"))) == [])
        #expect(Inbox.reduce(&state, .keyPressed(.character("f"))) == [])
    }

    @Test("a request or a new follower whose person is out of reach (the row withheld) offers neither a, d nor f, and says so")
    func outOfReach() {
        var withheld = Fixture.an
        withheld.withheld = true
        var state = InboxState(now: Fixture.now)
        _ = Inbox.reduce(&state, .resized(width: 80, height: 20))
        _ = Inbox.reduce(&state, .opened(seenThrough: 2))
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: [Fixture.thread, ListCard(single: withheld, newAbove: 2)],
                                                      reachedEnd: true)))
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        #expect(state.list.selectedLine?.row?.id == withheld.id)
        #expect(!ActivityView.render(state).lines.last!.contains("a accept"))
        for key in ["a", "d", "f"] {
            #expect(Inbox.reduce(&state, .keyPressed(.character(Character(key)))) == [])
            #expect(state.confirming == nil)
            #expect(state.notice == "An Nguyễn can no longer be followed or answered")
        }
    }

    static let anProfile = ProfilePage(id: "an", person: PersonEntity(
        id: "an", username: "an.nguyen", name: "An Nguyễn", avatarUrl: nil, isPrivate: false, state: .active,
        relationship: Relationship(requestedYou: true)), offered: .acceptDecline)

    @Test("a profile offers Accept / Decline while the request stands; done, it is not offered again")
    func profileButtons() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .destinationLoaded(.profile(Self.anProfile)))
        #expect(ActivityView.render(state).lines.last?.contains("a accept  d decline") == true)
        #expect(ActivityView.render(state).lines.contains { $0.contains("[ a  Accept ]") })
        #expect(Inbox.reduce(&state, .keyPressed(.character("f"))) == [])
        #expect(state.notice == "An Nguyễn has nothing to follow back now")
        // The row was read when it was opened: accepting stamps nothing more.
        #expect(Inbox.reduce(&state, .keyPressed(.character("a"))) == [.act(.acceptRequest(user: "an"))])
        guard case .destination(let screen)? = state.screens.last, case .profile(let page)? = screen.destination else {
            Issue.record("no profile")
            return
        }
        #expect(page.openAction == .none && page.person?.relationship.followsYou == true)
        #expect(!ActivityView.render(state).lines.contains { $0.contains("[ a  Accept ]") })
        #expect(Inbox.reduce(&state, .keyPressed(.character("a"))) == [])
        // The server refuses (the other device declined first): the reader is told, the profile reloaded.
        #expect(Inbox.reduce(&state, .refused("Accepting an was refused: no pending follow request from an to me"))
                == [.loadDestination(.tap(Fixture.an))])
        #expect(state.notice == "Accepting an was refused: no pending follow request from an to me")
    }

    @Test("the drawn list: New, dots and tint, the stacked card, read and unread marks, times")
    func drawing() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .syncChanged(SyncLine(status: "synced 3s ago", counts: ServerCounts(unseen: 3, unread: 5, stale: false))))
        let grid = ActivityView.render(state)
        let lines = grid.lines
        #expect(lines[0].hasPrefix(" Activity  3 "))
        #expect(lines[0].hasSuffix("synced 3s ago "))
        #expect(lines[1].hasPrefix(" New"))
        #expect(lines[2].hasPrefix("›● Maya Okonkwo and 1 other · Trail run  ▸"))  // selected: the cursor
        #expect(lines[2].hasSuffix("(MO KA) 2m "))
        #expect(lines[3].hasPrefix(" ● An Nguyễn Requested to follow you"))
        #expect(lines[5].hasPrefix("   Priya Nair Hearted your step: Swim"))  // read: no mark
        #expect(lines[7].hasPrefix(" ○ Stepo Share your journey"))          // seen, not opened
        #expect(lines[7].hasSuffix("Nov 19 "))
        #expect(lines[19].contains("Space expand"))
        // New's warmth lies under every cell of its row, text and gaps alike.
        let width = grid.width
        #expect((0..<width).allSatisfy { grid.cells[3 * width + $0].tint == .newRow })
        #expect((0..<width).allSatisfy { grid.cells[2 * width + $0].tint == .selected })
    }

    @Test("a New row once opened loses its dot and its bold name, and keeps the New section's tint")
    func readNewRow() {
        var state = Fixture.opened()
        var an = Fixture.an
        an.readAt = Fixture.now
        let cards = [Fixture.thread, ListCard(single: an, newAbove: 2), Fixture.swim, Fixture.news]
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: cards, reachedEnd: true)))
        let grid = ActivityView.render(state)
        #expect(grid.lines[3].hasPrefix("   An Nguyễn Requested to follow you"))
        #expect(grid.lines[2].hasPrefix("›● Maya Okonkwo and 1 other"))   // a thread with new rows keeps its dot
        let width = grid.width
        #expect((0..<width).allSatisfy { grid.cells[3 * width + $0].tint == .newRow })
        #expect(grid.cells[3 * width + 3].role == .body)                    // the name is no longer bold
    }

    @Test("accepting from the list: the row offers a and d no more, and a second a says it is answered")
    func answeredFromList() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.down))
        #expect(state.list.selectedLine?.row?.kind == .followRequest)
        #expect(ActivityView.listFooter(state).contains("a accept  d decline"))
        #expect(Inbox.reduce(&state, .keyPressed(.character("a"))) == [.act(.acceptRequest(user: "an")), .markRead(3)])
        #expect(!ActivityView.listFooter(state).contains("a accept"))
        #expect(Inbox.reduce(&state, .keyPressed(.character("d"))) == [])
        #expect(state.notice == "An Nguyễn's request is answered already")
        #expect(state.confirming == nil)
        // A page that knows the request answered (after a restart, from the replica) offers nothing either.
        var fresh = Fixture.opened()
        var page = ListPage(request: .top, cards: Fixture.cards, reachedEnd: true)
        page.answered = ["an"]
        _ = Inbox.reduce(&fresh, .listLoaded(page))
        _ = Inbox.reduce(&fresh, .keyPressed(.down))
        #expect(!ActivityView.listFooter(fresh).contains("a accept"))
    }

    @Test("a narrow footer keeps the keys that matter most, in their order, instead of cutting the line to 'q…'",
          arguments: [40, 60, 80, 100, 140])
    func narrowFooter(width: Int) {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .resized(width: width, height: 20))
        _ = Inbox.reduce(&state, .keyPressed(.down))  // the follow request: a and d offered
        let footer = ActivityView.listFooter(state)
        #expect(TextWidth.cells(footer) <= width - 2, "\(footer)")
        #expect(!footer.contains("…"))
        for must in ["a accept", "d decline", "Enter open", "? help", "q quit"] where width >= 60 {
            #expect(footer.contains(must), "\(width): \(footer)")
        }
        #expect(footer.contains("q quit") && footer.contains("a accept"))
    }

    @Test("n and Tab go to the next unread row, N and Shift-Tab to the previous; A marks every row read at once")
    func unreadKeys() {
        var state = Fixture.opened()
        state.sync.counts = ServerCounts(unseen: 0, unread: 3, stale: false)
        // Lines: New header, Maya's thread (unread), An (unread), a header, Priya (read), a header, Stepo (unread).
        #expect(state.list.selectedLine?.row?.id == 5)
        _ = Inbox.reduce(&state, .keyPressed(.character("n")))
        #expect(state.list.selectedLine?.row?.id == 3)
        _ = Inbox.reduce(&state, .keyPressed(.tab))
        #expect(state.list.selectedLine?.row?.id == 1)   // Priya's read row is passed over
        _ = Inbox.reduce(&state, .keyPressed(.character("n")))
        #expect(state.list.selectedLine?.row?.id == 1)
        #expect(state.notice == "No unread row below")
        _ = Inbox.reduce(&state, .keyPressed(.backTab))
        #expect(state.list.selectedLine?.row?.id == 3)
        _ = Inbox.reduce(&state, .keyPressed(.character("N")))
        #expect(state.list.selectedLine?.row?.id == 5)
        // A asks first, saying how many rows it changes; y marks them.
        #expect(Inbox.reduce(&state, .keyPressed(.character("A"))) == [])
        #expect(state.confirming == .markRead(count: 3, filter: nil))
        #expect(ActivityView.listFooter(state) == "Mark all 3 unread rows read? y / n")
        #expect(Inbox.reduce(&state, .keyPressed(.character("y"))) == [.markAllRead])
        #expect(state.list.cards.allSatisfy { $0.newest.readAt != nil && $0.unreadRows == 0 })
        _ = Inbox.reduce(&state, .keyPressed(.character("n")))
        #expect(state.notice == "No unread row below")
        // The stamp reached the counts: nothing is unread anywhere, and n says so. No card
        // keeps its dot, the thread's header included (reading wins over New).
        _ = Inbox.reduce(&state, .syncChanged(SyncLine(status: "synced just now", counts: ServerCounts(unseen: 0, unread: 0, stale: false))))
        _ = Inbox.reduce(&state, .keyPressed(.character("n")))
        #expect(state.notice == "Nothing is unread")
        let screen = ActivityView.render(state).lines.joined(separator: "\n")
        #expect(!screen.contains("●") && !screen.contains("○"), "\(screen)")
    }

    @Test("at 60×15 the settings screen keeps off its footer and scrolls to the alerts; the explanations go when there is no room")
    func narrowSettings() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .resized(width: 60, height: 15))
        _ = Inbox.reduce(&state, .keyPressed(.character("s")))
        let alerts = [AlertItem(target: .person("maya"), mode: .all, name: "Maya Okonkwo"),
                      AlertItem(target: .journey("j"), mode: .off, name: "Run the ridge")]
        _ = Inbox.reduce(&state, .settingsLoaded(Preferences(social: false),
                                                 alerts: alerts))
        for _ in 0..<8 { _ = Inbox.reduce(&state, .keyPressed(.character("j"))) }
        #expect(state.screens.last == .settings(selection: 8))
        let grid = ActivityView.render(state)
        #expect(grid.lines[14].hasPrefix(" j/k move  x remove  q back"))
        #expect(grid.lines.contains { $0.contains("Run the ridge (journey)") })
        let row = try! #require(grid.lines.firstIndex { $0.contains("Run the ridge (journey)") })
        #expect(grid.cells[row * grid.width + 2].tint == .selected)
        #expect(!grid.lines.contains { $0.contains("The master switch") })  // no room to explain
        // Tall enough, every switch is explained.
        _ = Inbox.reduce(&state, .resized(width: 100, height: 30))
        #expect(ActivityView.render(state).lines.contains { $0.contains("The master switch — off means off.") })
    }

    @Test("a window made taller reads the cards it can now show, without waiting for a key")
    func tallerWindow() {
        var state = InboxState(now: Fixture.now)
        _ = Inbox.reduce(&state, .resized(width: 60, height: 15))
        _ = Inbox.reduce(&state, .opened(seenThrough: 2))
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: Fixture.cards, reachedEnd: false)))
        #expect(Inbox.reduce(&state, .resized(width: 250, height: 70)) == [.loadList(.older(before: 1), newAbove: 2, filter: nil)])
    }

    @Test("an empty list whose server cannot be reached says so, not 'Nothing here yet'")
    func unreachableEmpty() {
        var state = InboxState(now: Fixture.now)
        _ = Inbox.reduce(&state, .resized(width: 80, height: 20))
        _ = Inbox.reduce(&state, .opened(seenThrough: 0))
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: [], reachedEnd: true)))
        _ = Inbox.reduce(&state, .syncChanged(SyncLine(status: "offline · 0 pending", counts: ServerCounts(unseen: 0, unread: 0, stale: true),
                                                      unreachable: "no answer from http://127.0.0.1:9: Couldn't connect to server")))
        let words = ActivityView.emptyWords(state)
        #expect(words.hasPrefix("Cannot sync with the server"))
        #expect(words.contains("Couldn't connect"))
        #expect(!words.contains("Nothing here yet"))
    }

    @Test("y copies the row's link; o opens it with $BROWSER when there is one, and shows it either way")
    func links() {
        var state = Fixture.opened()
        #expect(Inbox.reduce(&state, .keyPressed(.character("y"))) == [.copy("stepo://step/s1")])
        #expect(state.notice == "Copied stepo://step/s1")
        #expect(Inbox.reduce(&state, .keyPressed(.character("o"))) == [])
        #expect(state.notice?.hasPrefix("Link: stepo://step/s1") == true)
        state.browser = true
        #expect(Inbox.reduce(&state, .keyPressed(.character("o"))) == [.openLink("stepo://step/s1")])
        // In a destination: an announcement's own link.
        _ = Inbox.reduce(&state, .keyPressed(.end))
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .destinationLoaded(.link(LinkPage(text: "News", url: "https://stepo.app/news"))))
        #expect(Inbox.reduce(&state, .keyPressed(.character("y"))) == [.copy("https://stepo.app/news")])
    }

    @Test("links in a destination are drawn as hyperlinks: their cells carry the URL (OSC 8 where the terminal has it)")
    func hyperlinks() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.end))
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .destinationLoaded(.link(LinkPage(text: "News", url: "https://stepo.app/news"))))
        let grid = ActivityView.render(state)
        let row = try! #require(grid.lines.firstIndex { $0.contains("Link: https://stepo.app/news") })
        let linked = (0..<grid.width).filter { grid.cells[row * grid.width + $0].link == "https://stepo.app/news" }
        #expect(linked.count == "Link: https://stepo.app/news".count)
        #expect(Terminal.hyperlinksWanted(term: "xterm-256color", environment: [:]))
        #expect(!Terminal.hyperlinksWanted(term: "linux", environment: [:]))
        #expect(!Terminal.hyperlinksWanted(term: "vt100", environment: [:]))
        #expect(!Terminal.hyperlinksWanted(term: "xterm-256color", environment: ["STEPO_HYPERLINKS": "0"]))
    }

    @Test("a filter that matches nothing says why: an unknown kind lists the kinds; text says how it is searched")
    func emptyFilterHints() {
        var state = Fixture.opened()
        state.filter = FilterState(text: "kind:nosuch", typing: false)
        #expect(ActivityView.emptyWords(state).hasPrefix("No kind begins with “nosuch”: kind: takes one of steppedWithHeart, "))
        state.filter = FilterState(text: "kind:heart", typing: false)
        #expect(ActivityView.emptyWords(state).hasPrefix("No rows match /kind:heart: every term must hold"))
        state.filter = FilterState(text: "zzz", typing: false)
        #expect(ActivityView.emptyWords(state).contains("case and accents aside"))
    }

    @Test("a first sync under way shows how far it has come")
    func syncing() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .syncChanged(SyncLine(status: "syncing…", counts: ServerCounts(unseen: 0, unread: 0, stale: true),
                                                      progress: (370, 1000))))
        #expect(ActivityView.render(state).lines[0].hasSuffix("syncing 37% "))
    }

    @Test("a filter with no match says so")
    func noMatch() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("/")))
        for c in "zzz" { _ = Inbox.reduce(&state, .keyPressed(.character(c))) }
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: [], reachedEnd: true)))
        #expect(ActivityView.render(state).lines[2].hasPrefix("  No rows match /zzz: every term must hold, names and words"))
    }

    @Test("/ filters by text or kind: each key asks the replica again; Esc clears it")
    func filtering() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("/")))
        var effects: [Effect] = []
        for c in "maya" { effects = Inbox.reduce(&state, .keyPressed(.character(c))) }
        #expect(effects == [.loadList(.top, newAbove: 2, filter: RowFilter(required: [.text("maya")]))])
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        #expect(state.filter == FilterState(text: "maya", typing: false))
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: [ListCard(single: Fixture.maya, newAbove: 2)], reachedEnd: true)))
        #expect(state.list.lines == [.card(ListCard(single: Fixture.maya, newAbove: 2), section: .new)])
        // Esc: the whole list again, around the row that was selected (Maya's, the thread's newest).
        #expect(Inbox.reduce(&state, .keyPressed(.escape)) == [.loadList(.around(row: 5), newAbove: 2, filter: nil)])
        #expect(state.filter == nil)
        _ = Inbox.reduce(&state, .keyPressed(.character("/")))
        for c in "kind:follow" { effects = Inbox.reduce(&state, .keyPressed(.character(c))) }
        #expect(effects == [.loadList(.top, newAbove: 2, filter: RowFilter(required: [.kinds([.followRequest, .followRequestAccepted])]))])
    }

    @Test("a deleted row is struck through")
    func deleted() {
        var state = Fixture.opened()
        let gone = ListCard(single: Fixture.row(2, "Priya Nair", "Hearted your step: Swim", minutesAgo: 60 * 30, thread: "step:s2",
                                                deleted: true), newAbove: 2)
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: [Fixture.thread, Fixture.request, gone], reachedEnd: true)))
        #expect(ActivityView.render(state).lines[5].contains("H\u{0336}e\u{0336}a\u{0336}r\u{0336}"))
    }

    @Test("below 40×10 the window says it is too small")
    func tooSmall() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .resized(width: 30, height: 8))
        #expect(ActivityView.render(state).lines[0].hasPrefix("Window too small"))
        // At 20×5 all of it shows, over the lines there are.
        _ = Inbox.reduce(&state, .resized(width: 20, height: 5))
        let words = ActivityView.render(state).lines.joined(separator: " ").split(separator: " ").joined(separator: " ")
        #expect(words == "Window too small: need 40×10", "\(ActivityView.render(state).lines)")
    }

    @Test("a window too short for the section header, grown again, shows the header above the selection")
    func headerAfterResize() {
        var state = Fixture.opened()
        #expect(state.list.top == 0)
        // A list one line high: the selection (the first row) is all there is room for.
        _ = Inbox.reduce(&state, .resized(width: 60, height: 4))
        _ = Inbox.reduce(&state, .resized(width: 100, height: 30))
        #expect(state.list.top == 0, "the New header stayed scrolled away")
        #expect(ActivityView.render(state).lines[1].contains("New"))
    }

    @Test("a screen over the list while rows change: back on the list, the 'new rows' hint shows only if unseen rows came")
    func hintOnlyForArrivals() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        // A sync that brought no unseen row (a stamp, a version) while the step was open.
        _ = Inbox.reduce(&state, .replicaChanged(unseenArrived: false))
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        _ = Inbox.reduce(&state, .keyPressed(.character("G")))
        #expect(!state.arrivedUnseen)
        #expect(!(ActivityView.render(state).lines.last ?? "").contains("new rows"))
        // One that did: the hint says so while the top is away.
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .replicaChanged(unseenArrived: true))
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        #expect(state.arrivedUnseen)
    }

    @Test("? lists every key, and scrolls when the window is short")
    func help() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .resized(width: 60, height: 10))
        _ = Inbox.reduce(&state, .keyPressed(.character("?")))
        var text = ActivityView.render(state).lines.joined(separator: "\n")
        #expect(text.contains("j/k ↑/↓  move"))
        #expect(!text.contains("?  this help"))
        for _ in 0..<20 { _ = Inbox.reduce(&state, .keyPressed(.character("j"))) }
        text = ActivityView.render(state).lines.joined(separator: "\n")
        #expect(text.contains("?  this help"))
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        #expect(state.screens.isEmpty)
    }

    @Test("s opens the settings; Space toggles a switch and asks for it to be saved; custom alerts stay off-limits")
    func settings() {
        var state = Fixture.opened()
        #expect(Inbox.reduce(&state, .keyPressed(.character("s"))) == [.loadSettings])
        #expect(state.screens == [.settings(selection: 0)])
        _ = Inbox.reduce(&state, .settingsLoaded(Preferences()))
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        #expect(Inbox.reduce(&state, .keyPressed(.space)) == [.setPreference(Mutation.PreferenceChange(category: .stepWith, on: false))])
        #expect(state.settings?[.stepWith] == false)
        #expect(ActivityView.render(state).lines[5].hasPrefix("  [ ] Step-with alerts"))
        for _ in 0..<5 { _ = Inbox.reduce(&state, .keyPressed(.character("j"))) }
        #expect(Inbox.reduce(&state, .keyPressed(.space)) == [])
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        #expect(state.screens.isEmpty)
    }

    @Test("b on a profile cycles its custom follow alert, default → all → off → default, each sent as an alert mutation")
    func alertKey() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .destinationLoaded(.profile(InboxStateTests.anProfile)))
        #expect(Inbox.reduce(&state, .keyPressed(.character("b"))) == [.setAlert(.person("an"), .all)])
        #expect(state.notice == "Alerts for An Nguyễn: all")
        #expect(ActivityView.render(state).lines.contains { $0.contains("⚑ Alerts all: their new steps always push") })
        #expect(Inbox.reduce(&state, .keyPressed(.character("b"))) == [.setAlert(.person("an"), .off)])
        #expect(Inbox.reduce(&state, .keyPressed(.character("b"))) == [.setAlert(.person("an"), .default)])
        // Not on the list: b there does nothing.
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        #expect(Inbox.reduce(&state, .keyPressed(.character("b"))) == [])
    }

    @Test("the settings list the custom follow alerts; x removes one, sent as its return to default")
    func alertSettings() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .resized(width: 80, height: 30))
        _ = Inbox.reduce(&state, .keyPressed(.character("s")))
        _ = Inbox.reduce(&state, .settingsLoaded(Preferences(journeys: false),
                                                 alerts: [AlertItem(target: .person("maya"), mode: .all, name: "Maya Okonkwo"),
                                                          AlertItem(target: .journey("guitar"), mode: .off, name: "Learn to play guitar")]))
        var text = ActivityView.render(state).lines.joined(separator: "\n")
        #expect(text.contains("⚑ all   Maya Okonkwo (person)"))
        #expect(text.contains("⚑ off   Learn to play guitar (journey)"))
        for _ in 0..<8 { _ = Inbox.reduce(&state, .keyPressed(.character("j"))) }
        #expect(state.screens == [.settings(selection: 8)])
        #expect(Inbox.reduce(&state, .keyPressed(.character("x"))) == [.setAlert(.journey("guitar"), .default)])
        #expect(state.alerts.map(\.name) == ["Maya Okonkwo"])
        #expect(state.screens == [.settings(selection: 7)])
        text = ActivityView.render(state).lines.joined(separator: "\n")
        #expect(!text.contains("⚑ off") && text.contains("back to default"))
        // Space on a switch still toggles it.
        _ = Inbox.reduce(&state, .keyPressed(.character("g")))
        for _ in 0..<7 { _ = Inbox.reduce(&state, .keyPressed(.character("k"))) }
        #expect(Inbox.reduce(&state, .keyPressed(.space)) == [.setPreference(Mutation.PreferenceChange(category: nil, on: false))])
    }

    @Test("p previews the push from the payloads the server builds: a private actor's push is masked there too")
    func pushPreview() throws {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .resized(width: 80, height: 40))
        #expect(Inbox.reduce(&state, .keyPressed(.character("p"))) == [.loadDestination(.push(Fixture.maya))])
        let content = PushContent(rowId: 5, kind: .newStep, title: "Ray Delgado", body: "Posted a new step",
                                  image: nil, face: "https://cdn/ray.jpg", thread: "step:s1", deepLink: "stepo://step/s1", badge: 3)
        let other = PushContent(rowId: 4, kind: .newStep, title: "Ray Delgado", body: "Posted a new step", image: nil,
                                face: nil, thread: "step:s1", deepLink: "stepo://step/s1", badge: 3)
        let page = PushPage(apns: try PushPreview(platform: .apns, request: Payload.apns(content)),
                            fcm: try PushPreview(platform: .fcm, request: Payload.fcm(content)),
                            stacked: [try PushPreview(platform: .apns, request: Payload.apns(other))])
        _ = Inbox.reduce(&state, .destinationLoaded(.push(page)))
        let text = ActivityView.render(state).lines.joined(separator: "\n")
        #expect(text.contains("│ (face) Ray Delgado · now"))
        #expect(text.contains("│ 1 more notification"))
        #expect(text.contains("│   Ray Delgado: Posted a new step"))
        #expect(text.contains("│ thread step:s1 · badge 3 · passive"))
        #expect(!text.contains("New step in"))
    }

    @Test("the mouse: the wheel moves, a click selects the row under it, a double click opens it")
    func mouse() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.wheelDown))
        #expect(state.list.selection == 4)
        _ = Inbox.reduce(&state, .keyPressed(.click(row: 3)))
        #expect(state.list.selection == 2)
        _ = Inbox.reduce(&state, .keyPressed(.click(row: 1)))  // a section header: nothing to select
        #expect(state.list.selection == 2)
        #expect(Inbox.reduce(&state, .keyPressed(.doubleClick(row: 3))) == [.markRead(3), .loadDestination(.tap(Fixture.an))])
    }
}

@Suite("Destinations as models")
struct DestinationViewTests {
    static let step = StepEntity(id: "s1", journey: "j", journeyTitle: "Runs", owner: "me", caption: "Trail run", photoUrl: nil,
                                 isFinal: false, publishedAt: 0, deleted: false, hearts: 2, shares: 0)

    static func comment(_ id: String, _ author: String, parent: String? = nil) -> ShownComment {
        ShownComment(comment: CommentEntity(id: id, step: "s1", author: author.lowercased(), text: "words of \(id)", parent: parent,
                                            at: 0, deleted: false), authorName: author)
    }

    @Test("a reply that fits on the page opens at the top, its parent's author in sight")
    func replyFits() {
        let page = StepPage(step: Self.step, ownerName: "Me", comments: [Self.comment("c1", "Hana"), Self.comment("c2", "Ray", parent: "c1")],
                            commentsMode: .highlight, highlight: "c2", offline: true)
        #expect(DestinationView.initialTop(.step(page), height: 20, width: 80) == 0)
    }

    @Test("a reply further down opens with the comment it answers just above")
    func replyScrolled() {
        let many = (1...10).map { Self.comment("c\($0)", "P\($0)") } + [Self.comment("c11", "Ray", parent: "c10")]
            + (12...21).map { Self.comment("c\($0)", "P\($0)") }
        let page = StepPage(step: Self.step, ownerName: "Me", comments: many, commentsMode: .highlight, highlight: "c11", offline: true)
        let lines = DestinationView.lines(.step(page), width: 80)
        let top = DestinationView.initialTop(.step(page), height: 10, width: 80)
        #expect(lines[top + 1].text == "P10")
        #expect(lines[top + 3].role == .selected)
    }

    @Test("a comment opens at the comments and a tier at the people, found in the model: a caption that reads like a heading does not move them")
    func anchors() {
        var step = Self.step
        step.caption = "Comments (2) welcome"
        let many = (1...20).map { Self.comment("c\($0)", "P\($0)") }
        let page = StepPage(step: step, ownerName: "Me", comments: many, commentsMode: .open, highlight: nil, offline: true)
        let lines = DestinationView.lines(.step(page), width: 80)
        let top = DestinationView.initialTop(.step(page), height: 10, width: 80)
        #expect(top > 0)
        #expect(lines[top + 1].text == "Comments (20)")
        let journey = JourneyEntity(id: "g", title: "People", owner: "marco",
                                    steps: (1...20).map { .init(id: "s\($0)", isFinal: false, publishedAt: 0, caption: "People") },
                                    people: [.init(user: "me", tier: "Celebrator", at: 0)])
        let people = Destination.journey(JourneyPage(journey: journey, ownerName: "Marco", panel: .people,
                                                     supporters: [("Me", "Celebrator")], readerTier: "Celebrator"))
        let journeyLines = DestinationView.lines(people, width: 80)
        let journeyTop = DestinationView.initialTop(people, height: 10, width: 80)
        // The page ends with the panel: it opens scrolled to its end, the panel in view.
        let view = journeyLines[journeyTop..<journeyTop + 10]
        #expect(journeyTop > 0 && view.contains { $0.text == "People" && $0.role == .section })
        #expect(view.last?.text == "Me — [Celebrator]")
    }

    @Test("a journey shows the reader's tier chip; a step not held says it shows when online")
    func journey() {
        let journey = JourneyEntity(id: "g", title: "Learn to play guitar", owner: "marco",
                                    steps: [.init(id: "a", isFinal: false, publishedAt: 0, caption: "First chord"),
                                            .init(id: "b", isFinal: true, publishedAt: 0)],
                                    people: [.init(user: "me", tier: "Celebrator", at: 0)])
        let page = JourneyPage(journey: journey, ownerName: "Marco Ferri", panel: .none, supporters: [("Me", "Celebrator")],
                               readerTier: "Celebrator")
        #expect(DestinationView.lines(.journey(page), width: 80).map(\.text)
                == ["Learn to play guitar", "by Marco Ferri", "[ You're a Celebrator ]", "", "· First chord",
                    "★ a step (shown when online)", "",
                    "⚑ Alerts default: this journey's new steps push as your Journey updates setting says  (b changes)"])
    }

    @Test("b on the reader's own journey changes nothing and says why; the page offers no alerts")
    func ownJourney() {
        let journey = JourneyEntity(id: "mine", title: "My run", owner: "me", steps: [], people: [])
        let page = JourneyPage(journey: journey, ownerName: "Me", panel: .none, supporters: [], readerTier: nil, isOwn: true)
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .destinationLoaded(.journey(page)))
        #expect(Inbox.reduce(&state, .keyPressed(.character("b"))) == [])
        #expect(state.notice?.hasPrefix("Your own journey has no alerts") == true)
        #expect(!DestinationView.lines(.journey(page), width: 80).contains { $0.text.contains("Alerts") })
        #expect(!ActivityView.render(state).lines.last!.contains("b alerts"))
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
        #expect(shown("● New ○ ▸ ♥ ▣") == "* New o > < #")
        #expect(shown("中文 🏃") == "?? ?")
    }
}
