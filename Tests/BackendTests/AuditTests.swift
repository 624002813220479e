import Foundation
import Notifications
import Testing
import TestSupport
import SQLite
@_spi(Bench) @testable import Backend

/// `stepo check` and the audit behind it: a sound store says so, a reference to nothing is
/// found and named, and what the store holds is counted.
@Suite("A store checked whole")
struct AuditTests {
    @Test("a sound store is sound; a row whose recipient is gone is named, and stepo check exits 1 on it")
    func check() throws {
        let w = try World()
        try w.users("o", "a")
        try w.journey("j", owner: "o")
        try w.step("s", journey: "j")
        let before = try w.store.audit.eventsApplied()
        #expect(before >= 4)
        try w.interact("heart", "a", "s")
        #expect(try w.store.audit.problems().isEmpty)
        #expect(try w.store.audit.eventsApplied() == before + 1)
        #expect(try w.store.audit.eventsApplied(idPrefix: "nothing-starts-so") == 0)
        #expect(try w.store.audit.rowsStored() == 1)
        let sound = try Stepo.run(["check"] + TestEngine.storeArguments(w.path))
        #expect(sound.status == 0 && sound.stdout.contains("\(before + 1) events, 1 row") && sound.stdout.contains("sound"),
                "\(sound.stdout)\(sound.stderr)")

        // Damage no store call can make: a row for someone who never existed, written behind
        // the store's back.
        try w.store.connection.run("""
            INSERT INTO notifications(event, recipient, ord, kind, push, created_at, version)
            VALUES ((SELECT max(id) FROM events), 999999, 2, 'heart', 'sent', 0, 1)
            """)
        let problems = try w.store.audit.problems()
        #expect(problems.count == 1 && problems.first?.contains("notifications") == true, "\(problems)")
        let damaged = try Stepo.run(["check"] + TestEngine.storeArguments(w.path))
        #expect(damaged.status == 1 && damaged.stdout.contains("problem: notifications"), "\(damaged.stdout)\(damaged.stderr)")
    }

    @Test("stepo check of a file that is not there says so and makes no store there")
    func nothingThere() throws {
        let folder = NSTemporaryDirectory() + "stepo-check-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let run = try Stepo.run(["check", "--db", folder + "/none.db"])
        #expect(run.status == 1 && run.stderr.contains("is not a stepo store: there is no file there"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/none.db"))

        // An empty file, and another program's database: said, and left exactly as they were.
        #expect(FileManager.default.createFile(atPath: folder + "/empty.db", contents: Data()))
        let other = try Database(path: folder + "/other.db")
        try other.execute("CREATE TABLE foo(x); INSERT INTO foo VALUES (1)")
        let before = try Data(contentsOf: URL(fileURLWithPath: folder + "/other.db"))
        for (name, why) in [("empty.db", "the file is empty"), ("other.db", "it holds no stepo schema")] {
            let refused = try Stepo.run(["check", "--db", folder + "/" + name])
            #expect(refused.status == 1 && refused.stderr.contains(why), "\(name): \(refused.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/empty.db")).isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/other.db")) == before)
    }

    @Test("stepo check of a store cut short says it cannot be read whole, exits 1, and leaves it as it was")
    func truncated() throws {
        let folder = NSTemporaryDirectory() + "stepo-check-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("sample-data/events.ndjson").path
        #expect(try Stepo.run(["ingest", "--db", folder + "/whole.db", "--quiet", sample]).status == 0)
        let whole = try Data(contentsOf: URL(fileURLWithPath: folder + "/whole.db"))
        let cut = whole.prefix(whole.count / 2)
        try cut.write(to: URL(fileURLWithPath: folder + "/cut.db"))
        let run = try Stepo.run(["check", "--db", folder + "/cut.db"])
        #expect(run.status == 1 && run.stdout.contains("cannot be read whole") && run.stdout.contains("problem:"), "\(run.stdout)\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/cut.db")) == cut)
    }
}
