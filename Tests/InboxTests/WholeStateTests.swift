import Notifications
@testable import Replica
import Testing
import Wire
@testable import Inbox

/// Sends `action` and checks the whole next state: the state before with `change` made to it,
/// nothing else, and exactly `effects`. A reducer that touches a field it should not fails here.
func expectNext(_ state: inout InboxState, _ action: Action, effects: [Effect] = [],
                sourceLocation: SourceLocation = #_sourceLocation, _ change: (inout InboxState) -> Void = { _ in }) {
    var expected = state
    change(&expected)
    let produced = Inbox.reduce(&state, action)
    #expect(produced == effects, "effects of \(action)", sourceLocation: sourceLocation)
    if state != expected {
        // Name the fields that differ, not two pages of state.
        let mirror = Mirror(reflecting: state), wanted = Mirror(reflecting: expected)
        let differing = zip(mirror.children, wanted.children).compactMap { got, want -> String? in
            String(describing: got.value) == String(describing: want.value) ? nil
                : "\(got.label ?? "?"): got \(got.value), expected \(want.value)"
        }
        Issue.record("after \(action): \(differing.joined(separator: "\n"))", sourceLocation: sourceLocation)
    }
}

@Suite("The whole next state")
struct WholeStateTests {
    @Test("j moves the selection to the next row, over section headers, and changes nothing else")
    func moving() {
        var state = Fixture.opened()
        expectNext(&state, .keyPressed(.character("j"))) { $0.list.selection = 2 }
        // Over the This week header.
        expectNext(&state, .keyPressed(.character("j"))) { $0.list.selection = 4 }
        expectNext(&state, .keyPressed(.character("k"))) { $0.list.selection = 2 }
    }

    @Test("Enter on a thread opens its newest row's tap: one screen over the list, the whole card read, the destination asked for")
    func opening() {
        var state = Fixture.opened()
        expectNext(&state, .keyPressed(.enter), effects: [.markCardRead("step:s1|1"), .loadDestination(.tap(Fixture.maya))]) {
            $0.screens = [.destination(DestinationScreen(request: .tap(Fixture.maya)))]
            Inbox.readCard(&$0.list.cards[0], at: Fixture.now)
            Inbox.relist(&$0)
        }
        let step = StepEntity(id: "s1", journey: "j1", journeyTitle: "Trail", owner: "me", caption: "Trail run", photoUrl: nil,
                              isFinal: false, publishedAt: Fixture.now - 600_000, deleted: false, hearts: 2, shares: 1)
        let page = StepPage(step: step, ownerName: "Me", comments: [], commentsMode: .closed, highlight: nil, offline: true)
        expectNext(&state, .destinationLoaded(.step(page))) {
            $0.screens = [.destination(DestinationScreen(request: .tap(Fixture.maya), destination: .step(page)))]
        }
        // q: back to the list, exactly as it was.
        expectNext(&state, .keyPressed(.character("q"))) { $0.screens = [] }
    }

    @Test("a late answer for a screen since closed is dropped: it never lands on the screen opened after it")
    func lateAnswer() {
        var state = Fixture.opened()
        _ = Inbox.reduce(&state, .keyPressed(.enter))
        _ = Inbox.reduce(&state, .keyPressed(.character("q")))
        _ = Inbox.reduce(&state, .keyPressed(.character("p")))
        guard case .destination(let push)? = state.screens.last, case .push = push.request else {
            Issue.record("p opened no push preview: \(state.screens)"); return
        }
        let step = StepEntity(id: "s1", journey: "j1", journeyTitle: "Trail", owner: "me", caption: "Trail run", photoUrl: nil,
                              isFinal: false, publishedAt: Fixture.now - 600_000, deleted: false, hearts: 2, shares: 1)
        let page = StepPage(step: step, ownerName: "Me", comments: [], commentsMode: .closed, highlight: nil, offline: false)
        // The step's live copy, asked for by the screen q closed, comes now: nothing changes.
        expectNext(&state, .destinationRefreshed(.step(page), for: .tap(Fixture.maya)))
        expectNext(&state, .destinationLoaded(.step(page), for: .tap(Fixture.maya)))
        // The answer for the screen on top lands.
        let preview = PushPage.unavailable("The server has no push for this row now.")
        expectNext(&state, .destinationLoaded(.push(preview), for: push.request)) {
            $0.screens = [.destination(DestinationScreen(request: push.request, destination: .push(preview)))]
        }
    }

    @Test("settings: s asks for them, they load typed, Space flips one switch and asks the server for it")
    func settings() {
        var state = Fixture.opened()
        expectNext(&state, .keyPressed(.character("s")), effects: [.loadSettings]) { $0.screens = [.settings(selection: 0)] }
        expectNext(&state, .settingsLoaded(Preferences(social: false))) { $0.settings = Preferences(social: false) }
        expectNext(&state, .keyPressed(.character("j"))) { $0.screens = [.settings(selection: 1)] }
        expectNext(&state, .keyPressed(.character("j"))) { $0.screens = [.settings(selection: 2)] }
        expectNext(&state, .keyPressed(.space), effects: [.setPreference(.init(category: .social, on: true))]) {
            $0.settings = Preferences()
        }
        // The custom follow alerts' heading has no switch: Space there does nothing at all.
        for selection in 3...6 { expectNext(&state, .keyPressed(.character("j"))) { $0.screens = [.settings(selection: selection)] } }
        expectNext(&state, .keyPressed(.space))
    }

    @Test("quiet hours: Enter types them, a bad zone says why and stays to be mended, Enter sets them, x turns them off")
    func quietHours() throws {
        var state = Fixture.opened()
        expectNext(&state, .keyPressed(.character("s")), effects: [.loadSettings]) { $0.screens = [.settings(selection: 0)] }
        expectNext(&state, .settingsLoaded(Preferences())) { $0.settings = Preferences() }
        for selection in 1...5 { expectNext(&state, .keyPressed(.character("j"))) { $0.screens = [.settings(selection: selection)] } }
        // Enter starts from a suggestion in the reader's zone.
        expectNext(&state, .keyPressed(.enter)) { $0.quietDraft = "22:00-07:00 " + InboxState.localZone }
        expectNext(&state, .keyPressed(.character("\u{15}"))) { $0.quietDraft = "" }
        for c in "23:00-06:30 Mars/Base" { _ = Inbox.reduce(&state, .keyPressed(c == " " ? .space : .character(c))) }
        #expect(state.quietDraft == "23:00-06:30 Mars/Base")
        // q is text here, not back.
        expectNext(&state, .keyPressed(.character("q"))) { $0.quietDraft = "23:00-06:30 Mars/Baseq" }
        expectNext(&state, .keyPressed(.backspace)) { $0.quietDraft = "23:00-06:30 Mars/Base" }
        expectNext(&state, .keyPressed(.enter)) {
            $0.notice = #"quietHours.zone is not an IANA time zone name (Europe/Paris): "Mars/Base""#
        }
        for _ in 0..<9 { _ = Inbox.reduce(&state, .keyPressed(.backspace)) }
        for c in "Europe/Paris" { _ = Inbox.reduce(&state, .keyPressed(.character(c))) }
        let hours = try QuietHours(from: "23:00", to: "06:30", zone: "Europe/Paris")
        expectNext(&state, .keyPressed(.enter), effects: [.setQuietHours(.set(hours))]) {
            $0.quietDraft = nil
            $0.settings?.quietHours = hours
            $0.notice = "Quiet hours 23:00–06:30 Europe/Paris: pushes wait until they end"
        }
        #expect(ActivityView.render(state).lines.contains { $0.contains("[–] Quiet hours  23:00–06:30 Europe/Paris") })
        expectNext(&state, .keyPressed(.character("x")), effects: [.setQuietHours(.off)]) {
            $0.settings?.quietHours = nil
            $0.notice = "Quiet hours off: pushes go when they are decided"
        }
        // Esc leaves the typing and keeps what was set.
        expectNext(&state, .keyPressed(.enter)) { $0.quietDraft = "22:00-07:00 " + InboxState.localZone }
        expectNext(&state, .keyPressed(.escape)) { $0.quietDraft = nil }
        #expect(state.screens == [.settings(selection: 5)])
    }

    @Test("the theme and the sync line live in the state")
    func themeAndSync() {
        var state = Fixture.opened()
        expectNext(&state, .themeChanged("light", announce: false)) { $0.theme = "light" }
        expectNext(&state, .themeChanged("mono")) {
            $0.theme = "mono"
            $0.notice = "Theme: mono"
        }
        let line = SyncLine(status: "offline · 2 pending", counts: ServerCounts(unseen: 1, unread: 3, stale: false),
                            unreachable: "connection refused")
        expectNext(&state, .syncChanged(line)) { $0.sync = line }
    }

    @Test("A asks first how many rows it will change; y marks every held row read at once and asks for one mark")
    func markAllRead() {
        var state = Fixture.opened()
        state.sync.counts = ServerCounts(unseen: 0, unread: 4, stale: false)
        expectNext(&state, .keyPressed(.character("A"))) { $0.confirming = .markRead(count: 4, filter: nil) }
        expectNext(&state, .keyPressed(.character("y")), effects: [.markAllRead]) { next in
            next.confirming = nil
            next.notice = "Marked 4 rows read"
            for index in next.list.cards.indices { Inbox.readCard(&next.list.cards[index], at: Fixture.now) }
            Inbox.relist(&next)
        }
        // Without anything unread, A says so and asks nothing.
        state.sync.counts = ServerCounts(unseen: 0, unread: 0, stale: false)
        expectNext(&state, .keyPressed(.character("A"))) { $0.notice = "Nothing is unread" }
    }

    @Test("A under a filter counts what the filter shows, asks, and marks only that; n keeps the rest")
    func markFilteredRead() {
        var state = Fixture.opened()
        let filter = RowFilter(required: [.text("kofi")])
        state.filter = FilterState(text: "kofi", typing: false)
        expectNext(&state, .keyPressed(.character("A")), effects: [.countUnread(filter)])
        // An answer for another filter asks nothing.
        expectNext(&state, .unreadCounted(9, filter: RowFilter(required: [.text("maya")])))
        expectNext(&state, .unreadCounted(1, filter: filter)) { $0.confirming = .markRead(count: 1, filter: filter) }
        #expect(ActivityView.listFooter(state).hasPrefix("Mark the 1 unread row this list shows read"))
        // Any key but y keeps everything.
        expectNext(&state, .keyPressed(.character("x"))) {
            $0.confirming = nil
            $0.notice = "Nothing marked"
        }
        expectNext(&state, .keyPressed(.character("A")), effects: [.countUnread(filter)]) { $0.notice = nil }
        expectNext(&state, .unreadCounted(1, filter: filter)) { $0.confirming = .markRead(count: 1, filter: filter) }
        expectNext(&state, .keyPressed(.character("y")), effects: [.markMatchingRead(filter)]) { next in
            next.confirming = nil
            next.notice = "Marked 1 row read"
            for index in next.list.cards.indices { Inbox.readCard(&next.list.cards[index], at: Fixture.now) }
            Inbox.relist(&next)
        }
        // Nothing unread under the filter: said, and nothing asked.
        expectNext(&state, .keyPressed(.character("A")), effects: [.countUnread(filter)]) { $0.notice = nil }
        expectNext(&state, .unreadCounted(0, filter: filter)) { $0.notice = "Nothing here is unread" }
    }
}
