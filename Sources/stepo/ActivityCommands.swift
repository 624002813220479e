import Backend
import Inbox
import Foundation
import Notifications

let activityCommand = Command(
    name: "activity",
    summary: "List a user's notification rows, newest first, with the unseen and unread counts.",
    usage: "stepo activity [--db FILE] --user ID [--json] [--limit N]  |  stepo activity --replica [--user ID] [--server URL --token T]",
    details: """
    The dot marks an unseen row, a circle an unread one. Deleted content is marked [deleted].
    With --replica, the rows come from the local replica (synced first if it is empty), as the
    inbox will show them, without asking the server.
    """,
    options: ["db", "user", "limit", "server", "token"], flags: ["json", "replica"]
) { arguments in
    if arguments.has("replica") { return try replicaActivity(arguments) }
    let store = try openStore(arguments)
    let user = try requireUser(store, arguments)
    let limit = try arguments.integer("limit") ?? 500
    guard limit > 0 else { throw UsageError(description: "--limit must be positive") }
    try printActivity(store, user, limit: limit, json: arguments.has("json"))
    return 0
}

func printActivity(_ store: Store, _ user: UserRecord, limit: Int, json: Bool) throws {
    let rows = try store.activity(of: user, limit: limit)
    let counts = try store.counts(for: user.key)
    if json {
        Output.line(JSON.object([
            ("user", .string(user.id)), ("counts", counts.json), ("rows", .array(rows.map(\.json))),
        ]).serialized)
        return
    }
    Output.line("Activity · \(Preview.visible(user.name)) (@\(user.username)) · \(counts.unseen) unseen · \(counts.unread) unread")
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    for row in rows {
        let mark = row.seenAt == nil ? "●" : (row.readAt == nil ? "○" : " ")
        let age = relativeTime(row.createdAt, now: now).padding(toLength: 11, withPad: " ", startingAt: 0)
        let deleted = row.deleted ? "  [deleted]" : ""
        Output.line(" \(mark) \(age) \(Preview.visible(row.title)) — \(Preview.visible(row.body))\(deleted)  #\(row.id) \(row.kind.rawValue)")
    }
}

/// now, 2m, 3h, 2d, then a date (the inbox's words).
func relativeTime(_ at: Int64, now: Int64) -> String { RelativeTime.text(at, now: now) }

let seenCommand = Command(
    name: "seen",
    summary: "Stamp every row of a user seen (as opening Activity does); print the counts.",
    usage: "stepo seen [--db FILE] --user ID",
    details: "",
    options: ["db", "user"], flags: []
) { arguments in
    let store = try openStore(arguments)
    let user = try requireUser(store, arguments)
    let counts = try store.markSeen(user, at: Int64(Date().timeIntervalSince1970 * 1000))
    Output.line(counts.json.serialized)
    return 0
}

let readCommand = Command(
    name: "read",
    summary: "Stamp one of a user's rows read (and seen); print the counts.",
    usage: "stepo read [--db FILE] --user ID ROW-ID",
    details: "",
    options: ["db", "user"], flags: []
) { arguments in
    guard arguments.positionals.count == 1, let id = Int(arguments.positionals[0]) else {
        throw UsageError(description: "give one numeric ROW-ID")
    }
    let store = try openStore(arguments)
    let user = try requireUser(store, arguments)
    guard let counts = try store.markRead(user, row: id, at: Int64(Date().timeIntervalSince1970 * 1000)) else {
        throw CommandError(description: "user \(user.id) has no row \(id)")
    }
    Output.line(counts.json.serialized)
    return 0
}
