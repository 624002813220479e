import Foundation
import Backend
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
    summary: "QA tools: `stepo qa walk` opens every row's tap destination, performs its action, and checks both against the board.",
    usage: "stepo qa walk [--db FILE] [--user ID] [--server URL --token T [--act]]",
    details: """
    Syncs a replica of its own, then for every row: checks its tap against the board's tap
    column (the screen, comments open or highlighted, Follow back or Accept / Decline, the
    people panel), builds the destination as the inbox would (offline, from the replica), and
    checks that it landed there — or, for deleted content, on "This content is no longer
    available".

    Then it performs each row's inline action as the inbox does (Accept or Decline a follow
    request, alternately; Follow back a new follower) and checks, after a sync, that the
    server agreed, that the profile shows the new relation and no longer offers the action,
    and that the same action sent again changes nothing (an answered request is refused, and
    the refusal reported). On the embedded
    default it acts on a scratch copy of the store, so nothing of yours changes; against a
    server it acts only with --act. Prints a report; exits 1 on any mismatch.
    """,
    options: ["db", "user", "server", "token"], flags: ["act"]
) { arguments in
    guard arguments.positionals.first == "walk" else { throw UsageError(description: "the QA tool is: walk") }
    let scratch = NSTemporaryDirectory() + "stepo-qa-\(getpid())-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    var walkArguments = arguments
    let acting: Bool
    if arguments["server"] == nil {
        // The walk acts on a copy: the store as it is now, seeded if it was empty.
        let store = try openStore(arguments)
        try SampleData.seedIfEmpty(store)
        try store.copy(to: scratch + "/stepo.db")
        walkArguments = arguments.setting("db", to: scratch + "/stepo.db")
        acting = true
    } else {
        acting = arguments.has("act")
    }
    let client = try Client(walkArguments, replicaFolder: scratch)
    do { try client.engine.sync() } catch { throw CommandError(description: "cannot sync: \(error)") }
    let rows = try client.replica.rows(limit: 100_000)
    var walk = QAWalk(replica: client.replica)
    for row in rows { walk.check(row) }
    var actions = QAActions(client: client)
    if acting {
        for row in rows where !row.deleted { actions.perform(row) }
    }
    Output.line("stepo qa walk · @\(Preview.visible(client.user)) · \(rows.count) rows")
    for (landing, count) in walk.landed.sorted(by: { $0.key < $1.key }) { Output.line("  \(count) × \(landing)") }
    if acting {
        for (action, count) in actions.performed.sorted(by: { $0.key < $1.key }) {
            let repeated = action == "follow back" ? "a repeat changed nothing" : "a repeat was refused and reported"
            Output.line("  \(count) × \(action): the server agreed, the profile shows it and offers it no more, \(repeated)")
        }
    } else {
        Output.line("  inline actions not performed: against a server they change its data (--act performs them)")
    }
    let problems = walk.problems + actions.problems
    for problem in problems { Output.line("  MISMATCH \(problem)") }
    Output.line(problems.isEmpty ? "every destination and action matches the board" : "\(problems.count) mismatches")
    return problems.isEmpty ? 0 : 1
}

/// Performs rows' inline actions as the inbox does, and checks the replica, the profile and
/// the server afterwards.
struct QAActions {
    let client: Client
    var problems: [String] = []
    var performed: [String: Int] = [:]
    private var accepting = true

    init(client: Client) { self.client = client }

    mutating func perform(_ row: ActivityRow) {
        guard case let .profile(user, offered) = row.tap, offered != .none else { return }
        let label = "#\(row.id) \(row.kind.rawValue) (\(Preview.visible(row.title)))"
        let replica = client.replica
        // A request already answered (by an earlier row of the same person) offers nothing.
        guard DestinationLoader.profile(user, offered: offered, replica: replica).openAction != .none else { return }
        let action: Mutation.Action
        let name: String
        switch offered {
        case .acceptDecline:
            action = accepting ? .acceptRequest(user: user) : .declineRequest(user: user)
            name = accepting ? "accept" : "decline"
            accepting.toggle()
        case .followBack:
            action = .followBack(user: user)
            name = "follow back"
        case .none:
            return
        }
        do {
            try replica.enqueue(action)
            try client.engine.sync()
            let refused = client.engine.takeRefusals()
            guard refused.isEmpty else { problems.append("\(label): \(name) refused: \(refused.joined(separator: "; "))"); return }
            // The screen: the profile shows the relation as the server made it, and offers nothing.
            let page = DestinationLoader.profile(user, offered: offered, replica: replica)
            guard let person = page.person else { problems.append("\(label): after \(name), the profile is gone"); return }
            if page.openAction != .none { problems.append("\(label): after \(name), the profile still offers it") }
            let r = person.relationship
            switch action {
            case .acceptRequest:
                if r.requestedYou || !r.followsYou { problems.append("\(label): after accept, \(r)") }
            case .declineRequest:
                if r.requestedYou || r.followsYou { problems.append("\(label): after decline, \(r)") }
            default:
                if !r.following && !r.requested { problems.append("\(label): after follow back, \(r)") }
            }
            // The server: the same relation.
            let live = try PersonEntity(json: try client.engine.fetch("GET", "/v1/users/\(user)")["user"] ?? .null)
            if live.relationship != r { problems.append("\(label): the server says \(live.relationship), the profile \(r)") }
            // Again: a request answered twice is refused, and the refusal said; following twice
            // is still one follow. Either way nothing changes.
            try replica.enqueue(action)
            try client.engine.sync()
            let again = client.engine.takeRefusals()
            if offered == .acceptDecline && again.isEmpty { problems.append("\(label): \(name) sent twice, and the second was not refused") }
            if offered == .followBack && !again.isEmpty { problems.append("\(label): following again was refused: \(again.joined(separator: "; "))") }
            if try replica.person(user)?.relationship != r { problems.append("\(label): \(name) sent again changed the profile") }
            performed[name, default: 0] += 1
        } catch {
            problems.append("\(label): \(name) failed: \(error)")
        }
    }
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
        case ("journey", .journey), ("link", .link):
            break
        case ("interactions", .interactions(let list)):
            // The people who did it, newest first, the batch's newest among them.
            if list.people.isEmpty { problems.append("\(label): the interactions list is empty") }
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
