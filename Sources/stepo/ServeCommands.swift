import Backend
import Dispatch
import Foundation
import Notifications
import Server

let serveCommand = Command(
    name: "serve",
    summary: "Serve the store's JSON API over HTTP (libmicrohttpd).",
    usage: "stepo serve [--db FILE] [--bind 127.0.0.1] [--port 8080] [--threads 4]",
    details: """
    Logs one line per request (method, path, status, milliseconds) to stderr. SIGINT or SIGTERM
    stops it cleanly. Endpoints and tokens: docs/api.md; `stepo token` makes a token.
    """,
    options: ["db", "bind", "port", "threads"], flags: []
) { arguments in
    let path = try arguments["db"] ?? Store.defaultPath()
    let port = try arguments.integer("port") ?? 8080
    let threads = try arguments.integer("threads") ?? 4
    guard (0...65535).contains(port) else { throw UsageError(description: "--port must be 0 to 65535") }
    guard (1...64).contains(threads) else { throw UsageError(description: "--threads must be 1 to 64") }
    let server: HTTPServer
    do {
        server = try HTTPServer(databasePath: path, address: arguments["bind"] ?? "127.0.0.1", port: UInt16(port),
                                threads: threads, log: { line in Output.error(line) })
    } catch let error as ServerError {
        throw CommandError(description: error.description)
    }
    Output.error("stepo serve: listening on http://\(arguments["bind"] ?? "127.0.0.1"):\(server.port) (store \(path))")
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

/// Kept alive for the life of `stepo serve`.
nonisolated(unsafe) var signalSources: [DispatchSourceSignal] = []

let tokenCommand = Command(
    name: "token",
    summary: "Create a bearer token for a user (or an admin token) and print it.",
    usage: "stepo token [--db FILE] (--user ID | --admin)",
    details: "The store keeps only the token's SHA-256; this is the one time it is shown.",
    options: ["db", "user"], flags: ["admin"]
) { arguments in
    let store = try openStore(arguments)
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    if arguments.has("admin") {
        guard arguments["user"] == nil else { throw UsageError(description: "give --user ID or --admin, not both") }
        Output.line(try store.createToken(for: nil, admin: true, at: now))
    } else {
        Output.line(try store.createToken(for: try requireUser(store, arguments), admin: false, at: now))
    }
    return 0
}
