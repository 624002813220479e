import CLI
import Backend
import Foundation
import Notifications

let explainCommand = Command(
    name: "explain",
    summary: "Show every candidate recipient of an event: the row it got, or why it got none.",
    usage: "stepo explain [--db FILE | --database URL] [--json] EVENT-ID  |  stepo explain [--db FILE | --database URL] --row ROW-ID",
    details: """
    Reasons: self, blocked, actorInactive, recipientInactive, notVisible, duplicate, ladder
    (no row); preferences, dailyCeiling, deleted (row kept, push withheld). A custom follow
    alert that decided a journey update's push is named; a push waiting for its recipient's
    quiet hours to end says held:quietHours until T. --row ROW-ID shows a row's deliveries:
    each outbox entry, its device, state and attempts.
    """,
    options: ["db", "database", "row"], flags: ["json"]
) { arguments in
    if let rowText = arguments["row"] {
        guard let rowId = Int(rowText) else { throw UsageError(description: "--row takes a numeric ROW-ID") }
        guard !arguments.has("json") else { throw UsageError(description: "--json goes with an EVENT-ID, not with --row") }
        let store = try openStore(arguments)
        guard try store.inboxes.row(rowId) != nil else { throw CommandError(description: "no notification row \(rowId)") }
        let entries = try store.outbox.entries(ofRow: rowId)
        Output.line("row \(rowId) · \(entries.count) deliver\(entries.count == 1 ? "y" : "ies")")
        for e in entries {
            // A dropped entry says which rule dropped it (its one attempt's reason).
            let why = e.state == .dropped ? try store.outbox.attempts(of: e.id).last?.reason.map { " (\(Preview.visible($0)))" } ?? "" : ""
            Output.line("  entry \(e.id)  \(e.platform.rawValue)  \(Preview.visible(Preview.shorten(e.token, to: 24)))  \(e.state.rawValue)\(why)"
                        + (e.held && e.state == .due ? "  held:quietHours until \(Timestamp.format(e.dueAt))" : "")
                        + (e.silent ? "  silent" : "") + "  \(e.attempts) attempt\(e.attempts == 1 ? "" : "s")"
                        + (e.expiresAt.map { "  expires \(Timestamp.format($0))" } ?? ""))
        }
        // What a push surface would draw of it now: the send-time rules judged again.
        do {
            _ = try store.outbox.pushContent(row: rowId)
        } catch let unavailable as PushUnavailable {
            Output.line("  now: \(unavailable.description)")
        }
        return 0
    }
    guard arguments.positionals.count == 1, let id = arguments.positionals.first else {
        throw UsageError(description: "give one EVENT-ID")
    }
    let store = try openStore(arguments)
    guard let report = try store.explanations.event(id) else {
        let pruned = try store.keptSince().map { " (or it was, and was pruned: the store keeps nothing older than \(Timestamp.format($0)))" } ?? ""
        throw CommandError(description: "no event \(Preview.visible(id)) was applied to this store" + pruned)
    }
    if arguments.has("json") {
        Output.line(JSON.members([
            ("event", .string(report.id)), ("type", .string(report.type)), ("at", .string(Timestamp.format(report.at))),
            ("note", report.note.map(JSON.string)), ("candidates", .array(report.candidates.map(\.json))),
        ]).pretty)
        return 0
    }
    Output.line("event \(Preview.visible(report.id)) · \(report.type) · \(Timestamp.format(report.at))")
    if let note = report.note { Output.line("  \(Preview.visible(note))") }
    if report.candidates.isEmpty {
        Output.line("  no candidate recipients")
    }
    let rows = report.candidates.map { c -> [String] in
        let outcome: String
        if let row = c.rowId {
            outcome = "row \(row)  push \(c.push?.description ?? "?")" + (c.deletedSince ? "  (deleted since)" : "")
                + (c.alert.map { "  (alert \($0))" } ?? "") + (c.held.map { "  " + $0 } ?? "")
        } else {
            outcome = "no row: \(c.reason?.rawValue ?? "?")"
        }
        return [Preview.visible(c.recipient), c.kind.rawValue, outcome]
    }
    let widths = (0..<2).map { column in rows.map { $0[column].count }.max() ?? 0 }
    for row in rows {
        Output.line("  " + row[0].padding(toLength: widths[0], withPad: " ", startingAt: 0) + "  "
                    + row[1].padding(toLength: widths[1], withPad: " ", startingAt: 0) + "  " + row[2])
    }
    return 0
}

let pushCommand = Command(
    name: "push",
    summary: "Print the push payload of a notification row for APNs or FCM.",
    usage: "stepo push [--db FILE | --database URL] ROW-ID --platform apns|fcm [--token DEVICE-TOKEN] [--silent]",
    details: """
    APNs: the request headers and the JSON payload. FCM: the HTTP v1 message. The badge is the
    recipient's unseen count now; a private actor's push is masked; each payload fits 4096 bytes.
    --silent renders the silent replacement a batch sends when it grows after its one audible
    push: the same collapse id, no sound, low priority.
    """,
    options: ["db", "database", "platform", "token"], flags: ["silent"]
) { arguments in
    guard arguments.positionals.count == 1, let id = Int(arguments.positionals[0]) else {
        throw UsageError(description: "give one numeric ROW-ID")
    }
    let token = arguments["token"] ?? "DEVICE_TOKEN"
    let store = try openStore(arguments)
    var content: PushContent
    do {
        content = try store.outbox.pushContent(row: id)
        content.silent = arguments.has("silent")
    } catch let error as PushUnavailable {
        throw CommandError(description: Preview.visible(error.description))
    }
    switch arguments["platform"] {
    case "apns": Output.line(Payload.apns(content, deviceToken: token).pretty)
    case "fcm": Output.line(Payload.fcm(content, deviceToken: token).pretty)
    case nil: throw UsageError(description: "--platform apns|fcm is required")
    case let other?: throw UsageError(description: "--platform must be apns or fcm, not \(Preview.visible(other))")
    }
    return 0
}

let checkCommand = Command(
    name: "check",
    summary: "Check a store whole: damaged pages, references to nothing, and what it holds.",
    usage: "stepo check [--db FILE | --database URL]",
    details: """
    Reads the whole store and changes nothing: run it after a crash, a full disk or a restore.
    Prints how many events and rows the store holds and every problem found; exits 1 when
    there is one (SQLite's integrity check, then references that point at nothing, counted by
    table and column), or when what is there is not a stepo store.
    """,
    options: ["db", "database"]
) { arguments in
    guard arguments.positionals.isEmpty else { throw UsageError(description: "stepo check takes no EVENT or ROW") }
    let location = try storeLocation(arguments)
    guard !location.isEmpty else { throw UsageError(description: "--db takes a FILE") }
    // Opened to read only: a check never makes, migrates or writes a store.
    let store: Store, problems: [String], events: Int, rows: Int
    do {
        store = try Store(inspecting: location)
        problems = try store.audit.problems()
        (events, rows) = (try store.audit.eventsApplied(), try store.audit.rowsStored())
    } catch let error as NotAStore {
        throw CommandError(description: Preview.visible(error.description))
    } catch where !Store.isPostgresURL(location) {
        // A file the engine cannot even read through is damaged: that is the check's answer.
        Output.line("\(Preview.visible(location)): cannot be read whole")
        Output.line("  problem: \(Command.visible("\(error)"))")
        Output.line("  1 problem")
        return 1
    }
    Output.line("\(Preview.visible(Store.redacted(store.path))): \(Plural.count(events, "event")), \(Plural.count(rows, "row"))")
    if !store.pending.isEmpty {
        Output.line("  its schema lacks \(Plural.count(store.pending.count, "migration")) of this build (the next stepo command that writes applies them)")
    }
    let shown = 50
    for problem in problems.prefix(shown) { Output.line("  problem: \(Preview.visible(problem))") }
    if problems.count > shown { Output.line("  … and \(problems.count - shown) more") }
    Output.line(problems.isEmpty ? "  sound" : "  \(Plural.count(problems.count, "problem"))")
    return problems.isEmpty ? 0 : 1
}

let initCommand = Command(
    name: "init",
    summary: "Make a store, or bring one to this build's schema; the one command that adopts another program's database.",
    usage: "stepo init [--db FILE | --database URL]",
    details: """
    Creates the store at FILE (the default store without --db) or in the PostgreSQL database at
    URL, or applies the migrations an existing store lacks. Every other command makes a store
    of a new or empty file too, but refuses a file or database that holds another program's
    tables and leaves it as it was; init is how to make a store there all the same (its tables
    stay beside the store's).
    """,
    options: ["db", "database"]
) { arguments in
    guard arguments.positionals.isEmpty else { throw UsageError(description: "stepo init takes no FILE: use --db FILE") }
    let location = try storeLocation(arguments)
    guard !location.isEmpty else { throw UsageError(description: "--db takes a FILE") }
    let store = try Store(location: location, adopting: true)
    Output.line("\(Preview.visible(Store.redacted(store.path))): a stepo store (identity \(store.identity))")
    return 0
}
