import Foundation
import Notifications
import Testing
import Wire
@testable import Inbox
@testable import Replica

/// The list's rules a reader meets: what a card's mark means, what n stops on, what a bulk act
/// changes, what a key that does not apply says, where a click lands.
@Suite("The list's rules")
struct ListRulesTests {
    /// Maya's thread with one row read (hers) and Kofi's still unread, collapsed.
    static func halfReadThread() -> InboxState {
        var maya = Fixture.maya
        maya.readAt = Fixture.now - 1
        let thread = ListCard(key: "step:s1|1", newest: maya, rows: 2, people: 2, faces: ["Maya Okonkwo", "Kofi Asante"],
                              caption: "Trail run", newRows: 2, allDeleted: false, unreadRows: 1, newUnread: true)
        var state = InboxState(now: Fixture.now)
        state.zone = TimeZone(identifier: "UTC")!
        _ = Inbox.reduce(&state, .resized(width: 80, height: 20))
        _ = Inbox.reduce(&state, .opened(seenThrough: 2))
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: [thread, Fixture.swim, Fixture.news], reachedEnd: true)))
        return state
    }

    @Test("a collapsed thread whose newest row is read keeps its dot while another row in it is unread, and n stops on it")
    func collapsedThreadStaysUnread() {
        var state = Self.halfReadThread()
        let grid = ActivityView.render(state)
        #expect(grid.lines[2].hasPrefix("›● Maya Okonkwo and 1 other"), "\(grid.lines[2])")
        // From the last row, N goes back up to the thread; from above it, n comes down to it.
        _ = Inbox.reduce(&state, .keyPressed(.character("G")))
        _ = Inbox.reduce(&state, .keyPressed(.character("N")))
        #expect(state.list.selectedLine?.row?.id == Fixture.maya.id)
        // Enter on the header reads the whole card: the dot goes, and the replica is asked to read every row of it.
        #expect(Inbox.reduce(&state, .keyPressed(.enter)).first == .markCardRead("step:s1|1"))
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        #expect(!ActivityView.render(state).lines[2].contains("●"))
        #expect(!ActivityView.render(state).lines[2].contains("○"))
    }

    @Test("Enter on a card of thousands of unread rows reads its newest rows a bounded step at a time, and says how many stay")
    func bigCard() {
        var state = Fixture.opened()
        state.list.cards[0].rows = 5000
        state.list.cards[0].unreadRows = ListCard.unreadCounted
        Inbox.relist(&state)
        #expect(Inbox.reduce(&state, .keyPressed(.enter)).first == .markCardRead("step:s1|1"))
        #expect(state.list.cards[0].unreadRows == ListCard.unreadCounted - ListCard.readAtOnce)
        #expect(state.notice == "Read the newest \(ListCard.readAtOnce) rows of this card; older ones stay unread (Enter reads on)")
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        #expect(ActivityView.render(state).lines[2].hasPrefix("›● Maya Okonkwo and 1 other"))
    }

    @Test("a card's mark: ● while an unread row of it is New, ○ while only older rows are unread, none once all are read")
    func cardMarks() {
        var state = Self.halfReadThread()
        state.list.cards[0].newUnread = false
        Inbox.relist(&state)
        #expect(ActivityView.render(state).lines[2].hasPrefix("›○ Maya Okonkwo and 1 other"))
        state.list.cards[0].unreadRows = 0
        Inbox.relist(&state)
        #expect(ActivityView.render(state).lines[2].hasPrefix("›  Maya Okonkwo and 1 other"))
    }

    @Test("reading a thread's last unread member from inside it clears the header's mark too")
    func memberRead() {
        var state = Self.halfReadThread()
        var maya = Fixture.maya
        maya.readAt = Fixture.now - 1
        _ = Inbox.reduce(&state, .keyPressed(.space))
        _ = Inbox.reduce(&state, .membersLoaded(card: "step:s1|1", rows: [maya, Fixture.kofi], more: 0))
        _ = Inbox.reduce(&state, .keyPressed(.character("n")))
        #expect(state.list.selectedLine == .member(Fixture.kofi, card: "step:s1|1"))
        #expect(Inbox.reduce(&state, .keyPressed(.enter)) == [.markRead(Fixture.kofi.id), .loadDestination(.tap(Fixture.kofi))])
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        #expect(state.list.cards[0].unreadRows == 0 && !state.list.cards[0].newUnread)
        #expect(!ActivityView.render(state).lines[2].contains("●"))
    }

    @Test("accepting, declining or following back changes the row at once: read, and it says what was done")
    func actedRowChanges() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("j")))   // An's request, New and unread
        let before = ActivityView.render(state)
        #expect(before.lines[3].contains("● An Nguyễn Requested to follow you"))
        _ = Inbox.reduce(&state, .keyPressed(.character("a")))
        let after = ActivityView.render(state)
        #expect(after.lines[3].contains("An Nguyễn Requested to follow you · accepted"), "\(after.lines[3])")
        #expect(!after.lines[3].contains("●"))
        #expect(after.cells[3 * after.width + 4].role == .body)   // the name no longer bold
        // Declined: the same, once y is pressed.
        var declining = Fixture.opened()
        _ = Inbox.reduce(&declining, .keyPressed(.character("j")))
        _ = Inbox.reduce(&declining, .keyPressed(.character("d")))
        #expect(!ActivityView.render(declining).lines[3].contains("declined"))
        _ = Inbox.reduce(&declining, .keyPressed(.character("y")))
        #expect(ActivityView.render(declining).lines[3].contains("Requested to follow you · declined"))
    }

    @Test("a, d, f and i on a row they do not apply to say so, and change nothing")
    func keysThatDoNotApply() {
        var state = Fixture.opened()
        // Selected: Maya's thread, a step's rows.
        for (key, words) in [("a", "a and d answer a follow request: this row is not one"),
                             ("d", "a and d answer a follow request: this row is not one"),
                             ("f", "f follows back someone who started following you: this row is not one")] {
            let before = state.list
            #expect(Inbox.reduce(&state, .keyPressed(.character(Character(key)))) == [])
            #expect(state.notice == words && state.list == before && state.confirming == nil)
        }
        // b is for a profile's or a journey's alerts, not a row's.
        #expect(Inbox.reduce(&state, .keyPressed(.character("b"))) == [])
        #expect(state.notice == "b sets the alerts of a profile or a journey: open one (Enter) to use it")
        // The announcement is about no step: i says so.
        _ = Inbox.reduce(&state, .keyPressed(.character("G")))
        #expect(Inbox.reduce(&state, .keyPressed(.character("i"))) == [])
        #expect(state.notice == "i lists who hearted and shared a step: this row is about none")
        #expect(state.screens.isEmpty)
    }

    @Test("b on a destination without alerts says where it works; a deleted row's fallback profile does not offer it")
    func bWhereItDoesNothing() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .destinationLoaded(.step(Fixture.stepPage())))
        #expect(Inbox.reduce(&state, .keyPressed(.character("b"))) == [])
        #expect(state.notice == "b sets the alerts of a profile or a journey: open one to use it")
        let fallback = ProfilePage(id: "maya", person: PersonEntity(id: "maya", username: "maya", name: "Maya Okonkwo", avatarUrl: nil,
                                                                    isPrivate: false, state: .active, relationship: Relationship()),
                                   offered: .none)
        let lines = DestinationView.lines(.gone(GonePage(fallback: .profile(fallback))), width: 80).map(\.text)
        #expect(lines.contains { $0.contains("Alerts default") })
        #expect(!lines.contains { $0.contains("b changes") })
    }

    @Test("a click below the list (the footer, the blank line) selects nothing; a click on a row selects it")
    func clickBelowTheList() {
        var state = Fixture.opened(height: 12)
        let before = state.list.selection
        for row in [state.listHeight + 1, state.listHeight + 2, 40] {
            _ = Inbox.reduce(&state, .keyPressed(.click(row: row)))
            #expect(state.list.selection == before, "click on screen row \(row)")
        }
        _ = Inbox.reduce(&state, .keyPressed(.click(row: 3)))   // An's request
        #expect(state.list.selectedLine?.row?.id == Fixture.an.id)
    }

    @Test("landed on a row (--open), the list opens around it under the screen, stamps nothing seen, and q lands on that row")
    func landing() {
        var state = InboxState(now: Fixture.now)
        _ = Inbox.reduce(&state, .resized(width: 80, height: 20))
        #expect(Inbox.reduce(&state, .openRow(Fixture.an)) == [.markRead(3), .loadDestination(.tap(Fixture.an))])
        #expect(Inbox.reduce(&state, .opened(seenThrough: 2)) == [.loadList(.around(row: 3), newAbove: 2, filter: nil)])
        var page = ListPage(request: .top, cards: Fixture.cards, reachedEnd: true)
        page.select = "card:row:3"
        // Drawn under the destination: nothing is stamped seen.
        #expect(!Inbox.reduce(&state, .listLoaded(page)).contains(.markAllSeen))
        // q: the list, the selection on the row landed on, and what it shows is seen now.
        #expect(Inbox.reduce(&state, .keyPressed(.character("q"))) == [.markAllSeen])
        #expect(state.list.selectedLine?.row?.id == Fixture.an.id)
    }

    @Test("Today is the reader's calendar day: a row of 20 hours ago from yesterday is in This week, wherever the reader is")
    func today() {
        // 2026-11-29T12:00Z is 07:00 in New York and 21:00 in Tokyo.
        let yesterdayEvening = Fixture.row(2, "Priya Nair", "Hearted your step: Swim", minutesAgo: 20 * 60, thread: "step:s2", read: true)
        let card = ListCard(single: yesterdayEvening, newAbove: 2)
        // 20 h before 12:00Z is 16:00Z on the 28th: 11:00 on the 28th in New York, 01:00 on the 29th in Tokyo.
        #expect(Section.of(card, newAbove: 2, now: Fixture.now, zone: TimeZone(identifier: "America/New_York")!) == .thisWeek)
        #expect(Section.of(card, newAbove: 2, now: Fixture.now, zone: TimeZone(identifier: "Asia/Tokyo")!) == .today)
        #expect(Section.of(card, newAbove: 2, now: Fixture.now, zone: TimeZone(identifier: "UTC")!) == .thisWeek)
    }

    @Test("scrolled down, the list's first line is the current section's heading, and the footer says where the selection is")
    func whereYouAre() {
        var state = Fixture.opened(height: 12)
        state.zone = TimeZone(identifier: "UTC")!
        let older = (1...30).map { i in
            ListCard(single: Fixture.row(-i, "Person \(i)", "Hearted your step: Swim", minutesAgo: 60 * 24 * 30 + Int64(i),
                                         thread: "user:\(i)"), newAbove: 2)
        }
        _ = Inbox.reduce(&state, .listLoaded(ListPage(request: .top, cards: Fixture.cards + older, reachedEnd: true)))
        _ = Inbox.reduce(&state, .cardsCounted(34))
        #expect(ActivityView.listFooter(state).contains("1/34"))
        for _ in 0..<10 { _ = Inbox.reduce(&state, .keyPressed(.character("j"))) }
        let grid = ActivityView.render(state)
        #expect(grid.lines[1] == " Earlier" + String(repeating: " ", count: 72), "\(grid.lines)")
        #expect(ActivityView.listFooter(state).contains("11/34"))
        // The selection is never under the heading.
        #expect(state.list.selection > state.list.top)
        // A click on the heading selects nothing.
        let selected = state.list.selection
        _ = Inbox.reduce(&state, .keyPressed(.click(row: 1)))
        #expect(state.list.selection == selected)
        // Back up, the heading is the list's own again.
        _ = Inbox.reduce(&state, .keyPressed(.character("g")))
        #expect(ActivityView.render(state).lines[1].hasPrefix(" New"))
    }

    @Test("the category keys show one category's rows, the tab bar names them with their unread counts, 0 shows all")
    func tabs() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .resized(width: 100, height: 20))
        var page = ListPage(request: .top, cards: Fixture.cards, reachedEnd: true)
        page.unreadByCategory = [.stepWith: 2, .social: 1, .announcement: 150]
        _ = Inbox.reduce(&state, .listLoaded(page))
        let bar = ActivityView.render(state).lines[18]
        #expect(bar.contains("0 All  1 Step-with 2  2 Social 1  3 Engagement  4 Journeys  5 Stepo 99+"), "\(bar)")
        #expect(Inbox.reduce(&state, .keyPressed(.character("2"))) == [.loadList(.top, newAbove: 2, filter: .category(.social))])
        #expect(state.tab == .social)
        // Within the tab, a filter narrows further.
        _ = Inbox.reduce(&state, .keyPressed(.character("/")))
        let effects = "an".map { Inbox.reduce(&state, .keyPressed(.character($0))) }.last
        #expect(effects == [.loadList(.top, newAbove: 2, filter: RowFilter(required: [.text("an")]).within(.social))])
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        #expect(Inbox.reduce(&state, .keyPressed(.character("0"))) == [.loadList(.top, newAbove: 2, filter: RowFilter(required: [.text("an")]))])
        #expect(state.tab == nil)
        // Chosen, the header names it; narrow, the bar keeps shorter names, then only the chosen tab.
        _ = Inbox.reduce(&state, .keyPressed(.character("2")))
        #expect(ActivityView.render(state).lines[0].contains("· Social"))
        _ = Inbox.reduce(&state, .resized(width: 70, height: 20))
        #expect(ActivityView.render(state).lines[18].contains("1 With 2  2 Social 1  3 Engage"), "\(ActivityView.render(state).lines[18])")
        // At 60 columns with no tab chosen, the shortest names still fit, counts and all.
        _ = Inbox.reduce(&state, .keyPressed(.character("0")))
        _ = Inbox.reduce(&state, .listLoaded(page))
        _ = Inbox.reduce(&state, .resized(width: 60, height: 20))
        #expect(ActivityView.render(state).lines[18].contains("0 All  1 With 2  2 Soc 1  3 Eng  4 Jrn  5 Stepo 99+"),
                "\(ActivityView.render(state).lines[18])")
        _ = Inbox.reduce(&state, .keyPressed(.character("2")))
        _ = Inbox.reduce(&state, .resized(width: 45, height: 20))
        #expect(ActivityView.render(state).lines[18].trimmingCharacters(in: .whitespaces) == "2 Social 1")
    }

    @Test("a filter it cannot read shows nothing and says why; Esc clears it")
    func unreadableFilter() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.character("/")))
        var effects: [Effect] = []
        for c in "is:maybe" { effects = Inbox.reduce(&state, .keyPressed(.character(c))) }
        #expect(effects.isEmpty)
        #expect(state.list.lines.isEmpty)
        #expect(ActivityView.emptyWords(state) == "is: takes unread or read  (Esc clears the filter)")
    }
}
