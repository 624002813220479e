import Foundation

let benchCommand = Command(
    name: "bench",
    summary: "Run a benchmark and print its figures (build with -c release).",
    usage: "stepo bench engine [--only fanout|ingest] [--phases] [--followers N] [--store-rows N] [--events N] [--dir FOLDER]",
    details: """
    engine: fan-out of one step publish to 100,000 followers into a store of 1,000,000 rows,
    compared with a raw INSERT … SELECT of the same rows; unseen/unread counts for a user with
    10,000 rows; ingest of 100,000 interaction events from NDJSON. --phases times ingest's
    stages (read, parse, apply, output) one at a time, for diagnosis.
    """,
    options: ["followers", "store-rows", "events", "dir", "only"], flags: ["phases"]
) { arguments in
    switch arguments.positionals.first {
    case "engine":
        return try EngineBench(arguments: arguments).run()
    case nil:
        throw UsageError(description: "name a benchmark: engine")
    case let other?:
        throw UsageError(description: "unknown benchmark \(other); try engine")
    }
}
