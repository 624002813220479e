import CLI
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

/// The title a screen draws for each of the board's screens.
private let screenTitles = ["step": "Step", "profile": "Profile", "journey": "Journey", "interactions": "Interactions",
                            "link": "Stepo", "gone": "Not available"]

let qaCommand = Command(
    name: "qa",
    summary: "QA tools: `stepo qa walk` opens every row's tap destination, performs its action, and checks both against the board.",
    usage: "stepo qa walk [--db FILE] [--user ID] [--server URL --token T [--act]] [--row ID] [--json] [--junit FILE]",
    details: """
    Syncs a replica of its own, then opens every row as the inbox does (Enter on it, the live
    copy from the server taken in) and reads the screen it reached: its title, and what is in
    view — the comments, the highlighted comment, Follow back or Accept / Decline, the people
    panel, the link. That is compared with the board's tap column, written down apart from the
    code that decides taps. Deleted content must land on "This content is no longer available".

    Then it performs each row's inline action as the inbox does (Accept or Decline a follow
    request, alternately; Follow back a new follower) and checks, after a sync, that the
    server agreed, that the profile shows the new relation and no longer offers the action,
    and that the same action sent again changes nothing (an answered request is refused, and
    the refusal reported). On the embedded default it acts on a scratch copy of the store, so
    nothing of yours changes; against a server it acts only with --act, and stamps nothing.

    --row ID walks one row. --json prints one result per row (row, kind, board, reached, ok,
    problems); --junit FILE writes them as JUnit XML, one test case per row, for CI. Exits 1 on
    any mismatch.
    """,
    options: ["db", "user", "server", "token", "row", "junit"], flags: ["act", "json"]
) { arguments in
    guard arguments.positionals.first == "walk" else { throw UsageError(description: "the QA tool is: walk") }
    let only: Int?
    if let text = arguments["row"] {
        guard let id = Int(text), id > 0 else { throw UsageError(description: "--row takes a row id (a whole number), not \(Preview.visible(text))") }
        only = id
    } else {
        only = nil
    }
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
    do {
        try client.engine.sync()
    } catch let refused as SyncError where refused.code == "accountInactive" {
        // A banned or deactivated account has no inbox to open: the rules say so, and there
        // is nothing on a screen that could differ from them.
        Output.error("stepo qa walk · @\(Preview.visible(client.user)) · \(refused.message): no inbox to open, nothing to walk")
        if let junit = arguments["junit"] {
            try? Data(QAReport.junit([], user: client.user).utf8).write(to: URL(fileURLWithPath: junit))
        }
        if arguments.has("json") { Output.line(QAReport.json([], user: client.user, acted: acting).serialized) }
        return 0
    } catch {
        throw CommandError(description: "cannot sync: \(error)")
    }
    var rows = try client.replica.rows(limit: 100_000)
    if let only {
        rows = rows.filter { $0.id == only }
        guard !rows.isEmpty else { throw CommandError(description: "there is no row \(only) in @\(Preview.visible(client.user))'s activity") }
    }
    var walk = QAWalk(client: client)
    var results = rows.map { walk.check($0) }
    var actions = QAActions(client: client)
    if acting {
        for (index, row) in rows.enumerated() where !row.deleted {
            results[index].problems += actions.perform(row)
        }
    }
    let problems = results.flatMap(\.problems)
    if let junit = arguments["junit"] {
        do {
            try Data(QAReport.junit(results, user: client.user).utf8).write(to: URL(fileURLWithPath: junit))
        } catch {
            throw CommandError(description: "cannot write \(Preview.visible(junit)): \(error.localizedDescription)")
        }
    }
    if arguments.has("json") {
        Output.line(QAReport.json(results, user: client.user, acted: acting).serialized)
        return problems.isEmpty ? 0 : 1
    }
    Output.line("stepo qa walk · @\(Preview.visible(client.user)) · \(rows.count) row\(rows.count == 1 ? "" : "s")")
    var landed: [String: Int] = [:]
    // What the screens showed, in the words --json gives as "reached", beside the board's.
    for result in results {
        let landing = result.row.deleted ? "deleted → \(result.reached)" : "\(result.board) → \(result.reached)"
        landed[landing, default: 0] += 1
    }
    for (landing, count) in landed.sorted(by: { $0.key < $1.key }) { Output.line("  \(count) × \(landing)") }
    if acting {
        for (action, count) in actions.performed.sorted(by: { $0.key < $1.key }) {
            let repeated = action == "follow back" ? "a repeat changed nothing" : "a repeat was refused and reported"
            Output.line("  \(count) × \(action): the server agreed, the profile shows it and offers it no more, \(repeated)")
        }
    } else {
        Output.line("  inline actions not performed: against a server they change its data (--act performs them)")
    }
    for problem in problems { Output.line("  MISMATCH \(problem)") }
    Output.line(problems.isEmpty ? "every destination and action matches the board" : "\(problems.count) mismatches")
    return problems.isEmpty ? 0 : 1
}

/// One row's result: where the board says it lands, the screen it reached, what was wrong.
struct QAResult {
    let row: ActivityRow
    /// The board's tap column for the row's kind: "step comments open", "profile followBack"…
    var board: String
    /// The screen reached, as drawn: its title, and what the check found in view.
    var reached: String
    var problems: [String] = []
    var ok: Bool { problems.isEmpty }
    var label: String { "#\(row.id) \(row.kind.rawValue) (\(Preview.visible(row.title)))" }
}

/// The results written for machines: JSON, and JUnit XML for CI.
enum QAReport {
    static func json(_ results: [QAResult], user: String, acted: Bool) -> JSON {
        .object([("user", .string(user)), ("acted", .bool(acted)),
                 ("rows", .array(results.map { result in
                     .object([("row", .int(result.row.id)), ("kind", .string(result.row.kind.rawValue)),
                              ("board", .string(result.board)), ("reached", .string(result.reached)), ("ok", .bool(result.ok)),
                              ("problems", .array(result.problems.map(JSON.string)))])
                 })),
                 ("mismatches", .int(results.reduce(0) { $0 + $1.problems.count }))])
    }

    static func junit(_ results: [QAResult], user: String) -> String {
        let failures = results.filter { !$0.ok }.count
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites tests=\"\(results.count)\" failures=\"\(failures)\">\n"
        xml += "  <testsuite name=\"stepo qa walk @\(escaped(user))\" tests=\"\(results.count)\" failures=\"\(failures)\">\n"
        for result in results {
            let name = "row \(result.row.id) \(result.row.kind.rawValue): \(result.board)"
            xml += "    <testcase classname=\"qa.walk.\(result.row.kind.rawValue)\" name=\"\(escaped(name))\""
            if result.ok {
                xml += "/>\n"
            } else {
                xml += ">\n      <failure message=\"\(escaped(result.problems.first ?? ""))\">"
                xml += escaped("reached: \(result.reached)\n" + result.problems.joined(separator: "\n"))
                xml += "</failure>\n    </testcase>\n"
            }
        }
        return xml + "  </testsuite>\n</testsuites>\n"
    }

    /// Text made safe in XML: markup escaped, controls (which XML 1.0 cannot hold) shown, line
    /// breaks kept (as `&#10;` inside an attribute).
    static func escaped(_ text: String) -> String {
        var out = ""
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { Preview.visible(String($0)) }
        for scalar in lines.joined(separator: "\n").unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "\n": out += "&#10;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

/// Performs rows' inline actions as the inbox does, and checks the replica, the profile and
/// the server afterwards.
struct QAActions {
    let client: Client
    var performed: [String: Int] = [:]
    private var accepting = true

    init(client: Client) { self.client = client }

    /// The row's act, performed and checked; what was wrong.
    mutating func perform(_ row: ActivityRow) -> [String] {
        var problems: [String] = []
        guard case let .profile(user, offered) = row.tap, offered != .none else { return [] }
        let label = "#\(row.id) \(row.kind.rawValue) (\(Preview.visible(row.title)))"
        let replica = client.replica
        // A request already answered (by an earlier row of the same person) offers nothing.
        do {
            guard try DestinationLoader.profile(user, offered: offered, replica: replica).openAction != .none else { return [] }
        } catch {
            return ["\(label): the profile could not be read: \(error)"]
        }
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
            return []
        }
        do {
            try replica.enqueue(action)
            try client.engine.sync()
            let refused = client.engine.takeRefusals()
            guard refused.isEmpty else { return ["\(label): \(name) refused: \(refused.joined(separator: "; "))"] }
            // The screen: the profile shows the relation as the server made it, and offers nothing.
            let page = try DestinationLoader.profile(user, offered: offered, replica: replica)
            guard let person = page.person else { return ["\(label): after \(name), the profile is gone"] }
            if page.openAction != .none { problems.append("\(label): after \(name), the profile still offers it") }
            let r = person.relationship
            switch action {
            case .acceptRequest:
                if r.requestedYou || !r.followsYou { problems.append("\(label): after accept, \(r)") }
            case .declineRequest:
                if r.requestedYou || r.followsYou { problems.append("\(label): after decline, \(r)") }
            case .followBack:
                if !r.following && !r.requested { problems.append("\(label): after follow back, \(r)") }
            case .seen, .readAll, .read, .preferences, .alert:
                problems.append("\(label): \(name) is not an act on a person")
            }
            // The server: the same relation.
            guard let live = try client.engine.person(user).value?.user else { return problems + ["\(label): the server has no profile of \(user)"] }
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
        return problems
    }
}

extension QAWalk {
    /// Whether what a screen shows is what the board's tap column asks: a step's comments
    /// closed is the step opened at its top, open is its comments in view; an act offered, or
    /// done already and offered no more.
    static func shows(_ detail: String, _ shown: [String]) -> Bool {
        switch detail {
        case "": return !shown.isEmpty
        case "comments closed": return shown.contains("at its top")
        case "comments open": return shown.contains("comments in view")
        default: return shown.contains(detail) || shown.contains(detail + " (done already)")
        }
    }
}

/// Opens rows as the inbox does — Enter on the row, in a runner of the inbox drawing nowhere,
/// the server's live copy taken in — and compares the screen reached with the board.
struct QAWalk {
    let runner: InboxRunner

    init(client: Client) {
        runner = InboxRunner(replica: client.replica, engine: client.engine, host: HeadlessHost())
        // The walk reads; it stamps nothing seen or read on the server.
        runner.stamping = false
        runner.send(.resized(width: 100, height: 40))
    }

    mutating func check(_ row: ActivityRow) -> QAResult {
        let board: (screen: String, detail: String)
        if row.deleted {
            board = ("gone", "")
        } else if let tap = boardTaps[row.kind] {
            board = tap
        } else {
            return QAResult(row: row, board: "?", reached: "not opened", problems: ["#\(row.id): a kind the board does not know"])
        }
        var result = QAResult(row: row, board: "\(board.screen) \(board.detail)".trimmingCharacters(in: .whitespaces), reached: "")
        runner.send(.openRow(row))
        if !runner.settle(timeout: 30) { result.problems.append("\(result.label): the destination did not finish loading in 30 s") }
        guard case .destination(let screen)? = runner.state.screens.last, let destination = screen.destination else {
            result.reached = "nothing"
            result.problems.append("\(result.label): Enter opened no destination")
            return result
        }
        let grid = runner.render()
        let drawn = grid.lines
        let title = drawn.count > 1 ? drawn[1].trimmingCharacters(in: .whitespaces) : ""
        let inView = { (text: String) in drawn.contains { $0.contains(text) } }
        // What of the board's detail the screen shows.
        var shown: [String] = []
        switch destination {
        case .step(let page):
            // What the screen shows, and only that: opened at the step's top, its comments in
            // view (a short step shows both), a comment lit.
            if screen.top == 0, inView("in \(page.step.journeyTitle)") { shown.append("at its top") }
            if inView("Comments (\(page.comments.count))") { shown.append("comments in view") }
            if let highlight = page.highlight, let comment = page.comments.first(where: { $0.comment.id == highlight }) {
                // Drawn lit: the highlighted comment's author line in the selected role.
                let lit = (0..<grid.height).contains { y in
                    grid.lines[y].contains(comment.authorName) && grid.cells[y * grid.width + 2].role == .selected
                }
                if lit { shown.append("comment highlighted") }
            }
        case .profile(let page):
            let followBack = inView("[ f  Follow back ]"), acceptDecline = inView("[ a  Accept ]   [ d  Decline ]")
            switch page.openAction {
            case .followBack: if followBack { shown.append("followBack") }
            case .acceptDecline: if acceptDecline { shown.append("acceptDecline") }
            case .none:
                // Nothing offered: the tap had no act, or its act is done already (followed
                // back, answered) — the profile must then offer none.
                if page.person != nil, !followBack, !acceptDecline {
                    shown.append(page.offered == .none ? "none" : "\(page.offered.rawValue) (done already)")
                }
            }
        case .journey(let page):
            if inView("People") { shown.append("people") } else if page.panel == .none { shown.append("none") }
        case .link(let page):
            if !page.url.isEmpty, inView("Link: ") { shown.append("") }
        case .interactions(let page):
            if !page.people.isEmpty { shown.append("") }
        case .gone:
            if inView("This content is no longer available") { shown.append("") }
        case .push:
            break
        }
        let reachedScreen = title == screenTitles["gone"] ? "no longer available" : screenTitles.first { $0.value == title }?.key ?? title
        let words = shown.filter { !$0.isEmpty }
        result.reached = reachedScreen + (words.isEmpty ? "" : " " + words.joined(separator: ", "))
        let expectedTitle = screenTitles[board.screen] ?? board.screen
        if title == expectedTitle, QAWalk.shows(board.detail, shown) { return result }
        if row.withheld {
            // Content (or a person) the reader may no longer see: the board's fallback is right
            // — no longer available — and so is the destination without what is withheld (a
            // reply's step, still theirs to see, without the comment they may not). Drawing
            // what is withheld would be the failure.
            if title == screenTitles["gone"] { return result }
            if title == expectedTitle, !board.detail.isEmpty, !QAWalk.shows(board.detail, shown) {
                result.reached += " (\(board.detail) withheld)"
                return result
            }
            if title == expectedTitle {
                result.problems.append("\(result.label): \(title) shows \(board.detail), which the reader may no longer see")
                return result
            }
        }
        if title != expectedTitle {
            result.problems.append("\(result.label): Enter reached \(title.isEmpty ? "no screen" : title), the board says \(expectedTitle)")
        } else {
            result.problems.append("\(result.label): \(title) reached without \(board.detail.isEmpty ? "its content" : board.detail) in view")
        }
        return result
    }
}
