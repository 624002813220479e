import Synchronization
import Foundation
import Notifications
import Replica
import Wire

/// What the inbox asks of the place it is drawn in, beside the replica and the server: the
/// terminal, or nothing at all (a test, `stepo qa walk`).
public protocol InboxHost: AnyObject {
    /// Put `text` on the clipboard (the terminal's OSC 52).
    func copy(_ text: String)
    /// Open `url` in the reader's browser.
    func open(_ url: String)
    /// Draw the next theme; its name, or nil when there is no other.
    func nextTheme() -> String?
    /// Background work finished: its actions wait in the runner (see `poll`).
    func wake()
}

/// A host that draws nowhere: it remembers what was copied and opened.
public final class HeadlessHost: InboxHost, @unchecked Sendable {  // for tests and qa walk: only the runner's thread calls it
    public private(set) var copied: [String] = []
    public private(set) var opened: [String] = []
    public init() {}
    public func copy(_ text: String) { copied.append(text) }
    public func open(_ url: String) { opened.append(url) }
    public func nextTheme() -> String? { nil }
    public func wake() {}
}

/// The inbox without its terminal: the state, the reducer, and the effects run against the
/// replica and the server. Actions are queued and reduced one at a time, in order: an effect
/// that learns something sends an action, which waits its turn (never reduced inside
/// another's effects). Work that needs the server runs off this thread; what it learns comes
/// back through `poll()`.
public final class InboxRunner {
    public private(set) var state: InboxState
    public let replica: Replica
    public let engine: SyncEngine
    private weak var host: InboxHost?
    private var queue: [Action] = []
    private var draining = false
    private let mailbox = Mailbox()
    private let changed = ChangeFlag()
    /// Background work not finished yet (see `settle`).
    private let inFlight = Counter()
    /// The replica's first sync is not done: what the reader saw elsewhere is not known yet.
    private var awaitingFirstSync = false
    /// The row to land on once the tab is open (`--open ROW`).
    public var landOn: Int?
    /// Whether seen and read stamps are made (a walk that only reads turns them off).
    public var stamping = true
    /// Whether a quit was asked for.
    public private(set) var quitting = false
    /// Seen and read stamps waiting for the screen that shows them to be drawn (see `drawn`).
    private var stamps: [() -> Void] = []
    /// Reads of the list held while several actions are reduced at once (`send(contentsOf:)`).
    private var coalescing = false
    private var coalesced: [Effect] = []
    /// How many times the list was read from the replica (for tests of the coalescing).
    private(set) var listReads = 0

    public init(replica: Replica, engine: SyncEngine, host: InboxHost, now: Int64 = WallClock.now) {
        self.replica = replica
        self.engine = engine
        self.host = host
        state = InboxState(now: now)
    }

    /// Sets part of the state before the tab opens (size, the reader's own help lines).
    public func configure(_ change: (inout InboxState) -> Void) { change(&state) }

    /// Opens the tab at once from the replica. A replica that has not finished its first sync
    /// does not know yet what its reader saw elsewhere (the server's seen marks come with the
    /// rows): nothing is New, nothing is stamped, until it has — then the tab opens again on
    /// what the server says was seen (see `poll`).
    public func open() {
        send(.syncChanged(syncLine()))
        do {
            awaitingFirstSync = !(try replica.firstSyncDone)
            // A row to land on opens first: the list then waits under it, and is not seen.
            land()
            send(.opened(seenThrough: awaitingFirstSync ? Int.max : try replica.seenThrough))
        } catch {
            // Nothing can be known New, so nothing is marked or stamped; the reason is shown.
            send(.opened(seenThrough: Int.max))
            send(.failed(InboxRunner.unreadable(error)))
        }
        let flag = changed
        let host = HostBox(host)
        engine.onChange = { flag.set(); host.wake() }
        engine.onProgress = { _, _ in flag.set(); host.wake() }
    }

    /// Reduces several actions that came at once (a paste into the filter, keys typed ahead)
    /// and then runs their effects, where a read of the list's top stands for every one before
    /// it: a paste of 200 characters is one read of the replica, not 200. Stops at a quit.
    public func send(contentsOf actions: [Action]) {
        coalescing = true
        for action in actions {
            send(action)
            if quitting { break }
        }
        coalescing = false
        let waiting = coalesced
        coalesced = []
        for effect in waiting { run(effect) }
    }

    /// Reduces `action` and runs its effects; actions sent meanwhile wait their turn.
    public func send(_ action: Action) {
        queue.append(action)
        guard !draining else { return }
        draining = true
        defer { draining = false }
        while !queue.isEmpty {
            let next = queue.removeFirst()
            for effect in Inbox.reduce(&state, next) { run(effect) }
        }
    }

    /// Takes in what happened in the background: actions of finished work, refusals, a
    /// changed replica, the clock. Returns whether anything came.
    @discardableResult
    public func poll(now: Int64? = nil) -> Bool {
        var any = drawn()
        for action in mailbox.takeAll() { send(action); any = true }
        for refusal in engine.takeRefusals() { send(.refused(refusal)); any = true }
        if changed.take() {
            any = true
            send(.syncChanged(syncLine()))
            do {
                if awaitingFirstSync, try replica.firstSyncDone {
                    awaitingFirstSync = false
                    land()
                    send(.opened(seenThrough: try replica.seenThrough))
                } else {
                    send(.replicaChanged(unseenArrived: try !awaitingFirstSync && replica.newestRow > replica.seenThrough))
                }
            } catch {
                send(.failed(InboxRunner.unreadable(error)))
            }
        }
        if let now {
            send(.ticked(now: now))
            send(.syncChanged(syncLine()))
        }
        return any
    }

    /// Waits (up to `timeout` seconds) until no background work is left, taking in what it
    /// learned: for tests and the QA walk, which read the state as a person would after it.
    @discardableResult
    public func settle(timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            // Work finished before `idle` was read has posted all it learned: one more poll
            // takes it, and if that brings nothing (and so starts nothing), all is settled.
            let idle = inFlight.value == 0
            if !poll() {
                if idle { return true }
                Thread.sleep(forTimeInterval: 0.005)
            }
        } while Date() < deadline
        return false
    }

    /// The screen as it stands.
    public func render() -> Grid { ActivityView.render(state) }

    /// The screen was drawn: the stamps it earned are written now, after the frame, so a
    /// stamp's commit (a sync to disk, slow while the machine writes back a fresh replica)
    /// never holds up what the reader sees. `poll` calls it too, for hosts that draw nowhere.
    /// Returns whether any stamp was written (the counts in the state follow it).
    @discardableResult
    public func drawn() -> Bool {
        guard !stamps.isEmpty else { return false }
        while !stamps.isEmpty {
            let waiting = stamps
            stamps = []
            for stamp in waiting { stamp() }
        }
        send(.syncChanged(syncLine()))
        return true
    }

    /// Opens the row asked for (`--open ROW`) once the replica holds it; says so when its first
    /// sync is done and it still does not.
    private func land() {
        guard let id = landOn else { return }
        let row: ActivityRow?
        do {
            row = try replica.row(id)
        } catch {
            landOn = nil
            send(.failed(InboxRunner.unreadable(error)))
            return
        }
        if let row {
            landOn = nil
            send(.openRow(row))
        } else if !awaitingFirstSync {
            landOn = nil
            send(.failed("There is no row \(id) in your activity"))
        }
    }

    /// The header's words for where sync stands.
    public func syncLine() -> SyncLine {
        let pending: Int, counts: ServerCounts, progress: (received: Int, total: Int)?
        do {
            (pending, counts, progress) = (try replica.pendingCount(), try replica.counts, try replica.initialSync)
        } catch {
            return SyncLine(status: "local copy unreadable", counts: ServerCounts(unseen: 0, unread: 0, stale: true))
        }
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
        return SyncLine(status: status, counts: counts, progress: progress, unreachable: unreachable)
    }

    // MARK: Effects

    private func run(_ effect: Effect) {
        if coalescing, case .loadList(let request, _, _) = effect {
            // The list's top read again replaces the reads of it still waiting.
            if request == .top { coalesced.removeAll { if case .loadList(.top, _, _) = $0 { return true }; return false } }
            coalesced.append(effect)
            return
        }
        switch effect {
        case .quit: quitting = true
        case .copy(let text): host?.copy(text)
        case .openLink(let url): host?.open(url)
        case let .loadList(request, newAbove, filter):
            listReads += 1
            do {
                send(.listLoaded(try InboxRunner.page(request, newAbove: newAbove, filter: filter, replica: replica)))
            } catch {
                send(.failed(InboxRunner.unreadable(error)))
            }
            // The list's length, for the position beside it: counted once the frame is drawn
            // (an index walk, which the first row need not wait for).
            if filter == nil, request == .top || request == .bottom || { if case .around = request { return true }; return false }() {
                stamps.append { [unowned self] in
                    if let total = try? self.replica.cardCount(newAbove: newAbove) { self.send(.cardsCounted(total)) }
                }
            }
        case .loadMembers(let card):
            let shown = InboxRunner.membersShown
            do {
                let rows = try replica.rows(inCard: card, limit: shown + 1)
                let total = rows.count > shown ? try replica.rowCount(inCard: card) : rows.count
                send(.membersLoaded(card: card, rows: Array(rows.prefix(shown)), more: max(0, total - shown)))
            } catch {
                send(.failed(InboxRunner.unreadable(error)))
            }
        case .markAllSeen:
            // Not before the first sync is done: the rows held are only part of what will be seen.
            guard !awaitingFirstSync, stamping else { return }
            let at = WallClock.now
            stamp { try $0.replica.markAllSeen(at: at) }
        case .markAllRead:
            guard stamping else { return }
            let at = WallClock.now
            stamp { try $0.replica.markAllRead(at: at) }
        case .markRead(let id):
            guard stamping else { return }
            let at = WallClock.now
            stamp { try $0.replica.markRead(id, at: at) }
        case .markCardRead(let key):
            guard stamping else { return }
            let at = WallClock.now
            stamp { try $0.replica.markRead(card: key, at: at) }
        case .markMatchingRead(let filter):
            guard stamping else { return }
            let at = WallClock.now
            stamp { try $0.replica.markRead(matching: filter, at: at) }
        case .countUnread(let filter):
            do {
                send(.unreadCounted(try replica.unreadCount(matching: filter), filter: filter))
            } catch {
                send(.failed(InboxRunner.unreadable(error)))
            }
        case .syncNow:
            sendSoon()
        case .nextTheme:
            if let name = host?.nextTheme() { send(.themeChanged(name)) }
        case .loadSettings:
            let replica = self.replica
            background { engine in
                let document = try engine.preferences()
                let alerts = document.alerts.map { alert -> AlertItem in
                    let name: String
                    switch alert.target {
                    case .person(let id): name = (try? replica.person(id))?.name ?? id
                    case .journey(let id): name = (try? replica.journey(id))?.title ?? id
                    }
                    return AlertItem(target: alert.target, mode: alert.mode, name: name)
                }
                try replica.replaceAlerts(alerts.map { ($0.target, $0.mode) })
                return .settingsLoaded(document.switches, alerts: alerts)
            }
        case .loadStats:
            background { engine in
                do {
                    return .statsLoaded(.budget(try engine.stats()))
                } catch let error as SyncError where error.status == 403 || error.status == 401 {
                    return .statsLoaded(.unavailable("The trust budget is for an admin: this session's token is a user's. "
                                                     + "Run stepo stats on the store, or sign in with an admin token."))
                } catch is Unreachable {
                    return .statsLoaded(.unavailable("Offline: the trust budget needs the server."))
                }
            }
        case .setPreference(let change):
            keep(.preferences([change]))
        case .setQuietHours(let change):
            keep(.preferences([], quietHours: change))
        case let .setAlert(target, mode):
            keep(.alert(target, mode))
        case .act(let action):
            keep(action)
        case .loadDestination(let request):
            load(request)
        }
    }

    /// A stamp, made once the frame that shows it is drawn (see `drawn`), with the time it
    /// was earned; then the server is told soon.
    private func stamp(_ write: @escaping (InboxRunner) throws -> Void) {
        stamps.append { [unowned self] in
            do {
                try write(self)
            } catch {
                send(.failed("Not marked: " + InboxRunner.unwritable(error)))
            }
            sendSoon()
        }
    }

    /// Queues what the reader did for the server; a replica that cannot keep it says so
    /// (the act is not made, and the reader knows it).
    private func keep(_ action: Mutation.Action) {
        do {
            try replica.enqueue(action)
        } catch {
            send(.failed("Not saved: " + InboxRunner.unwritable(error)))
        }
        sendSoon()
    }

    /// What the footer says when the replica cannot be read, or written.
    static func unreadable(_ error: Error) -> String {
        "Your activity cannot be read from its local copy: \(error)"
    }

    static func unwritable(_ error: Error) -> String {
        "the local copy of your activity cannot be written (\(error))"
    }

    /// Rows of an expanded card shown at most; the rest are counted.
    public static let membersShown = 200

    /// Cards (or, with a filter, rows as cards) for the part of the list asked for.
    public static func page(_ request: ListRequest, newAbove: Int, filter: RowFilter?, replica: Replica) throws -> ListPage {
        var page = try cardsPage(request, newAbove: newAbove, filter: filter, replica: replica)
        if case .top = page.request { page.unreadByCategory = try replica.unreadCounts(upTo: InboxState.unreadCounted + 1) }
        return page
    }

    private static func cardsPage(_ request: ListRequest, newAbove: Int, filter: RowFilter?, replica: Replica) throws -> ListPage {
        let limit = ListWindow.page
        var cards: [ListCard]
        if case .around(let id) = request {
            // The card holding the row, and the cards below it; from the top when it is near.
            guard let (key, position) = try replica.card(holding: id, newAbove: newAbove) else {
                return try cardsPage(.top, newAbove: newAbove, filter: filter, replica: replica)
            }
            // The card's line: a row inside a collapsed card is not a line of its own.
            let select = "card:" + key
            var page: ListPage
            if try replica.cardsAbove(position, newAbove: newAbove, limit: limit / 2) < limit / 2 {
                page = try cardsPage(.top, newAbove: newAbove, filter: nil, replica: replica)
            } else {
                cards = try replica.cards(before: position + 1, limit: limit, newAbove: newAbove)
                page = ListPage(request: request, cards: cards, reachedEnd: cards.count < limit)
                page.answered = try answered(cards, replica: replica)
                page.offset = try replica.cardsAbove(position, newAbove: newAbove, limit: Int.max)
            }
            page.select = select
            return page
        }
        if let filter {
            let before: Int?
            switch request {
            case .older(let id): before = id
            case .top, .bottom, .newer, .around: before = nil
            }
            let rows = try replica.rows(matching: filter, before: before, limit: limit)
            cards = rows.map { ListCard(single: $0, newAbove: newAbove) }
            var page = ListPage(request: request == .bottom ? .top : request, cards: cards, reachedEnd: rows.count < limit)
            page.answered = try answered(cards, replica: replica)
            return page
        }
        switch request {
        case .top:
            cards = try replica.cards(limit: limit, newAbove: newAbove)
        case .older(let before):
            cards = try replica.cards(before: before, limit: limit, newAbove: newAbove)
        case .newer(let after):
            cards = try replica.cards(after: after, limit: limit, newAbove: newAbove).reversed()
        case .bottom:
            cards = try replica.cards(after: 0, limit: limit, newAbove: newAbove).reversed()
        case .around:
            cards = []
        }
        var page = ListPage(request: request, cards: cards, reachedEnd: cards.count < limit)
        page.answered = try answered(cards, replica: replica)
        return page
    }

    /// Of the cards' people who asked to follow or followed, those already answered or followed
    /// back (as the replica knows them): their rows offer nothing more.
    static func answered(_ cards: [ListCard], replica: Replica) throws -> Set<String> {
        var answered = Set<String>()
        for card in cards {
            let row = card.newest
            guard row.kind == .followRequest || row.kind == .newFollower, let actor = row.actor,
                  let person = try replica.person(actor) else { continue }
            let r = person.relationship
            if row.kind == .followRequest ? !r.requestedYou : (r.following || r.requested) { answered.insert(actor) }
        }
        return answered
    }

    /// Opens a destination from the replica at once, then asks the server for a live copy.
    private func load(_ request: DestinationRequest) {
        let replica = self.replica
        if case .push(let row) = request {
            // Struck through here: its content is gone, which the replica knows without the server.
            if row.deleted {
                send(.destinationLoaded(.push(.unavailable("Its content was deleted, so no push goes out for it.")), for: request))
                return
            }
            background { engine in
                do {
                    let others = try replica.rows(inThread: row.thread, limit: 4)
                    guard case .found(let apns) = try engine.pushPreview(row: row.id, platform: .apns),
                          case .found(let fcm) = try engine.pushPreview(row: row.id, platform: .fcm) else {
                        // The rules withhold it now, or its content is gone: said on the screen.
                        let why = try engine.pushPreview(row: row.id, platform: .apns)
                        if case .gone(let reason) = why { return .destinationLoaded(.push(.unavailable(reason)), for: request) }
                        return .destinationLoaded(.push(.unavailable("The server has no push for this row now.")), for: request)
                    }
                    let stacked = others.filter { $0.id != row.id && $0.push == .sent && !$0.deleted }.prefix(3).compactMap {
                        (try? engine.pushPreview(row: $0.id, platform: .apns))?.value
                    }
                    return .destinationLoaded(.push(PushPage(apns: apns, fcm: fcm, stacked: stacked)), for: request)
                } catch is Unreachable {
                    return .destinationLoaded(.push(.unavailable("The push preview is built by the server, which cannot be reached now.")), for: request)
                }
            }
            return
        }
        let offline: Destination
        do {
            offline = try DestinationLoader.load(request, replica: replica)
        } catch {
            send(.destinationFailed("This could not be opened. " + InboxRunner.unreadable(error), for: request))
            return
        }
        send(.destinationLoaded(offline, for: request))
        let gone = { @Sendable () throws -> Action in .destinationRefreshed(try DestinationLoader.tap(.init(gone: request), replica: replica), for: request) }
        switch offline {
        case .step(let page):
            background { engine in
                switch try engine.step(page.step.id) {
                case .found(let detail): return .destinationRefreshed(DestinationLoader.liveStep(detail, like: page, replica: replica), for: request)
                case .gone: return try gone()
                }
            }
        case .journey(let page):
            background { engine in
                switch try engine.journey(page.journey.id) {
                case .found(let detail): return .destinationRefreshed(try DestinationLoader.liveJourney(detail, like: page, replica: replica), for: request)
                case .gone: return try gone()
                }
            }
        case .profile(let page) where page.person == nil:
            // Not held here: not synced yet, or out of the reader's sight (a block, a ban). The
            // server says which.
            background { engine in
                switch try engine.person(page.id) {
                case .found(let detail):
                    var live = page
                    live.person = detail.user
                    return .destinationRefreshed(.profile(live), for: request)
                case .gone: return .destinationRefreshed(try DestinationLoader.gone(actor: nil, replica: replica), for: request)
                }
            }
        case .interactions(let page):
            background { engine in
                switch try engine.interactions(onStep: page.step.id) {
                case .found(let list): return .destinationRefreshed(DestinationLoader.liveInteractions(list, like: page), for: request)
                case .gone: return try gone()
                }
            }
        case .profile, .link, .push, .gone:
            return
        }
    }

    /// Runs `work` off this thread; its action (or its failure) comes back through `poll`,
    /// and the host is woken for it. Offline, the replica's copy stands and the footer says so.
    private func background(_ work: @escaping @Sendable (SyncEngine) throws -> Action?) {
        let mailbox = self.mailbox
        let host = HostBox(host)
        let inFlight = self.inFlight
        inFlight.add(1)
        Thread { [engine] in
            do {
                if let action = try work(engine) { mailbox.post(action) }
            } catch is Unreachable {
                mailbox.post(.failed("Offline: that needs the server"))
            } catch {
                mailbox.post(.failed("\(error)"))
            }
            inFlight.add(-1)
            host.wake()
        }.start()
    }

    /// Sends queued stamps now, beside the background long-poll.
    private func sendSoon() {
        let flag = changed
        let host = HostBox(host)
        let inFlight = self.inFlight
        inFlight.add(1)
        Thread { [engine] in
            _ = try? engine.sync()
            flag.set()
            inFlight.add(-1)
            host.wake()
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

/// The host, held weakly, handed to background threads.
private final class HostBox: @unchecked Sendable {  // holds the host weakly; a host's wake() may be called from any thread
    weak var host: InboxHost?
    init(_ host: InboxHost?) { self.host = host }
    func wake() { host?.wake() }
}

/// Actions from background threads, taken by `poll`.
final class Mailbox: Sendable {
    private let actions = Mutex<[Action]>([])
    func post(_ action: Action) { actions.withLock { $0.append(action) } }
    func takeAll() -> [Action] { actions.withLock { taken in defer { taken = [] }; return taken } }
}

/// Set from the sync threads, taken by `poll`.
final class ChangeFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    func take() -> Bool { value.withLock { set in defer { set = false }; return set } }
}

/// A count shared with background threads.
final class Counter: Sendable {
    private let count = Mutex(0)
    func add(_ n: Int) { count.withLock { $0 += n } }
    var value: Int { count.withLock { $0 } }
}
