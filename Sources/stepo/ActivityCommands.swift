import CLI
import Backend
import Inbox
import Foundation
import Notifications

let activityCommand = Command(
    name: "activity",
    summary: "List a user's notification rows, newest first, with the unseen and unread counts.",
    usage: "stepo activity [--db FILE | --database URL] --user ID [--json] [--limit N]  |  stepo activity --replica [--user ID] [--server URL --token T]",
    details: """
    The dot marks an unseen row, a circle an unread one. Deleted content is marked [deleted].
    Rows show what the user may see now: content behind a block, a deletion, or an account gone
    private or inactive is withheld (the verb alone, no face), as their inbox shows it.
    With --replica, the rows come from the local replica (synced first if it is empty), as the
    inbox will show them, without asking the server.
    """,
    options: ["db", "database", "user", "limit", "server", "token"], flags: ["json", "replica"]
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
    // As the user may see them now: the same withholding a sync applies.
    let rows = try store.inboxes.activityAsSeen(by: user, limit: limit)
    let counts = try store.inboxes.counts(for: user.key)
    if json {
        Output.line(JSON.object([
            ("user", .string(user.id)), ("counts", counts.json), ("rows", .array(rows.map(\.json))),
        ]).serialized)
        return
    }
    Output.line("Activity · \(Preview.visible(user.name)) (@\(user.username)) · \(counts.unseen) unseen · \(counts.unread) unread")
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    for row in rows {
        Output.line(listingLine(seen: row.seenAt != nil, read: row.readAt != nil, at: row.createdAt, title: row.title,
                                body: row.body, deleted: row.deleted, id: row.id, kind: row.kind.rawValue, now: now))
    }
}

/// One row of a text listing: ● unseen, ○ unread, the age in the inbox's words, the copy (made
/// inert), [deleted], the row id and kind.
func listingLine(seen: Bool, read: Bool, at: Int64, title: String, body: String, deleted: Bool, id: Int, kind: String,
                 now: Int64) -> String {
    let mark = !seen ? "●" : (!read ? "○" : " ")
    let age = RelativeTime.text(at, now: now).padding(toLength: 11, withPad: " ", startingAt: 0)
    return " \(mark) \(age) \(Preview.visible(title)) — \(Preview.visible(body))\(deleted ? "  [deleted]" : "")  #\(id) \(kind)"
}

let seenCommand = Command(
    name: "seen",
    summary: "Stamp every row of a user seen (as opening Activity does); print the counts.",
    usage: "stepo seen [--db FILE | --database URL] --user ID",
    details: "",
    options: ["db", "database", "user"], flags: []
) { arguments in
    let store = try openStore(arguments)
    let user = try requireUser(store, arguments)
    let counts = try store.inboxes.markSeen(user, at: Int64(Date().timeIntervalSince1970 * 1000))
    Output.line(counts.json.serialized)
    return 0
}

let readCommand = Command(
    name: "read",
    summary: "Stamp one of a user's rows read (and seen); print the counts.",
    usage: "stepo read [--db FILE | --database URL] --user ID ROW-ID",
    details: "",
    options: ["db", "database", "user"], flags: []
) { arguments in
    guard arguments.positionals.count == 1, let id = Int(arguments.positionals[0]) else {
        throw UsageError(description: "give one numeric ROW-ID")
    }
    let store = try openStore(arguments)
    let user = try requireUser(store, arguments)
    guard let counts = try store.inboxes.markRead(user, row: id, at: Int64(Date().timeIntervalSince1970 * 1000)) else {
        throw CommandError(description: "user \(user.id) has no row \(id)")
    }
    Output.line(counts.json.serialized)
    return 0
}
