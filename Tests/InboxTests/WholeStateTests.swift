import Notifications
import Replica
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

    @Test("Enter opens the row's tap: one screen over the list, a read stamp, the destination asked for")
    func opening() {
        var state = Fixture.opened()
        expectNext(&state, .keyPressed(.enter), effects: [.markRead(5), .loadDestination(.tap(Fixture.maya))]) {
            $0.screens = [.destination(DestinationScreen(request: .tap(Fixture.maya)))]
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
        for selection in 3...5 { expectNext(&state, .keyPressed(.character("j"))) { $0.screens = [.settings(selection: selection)] } }
        expectNext(&state, .keyPressed(.space))
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

    @Test("A marks every held row read at once and asks for one mark")
    func markAllRead() {
        var state = Fixture.opened()
        expectNext(&state, .keyPressed(.character("A")), effects: [.markAllRead]) { next in
            next.notice = "Every row marked read"
            for index in next.list.cards.indices where next.list.cards[index].newest.readAt == nil {
                next.list.cards[index].newest.readAt = Fixture.now
            }
            Inbox.relist(&next)
        }
    }
}
