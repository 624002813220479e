import Foundation
import Notifications
import Replica
import Wire

/// Runs the Activity tab in the terminal: reads only the replica, keeps it synced in the
/// background, runs the reducer's effects, and sends what they learn back as actions.
public final class InboxApp {
    private let replica: Replica
    private let engine: SyncEngine
    private var state: InboxState
    private let changed = ChangeFlag()
    private let mailbox = Mailbox()
    private var theme: Theme
    /// Whether the theme was named (else it follows the terminal's background).
    private let themeNamed: Bool
    private let themeFolders: [String]
    private var lastDrawn: Grid?
    /// The replica's first sync is not done: what the reader saw elsewhere is not known yet.
    private var awaitingFirstSync = false

    /// The reader's keys and colours.
    private let config: InboxConfig
    /// The row to land on once the tab is open (`--open ROW`).
    public var landOn: Int?

    /// `theme` is drawn first — when nil, the one for the terminal's background (`light` on a
    /// light one, else `tangerine`); `t` cycles through the themes in `themeFolders`. `config`'s
    /// keys stand for the functions they are bound to, and its colours go over every theme.
    public init(replica: Replica, engine: SyncEngine, theme: Theme?, themeFolders: [String], config: InboxConfig = InboxConfig()) {
        self.replica = replica
        self.engine = engine
        self.config = config
        self.theme = theme.map(config.dress) ?? .mono
        themeNamed = theme != nil
        self.themeFolders = themeFolders
        state = InboxState(now: InboxApp.now)
        state.ownHelp = config.helpLines
        state.browser = !(ProcessInfo.processInfo.environment["BROWSER"] ?? "").isEmpty
    }

    static var now: Int64 { WallClock.now }

    /// Opens the tab at once from the replica, syncs behind it, returns the exit status on quit.
    /// Throws `TerminalUnavailable` before drawing anything when this terminal cannot be drawn in.
    public func run() throws -> Int32 {
        let notice = try Terminal.start(theme: theme)
        defer { Terminal.stop() }
        if !themeNamed {
            // The terminal said what its background is (or the environment did): its theme.
            theme = config.dress((try? Theme.load(Terminal.background.defaultTheme, folders: themeFolders))
                ?? (try? Theme.load("tangerine", folders: themeFolders)) ?? .mono)
            Terminal.apply(theme)
        }
        let size = Terminal.size
        dispatch(.resized(width: size.width, height: size.height))
        dispatch(.syncChanged(syncLine()))
        // A replica that has not finished its first sync does not know yet what its reader saw
        // elsewhere (the server's seen marks come with the rows): nothing is New, nothing is
        // stamped, until it has — then the tab opens again on what the server says was seen.
        awaitingFirstSync = !replica.firstSyncDone
        dispatch(.opened(seenThrough: awaitingFirstSync ? Int.max : replica.seenThrough))
        land()
        if let notice { dispatch(.failed(notice)) }
        let flag = changed
        engine.onChange = { flag.set(); Terminal.wake() }
        engine.onProgress = { _, _ in flag.set(); Terminal.wake() }
        Thread { [engine] in engine.run(longPoll: 25) }.start()
        var lastTick = Date()
        while true {
            draw()
            for input in Terminal.next(timeout: 1.0) {
                switch input {
                case .key(let key):
                    // The reader's bindings first: a key stands for the function it is bound to
                    // (the filter's typing takes keys as they are).
                    let typing = state.filter?.typing == true && state.screens.isEmpty
                    if dispatch(.keyPressed(typing ? key : config.map(key))) { engine.stop(); return 0 }
                case let .resized(width, height):
                    dispatch(.resized(width: width, height: height))
                case .woken:
                    break
                }
            }
            for action in mailbox.takeAll() { dispatch(action) }
            for refusal in engine.takeRefusals() { dispatch(.refused(refusal)) }
            if changed.take() {
                dispatch(.syncChanged(syncLine()))
                if awaitingFirstSync, replica.firstSyncDone {
                    awaitingFirstSync = false
                    dispatch(.opened(seenThrough: replica.seenThrough))
                    land()
                } else {
                    dispatch(.replicaChanged(unseenArrived: !awaitingFirstSync && replica.newestRow > replica.seenThrough))
                }
            }
            if Date().timeIntervalSince(lastTick) >= 1 {
                // The clock: relative times and the sync line.
                lastTick = Date()
                dispatch(.ticked(now: InboxApp.now))
                dispatch(.syncChanged(syncLine()))
            }
        }
    }

    /// Opens the row asked for (`--open ROW`) once the replica holds it; says so when its first
    /// sync is done and it still does not.
    private func land() {
        guard let id = landOn else { return }
        if let row = try? replica.row(id) {
            landOn = nil
            dispatch(.openRow(row))
        } else if !awaitingFirstSync {
            landOn = nil
            dispatch(.failed("There is no row \(id) in your activity"))
        }
    }

    /// Draws when the screen would change, and only then: an idle inbox is idle.
    private func draw() {
        let grid = ActivityView.render(state)
        guard grid != lastDrawn else { return }
        Terminal.draw(grid)
        lastDrawn = grid
    }

    private func syncLine() -> SyncLine {
        let pending = (try? replica.pendingCount()) ?? 0
        let status: String
        var unreachable: String?
        switch engine.status {
        case .never: status = "syncing…"
        case .synced(let at):
            let ago = RelativeTime.text(Int64(at.timeIntervalSince1970 * 1000), now: WallClock.realNow)
            status = ago == "now" ? "synced just now" : "synced \(ago) ago"
        case .offline(_, let reason):
            status = "offline · \(pending) pending"
            unreachable = reason
        }
        return SyncLine(status: status, counts: replica.counts, progress: replica.initialSync, unreachable: unreachable)
    }

    /// Reduces an action and runs its effects; true when the app should quit.
    @discardableResult
    private func dispatch(_ action: Action) -> Bool {
        for effect in Inbox.reduce(&state, action) {
            if run(effect) { return true }
        }
        return false
    }

    /// Runs one effect; what it learns comes back as actions. True for quit.
    private func run(_ effect: Effect) -> Bool {
        switch effect {
        case .quit: return true
        case .copy(let text):
            Terminal.copyToClipboard(text)
        case .openLink(let url):
            if let browser = ProcessInfo.processInfo.environment["BROWSER"], !browser.isEmpty {
                Terminal.launch([browser, url])
            }
        case let .loadList(request, newAbove, filter):
            dispatch(.listLoaded(InboxApp.page(request, newAbove: newAbove, filter: filter, replica: replica)))
        case .loadMembers(let card):
            let rows = (try? replica.rows(inCard: card, limit: InboxApp.membersShown + 1)) ?? []
            let total = rows.count > InboxApp.membersShown ? ((try? replica.rowCount(inCard: card)) ?? rows.count) : rows.count
            dispatch(.membersLoaded(card: card, rows: Array(rows.prefix(InboxApp.membersShown)),
                                    more: max(0, total - InboxApp.membersShown)))
        case .markAllSeen:
            // Not before the first sync is done: the rows held are only part of what will be seen.
            guard !awaitingFirstSync else { return false }
            try? replica.markAllSeen(at: InboxApp.now)
            sendSoon()
        case .markAllRead:
            try? replica.markAllRead(at: InboxApp.now)
            sendSoon()
        case .markRead(let id):
            try? replica.markRead(id, at: InboxApp.now)
            sendSoon()
        case .syncNow:
            sendSoon()
        case .nextTheme:
            let names = Theme.available(in: themeFolders)
            let next = names.isEmpty ? nil : names[((names.firstIndex(of: theme.name) ?? -1) + 1) % names.count]
            if let next, let loaded = try? Theme.load(next, folders: themeFolders) {
                theme = config.dress(loaded)
                Terminal.apply(theme)
                lastDrawn = nil
                dispatch(.themeChanged(theme.name))
            }
        case .loadSettings:
            let replica = self.replica
            background { engine in
                let json = try engine.fetch("GET", "/v1/preferences")
                var settings: [String: Bool] = [:]
                for key in Preferences.switchNames { settings[key] = json[key]?.bool ?? true }
                var alerts: [AlertItem] = []
                for item in json["customFollow"]?.array ?? [] {
                    guard let target = try? AlertTarget(json: item), let mode = try? AlertMode(json: item) else { continue }
                    let name: String
                    switch target {
                    case .person(let id): name = (try? replica.person(id))?.name ?? id
                    case .journey(let id): name = (try? replica.journey(id))?.title ?? id
                    }
                    alerts.append(AlertItem(target: target, mode: mode, name: name))
                }
                try? replica.replaceAlerts(alerts.map { ($0.target, $0.mode) })
                return .settingsLoaded(settings, alerts: alerts)
            }
        case .setPreference(let change):
            try? replica.enqueue(.preferences([change]))
            sendSoon()
        case let .setAlert(target, mode):
            try? replica.enqueue(.alert(target, mode))
            sendSoon()
        case .act(let action):
            try? replica.enqueue(action)
            sendSoon()
        case .loadDestination(let request):
            load(request)
        }
        return false
    }

    /// Rows of an expanded card shown at most; the rest are counted.
    static let membersShown = 200

    /// Cards (or, with a filter, rows as cards) for the part of the list asked for.
    public static func page(_ request: ListRequest, newAbove: Int, filter: RowFilter?, replica: Replica) -> ListPage {
        let limit = ListWindow.page
        var cards: [ListCard]
        if let filter {
            let before: Int?
            switch request {
            case .older(let id): before = id
            case .top, .bottom, .newer: before = nil
            }
            let rows = (try? replica.rows(matching: filter, before: before, limit: limit)) ?? []
            cards = rows.map { ListCard(single: $0, newAbove: newAbove) }
            var page = ListPage(request: request == .bottom ? .top : request, cards: cards, reachedEnd: rows.count < limit)
            page.answered = answered(cards, replica: replica)
            return page
        }
        switch request {
        case .top:
            cards = (try? replica.cards(limit: limit, newAbove: newAbove)) ?? []
        case .older(let before):
            cards = (try? replica.cards(before: before, limit: limit, newAbove: newAbove)) ?? []
        case .newer(let after):
            cards = ((try? replica.cards(after: after, limit: limit, newAbove: newAbove)) ?? []).reversed()
        case .bottom:
            cards = ((try? replica.cards(after: 0, limit: limit, newAbove: newAbove)) ?? []).reversed()
        }
        var page = ListPage(request: request, cards: cards, reachedEnd: cards.count < limit)
        page.answered = answered(cards, replica: replica)
        return page
    }

    /// Of the cards' people who asked to follow or followed, those already answered or followed
    /// back (as the replica knows them): their rows offer nothing more.
    static func answered(_ cards: [ListCard], replica: Replica) -> Set<String> {
        var answered = Set<String>()
        for card in cards {
            let row = card.newest
            guard row.kind == .followRequest || row.kind == .newFollower, let actor = row.actor,
                  let person = try? replica.person(actor) else { continue }
            let r = person.relationship
            if row.kind == .followRequest ? !r.requestedYou : (r.following || r.requested) { answered.insert(actor) }
        }
        return answered
    }

    /// Opens a destination from the replica at once, then asks the server for a live copy.
    private func load(_ request: DestinationRequest) {
        let replica = self.replica
        if case .push(let row) = request {
            let others = (try? replica.rows(inThread: row.thread, limit: 4)) ?? []
            background { engine in
                do {
                    let apns = try engine.fetch("GET", "/v1/rows/\(row.id)/push", query: ["platform": "apns"])
                    let fcm = try engine.fetch("GET", "/v1/rows/\(row.id)/push", query: ["platform": "fcm"])
                    let stacked = others.filter { $0.id != row.id && $0.push == .sent && !$0.deleted }.prefix(3).compactMap {
                        try? engine.fetch("GET", "/v1/rows/\($0.id)/push", query: ["platform": "apns"])
                    }
                    return .destinationLoaded(DestinationLoader.push(apns: apns, fcm: fcm, stacked: stacked))
                } catch let error as SyncError where error.status == 410 || error.status == 404 {
                    // The rules withhold it now, or its content is gone: said on the screen.
                    return .destinationLoaded(.push(.unavailable(error.message)))
                } catch is Unreachable {
                    return .destinationLoaded(.push(.unavailable("The push preview is built by the server, which cannot be reached now.")))
                }
            }
            return
        }
        let offline = DestinationLoader.load(request, replica: replica)
        dispatch(.destinationLoaded(offline))
        let path: String
        switch offline {
        case .step(let page): path = "/v1/steps/\(InboxApp.escaped(page.step.id))"
        case .journey(let page): path = "/v1/journeys/\(InboxApp.escaped(page.journey.id))"
        case .interactions(let page): path = "/v1/steps/\(InboxApp.escaped(page.step.id))/interactions"
        default: return
        }
        background { engine in
            do {
                let json = try engine.fetch("GET", path)
                switch offline {
                case .step(let page):
                    return DestinationLoader.liveStep(json, like: page, replica: replica).map(Action.destinationRefreshed)
                case .journey(let page):
                    return DestinationLoader.liveJourney(json, like: page, replica: replica).map(Action.destinationRefreshed)
                case .interactions(let page):
                    return DestinationLoader.liveInteractions(json, like: page).map(Action.destinationRefreshed)
                default: return nil
                }
            } catch let error as SyncError where error.status == 410 || error.status == 404 {
                return .destinationRefreshed(DestinationLoader.tap(.init(gone: request), replica: replica))
            } catch is Unreachable {
                return nil  // offline: the replica's copy stands
            }
        }
    }

    static func escaped(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? id
    }

    /// Runs `work` off the terminal thread; its action (or its failure) comes back through the
    /// mailbox, and the loop is woken for it.
    private func background(_ work: @escaping @Sendable (SyncEngine) throws -> Action?) {
        let mailbox = self.mailbox
        Thread { [engine] in
            do {
                if let action = try work(engine) { mailbox.post(action) }
            } catch is Unreachable {
                mailbox.post(.failed("Offline: that needs the server"))
            } catch {
                mailbox.post(.failed("\(error)"))
            }
            Terminal.wake()
        }.start()
    }

    /// Sends queued stamps now, beside the background long-poll.
    private func sendSoon() {
        let flag = changed
        Thread { [engine] in
            _ = try? engine.sync()
            flag.set()
            Terminal.wake()
        }.start()
    }
}

private extension ActivityRow {
    /// The row a gone destination falls back from.
    init(gone request: DestinationRequest) {
        switch request {
        case .tap(let row), .push(let row):
            self = row
            self.deleted = true
        case .interactions(let step):
            self.init(id: 0, event: "", recipient: "", kind: .heart, actor: nil, title: "", body: "", media: Media(),
                      tap: .interactions(step), thread: "", push: .sent, createdAt: 0, version: 0, deleted: true)
        }
    }
}

/// Actions from background threads, dispatched by the terminal loop.
final class Mailbox: @unchecked Sendable {
    private let lock = NSLock()
    private var actions: [Action] = []
    func post(_ action: Action) { lock.lock(); actions.append(action); lock.unlock() }
    func takeAll() -> [Action] { lock.lock(); defer { actions = []; lock.unlock() }; return actions }
}

/// Set from the sync threads, taken by the terminal loop.
final class ChangeFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    func take() -> Bool { lock.lock(); defer { value = false; lock.unlock() }; return value }
}
