import Backend
import Foundation
import Notifications

/// One `stepo` subcommand: its name, what it does, its usage, and how it runs.
struct Command {
    let name: String
    let summary: String
    let usage: String
    let details: String
    let options: Set<String>
    let flags: Set<String>
    let run: (Arguments) throws -> Int32

    var help: String {
        "usage: \(usage)\n\n\(summary)\n" + (details.isEmpty ? "" : "\n\(details)\n")
    }

    func execute(_ words: [String]) -> Int32 {
        do {
            let arguments = try Arguments(words, options: options, flags: flags)
            if arguments.has("help") {
                Output.line(help)
                Output.flush()
                return 0
            }
            let status = try run(arguments)
            Output.flush()
            return status
        } catch let error as UsageError {
            Output.error("stepo \(name): \(error.description)\nusage: \(usage)\n(see stepo \(name) --help)")
            return 2
        } catch {
            Output.error("stepo \(name): \(error)")
            return 1
        }
    }
}

/// Opens the store the command names: `--database postgresql://…` (the scale-out store),
/// `--db FILE`, or the default file.
func openStore(_ arguments: Arguments) throws -> Store {
    try Store(location: try storeLocation(arguments))
}

/// Where the command's store is: a PostgreSQL URL from `--database`, else the SQLite file of
/// `--db` or the default one.
func storeLocation(_ arguments: Arguments) throws -> String {
    if let url = arguments["database"] {
        guard arguments["db"] == nil else { throw UsageError(description: "give --db FILE or --database URL, not both") }
        guard Store.isPostgresURL(url) else {
            throw UsageError(description: "--database takes a PostgreSQL URL (postgresql://…); a SQLite file is --db FILE")
        }
        return url
    }
    return try arguments["db"] ?? Store.defaultPath()
}

/// The user `--user` names, or an error that says who is unknown.
func requireUser(_ store: Store, _ arguments: Arguments) throws -> UserRecord {
    guard let id = arguments["user"] else { throw UsageError(description: "--user ID is required") }
    guard let user = try store.user(id) ?? store.user(username: id) else {
        throw CommandError(description: "unknown user \(Preview.visible(id))")
    }
    return user
}
