import CLI
import Backend
import Deliver
import Dispatch
import Foundation
import Notifications
import Server
import API

let serveCommand = Command(
    name: "serve",
    summary: "Serve the store's JSON API over HTTP (libmicrohttpd).",
    usage: "stepo serve [--db FILE | --database URL [--read-database URL]] [--bind 127.0.0.1] [--port 8080] [--threads 4] [--per-address 256] [--header-timeout 10] [--body-timeout 30] [--page-cache 16] [--keep-days N] [--quiet] [--deliver PROVIDER-OPTIONS]",
    details: """
    Logs one line per request (method, path, status, milliseconds) to stderr (--quiet: none).
    SIGINT or SIGTERM stops it cleanly. Endpoints and tokens: docs/api.md; `stepo token` makes
    a token.

    One address may hold --per-address connections (0: no cap, for a server behind a proxy);
    more are answered 429, and past twice as many closed at once. A connection has
    --header-timeout seconds to send a request's headers and --body-timeout for its body.
    The open-file limit is raised to its maximum at start.

    --page-cache MB keeps up to MB megabytes of written pages (GET /v1/activity), each served
    again as long as the store has not changed since it was written (16 unless told; 0: none).

    --read-database (with --database) names a streaming standby of that PostgreSQL server:
    pulls, counts and tap destinations are read there whenever it has replayed everything the
    primary had written when the read began, else from the primary (docs/scale-out.md).

    --keep-days N prunes rows older than N days (at least 2) at start and every hour after,
    on a connection of its own, as `stepo prune --keep-days N` does; without it the store keeps
    everything.

    --deliver runs the push worker beside the server, on a connection of its own, with the
    provider options of `stepo deliver` (--apns-url …, --fcm-url …, --ca, --batch, --streams).
    """,
    options: ["db", "database", "read-database", "bind", "port", "threads", "per-address", "header-timeout", "body-timeout",
              "page-cache", "apns-url", "apns-key", "apns-key-id", "apns-team", "apns-topic", "fcm-url", "fcm-credentials", "ca",
              "batch", "streams", "keep-days"],
    flags: ["quiet", "deliver"]
) { arguments in
    let path = try storeLocation(arguments)
    let port = try arguments.integer("port") ?? 8080
    let threads = try arguments.integer("threads") ?? 4
    guard (0...65535).contains(port) else { throw UsageError(description: "--port must be 0 to 65535") }
    guard (1...64).contains(threads) else { throw UsageError(description: "--threads must be 1 to 64") }
    var limits = ServerLimits()
    limits.perAddress = try arguments.integer("per-address") ?? limits.perAddress
    guard (0...100_000).contains(limits.perAddress) else { throw UsageError(description: "--per-address must be 0 to 100000") }
    limits.headerTimeout = try seconds(arguments, "header-timeout") ?? limits.headerTimeout
    limits.bodyTimeout = try seconds(arguments, "body-timeout") ?? limits.bodyTimeout
    let pageCache = try arguments.integer("page-cache") ?? 16
    guard (0...4096).contains(pageCache) else { throw UsageError(description: "--page-cache must be 0 to 4096 (megabytes)") }
    PageCache.shared.limit(to: pageCache << 20)
    let keepDays = try arguments.integer("keep-days")
    if keepDays != nil { _ = try pruneHorizon(arguments, now: 0) }  // the bounds of N, before the server starts
    var log: (@Sendable (String) -> Void)? = { line in Output.error(line) }
    if arguments.has("quiet") { log = nil }
    let readDatabase = arguments["read-database"]
    if let readDatabase {
        guard Store.isPostgresURL(path) else { throw UsageError(description: "--read-database needs --database: a standby follows a PostgreSQL primary") }
        guard Store.isPostgresURL(readDatabase) else {
            throw UsageError(description: "--read-database takes a PostgreSQL URL (postgresql://…), not \(Preview.visible(Store.redacted(readDatabase)))")
        }
        if let problem = Store.urlProblem(readDatabase) {
            throw UsageError(description: "--read-database \(Preview.visible(Store.redacted(readDatabase))): \(Preview.visible(Store.redacted(problem)))")
        }
        // Each time reads stop reaching the standby, or reach it again, the server says so; the
        // first read decides (a standby that cannot serve at start is said then, and the
        // server reads from the primary until it can).
        Router.reads.onChange = { line in Output.error("stepo serve: \(line)") }
    }
    let server: HTTPServer
    do {
        server = try HTTPServer(databasePath: path, readDatabase: readDatabase, address: arguments["bind"] ?? "127.0.0.1",
                                port: UInt16(port), threads: threads, limits: limits, log: log)
    } catch let error as ServerError {
        throw CommandError(description: error.description)
    }
    if arguments.has("deliver") {
        let providers = try deliveryProviders(arguments)
        guard !providers.isEmpty else { throw UsageError(description: "--deliver needs a provider: --apns-url …, --fcm-url …") }
        let worker = try deliveryWorker(try Store(location: path), providers, arguments, name: "serve-\(getpid())")
        let quiet = arguments.has("quiet")
        Thread {
            do {
                try deliverLoop(worker, once: false, label: quiet ? "" : "stepo serve: deliver")
            } catch {
                Output.error("stepo serve: the push worker stopped: \(error)")
            }
        }.start()
    }
    if let days = keepDays {
        let quiet = arguments.has("quiet")
        Thread {
            var pruner: Store?
            while true {
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                do {
                    let store = try pruner ?? Store(location: path)
                    if pruner == nil { try store.limitMemory(cacheKiB: 8_192) }
                    pruner = store
                    let report = try store.prune(before: now - Int64(days) * 86_400_000)
                    if !quiet && report.rows + report.suppressions > 0 {
                        Output.error("stepo serve: pruned \(Plural.count(report.rows, "row")) older than \(Timestamp.format(report.horizon))")
                    }
                } catch {
                    // The store is down or full: the next hour tries again, on a new connection;
                    // what a prune stopped midway left is sound (see `Store.prune`).
                    pruner = nil
                    Output.error("stepo serve: the prune stopped: \(Command.visible("\(error)"))")
                }
                Thread.sleep(forTimeInterval: 3_600)
            }
        }.start()
    }
    let cap = limits.perAddress == 0 ? "no cap" : String(limits.perAddress)
    let address = arguments["bind"] ?? "127.0.0.1"
    let reads = readDatabase.map { "; reads from the standby \(Store.redacted($0))" } ?? ""
    Output.error("stepo serve: listening on http://\(address):\(server.port) (store \(Store.redacted(path))\(reads); up to \(server.connectionLimit) connections, \(cap) per address)")
    let stop: @Sendable () -> Void = {
        server.stop()
        Output.error("stepo serve: stopped")
        exit(0)
    }
    for signalNumber in [SIGINT, SIGTERM] {
        signal(signalNumber, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
        source.setEventHandler { stop() }
        source.resume()
        signalSources.append(source)
    }
    dispatchMain()
}

/// A number of seconds an option gives (0 to an hour), or nil when it is not given.
func seconds(_ arguments: Arguments, _ name: String) throws -> Double? {
    guard let text = arguments[name] else { return nil }
    guard let value = Double(text), value > 0, value <= 3600 else {
        throw UsageError(description: "--\(name) must be a number of seconds above 0, at most 3600")
    }
    return value
}

/// Kept alive for the life of `stepo serve` (set once, on the main thread, before serving).
nonisolated(unsafe) var signalSources: [DispatchSourceSignal] = []

let tokenCommand = Command(
    name: "token",
    summary: "Create, list or revoke bearer tokens.",
    usage: "stepo token [--db FILE | --database URL] (--user ID | --admin) [--expires 30d|12h|TIME] [--label NAME]  |  --list [--user ID]  |  --revoke ID|TOKEN  |  --revoke-all --user ID",
    details: """
    Creates a token for a user (or an admin token, which may post events) and prints it: the
    store keeps only its SHA-256, so this is the one time it is shown. --expires makes it stop
    working after a duration (90m, 12h, 30d) or at an RFC 3339 time. --list shows tokens by id
    (the first 12 hex digits of the hash), never the secret; --revoke ID (8 digits or more) or
    --revoke TOKEN ends one, --revoke-all --user ID every token of a user. A banned or
    deactivated account's tokens are refused (403) whatever their state here.
    """,
    options: ["db", "database", "user", "expires", "label", "revoke"], flags: ["admin", "list", "revoke-all"]
) { arguments in
    let store = try openStore(arguments)
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    if arguments.has("list") {
        let user = try arguments["user"].map { _ in try requireUser(store, arguments) }
        for token in try store.tokens.list(of: user) {
            var state = token.revokedAt.map { "revoked \(Timestamp.format($0))" } ?? "active"
            if token.revokedAt == nil, let expires = token.expiresAt { state = expires <= now ? "expired" : "expires \(Timestamp.format(expires))" }
            Output.line([token.id, token.isAdmin ? "admin" : "user \(Preview.visible(token.user ?? "?"))",
                         "made \(Timestamp.format(token.createdAt))", state, token.label.map { "“\(Preview.visible($0))”" } ?? ""]
                .filter { !$0.isEmpty }.joined(separator: "  "))
        }
        return 0
    }
    if let target = arguments["revoke"] {
        let count = try store.tokens.revoke(target, at: now)
        guard count > 0 else { throw CommandError(description: "no active token matches \(Preview.visible(target)) (give 8 or more hex digits of its id, or the token)") }
        Output.line("revoked \(count) token\(count == 1 ? "" : "s")")
        return 0
    }
    if arguments.has("revoke-all") {
        let count = try store.tokens.revokeAll(of: try requireUser(store, arguments), at: now)
        Output.line("revoked \(count) token\(count == 1 ? "" : "s")")
        return 0
    }
    let expires = try arguments["expires"].map { try expiry($0, now: now) }
    let label = arguments["label"]
    if let label, label.count > 100 || label.unicodeScalars.contains(where: Preview.isControl) {
        throw UsageError(description: "--label is at most 100 characters without controls")
    }
    if arguments.has("admin") {
        guard arguments["user"] == nil else { throw UsageError(description: "give --user ID or --admin, not both") }
        Output.line(try store.tokens.create(for: nil, admin: true, at: now, expiresAt: expires, label: label))
    } else {
        Output.line(try store.tokens.create(for: try requireUser(store, arguments), admin: false, at: now, expiresAt: expires, label: label))
    }
    return 0
}

/// When a token made now should stop working: `90m`, `12h`, `30d`, or an RFC 3339 time.
func expiry(_ text: String, now: Int64) throws -> Int64 {
    if let at = Timestamp.parse(text) {
        guard at > now else { throw UsageError(description: "--expires \(text) is already past") }
        return at
    }
    let units: [Character: Int64] = ["m": 60_000, "h": Timestamp.hour, "d": Timestamp.day]
    guard let unit = text.last.flatMap({ units[$0] }), let count = Int64(text.dropLast()), count > 0, count <= 3650 * Timestamp.day / unit else {
        throw UsageError(description: "--expires takes a duration (90m, 12h, 30d, at most 10 years) or an RFC 3339 time, not \(Preview.visible(text))")
    }
    return now + count * unit
}
