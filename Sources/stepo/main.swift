import CLI
import Backend
import CMicroHTTPD
import CNcursesw
import Foundation
import Notifications
import SQLite

let commands: [Command] = [
    demoCommand, initCommand, ingestCommand, rowsCommand, explainCommand, checkCommand, pushCommand, activityCommand, seenCommand, readCommand,
    inboxCommand, syncCommand, serveCommand, tokenCommand, devicesCommand, deliverCommand, statsCommand, pruneCommand, qaCommand,
]

@MainActor func versionText() -> String {
    """
    stepo 0.1.0
    SQLite \(Database.libraryVersion)
    \(String(cString: curses_version()))
    libmicrohttpd \(String(cString: MHD_get_version()))
    """
}

@MainActor func overview() -> String {
    let width = commands.map(\.name.count).max() ?? 0
    let lines = commands.map { "  " + $0.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.summary }
    return """
    usage: stepo [COMMAND] [OPTIONS]

    Stepo's notification system: engine, store and activity. With no command, opens the demo
    user's Activity inbox on the default store (seeded from sample-data on first run); without
    a terminal, prints that activity as text.

    Commands:
    \(lines.joined(separator: "\n"))

    Every command takes --help. The default store is $XDG_DATA_HOME/stepo/stepo.db
    (~/.local/share/stepo/stepo.db); --db FILE uses another.
    """
}

var words = Array(CommandLine.arguments.dropFirst())
let status: Int32
switch words.first {
case nil:
    // In a terminal, the Activity tab; elsewhere (a pipe, a script, CI), the text listing.
    status = isatty(0) == 1 && isatty(1) == 1 ? inboxCommand.execute([]) : demoCommand.execute([])
case "help" where words.count > 1:
    // `stepo help prune` is `stepo prune --help`.
    if let command = commands.first(where: { $0.name == words[1] }) {
        status = command.execute(["--help"])
    } else {
        Output.error("stepo: no command \(Preview.visible(words[1])) (stepo help lists them)")
        status = 2
    }
case "--help", "-h", "help":
    Output.line(overview())
    Output.flush()
    status = 0
case "--version":
    Output.line(versionText())
    Output.flush()
    status = 0
case let name? where name.hasPrefix("--"):
    // `stepo --server URL --token T`, `stepo --user ID`, `stepo --theme T`: the inbox in a
    // terminal; elsewhere the text listing (of the replica, for a server), where a theme means nothing.
    let terminal = isatty(0) == 1 && isatty(1) == 1
    if terminal {
        status = inboxCommand.execute(words)
    } else {
        var listing = words
        if let at = listing.firstIndex(of: "--theme") { listing.removeSubrange(at..<min(at + 2, listing.count)) }
        listing.removeAll { $0.hasPrefix("--theme=") }
        status = words.contains("--server") ? activityCommand.execute(["--replica"] + listing) : demoCommand.execute(listing)
    }
case "bench"?:
    Output.error("stepo: the benchmarks are a program of their own: `swift build -c release`, then `.build/release/stepo-bench --help`")
    status = 2
case let name?:
    if let command = commands.first(where: { $0.name == name }) {
        status = command.execute(Array(words.dropFirst()))
    } else {
        Output.error("stepo: unknown command \(name)\n\n\(overview())")
        status = 2
    }
}
exit(status)
