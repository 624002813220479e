import Notifications
import Replica

/// A key, as the terminal reports it.
public enum Key: Equatable, Sendable {
    case up, down, pageUp, pageDown, home, end, enter, space, left, right, escape, backspace
    case character(Character)
    /// The mouse, where the terminal reports it: the wheel, and a click on a screen row.
    case wheelUp, wheelDown
    case click(row: Int)
    case doubleClick(row: Int)
}

/// What happened: the inbox's actions are named after events, not commands.
public enum Action: Equatable, Sendable {
    case keyPressed(Key)
    case resized(width: Int, height: Int)
    case rowsLoaded([ReplicaRow])
    case syncChanged(status: String, counts: ServerCounts)
    case destinationLoaded(Destination)
    case settingsLoaded([String: Bool])
    /// Something the background could not do (offline, refused): shown in the footer.
    case failed(String)
}

/// Work for the outside world, run after the reducer: the reducer itself does no I/O.
public enum Effect: Equatable, Sendable {
    case markAllSeen
    case markRead(Int)
    /// Build the tap destination of this row (from the replica) and send `destinationLoaded`.
    case loadDestination(Int)
    /// Queue a mutation for the server (acceptRequest, declineRequest, followBack) about a user.
    case act(type: String, user: String)
    /// Switch to the next theme.
    case nextTheme
    /// Fetch the preferences for the settings screen.
    case loadSettings
    /// Queue a preferences change (shown at once).
    case setPreference(String, Bool)
    /// Fetch the row's APNs and FCM payloads and show them as the lock screen would.
    case loadPush(Int)
    /// Build the list of who hearted and shared this step (from the replica).
    case loadInteractions(step: String)
    /// The selection nears the end of the rows held: hold more (older) rows.
    case loadMore
    case syncNow
    case quit
}

/// Where the inbox is looking.
public enum Screen: Equatable, Sendable {
    case activity
    /// A row opened: its tap destination (drawn from the replica's entities).
    case destination(rowId: Int)
    case help
    case settings
}

/// Everything the inbox shows, as a value.
public struct InboxState: Equatable, Sendable {
    public var rows: [ReplicaRow] = [] {
        didSet {
            byId = Dictionary(rows.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            relist()
        }
    }
    /// Rows unseen when the tab opened: the New section, until the next visit.
    public var newIds: Set<Int> = [] { didSet { relist() } }
    public var expanded: Set<String> = [] { didSet { relist() } }
    /// The list's lines, kept in step with what they are made of (rows, New, threads open,
    /// the filter, the clock) rather than rebuilt on every keystroke.
    public private(set) var lines: [ListLine] = []
    /// Index into `lines` of the selected line (always a selectable one when any exists).
    public var selection = 0
    public var top = 0
    public var screen = Screen.activity
    public var width = 80
    public var height = 24
    /// The clock: sections (Today, This week) move at most once a minute, so the list follows it then.
    public var now: Int64 { didSet { if now / 60_000 != oldValue / 60_000 { relist() } } }
    public var syncStatus = ""
    public var counts = ServerCounts(unseen: 0, unread: 0, stale: true)
    public var destination: Destination?
    public var destinationTop = 0

    /// A question waiting for y/n (declining a request asks first).
    public var confirming: Confirmation?
    /// A one-line note shown in the footer after an action.
    public var notice: String?
    /// The switches of the settings screen (nil until loaded), and the selected one.
    public var settings: [String: Bool]?
    public var settingsSelection = 0
    /// The `/` filter: text matched against name and copy, or `kind:NAME`; nil when none.
    public var filter: String? { didSet { relist() } }
    /// Whether keys are typing into the filter.
    public var typingFilter = false
    /// Whether the rows held fill their window (older rows may exist in the replica).
    public var rowWindowFull = false

    /// The help screen: every key, one line each.
    public static let helpLines = [
        "j/k ↑/↓  move", "PgUp/PgDn  page", "g/G  first/last", "Space →/←  expand/collapse a thread",
        "Enter  open the row", "i  on a step: who hearted and shared it", "a / d  accept / decline a follow request",
        "f  follow back a new follower", "/  filter by text or kind:NAME", "r  sync now", "s  notification settings",
        "p  preview the row's push", "t  next theme", "mouse  wheel scrolls, click selects, double click opens",
        "q Esc  back / quit", "?  this help",
    ]

    /// The settings screen's lines: the master switch, the four categories, and V2's custom alerts.
    public static let settingItems: [(key: String, name: String, about: String)] = [
        ("all", "All notifications", "The master switch — off means off."),
        ("stepWith", "Step-with alerts", "Hearts, comments and shares inside your 24-hour windows."),
        ("social", "Social activity", "Follows, follow requests, acceptances, mentions."),
        ("engagement", "Step engagement", "Hearts, comments and shares after the window, and replies to your comments."),
        ("journeys", "Journey updates", "First steps, achievements, and new steps in journeys you follow."),
        ("customFollow", "Custom follow alerts", "Per-person and per-journey overrides — coming later."),
    ]

    public init(now: Int64) { self.now = now }

    private mutating func relist() {
        lines = ActivityList.lines(rows: visibleRows, newIds: newIds, expanded: expanded, now: now)
    }

    private var byId: [Int: ReplicaRow] = [:]

    /// The rows the filter lets through.
    var visibleRows: [ReplicaRow] {
        guard let filter, !filter.isEmpty else { return rows }
        if filter.hasPrefix("kind:") {
            let kind = filter.dropFirst(5).lowercased()
            return rows.filter { $0.kind.lowercased().hasPrefix(kind) }
        }
        return rows.filter { $0.title.localizedCaseInsensitiveContains(filter) || $0.body.localizedCaseInsensitiveContains(filter) }
    }

    public func row(_ id: Int) -> ReplicaRow? { byId[id] }

    /// The rows the selected line stands for.
    public var selectedRowIds: [Int] {
        let lines = self.lines
        guard selection < lines.count else { return [] }
        switch lines[selection] {
        case .card(let card): return card.rowIds
        case .member(let id, _): return [id]
        case .header: return []
        }
    }
}

/// A yes/no question about a user (declining their follow request).
public struct Confirmation: Equatable, Sendable {
    public var user: String
    public var name: String
}

/// The reducer: `(inout State, Action) -> [Effect]`, pure.
public enum Inbox {
    /// The rows of the list area (the screen less the header and footer).
    static func listHeight(_ state: InboxState) -> Int { max(1, state.height - 3) }

    public static func reduce(_ state: inout InboxState, _ action: Action) -> [Effect] {
        switch action {
        case let .resized(width, height):
            state.width = width
            state.height = height
            keepSelectionVisible(&state)
            return []
        case .rowsLoaded(let rows):
            let first = state.rows.isEmpty
            let selected = state.selectedRowIds.first
            let known = Set(state.rows.map(\.id))
            state.rows = rows
            if first {
                // Opening the tab: what is unseen now is New, and everything gets stamped seen.
                state.newIds = Set(rows.filter { $0.seenAt == nil }.map(\.id))
                state.selection = firstSelectable(state.lines) ?? 0
                return state.newIds.isEmpty ? [] : [.markAllSeen]
            }
            // Arrived during this visit: since the last visit too, so New (and seen at once).
            state.newIds.formUnion(rows.filter { $0.seenAt == nil && !known.contains($0.id) }.map(\.id))
            if let selected, let at = state.lines.firstIndex(where: { line in
                if case .card(let card) = line { return card.rowIds.contains(selected) }
                if case .member(let id, _) = line { return id == selected }
                return false
            }) { state.selection = at }
            keepSelectionVisible(&state)
            // Rows arriving while the tab is open and drawn are seen.
            return rows.contains { $0.seenAt == nil } && state.screen == .activity ? [.markAllSeen] : []
        case let .syncChanged(status, counts):
            state.syncStatus = status
            state.counts = counts
            return []
        case .settingsLoaded(let settings):
            state.settings = settings
            return []
        case .failed(let message):
            state.notice = message
            return []
        case .destinationLoaded(let destination):
            state.destination = destination
            state.destinationTop = max(0, destination.focus - 1)
            return []
        case .keyPressed(let key):
            return keyPressed(&state, key)
        }
    }

    /// a accepts and d (after a y) declines a follow request row; f follows back a new follower.
    private static func act(_ state: inout InboxState, _ key: Key, on row: ReplicaRow) -> [Effect] {
        guard let actor = row.json["actor"]?.string else { return [] }
        switch (key, row.kind) {
        case (.character("a"), "followRequest"):
            state.notice = "Accepted \(row.title)"
            settleProfileButtons(&state, "Accepted")
            return [.act(type: "acceptRequest", user: actor)]
        case (.character("d"), "followRequest"):
            state.confirming = Confirmation(user: actor, name: row.title)
        case (.character("f"), "newFollower"):
            state.notice = "Following \(row.title)"
            settleProfileButtons(&state, "Following")
            return [.act(type: "followBack", user: actor)]
        default:
            break
        }
        return []
    }

    /// On an open profile, the offered buttons give way to what was done.
    private static func settleProfileButtons(_ state: inout InboxState, _ done: String) {
        guard var destination = state.destination, destination.title == "Profile",
              let index = destination.lines.firstIndex(where: { $0.role == .badge }) else { return }
        destination.lines[index] = ("\(done) ✓", .actor)
        state.destination = destination
    }

    private static func keyPressed(_ state: inout InboxState, _ key: Key) -> [Effect] {
        // A decline waits for y (from the list or from the requester's profile).
        if let question = state.confirming {
            state.confirming = nil
            guard key == .character("y") else { state.notice = "Kept the request"; return [] }
            state.notice = "Declined \(question.name)'s request"
            settleProfileButtons(&state, "Declined")
            return [.act(type: "declineRequest", user: question.user)]
        }
        if state.screen == .settings {
            switch key {
            case .escape, .character("q"), .left: state.screen = .activity
            case .down, .character("j"): state.settingsSelection = min(InboxState.settingItems.count - 1, state.settingsSelection + 1)
            case .up, .character("k"): state.settingsSelection = max(0, state.settingsSelection - 1)
            case .space, .enter:
                let item = InboxState.settingItems[state.settingsSelection]
                guard item.key != "customFollow", let current = state.settings?[item.key] else { break }
                state.settings?[item.key] = !current
                return [.setPreference(item.key, !current)]
            default: break
            }
            return []
        }
        if state.screen != .activity {
            let length = state.destination?.lines.count ?? (state.screen == .help ? InboxState.helpLines.count : 0)
            let page = listHeight(state) - 1
            func scroll(by delta: Int) { state.destinationTop = max(0, min(length - 1, state.destinationTop + delta)) }
            switch key {
            case .escape, .character("q"), .left:
                state.screen = .activity
                state.destination = nil
            case .down, .character("j"): scroll(by: 1)
            case .up, .character("k"): scroll(by: -1)
            case .pageDown: scroll(by: page)
            case .pageUp: scroll(by: -page)
            case .wheelDown: scroll(by: 3)
            case .wheelUp: scroll(by: -3)
            case .character("i"):
                // From a step, the people behind its hearts and shares.
                guard state.destination?.title == "Step", case .destination(let id) = state.screen,
                      let step = state.row(id)?.json["tap"]?["step"]?.string else { break }
                state.destinationTop = 0
                return [.loadInteractions(step: step)]
            case .home, .character("g"): state.destinationTop = 0
            case .end, .character("G"): state.destinationTop = max(0, length - page)
            case .character("a"), .character("d"), .character("f"):
                // The profile's inline Accept / Decline or Follow back, for the row that opened it.
                guard state.destination?.title == "Profile", case .destination(let id) = state.screen,
                      let row = state.row(id) else { break }
                state.notice = nil
                return act(&state, key, on: row)
            default: break
            }
            return []
        }
        if state.typingFilter {
            switch key {
            case .enter: state.typingFilter = false
            case .escape:
                state.typingFilter = false
                state.filter = nil
            case .backspace: state.filter = String((state.filter ?? "").dropLast())
            case .space: state.filter = (state.filter ?? "") + " "
            case .character(let c): state.filter = (state.filter ?? "") + String(c)
            default: break
            }
            state.selection = firstSelectable(state.lines) ?? 0
            state.top = 0
            return []
        }
        state.notice = nil
        let lines = state.lines
        switch key {
        case .character("a"), .character("d"), .character("f"):
            guard let id = state.selectedRowIds.first, let row = state.row(id) else { break }
            return act(&state, key, on: row)
        case .wheelDown: move(&state, lines, by: 3)
        case .wheelUp: move(&state, lines, by: -3)
        case .click(let row), .doubleClick(let row):
            // Screen row 1 is the first list line.
            let index = state.top + row - 1
            guard row >= 1, index < lines.count, lines[index].isSelectable else { break }
            state.selection = index
            if case .doubleClick = key { return keyPressed(&state, .enter) }
        case .down, .character("j"): move(&state, lines, by: 1)
        case .up, .character("k"): move(&state, lines, by: -1)
        case .pageDown: move(&state, lines, by: listHeight(state) - 1)
        case .pageUp: move(&state, lines, by: -(listHeight(state) - 1))
        case .home, .character("g"): state.selection = firstSelectable(lines) ?? 0
        case .end, .character("G"): state.selection = lines.lastIndex(where: \.isSelectable) ?? 0
        case .space, .right, .left:
            // Space toggles a thread, → opens it, ← closes it (and returns to its card).
            guard let thread = threadKey(at: state.selection, lines) else { break }
            let open = state.expanded.contains(thread)
            let shouldOpen = key == .space ? !open : key == .right
            if shouldOpen {
                state.expanded.insert(thread)
            } else {
                state.expanded.remove(thread)
                if let at = state.lines.firstIndex(where: { if case .card(let card) = $0 { return card.key == thread }; return false }) {
                    state.selection = at
                }
            }
        case .enter:
            guard let id = state.selectedRowIds.first else { return [] }
            state.screen = .destination(rowId: id)
            state.destination = nil
            return (state.row(id)?.readAt == nil ? [.markRead(id)] : []) + [.loadDestination(id)]
        case .character("r"): return [.syncNow]
        case .character("t"): return [.nextTheme]
        case .character("/"):
            state.typingFilter = true
            state.filter = ""
        case .character("s"):
            state.screen = .settings
            state.settingsSelection = 0
            return [.loadSettings]
        case .character("p"):
            guard let id = state.selectedRowIds.first else { break }
            state.screen = .destination(rowId: id)
            state.destination = nil
            return [.loadPush(id)]
        case .character("?"):
            state.screen = .help
            state.destinationTop = 0
        case .escape where state.filter != nil:
            state.filter = nil
            state.selection = firstSelectable(state.lines) ?? 0
        case .escape, .character("q"): return [.quit]
        default: break
        }
        keepSelectionVisible(&state)
        // Near the end of a full window of rows: ask for older ones.
        if state.rowWindowFull && state.selection >= lines.count - listHeight(state) { return [.loadMore] }
        return []
    }

    /// The thread a line belongs to: a thread card's own key, or its member's.
    private static func threadKey(at index: Int, _ lines: [ListLine]) -> String? {
        guard index < lines.count else { return nil }
        switch lines[index] {
        case .card(let card) where card.isThread: return card.key
        case .member(_, let thread): return thread
        default: return nil
        }
    }

    private static func firstSelectable(_ lines: [ListLine]) -> Int? { lines.firstIndex(where: \.isSelectable) }

    private static func move(_ state: inout InboxState, _ lines: [ListLine], by delta: Int) {
        guard !lines.isEmpty else { return }
        var target = max(0, min(lines.count - 1, state.selection + delta))
        let step = delta >= 0 ? 1 : -1
        while target >= 0, target < lines.count, !lines[target].isSelectable { target += step }
        if target < 0 || target >= lines.count {
            target = delta >= 0 ? (lines.lastIndex(where: \.isSelectable) ?? state.selection)
                                : (firstSelectable(lines) ?? state.selection)
        }
        state.selection = target
    }

    static func keepSelectionVisible(_ state: inout InboxState) {
        let height = listHeight(state)
        if state.selection < state.top { state.top = max(0, state.selection - 1) }
        if state.selection >= state.top + height { state.top = state.selection - height + 1 }
    }
}
