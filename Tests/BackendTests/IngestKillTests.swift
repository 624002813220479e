import Foundation
import Testing
import TestSupport
@testable import Backend

/// `stepo ingest` killed with SIGKILL while it decides and writes a set of hearts, shares and
/// comments: what it committed is whole, what it had not is absent, and a rerun of the same
/// file leaves the store exactly as one uninterrupted ingest does, table for table.
@Suite("Faults: an ingest killed mid-set", .enabled(if: !TestEngine.isPostgres))
struct IngestKillTests {
    let folder = NSTemporaryDirectory() + "stepo-ingestkill-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// Feeds `lines` to `stepo ingest --db path -` a piece at a time (a batch commits whenever
    /// its input runs dry), waiting for each piece to be stored before the next, and kills it
    /// with SIGKILL `pause` after the piece `killAfter` was written: while it decides and
    /// writes that piece's sets.
    func killedIngest(_ lines: [String], into path: String, killAfter: Int, pause: useconds_t) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Stepo.binary)
        process.arguments = ["ingest", "--db", path, "--quiet", "-"]
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let piece = 400
        var stored = 0
        for (index, start) in stride(from: 0, to: lines.count, by: piece).enumerated() {
            let text = lines[start..<min(start + piece, lines.count)].joined(separator: "\n") + "\n"
            input.fileHandleForWriting.write(Data(text.utf8))
            if index == killAfter {
                usleep(pause)
                break
            }
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                let now = (try? Store(path: path).audit.eventsApplied()) ?? 0
                if now > stored { stored = now; break }
                usleep(20_000)
            }
            usleep(100_000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? input.fileHandleForWriting.close()
        #expect(process.terminationReason == .uncaughtSignal, "the ingest ended before it was killed")
    }

    @Test("killed while a set is in flight, then run again on the same file: the store is what one whole ingest makes",
          arguments: [(707, 3, 5_000), (808, 6, 40_000)] as [(UInt64, Int, useconds_t)])
    func killedMidSet(seed: UInt64, killAfter: Int, pause: useconds_t) throws {
        // The stream without the lines an ingest refuses: a refused line is not stored, so a
        // rerun asks it again of a later world, where it may be taken (a decline once its
        // request exists) — a rerun's meaning, not a fault's.
        let stream = RandomStream(seed: seed, events: 4_000, people: 30)
        let first = folder + "/first-\(seed).db"
        let refusals = try Stepo.run(["ingest", "--db", first, "--quiet", "-"], stdin: Data(stream.text.utf8)).stderr
        let refused = Set(refusals.split(separator: "\n").compactMap { line in
            line.hasPrefix("stepo ingest: stdin:") ? Int(line.dropFirst(20).prefix { $0.isNumber }) : nil
        })
        #expect(!refused.isEmpty, "the stream has no refused lines: the filter is not reading the refusals")
        let lines = stream.lines.enumerated().filter { !refused.contains($0.offset + 1) }.map(\.element)
        let file = folder + "/stream-\(seed).ndjson"
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: file))
        let reference = folder + "/whole-\(seed).db"
        let whole = try Stepo.run(["ingest", "--db", reference, "--quiet", file])
        #expect(whole.status == 0, "\(whole.stderr.suffix(2_000))")

        let killed = folder + "/killed-\(seed).db"
        try killedIngest(lines, into: killed, killAfter: killAfter, pause: pause)
        let partway = try Store(path: killed).audit.eventsApplied()
        #expect(partway > 0 && partway < lines.count, "the kill fell outside the ingest (\(partway) applied)")
        let check = try Stepo.run(["check", "--db", killed])
        #expect(check.status == 0 && check.stdout.contains("sound"), "after the kill: \(check.stdout)\(check.stderr)")

        let rerun = try Stepo.run(["ingest", "--db", killed, "--quiet", file])
        #expect(rerun.status == 0, "\(rerun.stderr.suffix(2_000))")
        let wholeTables = try DifferentialTests.tables(try Store(path: reference))
        let resumed = try DifferentialTests.tables(try Store(path: killed))
        #expect(wholeTables["interactions"]!.count > 100, "the stream made too few hearts and shares to test a set")
        for (table, rows) in wholeTables.sorted(by: { $0.key < $1.key }) where resumed[table] != rows {
            let other = resumed[table] ?? []
            let index = zip(rows, other).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(rows.count, other.count)
            Issue.record("""
                table \(table) differs first at \(index) (of \(rows.count) and \(other.count)):
                  whole:            \(index < rows.count ? rows[index] : "(none)")
                  killed and rerun: \(index < other.count ? other[index] : "(none)")
                """)
        }
    }
}
