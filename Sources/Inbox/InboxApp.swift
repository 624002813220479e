import Foundation
import Notifications
import Replica

/// Runs the Activity tab in the terminal: reads only the replica, keeps it synced in the
/// background, and runs the reducer's effects.
public final class InboxApp {
    private let replica: Replica
    private let engine: SyncEngine
    private var state: InboxState
    private let changed = ChangeFlag()
    private let mailbox = Mailbox()
    private var theme: Theme
    private let themeFolders: [String]

    /// `theme` is drawn first; `t` cycles through the themes in `themeFolders`.
    public init(replica: Replica, engine: SyncEngine, theme: Theme, themeFolders: [String]) {
        self.replica = replica
        self.engine = engine
        self.theme = theme
        self.themeFolders = themeFolders
        state = InboxState(now: InboxApp.now)
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// The newest rows the tab holds at first, and how many more each time the selection
    /// nears the end: never every row of a large replica at once.
    public static let rowWindow = 2000
    private var window = InboxApp.rowWindow

    /// Opens the tab at once from the replica, syncs behind it, returns the exit status on quit.
    public func run() -> Int32 {
        Terminal.start(theme: theme)
        defer { Terminal.stop() }
        let size = Terminal.size
        dispatch(.resized(width: size.width, height: size.height))
        reload()
        let flag = changed
        engine.onChange = { flag.set() }
        Thread { [engine] in engine.run(longPoll: 25) }.start()
        var lastRefresh = Date()
        while true {
            Terminal.draw(ActivityView.render(state))
            switch Terminal.read() {
            case .key(let key):
                if dispatch(.keyPressed(key)) { engine.stop(); return 0 }
            case let .resized(width, height):
                dispatch(.resized(width: width, height: height))
            case .none:
                break
            }
            for action in mailbox.takeAll() { dispatch(action) }
            if changed.take() {
                reload()  // sync changed the replica: read the rows again
            } else if Date().timeIntervalSince(lastRefresh) > 1 {
                // Only the clock moved: refresh relative times and the sync line, not the rows.
                lastRefresh = Date()
                state.now = InboxApp.now
                dispatch(.syncChanged(status: statusText(), counts: replica.counts))
            }
        }
    }

    /// Reads the replica again (new rows, stamps, sync status).
    private func reload() {
        state.now = InboxApp.now
        if let rows = try? replica.rows(limit: window) {
            state.rowWindowFull = rows.count == window
            dispatch(.rowsLoaded(rows))
        }
        dispatch(.syncChanged(status: statusText(), counts: replica.counts))
    }

    private func statusText() -> String {
        let pending = (try? replica.pendingCount()) ?? 0
        switch engine.status {
        case .never: return "syncing…"
        case .synced(let at):
            let ago = RelativeTime.text(Int64(at.timeIntervalSince1970 * 1000), now: InboxApp.now)
            return ago == "now" ? "synced just now" : "synced \(ago) ago"
        case .offline: return "offline · \(pending) pending"
        }
    }

    /// Reduces an action and runs its effects; true when the app should quit.
    @discardableResult
    private func dispatch(_ action: Action) -> Bool {
        for effect in Inbox.reduce(&state, action) {
            switch effect {
            case .quit: return true
            case .markAllSeen:
                try? replica.markAllSeen(at: InboxApp.now)
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
                    theme = loaded
                    Terminal.apply(theme)
                    state.notice = "Theme: \(theme.name)"
                }
            case .loadMore:
                window += InboxApp.rowWindow
                reload()
            case .loadSettings:
                background { engine in
                    let json = try engine.fetch("GET", "/v1/preferences")
                    var settings: [String: Bool] = [:]
                    for key in Preferences.switchNames { settings[key] = json[key]?.bool ?? true }
                    return .settingsLoaded(settings)
                }
            case let .setPreference(key, value):
                try? replica.enqueue([("type", "preferences"), (key, .bool(value))])
                sendSoon()
            case .loadPush(let id):
                let width = state.width
                let thread = state.row(id)?.json["thread"]?.string
                let others = state.rows.filter {
                    $0.id != id && !$0.deleted && $0.json["thread"]?.string == thread && $0.json["push"]?.string == "sent"
                }.sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }
                background { engine in
                    let apns = try engine.fetch("GET", "/v1/rows/\(id)/push", query: ["platform": "apns"])
                    let fcm = try engine.fetch("GET", "/v1/rows/\(id)/push", query: ["platform": "fcm"])
                    return .destinationLoaded(PushPreview.destination(apns: apns, fcm: fcm, width: width, thread: others))
                }
            case let .act(type, user):
                try? replica.enqueue([("type", .string(type)), ("user", .string(user))])
                sendSoon()
            case .loadDestination(let id):
                if let row = state.row(id) {
                    dispatch(.destinationLoaded(Destination.build(for: row, replica: replica, now: InboxApp.now)))
                }
            case .loadInteractions(let step):
                dispatch(.destinationLoaded(Destination.interactions(step, replica: replica, now: InboxApp.now)))
            }
        }
        return false
    }

    /// Runs `work` off the terminal thread; its action (or its failure) comes back through the
    /// mailbox.
    private func background(_ work: @escaping @Sendable (SyncEngine) throws -> Action) {
        let mailbox = self.mailbox
        Thread { [engine] in
            do {
                mailbox.post(try work(engine))
            } catch is Unreachable {
                mailbox.post(.failed("Offline: that needs the server"))
            } catch {
                mailbox.post(.failed("\(error)"))
            }
        }.start()
    }

    /// Sends queued stamps now, beside the background long-poll.
    private func sendSoon() {
        let flag = changed
        Thread { [engine] in
            _ = try? engine.sync()
            flag.set()
        }.start()
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
