import CLI
import Backend
import Foundation
import Notifications

let ingestCommand = Command(
    name: "ingest",
    summary: "Apply an NDJSON event stream; print one JSON line per notification row created.",
    usage: "stepo ingest [--db FILE | --database URL] [FILE|-]",
    details: """
    Reads FILE, or standard input when FILE is - or absent. Each line is one event of the
    contract (docs/events.md) and is applied atomically. A bad line (malformed JSON, unknown
    type, missing field, unknown id, interaction on an unpublished or deleted step, invalid
    UTF-8, over 1 MiB) is reported on stderr with its line number and skipped; the rest apply.
    A repeated event id is a no-op.

    The rows printed are a report of this run, not a delivery channel: a row is printed after
    its batch commits, so a run killed in between stored rows it never printed (and a rerun
    calls their events repeated). To resume a consumer, `stepo rows --after ROW` prints every
    row after the last one it has, in the same shape. Push delivery has its own outbox.

    When the store itself fails (a full disk, a lost connection), the run stops at that line
    and names it: the lines before it are stored, and a second run skips them.

    Exit status: 0 when every line applied, 1 when any line was rejected or the store failed,
    2 on a usage error.
    """,
    options: ["db", "database"], flags: ["quiet"]
) { arguments in
    guard arguments.positionals.count <= 1 else { throw UsageError(description: "give at most one FILE") }
    let source = arguments.positionals.first ?? "-"
    let descriptor: Int32
    if source == "-" {
        descriptor = 0
    } else {
        descriptor = open(source, O_RDONLY)
        guard descriptor >= 0 else {
            throw CommandError(description: "cannot read \(Preview.visible(source)): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        if fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            close(descriptor)
            throw CommandError(description: "\(Preview.visible(source)) is a directory: give an NDJSON file, or - for standard input")
        }
    }
    defer { if descriptor != 0 { close(descriptor) } }
    let store = try openStore(arguments)
    // A long ingest reads the store's recent pages again and again, and the rest seldom: a
    // 24 MB page cache and no memory map of the file (whose pages, once read, count in this
    // process's memory: a million-event store is 630 MB) keep a run of any length under 80 MB.
    try store.limitMemory(cacheKiB: Ingestor.pageCacheKiB)
    let reader = LineReader(fileDescriptor: descriptor)
    let label = source == "-" ? "stdin" : Preview.visible(source)
    let report: Ingestor.Report
    do {
        report = try Ingestor(store: store).ingest(reader, onRow: { row in
            Output.line(row.contractJSON.serialized)
        }, onReject: { line, reason in
            Output.error("stepo ingest: \(label):\(line): \(reason)")
        }, onBatch: Output.flush)
    } catch let failure as Ingestor.LineFailure {
        // The store itself failed at one line: the lines before it are kept (and printed).
        Output.flush()
        throw CommandError(description: "\(label):\(failure.line): \(failure.reason)")
    }
    Output.flush()
    if !arguments.has("quiet") {
        Output.error("stepo ingest: \(Plural.count(report.applied, "event")) applied, \(report.repeated) repeated, "
                     + "\(report.rejected) rejected, \(Plural.count(report.rows, "row")) created"
                     + (report.batchChanges > 0 ? ", \(Plural.count(report.batchChanges, "batch change"))" : ""))
        if report.applied == 0 && report.repeated > 0 {
            // Nothing new: every event was already in this store, so it made no rows again.
            Output.error("stepo ingest: every event was already applied to \(Preview.visible(store.path)) (a repeated id is a no-op); "
                         + "`stepo rows --after 0` prints the rows it made, or use --db NEW.db for a fresh store")
        }
    }
    return report.rejected > 0 ? 1 : 0
}

let rowsCommand = Command(
    name: "rows",
    summary: "Print the store's rows after a row id, in `stepo ingest`'s shape: a consumer resumes here.",
    usage: "stepo rows [--db FILE | --database URL] --after ROW [--limit N]",
    details: """
    Every row with an id above ROW, oldest first, one contract JSON line each — the same lines
    `stepo ingest` printed when it made them. A consumer that stopped (or whose ingest was
    killed between a commit and its printing) asks again after the last id it holds.
    """,
    options: ["db", "database", "after", "limit"], flags: []
) { arguments in
    guard let after = try arguments.integer("after"), after >= 0 else { throw UsageError(description: "--after ROW (a row id, 0 for all) is required") }
    let limit = try arguments.integer("limit") ?? Int.max
    guard limit > 0 else { throw UsageError(description: "--limit must be positive") }
    let store = try openStore(arguments)
    var last = after
    var left = limit
    while left > 0 {
        let rows = try store.inboxes.rows(afterRow: last, limit: min(left, 10_000))
        guard !rows.isEmpty else { break }
        for row in rows { Output.line(row.contractJSON.serialized) }
        last = rows.last!.id
        left -= rows.count
    }
    return 0
}
