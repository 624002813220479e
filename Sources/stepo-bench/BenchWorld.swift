import BenchSupport
import CLI
import Backend
import Foundation
import Notifications

/// The worlds the benches share, and the servers they run on them.
enum BenchWorld {
    /// A store where u1 has `rows` unseen hearts, a second apart, from a thousand people
    /// (u2 … u1001) on its 100 steps in 10 journeys: one person with a lot.
    static func popularReader(_ path: String, rows: Int) throws -> Store {
        try BulkWorld.popularReader(path, rows: rows)
    }

    /// `stepo serve` on `database`, on a port of the system's choosing: the child and its address.
    static func serve(_ database: String, log: String, _ extra: [String] = []) throws -> (child: Child, address: String) {
        let server = try Child.start([Bench.stepo, "serve", "--db", database, "--port", "0", "--quiet"] + extra, log: log)
        do {
            return (server, try Child.address(in: log))
        } catch {
            server.stop()
            throw error
        }
    }
}

/// Lines written to a file a megabyte at a time.
enum BenchFiles {
    static func writeLines(_ count: Int, to path: String, _ line: (Int) -> String) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var chunk = ""
        chunk.reserveCapacity(1 << 20)
        for i in 0..<count {
            chunk += line(i)
            chunk += "\n"
            if chunk.utf8.count > 1 << 20 {
                handle.write(Data(chunk.utf8))
                chunk.removeAll(keepingCapacity: true)
            }
        }
        handle.write(Data(chunk.utf8))
    }
}

/// The uniform ingest of both engines' benches: 20,000 people, 5,000 of them owning a journey
/// with four steps; hearts, shares and comments (a mention in one comment of ten) from the
/// others, 1.5 s apart, about half inside their step's window, one in twenty to one popular
/// owner's steps.
enum UniformIngest {
    static let people = 20_000, owners = 5_000, steps = 20_000

    static func build(_ bulk: BulkWorld) throws {
        try bulk.build {
            try bulk.addUsers(1...people)
            try bulk.addJourneys(owners, owners: owners)
            try bulk.addSteps(steps, journeys: owners, publishedAt: Timestamp.parse("2026-11-28T00:00:00Z")!)
        }
    }

    static func write(_ events: Int, to path: String) throws {
        var rng = SeededGenerator(seed: 7)
        let start = Timestamp.parse("2026-11-28T01:00:00Z")!
        try BenchFiles.writeLines(events, to: path) { i in
            let at = Timestamp.format(start + Int64(i) * 1_500)
            let actor = Int.random(in: (owners + 1)...people, using: &rng)
            let step = i % 20 == 0 ? owners * Int.random(in: 1...(steps / owners), using: &rng) : Int.random(in: 1...steps, using: &rng)
            switch i % 10 {
            case 0...4: return #"{"id":"b\#(i)","type":"heart","at":"\#(at)","actor":"u\#(actor)","step":"s\#(step)"}"#
            case 5, 6: return #"{"id":"b\#(i)","type":"share","at":"\#(at)","actor":"u\#(actor)","step":"s\#(step)"}"#
            default:
                let mention = i % 30 == 7 ? "@u\(Int.random(in: 1...people, using: &rng)) " : ""
                return #"{"id":"b\#(i)","type":"comment","at":"\#(at)","actor":"u\#(actor)","step":"s\#(step)","comment":{"id":"c\#(i)","text":"\#(mention)so proud of this one, keep going"}}"#
            }
        }
    }
}
