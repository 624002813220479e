import Foundation
import Testing
import TestSupport

/// One replica file, several processes syncing it at once for the first time (an inbox and a
/// `stepo sync` started together): the schema is made once, and every process succeeds.
@Suite("Concurrent first syncs of one replica")
struct ConcurrentFirstSyncTests {
    @Test("three stepo sync of one new replica at once, six times over: all succeed, none trips over the schema")
    func threeAtOnce() throws {
        let folder = NSTemporaryDirectory() + "stepo-concurrent-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let db = folder + "/store.db"
        #expect(try Stepo.run(["ingest", "--db", db, Stepo.sampleEvents]).status == 0)
        for round in 0..<6 {
            let env = ["XDG_STATE_HOME": folder + "/state-\(round)"]
            let runs = try (0..<3).map { n in
                try Spawn.start([Stepo.binary, "sync", "--db", db, "--user", "chaucao"], log: folder + "/sync-\(round)-\(n).log", environment: env)
            }
            for (n, run) in runs.enumerated() {
                let status = run.wait(timeout: 60)
                let log = String(decoding: FileManager.default.contents(atPath: folder + "/sync-\(round)-\(n).log") ?? Data(), as: UTF8.self)
                #expect(status == 0, "round \(round), process \(n): \(log.prefix(400))")
                #expect(!log.contains("already exists") && log.split(separator: "\n").count <= 3, "round \(round), process \(n): \(log.prefix(400))")
            }
        }
    }
}
