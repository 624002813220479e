import CLI
import Backend
import Foundation
import Inbox
import Notifications
import Replica

/// Finding and loading the demo world in `sample-data/`.
enum SampleData {
    static let fileName = "events.ndjson"
    static let demoUser = "chaucao"

    /// The sample event file, found however stepo was started: `$STEPO_SAMPLE_DATA`, then
    /// wherever the project's files are (`projectPaths`).
    static func locate() -> String? {
        var candidates: [String] = []
        if let explicit = ProcessInfo.processInfo.environment["STEPO_SAMPLE_DATA"] {
            candidates.append(explicit.hasSuffix(".ndjson") ? explicit : explicit + "/" + fileName)
        }
        candidates += projectPaths("sample-data/\(fileName)")
        return candidates.first { FileManager.default.isReadableFile(atPath: $0) }
    }

    /// Seeds an empty store with the sample stream, and says so on stderr; does nothing when it
    /// already has events. Returns the number of rows created.
    ///
    /// The stream's times move forward by whole days, so its newest event lands within the last
    /// 24 hours: the demo world reads as two live weeks ("3h", "2d") on whatever day it is
    /// opened, and every interval inside it (the 24-hour windows, the ceiling) stays as written.
    /// `stepo ingest sample-data/events.ndjson` takes the times as they are.
    @discardableResult
    static func seedIfEmpty(_ store: Store, now: Int64 = WallClock.now) throws -> Int {
        guard store.isEmpty else { return 0 }
        guard let path = locate() else {
            throw CommandError(description: "cannot find sample-data/\(fileName); set STEPO_SAMPLE_DATA to its folder")
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw CommandError(description: "cannot read \(path)") }
        let shifted = try SampleStream.movedToToday(data, now: now)
        let fresh = URL(fileURLWithPath: store.path).deletingLastPathComponent().appendingPathComponent(".seed-\(getpid()).ndjson").path
        try shifted.write(to: URL(fileURLWithPath: fresh))
        defer { unlink(fresh) }
        let descriptor = open(fresh, O_RDONLY)
        guard descriptor >= 0 else { throw CommandError(description: "cannot read \(fresh)") }
        defer { close(descriptor) }
        let reader = LineReader(fileDescriptor: descriptor)
        var problems: [String] = []
        let report = try Ingestor(store: store).ingest(reader, onRow: { _ in }, onReject: { line, reason in
            problems.append("\(path):\(line): \(reason)")
        })
        if !problems.isEmpty {
            throw CommandError(description: "the sample data has bad lines:\n" + problems.joined(separator: "\n"))
        }
        Output.error("stepo: seeded \(store.path) with the sample world (\(report.rows) rows)")
        return report.rows
    }
}

extension SampleData {
    /// Removes the SQLite store at `path` and its embedded replicas, so the next open seeds the
    /// sample world afresh. Refuses while another process holds the store open.
    static func reset(_ path: String) throws {
        guard !Store.isPostgresURL(path) else { throw UsageError(description: "--reset resets a SQLite store, not a PostgreSQL one") }
        guard FileManager.default.fileExists(atPath: path) else { return }  // nothing to reset: it is seeded below
        let holders = processes(holding: path)
        guard holders.isEmpty else {
            let named = holders.map { "\($0.pid) (\(Preview.visible($0.name)))" }.joined(separator: ", ")
            throw CommandError(description: "\(Preview.visible(path)) is open in process \(named): stop it, then reset")
        }
        let identity = try Store(location: path).identity
        var removed = 0
        for replica in try Replica.embeddedPaths(store: identity) {
            for suffix in ["", "-wal", "-shm"] { unlink(replica + suffix) }
            removed += 1
        }
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        Output.error("stepo: reset \(Preview.visible(path)) and \(Plural.count(removed, "replica")) of it")
    }

    /// Other processes with `path` (or its WAL) open, from /proc: their pids and names.
    static func processes(holding path: String) -> [(pid: Int32, name: String)] {
        let targets = Set([path, path + "-wal"].map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path })
        var found: [(Int32, String)] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), pid != getpid() else { continue }
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(entry)/fd")) ?? []
            let holds = descriptors.contains { fd in
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/fd/\(fd)")).map(targets.contains) ?? false
            }
            if holds {
                let name = (try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
                found.append((pid, name))
            }
        }
        return found
    }
}

/// Where a file of the project (`relative` to its root) may be, in order: beside or above the
/// executable (`.build/debug/stepo` in a checkout, `share/stepo` when installed), then the
/// source tree this binary was built from, then the working directory.
func projectPaths(_ relative: String) -> [String] {
    var paths: [String] = []
    var folder = URL(fileURLWithPath: CommandLine.executablePath).deletingLastPathComponent()
    for _ in 0..<6 {
        paths.append(folder.appendingPathComponent(relative).path)
        paths.append(folder.appendingPathComponent("share/stepo/" + relative).path)
        folder.deleteLastPathComponent()
    }
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    paths.append(source.appendingPathComponent(relative).path)
    paths.append(FileManager.default.currentDirectoryPath + "/" + relative)
    return paths
}

let demoCommand = Command(
    name: "demo",
    summary: "Seed the default store from sample-data on first run and show the demo user's activity.",
    usage: "stepo demo [--db FILE] [--user ID] [--json] [--reset]",
    details: """
    What `stepo` prints when it has no terminal to open the inbox in.

    --reset starts the demo afresh: the store (the default one, or --db FILE) and every inbox
    replica of it are removed, and the sample world is seeded again, moved to today — every row
    New and unread, every request unanswered. It refuses while another process has the store
    open (a `stepo serve` or an inbox): stop it first.
    """,
    options: ["db", "user"], flags: ["json", "reset"]
) { arguments in
    if arguments.has("reset") { try SampleData.reset(try storeLocation(arguments)) }
    let store = try openStore(arguments)
    try SampleData.seedIfEmpty(store)
    let id = arguments["user"] ?? SampleData.demoUser
    guard let user = try store.user(id) else { throw CommandError(description: "unknown user \(Preview.visible(id))") }
    try printActivity(store, user, limit: 500, json: arguments.has("json"))
    return 0
}
