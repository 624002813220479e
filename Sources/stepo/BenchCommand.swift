import Foundation

let benchCommand = Command(
    name: "bench",
    summary: "Run a benchmark and print its figures (build with -c release).",
    usage: "stepo bench engine [--only fanout|ingest] [--phases] [--followers N] [--store-rows N] [--events N] [--dir FOLDER]  |  stepo bench sync [--seconds 30]  |  stepo bench inbox [--rows 100000]",
    details: """
    engine: fan-out of one step publish to 100,000 followers into a store of 1,000,000 rows,
    compared with a raw INSERT … SELECT of the same rows; unseen/unread counts for a user with
    10,000 rows; ingest of 100,000 interaction events from NDJSON. --phases times ingest's
    stages (read, parse, apply, output) one at a time, for diagnosis.
    sync: against a `stepo serve` child on loopback — initial sync of 10,000 rows, one new row
    from event to replica, and 50 long-polling clients under 200 events/s for --seconds.
    """,
    options: ["followers", "store-rows", "events", "dir", "only", "seconds", "role", "port", "tokens", "rows"], flags: ["phases"]
) { arguments in
    switch arguments.positionals.first {
    case "engine":
        return try EngineBench(arguments: arguments).run()
    case "sync":
        return try SyncBench(arguments: arguments).run()
    case "inbox":
        return try InboxBench(arguments: arguments).run()
    case nil:
        throw UsageError(description: "name a benchmark: engine, sync or inbox")
    case let other?:
        throw UsageError(description: "unknown benchmark \(other); try engine, sync or inbox")
    }
}
