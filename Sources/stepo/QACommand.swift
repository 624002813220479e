import Foundation
import Inbox
import Notifications
import Replica
import Wire

/// The board's tap column, written down again here on purpose: the walk checks the engine
/// against the board, not against itself.
private let boardTaps: [Kind: (screen: String, detail: String)] = [
    .steppedWithHeart: ("step", "comments closed"), .steppedWithShare: ("step", "comments closed"),
    .heart: ("step", "comments closed"), .share: ("step", "comments closed"),
    .firstStep: ("step", "comments closed"), .newStep: ("step", "comments closed"),
    .steppedWithComment: ("step", "comments open"), .comment: ("step", "comments open"),
    .reply: ("step", "comment highlighted"), .mention: ("step", "comment highlighted"),
    .newFollower: ("profile", "followBack"), .followRequest: ("profile", "acceptDecline"),
    .followRequestAccepted: ("profile", "none"),
    .achievement: ("journey", "none"), .recognitionEarned: ("journey", "none"),
    .recognitionReceived: ("journey", "people"),
    .announcement: ("link", ""),
    .batch: ("interactions", ""),
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
    var walk = QAWalk(replica: client.replica)
    for row in rows { walk.check(row) }
    Output.line("stepo qa walk · @\(Preview.visible(client.user)) · \(rows.count) rows")
    for (landing, count) in walk.landed.sorted(by: { $0.key < $1.key }) { Output.line("  \(count) × \(landing)") }
    for problem in walk.problems { Output.line("  MISMATCH \(problem)") }
    Output.line(walk.problems.isEmpty ? "every destination matches the board" : "\(walk.problems.count) mismatches")
    return walk.problems.isEmpty ? 0 : 1
}

/// Opens rows as the inbox would and compares where they land with the board.
struct QAWalk {
    let replica: Replica
    var problems: [String] = []
    var landed: [String: Int] = [:]

    mutating func check(_ row: ActivityRow) {
        let label = "#\(row.id) \(row.kind.rawValue) (\(Preview.visible(row.title)))"
        let destination = DestinationLoader.tap(row, replica: replica)
        if row.deleted {
            if case .gone = destination {} else { problems.append("\(label): deleted, but opened \(destination.title)") }
            landed["deleted → no longer available", default: 0] += 1
            return
        }
        guard let expected = boardTaps[row.kind] else { problems.append("\(label): a kind the board does not know"); return }
        let (screen, detail) = QAWalk.describe(row.tap)
        if case .step(_, .highlight, nil) = row.tap { problems.append("\(label): highlight without a comment") }
        if screen != expected.screen || detail != expected.detail {
            problems.append("\(label): taps to \(screen) \(detail), the board says \(expected.screen) \(expected.detail)")
            return
        }
        switch (screen, destination) {
        case ("step", .step(let page)):
            if detail == "comment highlighted", !page.comments.contains(where: { $0.comment.id == page.highlight }) {
                problems.append("\(label): the comment is not highlighted")
            } else if detail == "comments open", DestinationView.initialTop(destination, height: 8, width: 80) == 0,
                      DestinationView.lines(destination, width: 80).count > 8 {
                problems.append("\(label): did not land on the comments")
            }
        case ("profile", .profile(let page)):
            if page.person == nil { problems.append("\(label): profile is not in the replica") }
        case ("journey", .journey), ("link", .link), ("interactions", .interactions):
            break
        case (_, .gone) where row.withheld:
            break  // content the reader may no longer see: gone is right
        default:
            problems.append("\(label): opened \(destination.title), expected \(screen)")
        }
        landed["\(screen) \(detail)".trimmingCharacters(in: .whitespaces), default: 0] += 1
    }

    static func describe(_ tap: Tap) -> (String, String) {
        switch tap {
        case let .step(_, comments, _): return ("step", comments == .highlight ? "comment highlighted" : "comments \(comments.rawValue)")
        case let .profile(_, action): return ("profile", action.rawValue)
        case let .journey(_, panel): return ("journey", panel.rawValue)
        case .link: return ("link", "")
        case .interactions: return ("interactions", "")
        }
    }
}
