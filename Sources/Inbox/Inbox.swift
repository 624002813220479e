import Notifications
import Replica
import Wire

/// The reducer: `(inout State, Action) -> [Effect]`, pure. Keys are handled per screen
/// (`Inbox+ListKeys`, `Inbox+ScreenKeys`); this file takes everything else.
public enum Inbox {
    public static func reduce(_ state: inout InboxState, _ action: Action) -> [Effect] {
        switch action {
        case let .resized(width, height):
            state.width = width
            state.height = height
            keepSelectionVisible(&state)
            // A taller window may show more cards than are held: read them now, not at the next key.
            return state.showsList ? nearEdges(&state) : []
        case .opened(let seenThrough):
            // Opening the tab: what is unseen now is New, and everything there is gets seen once
            // the list's top is drawn. Landed on a row (`--open`), the list waits under its
            // screen around that row, and nothing is stamped seen until the top is shown.
            state.newAbove = seenThrough
            state.list = ListWindow()
            state.arrivedUnseen = true
            if let landed = state.landedOn {
                state.landedOn = nil
                return [.loadList(.around(row: landed), newAbove: seenThrough, filter: nil)]
            }
            return [.loadList(.top, newAbove: seenThrough, filter: state.listFilter)]
        case .listLoaded(let page):
            return listLoaded(&state, page)
        case let .membersLoaded(card, rows, more):
            state.members[card] = Members(rows: rows, more: more)
            relist(&state)
            return []
        case .replicaChanged(let unseenArrived):
            return replicaChanged(&state, unseenArrived: unseenArrived)
        case .syncChanged(let line):
            state.sync = line
            return []
        case .ticked(let now):
            let minuteChanged = now / 60_000 != state.now / 60_000
            state.now = now
            if minuteChanged { relist(&state) }
            return []
        case let .destinationLoaded(destination, request):
            updateDestination(&state, destination, for: request, live: false)
            return []
        case let .destinationRefreshed(destination, request):
            updateDestination(&state, destination, for: request, live: true)
            return []
        case let .destinationFailed(message, request):
            if case .destination(let screen)? = state.screens.last, screen.request == request, screen.destination == nil {
                state.screens.removeLast()
            }
            state.notice = message
            return []
        case let .settingsLoaded(settings, alerts):
            state.settings = settings
            state.alerts = alerts
            return []
        case .statsLoaded(let content):
            state.stats = content
            return []
        case let .themeChanged(name, announce):
            state.theme = name
            if announce { state.notice = "Theme: \(name)" }
            return []
        case .refused(let message):
            state.notice = message
            // A refused act on a person: show the truth of how the two stand.
            if case .destination(let screen)? = state.screens.last, case .profile = screen.destination {
                return [.loadDestination(screen.request)]
            }
            return []
        case .failed(let message):
            state.notice = message
            return []
        case .keyPressed(let key):
            return keyPressed(&state, key)
        case .openRow(let row):
            state.screens.removeAll()
            state.landedOn = row.id
            return (row.readAt == nil ? [.markRead(row.id)] : []) + open(&state, .tap(row))
        case .cardsCounted(let total):
            state.list.total = total
            return []
        case let .unreadCounted(count, filter):
            // The answer for a filter since changed asks nothing.
            guard filter == state.listFilter, state.confirming == nil else { return [] }
            if count == 0 {
                state.notice = "Nothing here is unread"
            } else {
                state.confirming = .markRead(count: count, filter: filter)
            }
            return []
        }
    }

    // MARK: The list's cards

    private static func listLoaded(_ state: inout InboxState, _ page: ListPage) -> [Effect] {
        var list = state.list
        let keep = list.selectedLine?.identity
        if let counts = page.unreadByCategory { state.unreadByCategory = counts }
        if let total = page.total { list.total = total }
        switch page.request {
        case .top:
            list.cards = page.cards
            list.atTop = true
            list.atEnd = page.reachedEnd
            list.offset = 0
        case .around:
            // Cards from the row's own down: newer ones come as the selection nears the top.
            list.cards = page.cards
            list.atTop = false
            list.atEnd = page.reachedEnd
            list.offset = page.offset
        case .bottom:
            list.cards = page.cards
            list.atEnd = true
            list.atTop = page.reachedEnd
            list.offset = page.reachedEnd ? 0 : (page.total ?? list.total).map { $0 - page.cards.count }
        case .older:
            let known = Set(list.cards.map(\.key))
            list.cards += page.cards.filter { !known.contains($0.key) }
            list.atEnd = page.reachedEnd
            // Past the bound, cards go from the far end — never those on screen.
            let spare = min(list.cards.count - ListWindow.held, firstShownCard(state))
            if spare > 0 {
                list.cards.removeFirst(spare)
                list.atTop = false
                list.offset = list.offset.map { $0 + spare }
            }
        case .newer:
            let known = Set(list.cards.map(\.key))
            let added = page.cards.filter { !known.contains($0.key) }
            list.cards = added + list.cards
            list.atTop = page.reachedEnd
            list.offset = page.reachedEnd ? 0 : list.offset.map { max(0, $0 - added.count) }
            let spare = min(list.cards.count - ListWindow.held, list.cards.count - (lastShownCard(state) + added.count) - 1)
            if spare > 0 {
                list.cards.removeLast(spare)
                list.atEnd = false
            }
        }
        list.loaded = true
        state.list = list
        state.answered.formUnion(page.answered)
        relist(&state)
        if let select = page.select, let index = state.list.lines.firstIndex(where: { $0.identity == select }) {
            // Asked around a row: the selection on it.
            state.list.selection = index
            state.list.top = max(0, index - 1)
        } else {
            placeSelection(&state, page, keep: keep)
        }
        state.jump = nil
        clampSelection(&state)
        keepSelectionVisible(&state)
        // Expanded cards show their rows as they are now.
        return state.expanded.filter { key in page.cards.contains { $0.key == key } }.sorted().map { .loadMembers(card: $0) }
            + seeArrivals(&state)
    }

    /// Where the selection goes after cards arrive: a far jump's end, else the line it was on.
    private static func placeSelection(_ state: inout InboxState, _ page: ListPage, keep: String?) {
        switch state.jump {
        case .top?: state.list.selection = firstSelectable(state.list.lines) ?? 0
        case .bottom?: state.list.selection = state.list.lines.lastIndex(where: \.isSelectable) ?? 0
        default:
            if let keep, let index = state.list.lines.firstIndex(where: { $0.identity == keep }) {
                state.list.selection = index
            } else if case .top = page.request {
                state.list.selection = firstSelectable(state.list.lines) ?? 0
            }
        }
    }

    /// The index into the cards of the first card on screen (or selected, if earlier).
    private static func firstShownCard(_ state: InboxState) -> Int {
        let lines = state.list.lines
        let first = min(state.list.top, state.list.selection)
        let keys = lines.prefix(max(0, first)).compactMap { line -> String? in
            if case .card(let card, _) = line { return card.key }
            return nil
        }
        return keys.count
    }

    /// The index into the cards of the last card on screen (or selected, if later).
    private static func lastShownCard(_ state: InboxState) -> Int {
        let last = max(state.list.top + state.listHeight, state.list.selection + 1)
        let cards = state.list.lines.prefix(last).filter { if case .card = $0 { return true }; return false }.count
        return max(0, cards - 1)
    }

    private static func replicaChanged(_ state: inout InboxState, unseenArrived: Bool) -> [Effect] {
        guard let newAbove = state.newAbove else { return [] }
        guard state.showsList else {
            state.listStale = true
            // Only rows that arrived unseen earn the hint once the list is back.
            if unseenArrived { state.arrivedUnseen = true }
            return []
        }
        // Rows arriving while the list's top is drawn are seen; scrolled away or filtered, they
        // wait (and a hint says they came) until the top is on screen again.
        if unseenArrived { state.arrivedUnseen = true }
        // Read again from the top (when it is held): once drawn, `listLoaded` stamps them.
        guard state.list.atTop else { return [] }
        return [.loadList(.top, newAbove: newAbove, filter: state.listFilter)]
    }

    /// Whether the newest rows are on screen: the list's top, unfiltered, scrolled to it.
    static func showsNewest(_ state: InboxState) -> Bool {
        state.showsList && !state.narrowed && state.list.atTop && state.list.top == 0
    }

    /// What arrived unseen is stamped seen once the newest rows are on screen.
    static func seeArrivals(_ state: inout InboxState) -> [Effect] {
        guard state.arrivedUnseen, showsNewest(state) else { return [] }
        state.arrivedUnseen = false
        return [.markAllSeen]
    }

    /// Back on the list after a screen: what arrived meanwhile is shown, and seen when drawn.
    static func listShown(_ state: inout InboxState) -> [Effect] {
        guard state.listStale, let newAbove = state.newAbove else { return seeArrivals(&state) }
        state.listStale = false
        return state.list.atTop ? [.loadList(.top, newAbove: newAbove, filter: state.listFilter)] : []
    }

    /// Builds the list's lines from the cards held, the open threads and the sections. A
    /// card's section never comes before the previous card's: the sections read in order.
    static func relist(_ state: inout InboxState) {
        let newAbove = state.newAbove ?? Int.max
        var lines: [ListLine] = []
        var section: Section?
        for card in state.list.cards {
            var cardSection = !state.narrowed ? Section.of(card, newAbove: newAbove, now: state.now, zone: state.zone) : .new
            if let section, cardSection < section { cardSection = section }
            if !state.narrowed, cardSection != section { lines.append(.header(cardSection)) }
            section = cardSection
            lines.append(.card(card, section: cardSection))
            if card.isThread, state.expanded.contains(card.key), let members = state.members[card.key] {
                lines += members.rows.map { .member($0, card: card.key) }
                if members.more > 0 { lines.append(.more(card: card.key, count: members.more)) }
            }
        }
        state.list.lines = lines
        clampSelection(&state)
    }

    private static func updateDestination(_ state: inout InboxState, _ destination: Destination, for request: DestinationRequest?,
                                          live: Bool) {
        guard case .destination(var screen)? = state.screens.last, request == nil || request == screen.request else { return }
        let first = screen.destination == nil
        screen.destination = destination
        if first || !live {
            screen.top = DestinationView.initialTop(destination, height: state.listHeight - 1, width: state.width)
        }
        state.screens[state.screens.count - 1] = .destination(screen)
    }

    // MARK: Selection

    static func firstSelectable(_ lines: [ListLine]) -> Int? { lines.firstIndex(where: \.isSelectable) }

    static func clampSelection(_ state: inout InboxState) {
        let lines = state.list.lines
        guard !lines.isEmpty else { state.list.selection = 0; state.list.top = 0; return }
        var selection = min(max(0, state.list.selection), lines.count - 1)
        if !lines[selection].isSelectable {
            selection = lines[selection...].firstIndex(where: \.isSelectable)
                ?? lines[..<selection].lastIndex(where: \.isSelectable) ?? selection
        }
        state.list.selection = selection
    }

    /// The section whose heading stands on the list's first line while it is scrolled down
    /// (nil at the top, and in a narrowed list, which has no sections).
    static func stickySection(_ state: InboxState) -> Section? {
        let lines = state.list.lines
        guard !state.narrowed, state.list.top > 0, state.list.top < lines.count else { return nil }
        for index in stride(from: min(state.list.top, lines.count - 1), through: 0, by: -1) {
            if case .header(let section) = lines[index] { return section }
            if case .card(_, let section) = lines[index] { return section }
        }
        return nil
    }

    static func keepSelectionVisible(_ state: inout InboxState) {
        let height = state.listHeight
        var top = state.list.top
        // Scrolled down, the first line is the sticky heading's: the selection sits below it.
        if state.list.selection < top + (top > 0 && !state.narrowed ? 1 : 0) { top = max(0, state.list.selection - 1) }
        if state.list.selection >= top + height { top = state.list.selection - height + 1 }
        // A section header just above the window comes back into it while the selection still
        // fits (after a window too short for it grew again, or g).
        let lines = state.list.lines
        while top > 0, top - 1 < lines.count, !lines[top - 1].isSelectable, state.list.selection < top - 1 + height { top -= 1 }
        state.list.top = max(0, min(top, max(0, state.list.lines.count - 1)))
    }
}
