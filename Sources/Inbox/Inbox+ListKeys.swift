import Notifications
import Replica
import Wire

/// Keys on the list: moving, threads, opening, acting on a row, the filter.
extension Inbox {
    static func keyPressed(_ state: inout InboxState, _ key: Key) -> [Effect] {
        if let question = state.confirming { return confirmed(&state, question, key) }
        if let screen = state.screens.last { return screenKey(&state, screen, key) }
        if state.filter?.typing == true { return filterKey(&state, key) }
        return listKey(&state, key)
    }

    /// A decline or a bulk read waits for y; any other key keeps things as they are.
    private static func confirmed(_ state: inout InboxState, _ question: Confirmation, _ key: Key) -> [Effect] {
        state.confirming = nil
        switch question {
        case let .decline(user, name):
            guard key == .character("y") else {
                state.notice = "Kept the request"
                return []
            }
            state.notice = "Declined \(name)'s request"
            state.answered.insert(user)
            state.outcomes[user] = "declined"
            settleProfile(&state, user: user) { $0.requestedYou = false }
            return [.act(.declineRequest(user: user))] + readRows(&state, of: user)
        case let .markRead(count, filter):
            guard key == .character("y") else {
                state.notice = "Nothing marked"
                return []
            }
            state.notice = "Marked \(Plural.count(count, "row")) read"
            // Shown at once on what is held (under a filter, everything held matches it).
            for index in state.list.cards.indices { readCard(&state.list.cards[index], at: state.now) }
            for key in state.members.keys {
                for index in state.members[key]!.rows.indices where state.members[key]!.rows[index].readAt == nil {
                    state.members[key]!.rows[index].readAt = state.now
                }
            }
            if filter == nil {
                for category in state.unreadByCategory.keys { state.unreadByCategory[category] = 0 }
            }
            relist(&state)
            return [filter.map { .markMatchingRead($0) } ?? .markAllRead]
        }
    }

    /// A card shown read: its newest row stamped, nothing in it unread.
    static func readCard(_ card: inout ListCard, at now: Int64) {
        if card.newest.readAt == nil { card.newest.readAt = now }
        card.unreadRows = 0
        card.newUnread = false
    }

    /// The rows held of a person's request or follow, read once it is answered: the row changes
    /// at once, and its read stamp goes to the server.
    private static func readRows(_ state: inout InboxState, of user: String) -> [Effect] {
        var effects: [Effect] = []
        for index in state.list.cards.indices {
            let row = state.list.cards[index].newest
            guard row.actor == user, row.kind == .followRequest || row.kind == .newFollower, row.readAt == nil else { continue }
            readCard(&state.list.cards[index], at: state.now)
            effects.append(.markRead(row.id))
        }
        relist(&state)
        return effects
    }

    /// An open profile of `user` shows at once what an act changed.
    static func settleProfile(_ state: inout InboxState, user: String, _ change: (inout Relationship) -> Void) {
        guard case .destination(var screen)? = state.screens.last, case .profile(var page)? = screen.destination,
              page.id == user, var person = page.person else { return }
        change(&person.relationship)
        page.person = person
        screen.destination = .profile(page)
        state.screens[state.screens.count - 1] = .destination(screen)
    }

    /// a accepts and d (after a y) declines a follow request; f follows back a new follower.
    /// A row the server withheld (its person banned, deactivated or behind a block) offers
    /// neither: there is no one to follow or accept now.
    static func act(_ state: inout InboxState, _ key: Key, kind: Kind, actor: String?, name: String,
                    reachable: Bool = true) -> [Effect] {
        guard let actor else {
            state.notice = key == .character("f") ? "f follows back someone who started following you: this row is not one"
                : "a and d answer a follow request: this row is not one"
            return []
        }
        if !reachable, kind == .followRequest || kind == .newFollower {
            state.notice = "\(name) can no longer be followed or answered"
            return []
        }
        if state.answered.contains(actor), kind == .followRequest || kind == .newFollower {
            state.notice = kind == .followRequest ? "\(name)'s request is answered already" : "You follow \(name) already"
            return []
        }
        switch (key, kind) {
        case (.character("a"), .followRequest):
            state.notice = "Accepted \(name)"
            state.answered.insert(actor)
            state.outcomes[actor] = "accepted"
            settleProfile(&state, user: actor) { $0.requestedYou = false; $0.followsYou = true }
            return [.act(.acceptRequest(user: actor))] + readRows(&state, of: actor)
        case (.character("d"), .followRequest):
            state.confirming = .decline(user: actor, name: name)
        case (.character("f"), .newFollower):
            state.notice = "Following \(name)"
            state.answered.insert(actor)
            state.outcomes[actor] = "followed back"
            settleProfile(&state, user: actor) { $0.following = true }
            return [.act(.followBack(user: actor))] + readRows(&state, of: actor)
        case (.character("f"), _):
            state.notice = "f follows back someone who started following you: this row is not one"
        default:
            state.notice = "a and d answer a follow request: this row is not one"
        }
        return []
    }

    private static func filterKey(_ state: inout InboxState, _ key: Key) -> [Effect] {
        var filter = state.filter ?? FilterState(text: "", typing: true)
        switch key {
        case .enter:
            filter.typing = false
            // Nothing to filter by (empty, or only quotes and spaces): no filter.
            if case .success(nil) = filter.parsed {
                state.filter = nil
                return reloadTop(&state)
            }
            state.filter = filter
            return []
        case .escape:
            return clearFilter(&state)
        case .backspace: filter.text = String(filter.text.dropLast())
        case .space where filter.text.count < FilterState.longest: filter.text += " "
        case .character("\u{15}"): filter.text = ""   // ^U: the line
        case .character("\u{17}"):                    // ^W: the word before the cursor
            let trimmed = filter.text.reversed().drop { $0 == " " }
            filter.text = String(trimmed.drop { $0 != " " }.reversed())
        case .character(let c) where c.unicodeScalars.allSatisfy({ !Preview.isControl($0) }):
            guard filter.text.count < FilterState.longest else {
                state.notice = "A filter holds at most \(FilterState.longest) characters"
                return []
            }
            filter.text.append(c)
        default: return []
        }
        state.filter = filter
        return reloadTop(&state)
    }

    /// Reads the list from its top again (for a new filter, or none). A filter that cannot be
    /// read shows nothing, and the empty list says why.
    private static func reloadTop(_ state: inout InboxState) -> [Effect] {
        guard let newAbove = state.newAbove else { return [] }
        state.list.top = 0
        if case .failure? = state.filter?.parsed {
            state.list = ListWindow()
            state.list.loaded = true
            relist(&state)
            return []
        }
        state.jump = .top
        relist(&state)
        return [.loadList(.top, newAbove: newAbove, filter: state.listFilter)]
    }

    /// Esc on a filter: the whole list again, with the row that was selected still selected.
    private static func clearFilter(_ state: inout InboxState) -> [Effect] {
        let selected = state.list.selectedLine?.row?.id
        state.filter = nil
        guard let selected, state.tab == nil, let newAbove = state.newAbove else { return reloadTop(&state) }
        state.list.top = 0
        return [.loadList(.around(row: selected), newAbove: newAbove, filter: nil)]
    }

    /// A category's tab (`1`–`5`), read from the top; or every row (`0`), around the row that
    /// was selected.
    private static func chooseTab(_ state: inout InboxState, _ tab: Category?) -> [Effect] {
        guard tab != state.tab else { return [] }
        let selected = state.list.selectedLine?.row?.id
        state.tab = tab
        if tab == nil, state.filter == nil, let selected, let newAbove = state.newAbove {
            state.list.top = 0
            return [.loadList(.around(row: selected), newAbove: newAbove, filter: nil)]
        }
        return reloadTop(&state)
    }

    private static func listKey(_ state: inout InboxState, _ key: Key) -> [Effect] {
        state.notice = nil
        let lines = state.list.lines
        let selected = state.list.selectedLine
        switch key {
        case .character("a"), .character("d"), .character("f"):
            guard let row = selected?.row else { break }
            return act(&state, key, kind: row.kind, actor: row.actor, name: row.title, reachable: !row.withheld)
        case .character("b"):
            state.notice = "b sets the alerts of a profile or a journey: open one (Enter) to use it"
        case .character(let digit) where digit == "0" || InboxState.tabs.contains { $0.key == digit }:
            return chooseTab(&state, InboxState.tabs.first { $0.key == digit }?.category)
        case .wheelDown: move(&state, by: 3)
        case .wheelUp: move(&state, by: -3)
        case .click(let screenRow), .doubleClick(let screenRow):
            // Screen row 1 is the first list line; below the list's last screen row is the footer.
            let index = state.list.top + screenRow - 1
            let sticky = Inbox.stickySection(state) != nil
            guard screenRow >= (sticky ? 2 : 1), screenRow <= state.listHeight, index < lines.count, lines[index].isSelectable
            else { break }
            state.list.selection = index
            if case .doubleClick = key { return listKey(&state, .enter) }
        case .down, .character("j"): move(&state, by: 1)
        case .up, .character("k"): move(&state, by: -1)
        case .pageDown: move(&state, by: state.listHeight - 1)
        case .pageUp: move(&state, by: -(state.listHeight - 1))
        case .home, .character("g"):
            if state.list.atTop {
                state.list.selection = firstSelectable(lines) ?? 0
            } else if let newAbove = state.newAbove {
                state.jump = .top
                return [.loadList(.top, newAbove: newAbove, filter: state.listFilter)]
            }
        case .end, .character("G"):
            if state.list.atEnd {
                state.list.selection = lines.lastIndex(where: \.isSelectable) ?? 0
            } else if let newAbove = state.newAbove {
                state.jump = .bottom
                return [.loadList(.bottom, newAbove: newAbove, filter: state.listFilter)]
            }
        case .space, .right, .left:
            return toggleThread(&state, key)
        case .enter:
            guard let line = selected, let row = line.row else { return [] }
            let reads = read(&state, line)
            let said = state.notice
            let opened = open(&state, .tap(row))
            state.notice = said  // what the read says stays in the footer of the screen opened
            return reads + opened
        case .character("i"):
            guard let row = selected?.row else { break }
            guard let step = row.tap.stepId ?? row.subject.step else {
                state.notice = "i lists who hearted and shared a step: this row is about none"
                break
            }
            return open(&state, .interactions(step: step))
        case .character("p"):
            guard let row = selected?.row else { break }
            return open(&state, .push(row))
        case .tab, .character("n"): moveToUnread(&state, forward: true)
        case .backTab, .character("N"): moveToUnread(&state, forward: false)
        case .character("A"):
            // A bulk read changes what the list shows (under a filter or a tab, only that), says
            // how much, and asks first: it cannot be undone.
            if let filter = state.listFilter { return [.countUnread(filter)] }
            if case .failure? = state.filter?.parsed { break }
            let count = state.sync.counts.unread
            if count == 0 {
                state.notice = "Nothing is unread"
            } else {
                state.confirming = .markRead(count: count, filter: nil)
            }
        case .character("y"):
            guard let row = selected?.row else { break }
            return copyLink(&state, row.tap.deepLink)
        case .character("o"):
            guard let row = selected?.row else { break }
            return openLink(&state, row.tap.deepLink)
        case .character("r"): return [.syncNow]
        case .character("t"): return [.nextTheme]
        case .character("/"):
            state.filter = FilterState(text: state.filter?.text ?? "", typing: true)
        case .character("s"):
            state.screens.append(.settings(selection: 0))
            return [.loadSettings]
        case .character("S"):
            state.stats = .loading
            state.screens.append(.stats(top: 0))
            return [.loadStats]
        case .character("?"):
            state.screens.append(.help(top: 0))
        case .escape where state.filter != nil:
            return clearFilter(&state)
        case .escape, .character("q"): return [.quit]
        default: break
        }
        keepSelectionVisible(&state)
        return nearEdges(&state) + seeArrivals(&state)
    }

    /// y: a row's (or a destination's) link onto the clipboard, and said.
    static func copyLink(_ state: inout InboxState, _ link: String) -> [Effect] {
        state.notice = "Copied \(link)"
        return [.copy(link)]
    }

    /// o: the link opened in the reader's browser when they have one; always shown.
    static func openLink(_ state: inout InboxState, _ link: String) -> [Effect] {
        state.notice = state.browser ? "Opening \(link)" : "Link: \(link)  (y copies it; set $BROWSER to open it)"
        return state.browser ? [.openLink(link)] : []
    }

    /// Opens a destination over the list.
    static func open(_ state: inout InboxState, _ request: DestinationRequest) -> [Effect] {
        state.notice = nil
        state.screens.append(.destination(DestinationScreen(request: request)))
        return [.loadDestination(request)]
    }

    /// Space toggles a thread, → opens it, ← closes it (and returns to its card).
    private static func toggleThread(_ state: inout InboxState, _ key: Key) -> [Effect] {
        let card: String
        switch state.list.selectedLine {
        case .card(let selected, _)? where selected.isThread: card = selected.key
        case .member(_, let key)?: card = key
        default: return []
        }
        let open = state.expanded.contains(card)
        let shouldOpen = key == .space ? !open : key == .right
        guard shouldOpen != open else { return [] }
        if shouldOpen {
            state.expanded.insert(card)
            return [.loadMembers(card: card)]
        }
        state.expanded.remove(card)
        state.members[card] = nil
        relist(&state)
        if let at = state.list.lines.firstIndex(where: { $0.identity == "card:" + card }) { state.list.selection = at }
        keepSelectionVisible(&state)
        return []
    }

    /// Opening a line reads it: a card from its header, every row it holds; a row, itself.
    /// Shown at once on what is held; the replica's stamps follow once the frame is drawn.
    private static func read(_ state: inout InboxState, _ line: ListLine) -> [Effect] {
        switch line {
        case .card(let card, _):
            guard card.unreadRows > 0 || card.newest.readAt == nil,
                  let index = state.list.cards.firstIndex(where: { $0.key == card.key }) else { return [] }
            guard card.unreadRows <= ListCard.readAtOnce else {
                // A card of thousands: its newest rows are read a bounded step at a time.
                // (Counted up to one past the step, so how many are left is not known.)
                state.list.cards[index].unreadRows -= ListCard.readAtOnce
                if state.list.cards[index].newest.readAt == nil { state.list.cards[index].newest.readAt = state.now }
                state.notice = "Read the newest \(ListCard.readAtOnce) rows of this card; older ones stay unread (Enter reads on)"
                countRead(&state, card.newest, rows: ListCard.readAtOnce)
                relist(&state)
                return [.markCardRead(card.key)]
            }
            readCard(&state.list.cards[index], at: state.now)
            if let rows = state.members[card.key]?.rows {
                state.members[card.key]!.rows = rows.map { row in
                    var row = row
                    if row.readAt == nil { row.readAt = state.now }
                    return row
                }
            }
            countRead(&state, card.newest, rows: card.unreadRows)
            relist(&state)
            return card.isThread ? [.markCardRead(card.key)] : [.markRead(card.newest.id)]
        case let .member(row, key):
            guard row.readAt == nil, let at = state.members[key]?.rows.firstIndex(where: { $0.id == row.id }) else { return [] }
            state.members[key]!.rows[at].readAt = state.now
            if let index = state.list.cards.firstIndex(where: { $0.key == key }) {
                var card = state.list.cards[index]
                if card.newest.id == row.id { card.newest.readAt = state.now }
                card.unreadRows = max(0, card.unreadRows - 1)
                let members = state.members[key]!
                if card.unreadRows == 0 {
                    card.newUnread = false
                } else if members.more == 0 {
                    card.newUnread = members.rows.contains { $0.readAt == nil && $0.id > (state.newAbove ?? Int.max) }
                }
                state.list.cards[index] = card
            }
            countRead(&state, row, rows: 1)
            relist(&state)
            return [.markRead(row.id)]
        case .header, .more:
            return []
        }
    }

    /// The tabs' unread counts, less what was just read.
    private static func countRead(_ state: inout InboxState, _ row: ActivityRow, rows: Int) {
        let category = row.kind == .batch ? (row.action ?? row.kind).category : row.kind.category
        if let count = state.unreadByCategory[category], count < InboxState.unreadCounted {
            state.unreadByCategory[category] = max(0, count - rows)
        }
    }

    /// Whether a line still holds something unread: a card any of whose rows is, or a row.
    static func isUnread(_ line: ListLine) -> Bool {
        switch line {
        case .card(let card, _): return card.unreadRows > 0
        case .member(let row, _): return row.readAt == nil
        case .header, .more: return false
        }
    }

    /// n / Tab: the next line that holds an unread row; N / Shift-Tab: the previous one.
    private static func moveToUnread(_ state: inout InboxState, forward: Bool) {
        let lines = state.list.lines
        let start = state.list.selection
        let candidates = forward ? Array(lines.indices.filter { $0 > start }) : Array(lines.indices.filter { $0 < start }.reversed())
        if let next = candidates.first(where: { isUnread(lines[$0]) }) {
            state.list.selection = next
            return
        }
        guard state.sync.counts.unread > 0 else {
            state.notice = "Nothing is unread"
            return
        }
        let beyond = forward ? !state.list.atEnd : !state.list.atTop
        state.notice = "No unread row \(forward ? "below" : "above")" + (beyond ? " in what is loaded: \(forward ? "G" : "g") goes further" : "")
    }

    private static func move(_ state: inout InboxState, by delta: Int) {
        let lines = state.list.lines
        guard !lines.isEmpty else { return }
        var target = max(0, min(lines.count - 1, state.list.selection + delta))
        let step = delta >= 0 ? 1 : -1
        while target >= 0, target < lines.count, !lines[target].isSelectable { target += step }
        if target < 0 || target >= lines.count {
            target = delta >= 0 ? (lines.lastIndex(where: \.isSelectable) ?? state.list.selection)
                                : (firstSelectable(lines) ?? state.list.selection)
        }
        state.list.selection = target
    }

    /// Near either end of the cards held: read more from the replica.
    static func nearEdges(_ state: inout InboxState) -> [Effect] {
        guard let newAbove = state.newAbove, state.list.loaded else { return [] }
        let filter = state.listFilter
        var effects: [Effect] = []
        if !state.list.atEnd, state.list.selection >= state.list.lines.count - state.listHeight,
           let last = state.list.cards.last {
            effects.append(.loadList(.older(before: last.newest.id), newAbove: newAbove, filter: filter))
        }
        if !state.list.atTop, state.list.selection < state.listHeight, let first = state.list.cards.first {
            effects.append(.loadList(.newer(after: first.newest.id), newAbove: newAbove, filter: filter))
        }
        return effects
    }
}
