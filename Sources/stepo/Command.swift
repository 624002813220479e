import Backend
import CLI
import Foundation
import Notifications

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
        throw CommandError(description: "unknown user \(Preview.visible(id)) in this store: a person exists once a `user` event names them (stepo ingest)")
    }
    return user
}
