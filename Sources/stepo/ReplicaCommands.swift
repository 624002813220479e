import CLI
import API
import Backend
import Foundation
import Inbox
import Notifications
import Replica
import Wire

/// The client side: a replica and the transport that keeps it in sync — the embedded default
/// (the default store, in-process) or `--server URL --token T`.
struct Client {
    let replica: Replica
    let engine: SyncEngine
    let user: String

    /// `replicaFolder`: where the replica lives instead of the replicas' folder (a scratch one).
    init(_ arguments: Arguments, replicaFolder: String? = nil) throws {
        if let server = arguments["server"] {
            // One server, one replica: "http://host:8080/" and "http://host:8080" are the same
            // address, so the slashes that end it are not part of its name.
            var trimmed = Substring(server)
            while trimmed.hasSuffix("/"), trimmed.count > 1 { trimmed = trimmed.dropLast() }
            // Nor does the case of its scheme and host ("HTTP://Host" is "http://host").
            guard var parts = URLComponents(string: String(trimmed)), ["http", "https"].contains(parts.scheme?.lowercased()),
                  parts.host?.isEmpty == false else {
                throw UsageError(description: "--server must be an http(s) URL, not \(Preview.visible(server))")
            }
            if let scheme = parts.scheme, scheme != scheme.lowercased() { parts.scheme = scheme.lowercased() }
            if let host = parts.host, host != host.lowercased() { parts.host = host.lowercased() }
            guard let url = parts.url else {
                throw UsageError(description: "--server must be an http(s) URL, not \(Preview.visible(server))")
            }
            // The token: --token, or STEPO_TOKEN (which the process list does not show).
            guard let token = arguments["token"] ?? ProcessInfo.processInfo.environment["STEPO_TOKEN"] else {
                throw UsageError(description: "--server needs --token T (or STEPO_TOKEN in the environment)")
            }
            guard !token.isEmpty, !token.contains(where: { $0.isWhitespace || $0.isNewline }) else {
                throw UsageError(description: "the token is empty or holds spaces")
            }
            let transport = HTTPTransport(baseURL: url, token: token)
            // The replica is named by the token (a stable fingerprint, not the secret), so it
            // opens offline too; the user's id is asked once and remembered in it.
            replica = try Replica(path: try Replica.defaultPath(server: url.absoluteString, token: token, in: replicaFolder))
            engine = SyncEngine(replica: replica, transport: transport)
            do {
                try Client.learnUser(replica, transport)
            } catch {
                replica.discardIfEmpty()  // a refused token keeps no replica
                throw error
            }
            user = try replica.user ?? "?"
        } else {
            guard arguments["token"] == nil else { throw UsageError(description: "--token goes with --server URL") }
            let store = try openStore(arguments)
            try SampleData.seedIfEmpty(store)
            user = arguments["user"] ?? SampleData.demoUser
            guard try store.user(user) != nil else { throw CommandError(description: "unknown user \(Preview.visible(user))") }
            // The replica belongs to this store (by its identity) and this user.
            replica = try Replica(path: try Replica.defaultPath(store: store.identity, user: user, in: replicaFolder))
            try replica.setUser(user)
            // A connection per concurrent call: the inbox long-polls and sends stamps at once.
            let storePath = store.path
            let transport = InProcessTransport(user: user) { Router(store: try Store(path: storePath)) }
            // Whoever opens the store file may read its trust budget (the Stats screen, S).
            transport.admin = true
            engine = SyncEngine(replica: replica, transport: transport)
        }
    }


    /// Asks the server whose token this is, once, and remembers it in the replica. Only a
    /// refusal of the token (401, 403) is an error: a server that cannot answer now (offline, a
    /// 503, a 429, an answer not understood) is asked again later.
    static func learnUser(_ replica: Replica, _ transport: HTTPTransport) throws {
        // Asked before anything is drawn: a server silent for three seconds is asked again later.
        guard try replica.user == nil,
              let (status, body) = try? transport.perform(method: "GET", path: "/v1/me", query: [:], body: nil, timeout: 3) else { return }
        if status == 401 || status == 403 {
            let message = (try? JSON.parse(body))?["error"]?["message"]?.string ?? "HTTP \(status)"
            throw CommandError(description: "the server refused the token: \(Preview.visible(message))")
        }
        if status == 200, let me = (try? JSON.parse(body))?["user"]?.string { try replica.setUser(me) }
    }

    /// "104 unseen · 104 unread", marked stale when it may be out of date.
    var countsLine: String {
        get throws {
            let counts = try replica.counts
            return "\(counts.unseen) unseen · \(counts.unread) unread" + (counts.stale ? " (stale)" : "")
        }
    }
}

let syncCommand = Command(
    name: "sync",
    summary: "Bring the local replica up to date with the server (or the embedded default).",
    usage: "stepo sync [--db FILE] [--user ID] [--server URL --token T] [--watch]",
    details: """
    Sends the queued mutations, then pulls every change after the replica's version. Without
    --server, the server is the default store in this process (seeded from sample-data on
    first run). --watch keeps syncing with long-polls and prints each change, until Ctrl-C.
    The replica lives in $XDG_STATE_HOME/stepo/replicas (~/.local/state/stepo/replicas).
    A first sync shows a progress bar when stderr is a terminal.
    """,
    options: ["db", "user", "server", "token"], flags: ["watch"]
) { arguments in
    let client = try Client(arguments)
    let bar = isatty(2) == 1 ? ProgressBar() : nil
    if let bar { client.engine.onProgress = { received, total in bar.show(received, of: total) } }
    // Watching, a server that is gone or cannot serve is waited for, never given up on.
    var backoff = Backoff()
    repeat {
        do {
            let applied = try client.engine.sync(wait: arguments.has("watch") ? 25 : 0)
            bar?.finish()
            backoff.reset()
            Output.line("synced \(Plural.count(applied, "row")) · version \(try client.replica.version) · \(try client.countsLine)")
            for note in client.engine.takeRefusals() { Output.error("stepo sync: \(note)") }
        } catch let error as Unreachable {
            bar?.interrupt()
            Output.line("offline · \(try client.replica.pendingCount()) pending · \(try client.countsLine) — \(error.description)")
            if !arguments.has("watch") {
                // Never reached, nothing held: no replica file is left for a wrong address.
                if arguments["server"] != nil { client.replica.discardIfEmpty() }
                Output.flush()
                return 1
            }
            let wait = backoff.next()
            Output.line(String(format: "retrying in %.1f s", wait))
            Output.flush()
            Thread.sleep(forTimeInterval: wait)
        } catch let error as SyncError where error.isRetryable || (arguments.has("watch") && error.status != 401 && error.status != 403) {
            bar?.interrupt()
            // Watching, only a refused token ends it: a server that cannot serve now, or
            // answers what it should not, is waited for.
            Output.line("server unavailable · \(try client.replica.pendingCount()) pending · \(try client.countsLine) — \(error.description)")
            if !arguments.has("watch") {
                if arguments["server"] != nil { client.replica.discardIfEmpty() }
                Output.flush()
                return 1
            }
            let wait = backoff.next(after: error.retryAfter)
            Output.line(String(format: "retrying in %.1f s", wait))
            Output.flush()
            Thread.sleep(forTimeInterval: wait)
        } catch {
            bar?.interrupt()
            // Not a stepo server, a refused token: nothing is left behind of a replica that
            // never held anything.
            if arguments["server"] != nil { client.replica.discardIfEmpty() }
            throw error
        }
        Output.flush()
    } while arguments.has("watch")
    return 0
}

let replicaActivity: @Sendable (Arguments) throws -> Int32 = { arguments in
    let client = try Client(arguments)
    let limit = try arguments.integer("limit") ?? 500
    if try client.replica.version == 0 {
        do {
            try client.engine.sync()
        } catch {
            // Shown from the replica as it stands (empty, never synced): said, not hidden.
            Output.error("stepo activity: cannot sync, showing the replica as it stands: \(error)")
            if arguments["server"] != nil, client.replica.discardIfEmpty() {
                Output.error("stepo activity: nothing was ever synced from \(Preview.visible(arguments["server"] ?? "")): no replica kept")
            }
        }
    }
    let rows = try client.replica.rows(limit: limit)
    if arguments.has("json") {
        let counts = try client.replica.counts
        Output.line(JSON.object([("user", .string(client.user)), ("version", .int(try client.replica.version)),
                                 ("counts", .object([("unseen", .int(counts.unseen)), ("unread", .int(counts.unread)),
                                                     ("stale", .bool(counts.stale))])),
                                 ("rows", .array(rows.map(\.json)))]).serialized)
        return 0
    }
    Output.line("Activity (replica) · @\(Preview.visible(client.user)) · \(try client.countsLine) · version \(try client.replica.version)")
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    for row in rows {
        Output.line(listingLine(seen: row.seenAt != nil, read: row.readAt != nil, at: row.createdAt, title: row.title,
                                body: row.body, deleted: row.deleted, id: row.id, kind: row.kind.rawValue, now: now))
    }
    return 0
}

let inboxCommand = Command(
    name: "inbox",
    summary: "Open the Activity tab in the terminal (what `stepo` does in a terminal).",
    usage: "stepo inbox [--db FILE] [--user ID] [--server URL --token T] [--theme NAME|PATH] [--config FILE] [--open ROW]",
    details: """
    Reads only the local replica and keeps it synced in the background. Themes: themes/*.theme
    (tangerine, light, high-contrast, mono); with none named, the inbox asks the terminal for
    its background and draws light or tangerine. NO_COLOR or a terminal without colour uses
    attributes only. A terminal ncurses does not know (or none) falls back to a known one, or
    to text. --open ROW lands on that row's destination, as Enter on it would.

    Keys and colours of your own go in $XDG_CONFIG_HOME/stepo/config (~/.config/stepo/config),
    or the file --config names, written as mutt's are:

      bind <Tab> next-unread     # a key (one character, or <Tab> <Space> <Enter> <Esc> <Up> …)
      bind x quit                #   and what it does
      color newRow default color22
      set theme high-contrast

    Functions: \(InboxConfig.functions.map(\.name).joined(separator: ", ")).
    A line that cannot be read stops the inbox with its file and line.

    Keys:

    """ + InboxState.helpLines.map { "  " + $0 }.joined(separator: "\n"),
    options: ["db", "user", "server", "token", "theme", "config", "open"], flags: []
) { arguments in
    // The reader's keys and colours: --config FILE, else $XDG_CONFIG_HOME/stepo/config.
    let config: InboxConfig
    do {
        config = try InboxConfig.load(arguments["config"] ?? InboxConfig.defaultPath(), required: arguments["config"] != nil)
    } catch let error as ThemeError {
        throw CommandError(description: "config: \(error.description)")
    }
    guard isatty(0) == 1, isatty(1) == 1 else {
        throw CommandError(description: "the inbox needs a terminal; try stepo activity --replica")
    }
    let folders = themeFolders()
    // A theme named (here, or in the config) is drawn; else the inbox picks one for the
    // terminal's background.
    let theme: Theme?
    do {
        theme = try (arguments["theme"] ?? config.theme).map { try Theme.load($0, folders: folders) }
    } catch let error as ThemeError {
        throw CommandError(description: "theme: \(error.description)")
    }
    let landOn = try arguments.integer("open")
    if let landOn, landOn <= 0 { throw UsageError(description: "--open takes a row id (a positive number)") }
    let client = try Client(arguments)
    Output.flush()
    do {
        let app = InboxApp(replica: client.replica, engine: client.engine, theme: theme, themeFolders: folders, config: config)
        app.landOn = landOn
        let status = try app.run()
        // A server never reached leaves no replica behind: nothing was synced or done.
        if arguments["server"] != nil { client.replica.discardIfEmpty() }
        return status
    } catch let error as TerminalUnavailable {
        // Never exit over TERM: say why, and show the activity as text.
        Output.error("stepo: \(error.description); showing the activity as text")
        return try replicaActivity(arguments)
    }
}

/// Where themes are found: $STEPO_THEMES, then `themes/` wherever the project's files are
/// (see `projectPaths`).
func themeFolders() -> [String] {
    let explicit = ProcessInfo.processInfo.environment["STEPO_THEMES"].map { [$0] } ?? []
    var seen = Set<String>()
    return (explicit + projectPaths("themes")).map { URL(fileURLWithPath: $0).standardized.path }
        .filter { FileManager.default.fileExists(atPath: $0) && seen.insert($0).inserted }
}

/// A progress bar on stderr, redrawn in place:
/// `[########------------]  37%  37,000 / 100,000 rows · 52,000 rows/s`.
final class ProgressBar: @unchecked Sendable {  // drawn by the one thread that syncs, then finished by it
    private var last = -1
    private var finished = false
    private var started: DispatchTime?
    private var total = 0

    func show(_ received: Int, of total: Int) {
        guard total > 0, !finished else { return }
        self.total = total
        let now = DispatchTime.now()
        let start = started ?? now
        started = start
        let percent = min(100, received * 100 / total)
        guard percent != last else { return }
        last = percent
        let width = 30
        let filled = percent * width / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        var line = "\r[\(bar)] \(String(format: "%3d", percent))%  \(ProgressBar.grouped(received)) / \(ProgressBar.grouped(total)) rows"
        // The rate since the first page (none until a second page has come).
        let seconds = Double(now.uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        if seconds > 0.05 { line += " · \(ProgressBar.grouped(Int(Double(received) / seconds))) rows/s" }
        line += "\u{1B}[K"  // whatever a longer line before left
        if received >= total {
            line += "\n"
            finished = true
        }
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// The sync is done: the bar drawn so far ends at 100% (the last page is not reported on
    /// its own: the replica no longer counts itself in a first sync by then).
    func finish() {
        guard started != nil, !finished else { return }
        show(total, of: total)
    }

    /// The sync stopped: the line drawn so far ends, so what is said next starts a line of its own.
    func interrupt() {
        guard started != nil, !finished else { return }
        FileHandle.standardError.write(Data("\n".utf8))
        started = nil
        last = -1
    }

    /// 1234567 as 1,234,567.
    static func grouped(_ number: Int) -> String {
        let digits = Array(String(number))
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return out
    }
}
