import Backend
import Foundation
import Notifications

let ingestCommand = Command(
    name: "ingest",
    summary: "Apply an NDJSON event stream; print one JSON line per notification row created.",
    usage: "stepo ingest [--db FILE] [FILE|-]",
    details: """
    Reads FILE, or standard input when FILE is - or absent. Each line is one event of the
    contract (docs/events.md) and is applied atomically. A bad line (malformed JSON, unknown
    type, missing field, unknown id, interaction on an unpublished or deleted step, invalid
    UTF-8, over 1 MiB) is reported on stderr with its line number and skipped; the rest apply.
    A repeated event id is a no-op.

    Exit status: 0 when every line applied, 1 when any line was rejected, 2 on a usage error.
    """,
    options: ["db"], flags: ["quiet"]
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
    }
    defer { if descriptor != 0 { close(descriptor) } }
    let store = try openStore(arguments)
    let reader = LineReader(fileDescriptor: descriptor)
    let label = source == "-" ? "stdin" : Preview.visible(source)
    let report = try Ingestor(store: store).ingest(reader, onRow: { row in
        Output.line(row.contractJSON.serialized)
    }, onReject: { line, reason in
        Output.error("stepo ingest: \(label):\(line): \(reason)")
    }, onBatch: Output.flush)
    Output.flush()
    if !arguments.has("quiet") {
        Output.error("stepo ingest: \(report.applied) events applied, \(report.repeated) repeated, "
                     + "\(report.rejected) rejected, \(report.rows) rows created")
    }
    return report.rejected > 0 ? 1 : 0
}
