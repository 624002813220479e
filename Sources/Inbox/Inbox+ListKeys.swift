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

    /// A decline waits for y (from the list or from the requester's profile).
    private static func confirmed(_ state: inout InboxState, _ question: Confirmation, _ key: Key) -> [Effect] {
        state.confirming = nil
        guard key == .character("y") else {
            state.notice = "Kept the request"
            return []
        }
        state.notice = "Declined \(question.name)'s request"
        state.answered.insert(question.user)
        settleProfile(&state, user: question.user) { $0.requestedYou = false }
        return [.act(.declineRequest(user: question.user))]
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
        guard let actor else { return [] }
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
            settleProfile(&state, user: actor) { $0.requestedYou = false; $0.followsYou = true }
            return [.act(.acceptRequest(user: actor))]
        case (.character("d"), .followRequest):
            state.confirming = Confirmation(user: actor, name: name)
        case (.character("f"), .newFollower):
            state.notice = "Following \(name)"
            state.answered.insert(actor)
            settleProfile(&state, user: actor) { $0.following = true }
            return [.act(.followBack(user: actor))]
        default:
            break
        }
        return []
    }

    private static func filterKey(_ state: inout InboxState, _ key: Key) -> [Effect] {
        var filter = state.filter ?? FilterState(text: "", typing: true)
        switch key {
        case .enter:
            filter.typing = false
            state.filter = filter.text.isEmpty ? nil : filter
            return state.filter == nil ? reloadTop(&state) : []
        case .escape:
            state.filter = nil
            return reloadTop(&state)
        case .backspace: filter.text = String(filter.text.dropLast())
        case .space: filter.text += " "
        case .character(let c): filter.text.append(c)
        default: return []
        }
        state.filter = filter
        return reloadTop(&state)
    }

    /// Reads the list from its top again (for a new filter, or none).
    private static func reloadTop(_ state: inout InboxState) -> [Effect] {
        guard let newAbove = state.newAbove else { return [] }
        state.jump = .top
        state.list.top = 0
        relist(&state)
        return [.loadList(.top, newAbove: newAbove, filter: state.filter?.rowFilter)]
    }

    private static func listKey(_ state: inout InboxState, _ key: Key) -> [Effect] {
        state.notice = nil
        let lines = state.list.lines
        let selected = state.list.selectedLine
        switch key {
        case .character("a"), .character("d"), .character("f"):
            guard let row = selected?.row else { break }
            return act(&state, key, kind: row.kind, actor: row.actor, name: row.title, reachable: !row.withheld)
        case .wheelDown: move(&state, by: 3)
        case .wheelUp: move(&state, by: -3)
        case .click(let screenRow), .doubleClick(let screenRow):
            // Screen row 1 is the first list line.
            let index = state.list.top + screenRow - 1
            guard screenRow >= 1, index < lines.count, lines[index].isSelectable else { break }
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
                return [.loadList(.top, newAbove: newAbove, filter: state.filter?.rowFilter)]
            }
        case .end, .character("G"):
            if state.list.atEnd {
                state.list.selection = lines.lastIndex(where: \.isSelectable) ?? 0
            } else if let newAbove = state.newAbove {
                state.jump = .bottom
                return [.loadList(.bottom, newAbove: newAbove, filter: state.filter?.rowFilter)]
            }
        case .space, .right, .left:
            return toggleThread(&state, key)
        case .enter:
            guard let row = selected?.row else { return [] }
            return (row.readAt == nil ? [.markRead(row.id)] : []) + open(&state, .tap(row))
        case .character("i"):
            guard let step = selected?.row?.tap.stepId ?? selected?.row?.subject.step else { break }
            return open(&state, .interactions(step: step))
        case .character("p"):
            guard let row = selected?.row else { break }
            return open(&state, .push(row))
        case .tab, .character("n"): moveToUnread(&state, forward: true)
        case .backTab, .character("N"): moveToUnread(&state, forward: false)
        case .character("A"):
            // Mark all read, as mutt's and newsboat's readers do: the marks go at once.
            state.notice = "Every row marked read"
            // Shown at once on what is held; the replica's mark makes it so for the rest.
            for index in state.list.cards.indices where state.list.cards[index].newest.readAt == nil {
                state.list.cards[index].newest.readAt = state.now
            }
            for key in state.members.keys {
                for index in state.members[key]!.rows.indices where state.members[key]!.rows[index].readAt == nil {
                    state.members[key]!.rows[index].readAt = state.now
                }
            }
            relist(&state)
            return [.markAllRead]
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
            state.filter = nil
            return reloadTop(&state)
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

    /// n / Tab: the next line whose row is not read yet; N / Shift-Tab: the previous one.
    private static func moveToUnread(_ state: inout InboxState, forward: Bool) {
        let lines = state.list.lines
        let start = state.list.selection
        let candidates = forward ? Array(lines.indices.filter { $0 > start }) : Array(lines.indices.filter { $0 < start }.reversed())
        if let next = candidates.first(where: { lines[$0].isSelectable && lines[$0].row?.readAt == nil }) {
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
        let filter = state.filter?.rowFilter
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
