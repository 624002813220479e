import CLI
import Backend
import CNcursesw
import Foundation
import Inbox
import Notifications
import Wire

let statsCommand = Command(
    name: "stats",
    summary: "Show the trust budget: mute rate, and what each kind and category pushed, withheld and had seen.",
    usage: "stepo stats [--db FILE | --database URL] [--since T] [--until T] [--json]",
    details: """
    T is an RFC 3339 time; both ends are included, by event time. The default span is the 7
    days up to the newest event. A mute is a person turning a category (or every push) off
    within 24 hours after a push of it; the mute rate is mutes ÷ people pushed to. --json
    prints the figures as one object (docs/stats.md defines each). In a terminal, charts use
    Unicode blocks (ASCII where the locale has no UTF-8) and colour (attributes only under
    NO_COLOR), fitted to the terminal's width.
    """,
    options: ["db", "database", "since", "until"], flags: ["json", "from-rows"]
) { arguments in
    func time(_ name: String) throws -> Int64? {
        guard let text = arguments[name] else { return nil }
        guard let at = Timestamp.parse(text) else {
            throw UsageError(description: "--\(name) takes an RFC 3339 time such as 2026-11-01T00:00:00Z, not \(Preview.visible(text))")
        }
        return at
    }
    guard arguments.positionals.isEmpty else {
        throw UsageError(description: "stats takes no arguments beside its options (found \(Preview.visible(arguments.positionals[0])))")
    }
    let since = try time("since"), until = try time("until")
    if let since, let until, since > until {
        throw UsageError(description: "--since \(Timestamp.format(since)) is after --until \(Timestamp.format(until))")
    }
    if let since, let until, until - since > StatsSpan.longest {
        throw UsageError(description: "a span of at most \(StatsSpan.longestDays) days: --since and --until are further apart")
    }
    // A report reads a store; it never makes one (a mistyped path is an error, not an empty world).
    let location = try storeLocation(arguments)
    if !Store.isPostgresURL(location) {
        var folder: ObjCBool = false
        let size = (try? FileManager.default.attributesOfItem(atPath: location)[.size] as? Int) ?? 0
        guard !location.isEmpty, FileManager.default.fileExists(atPath: location, isDirectory: &folder), !folder.boolValue, size > 0 else {
            throw CommandError(description: "no store at \(Preview.visible(location.isEmpty ? "\"\"" : location))"
                               + (arguments["db"] == nil ? " yet: run stepo once to make it" : ""))
        }
    }
    let store = try Store(location: location)
    let end = try until ?? store.stats.newestEventTime() ?? Int64(Date().timeIntervalSince1970 * 1000)
    let start = since ?? end - 7 * Timestamp.day
    guard start <= end else {
        throw UsageError(description: "--since \(Timestamp.format(start)) is after the span's end, \(Timestamp.format(end))")
    }
    guard end - start <= StatsSpan.longest else {
        throw UsageError(description: "a span of at most \(StatsSpan.longestDays) days: give --until too, or a later --since")
    }
    // --from-rows (for benchmarks): every row of the span read one by one instead of the counters.
    let fromRows = arguments.has("from-rows")
    if !fromRows { try store.stats.catchUpStamps() }
    let budget = try store.stats.trustBudget(since: start, until: end, fromRows: fromRows)
    if arguments.has("json") {
        Output.line(budget.json.pretty)
        return 0
    }
    setlocale(LC_ALL, "")
    let terminal = isatty(1) == 1
    let environment = ProcessInfo.processInfo.environment
    let style: StatsReport.Style = !terminal ? .plain : environment["NO_COLOR"] != nil || environment["TERM"] == "dumb" ? .attributes : .colour
    for line in StatsReport(budget, width: terminalWidth(), unicode: stepo_locale_is_utf8() != 0, style: style).lines {
        Output.line(line)
    }
    return 0
}

/// The terminal's width in columns: the window's, else $COLUMNS, else (piped) 120.
func terminalWidth() -> Int {
    var size = winsize()
    if ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
    return Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "") ?? 120
}
