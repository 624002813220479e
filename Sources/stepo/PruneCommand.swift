import CLI
import Backend
import Foundation
import Notifications

/// The fewest days a prune keeps: the daily ceiling and a batch's window look back up to a
/// day, so the rows of the last two always stay.
let fewestDaysKept = 2

/// The horizon `--keep-days N` or `--before T` names, checked against `now`.
func pruneHorizon(_ arguments: Arguments, now: Int64) throws -> Int64 {
    let day: Int64 = 86_400_000
    let latest = now - Int64(fewestDaysKept) * day
    switch (try arguments.integer("keep-days"), arguments["before"]) {
    case (let days?, nil):
        guard days >= fewestDaysKept else {
            throw UsageError(description: "--keep-days is at least \(fewestDaysKept): the daily ceiling and batches read the last day's rows")
        }
        guard days <= 36_500 else { throw UsageError(description: "--keep-days is at most 36500") }
        return now - Int64(days) * day
    case (nil, let text?):
        guard let at = Timestamp.parse(text) else {
            throw UsageError(description: "--before takes an RFC 3339 time (2026-01-31T00:00:00Z), not \(Preview.visible(text))")
        }
        guard at <= latest else {
            throw UsageError(description: "--before is at least \(fewestDaysKept) days ago (\(Timestamp.format(latest)) at the latest)")
        }
        return at
    case (nil, nil): throw UsageError(description: "give --keep-days N (or --before TIME)")
    case (_?, _?): throw UsageError(description: "give --keep-days N or --before TIME, not both")
    }
}

let pruneCommand = Command(
    name: "prune",
    summary: "Remove rows older than N days from the store, in small transactions; older events are refused from then on.",
    usage: "stepo prune (--keep-days N | --before TIME) [--db FILE | --database URL]",
    details: """
    The store keeps every row until told otherwise (docs/operations.md, "Retention"). A prune
    removes each person's rows older than the horizon (now minus N days, or TIME), oldest
    first, with their outbox entries and batch records, the why-not records of older events,
    and the oldest part of the event log that no kept row names. Unseen and unread fall with
    the rows; the trust budget's figures stay. From then
    on an event whose `at` is before the horizon is refused ("older than the store keeps"),
    so an event applied long ago can never apply twice.

    It works in transactions of at most 1,000 rows, so writers (a running `stepo serve`, an
    ingest) wait a few milliseconds at most. Stopped at any point, it leaves the store sound
    and its counts exact; run it again to finish. N is at least 2.

    Exit status: 0 when done, 1 when the store failed, 2 on a usage error.
    """,
    options: ["db", "database", "keep-days", "before"], flags: ["quiet"]
) { arguments in
    guard arguments.positionals.isEmpty else { throw UsageError(description: "stepo prune takes no FILE") }
    let horizon = try pruneHorizon(arguments, now: Int64(Date().timeIntervalSince1970 * 1000))
    let store = try openStore(arguments)
    // A prune reads each page once: no memory map of the file, a small cache.
    try store.limitMemory(cacheKiB: 8_192)
    let started = Date()
    let report = try store.prune(before: horizon) { progress in
        guard !arguments.has("quiet") else { return }
        Output.error("stepo prune: \(Plural.count(progress.rows, "row")) so far")
    }
    let seconds = Date().timeIntervalSince(started)
    if report.empty {
        Output.line("the store is empty: nothing to prune, and no horizon set (its first events are taken whatever their time)")
        return 0
    }
    Output.line("kept since \(Timestamp.format(report.horizon)): removed \(Plural.count(report.rows, "row")) of "
        + "\(Plural.count(report.recipients, "person", "people")), \(Plural.count(report.entries, "outbox entry", "outbox entries")), "
        + "\(Plural.count(report.suppressions, "why-not record")), \(Plural.count(report.events, "event")); \(report.transactions) transactions in "
        + String(format: "%.1f s, the longest %.1f ms", seconds, report.longestMilliseconds))
    return 0
}
