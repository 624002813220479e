import BenchSupport
import CLI
import Foundation

let benchCommand = Command(
    name: "stepo-bench",
    summary: "Run one of Stepo's benchmarks against the `stepo` binary beside it and print its figures (build both with -c release).",
    usage: "stepo-bench engine [--only uniform|ingest|follows|hearts|batch|fanout|counts|prune|quiet] [--scale 1,4] [--fraction F] [--dir FOLDER] [--guard [--only memory|cpu|instructions] [--regress savepoints|counters]]  |  stepo-bench sync [--rows 10000,100000,1000000] [--comment-rows 100000,400000] [--first-only] [--seconds 30]  |  stepo-bench inbox [--rows 10000,100000,1000000] [--seconds 60]  |  stepo-bench deliver [--only throughput|latency] [--scale 1,4] [--fraction F] [--standins own|granian] [--batch N] [--streams N] [--guard [--only cpu|instructions] [--regress single|batch32]]  |  stepo-bench scaleout [--only throughput|load|fanout|ingest] [--scale 1,4] [--posters 16] [--pgbench-seconds 20] [--clients 500] [--rate 1000] [--seconds 60] [--followers 250000] [--events 250000] [--statements] [--guard] [--driver wrk|own]  |  stepo-bench stats [--rows 10000,10000000] [--people 10000] [--guard]  |  stepo-bench api [--seconds 8] [--connections 32]  |  stepo-bench standins --dir FOLDER [--port 0] [--script FILE]",
    details: """
    engine: uniform worlds — one publish to 100,000 followers into a store of 1,000,000 rows
    (against a raw INSERT … SELECT of the same rows), counts for a user with 10,000 rows,
    ingest of 100,000 interactions — and skewed ones, each at 1× and 4× (--scale): follows of
    one account, a million hearts to one person over ten days, one publish to a million
    followers, counts for a person with a million rows, the prune of a million rows and their
    events (prune), one publish to 100,000 phones with and without quiet hours for half of
    them (quiet). --fraction shrinks every world for a
    quick look (the targets are for 1). --guard is CI's short run: the peak memory of the real
    `stepo ingest` of 50,000 events, the ingest's CPU against a raw insert of its rows, seven
    pairs in turns (three floors each), the median ratio, then the instructions and system
    calls of both counted by valgrind (--only memory, cpu or instructions: one of the three); --regress savepoints|counters runs it on a known regression it must fail (a
    savepoint per chunk; the trust budget's counters written a row at a time).
    sync: a first sync of --rows rows (10000,100000,1000000; one version, few entities) and of
    --comment-rows comments (100000,400000; each by one of 1,000 people, each its own version;
    0: none) by the real `stepo sync` against a `stepo serve` child, timed from its start with
    its peak memory, beside the floor (the synced tables copied by SQLite into a fresh replica);
    one new row from event to replica; 50 long-polling clients under 200 events/s for
    --seconds. --first-only stops after the first syncs.
    deliver: the real `stepo deliver` against HTTP/2 stand-ins for APNs and FCM, one process
    each on a core of its own: the bench's own (`stepo-bench standins`: nghttp2, the checks in
    Swift, a fraction of the worker's cost) or, with --standins granian, the tests' (Granian,
    the checks in Python). One publish to 20,000 followers' phones, from process start to an
    empty outbox (the worker's CPU a push ≤ 60 µs, the stand-ins' beside it), and 1,000 follows
    a second for 10 s, each row's commit to its provider's answer (p99 ≤ 200 ms); each at 1×
    and 4×. --guard is CI's short run: the worker's CPU against rows inserted raw, eleven pairs,
    then its instructions and system calls a push counted by valgrind (--only cpu or
    instructions: one of the two); --regress single|batch32 runs it on a known regression it
    must fail.
    standins: the bench's own stand-in alone, on --port (0: any), its keys made in --dir by
    the tests' script (--script, Tests/Standins/standins.py).
    scaleout: the store on PostgreSQL (a throwaway cluster of the bench's own) behind three
    `stepo serve` processes: pgbench's TPC-B on the same cluster (--posters clients, for
    --pgbench-seconds: 20), then --posters (16) keep-alive clients posting hearts and comments
    as fast as they are answered for --seconds (20) — events/s ≥ 0.60 × pgbench's tps, no
    errors; --clients long-polls (500; ×4 at 4×) under --rate hearts a second
    (1,000) for --seconds (60) — errors, each post's time (p99 ≤ 50 ms), a post to its owner's
    long-poll answer on whichever server (p99 ≤ 200 ms); and one publish to --followers × the
    scale (250,000: a million at 4×) against a raw INSERT … SELECT in psql (≤ 2×); and
    `stepo ingest --database` of --events × the scale (250,000: a million at 4×) uniform
    interactions from process start to exit (≥ 5,000 events/s, ≤ 60 MB). --statements prints
    PostgreSQL's account of the throughput run; --guard (with --only throughput) is CI's
    short run, judged by statements and pages per event.
    stats: the real `stepo stats --json` from process start over stores of --rows rows
    (10000,10000000) among the same 10,000 people, median of 5 (≤ 200 ms, and no more than 2×
    from the smallest to the largest), beside the same figures read row by row. --guard (CI's
    short run, any build): the only target is that at the largest size the counters take at
    most a quarter of the time the same figures take read row by row.
    api: the sample world behind the real `stepo serve`: the demo user's GET
    /v1/activity?limit=50, GET /v1/counts and the page again with If-None-Match, each driven
    by wrk (two threads, --connections keep-alive connections, --seconds each), beside nginx
    serving the very bytes the server answered, in the same run (needs wrk and nginx).
    """,
    options: ["dir", "only", "scale", "fraction", "seconds", "role", "port", "tokens", "rows", "standins", "batch", "streams", "clients", "rate", "followers", "posters", "pgbench-seconds", "people", "events", "regress", "driver", "connections", "script", "comment-rows", "db"], flags: ["first-only", "statements", "guard"],
    program: ""
) { arguments in
    switch arguments.positionals.first {
    case "engine":
        if arguments["role"] != nil { return try EngineBench.role(arguments) }
        return try EngineBench(arguments: arguments).run()
    case "sync":
        return try SyncBench(arguments: arguments).run()
    case "inbox":
        return try InboxBench(arguments: arguments).run()
    case "deliver":
        if arguments["role"] == "floor" { return try DeliverBench.floorRole(arguments) }
        return try DeliverBench(arguments: arguments).run()
    case "scaleout":
        return try ScaleoutBench(arguments: arguments).run()
    case "stats":
        return try StatsBench(arguments: arguments).run()
    case "api":
        return try ApiBench(arguments: arguments).run()
    case "standins":
        return try StandInCommand.run(arguments)
    case nil:
        throw UsageError(description: "name a benchmark: engine, sync, inbox, deliver, scaleout, stats or api")
    case let other?:
        throw UsageError(description: "unknown benchmark \(other); try engine, sync, inbox, deliver, scaleout, stats or api")
    }
}

let words = Array(CommandLine.arguments.dropFirst())
exit(benchCommand.execute(words.isEmpty ? ["--help"] : words))
