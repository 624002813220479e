import Foundation
import Inbox
import Notifications
import Replica

/// The board's tap column, written down again here on purpose: the walk checks the engine
/// against the board, not against itself.
private let boardTaps: [String: (screen: String, detail: String)] = [
    "steppedWithHeart": ("step", "comments closed"), "steppedWithShare": ("step", "comments closed"),
    "heart": ("step", "comments closed"), "share": ("step", "comments closed"),
    "firstStep": ("step", "comments closed"), "newStep": ("step", "comments closed"),
    "steppedWithComment": ("step", "comments open"), "comment": ("step", "comments open"),
    "reply": ("step", "comment highlighted"), "mention": ("step", "comment highlighted"),
    "newFollower": ("profile", "followBack"), "followRequest": ("profile", "acceptDecline"),
    "followRequestAccepted": ("profile", "none"),
    "achievement": ("journey", "none"), "recognitionEarned": ("journey", "none"),
    "recognitionReceived": ("journey", "people"),
    "announcement": ("link", ""),
]

let qaCommand = Command(
    name: "qa",
    summary: "QA tools: `stepo qa walk` opens every row's tap destination and checks it against the board.",
    usage: "stepo qa walk [--db FILE] [--user ID] [--server URL --token T]",
    details: """
    Syncs the replica, then for every row: checks its tap against the board's tap column (the
    screen, comments open or highlighted, Follow back or Accept / Decline, the people panel),
    builds the destination as the inbox would (offline, from the replica), and checks that it
    landed there — or, for deleted content, on "This content is no longer available". Prints a
    report; exits 1 on any mismatch.
    """,
    options: ["db", "user", "server", "token"], flags: []
) { arguments in
    guard arguments.positionals.first == "walk" else { throw UsageError(description: "the QA tool is: walk") }
    let client = try Client(arguments)
    _ = try? client.engine.sync()
    let rows = try client.replica.rows(limit: 100_000)
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    var problems: [String] = []
    var landed: [String: Int] = [:]
    for row in rows {
        let label = "#\(row.id) \(row.kind) (\(Preview.visible(row.title)))"
        let destination = Destination.build(for: row, replica: client.replica, now: now)
        if row.deleted {
            if destination.lines.first?.text != "This content is no longer available" {
                problems.append("\(label): deleted, but opened \(destination.title)")
            }
            landed["deleted → no longer available", default: 0] += 1
            continue
        }
        guard let expected = boardTaps[row.kind] else { problems.append("\(label): a kind the board does not know"); continue }
        let tap = row.json["tap"] ?? .null
        let screen = tap["screen"]?.string ?? "?"
        var detail = ""
        switch screen {
        case "step":
            let comments = tap["comments"]?.string ?? "?"
            detail = comments == "highlight" ? "comment highlighted" : "comments \(comments)"
            if comments == "highlight", tap["comment"]?.string == nil { problems.append("\(label): highlight without a comment") }
        case "profile": detail = tap["action"]?.string ?? "?"
        case "journey": detail = tap["panel"]?.string ?? "?"
        default: detail = ""
        }
        if screen != expected.screen || detail != expected.detail {
            problems.append("\(label): taps to \(screen) \(detail), the board says \(expected.screen) \(expected.detail)")
            continue
        }
        let titles = ["step": "Step", "profile": "Profile", "journey": "Journey", "link": "Stepo", "interactions": "Interactions"]
        if destination.title != titles[screen] {
            problems.append("\(label): opened \(destination.title), expected \(titles[screen] ?? screen)")
        } else if destination.lines.contains(where: { $0.text == "(not synced yet)" }) {
            problems.append("\(label): \(screen) is not in the replica")
        } else if detail == "comment highlighted", !destination.lines.contains(where: { $0.role == .selected }) {
            problems.append("\(label): the comment is not highlighted")
        } else if detail == "comments open", destination.focus == 0 {
            problems.append("\(label): did not land on the comments")
        }
        landed["\(screen) \(detail)".trimmingCharacters(in: .whitespaces), default: 0] += 1
    }
    Output.line("stepo qa walk · @\(Preview.visible(client.user)) · \(rows.count) rows")
    for (landing, count) in landed.sorted(by: { $0.key < $1.key }) { Output.line("  \(count) × \(landing)") }
    for problem in problems { Output.line("  MISMATCH \(problem)") }
    Output.line(problems.isEmpty ? "every destination matches the board" : "\(problems.count) mismatches")
    return problems.isEmpty ? 0 : 1
}
