import Foundation
import Testing
import Storage
import TestSupport
@testable import Backend

/// A stored value this build cannot read — a kind or a state from a newer build, or a damaged
/// file — is an error that names the table, the column and the value. It is never read as some
/// other value: an unknown kind is not an announcement, an unknown push state is not `sent`, an
/// unknown account state is not `active`.
@Suite("Stored values read by name, never by default")
struct RowDecodingTests {
    let folder = NSTemporaryDirectory() + "stepo-decoding-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// The sample world, ingested by the real binary into a fresh store.
    private func sampleStore(_ name: String) throws -> String {
        let path = folder + "/\(name).db"
        let ingested = try Stepo.run(["ingest", "--db", path, "--quiet", Stepo.sampleEvents])
        #expect(ingested.status == 0, "\(ingested.stderr)")
        return path
    }

    @Test("a row of a kind this build does not know: a page of rows and `stepo rows` fail by name, and the terminal sees no control character")
    func unknownKind() throws {
        let path = try sampleStore("kind")
        let value = "hologram\u{1B}[31m"
        let row: Int, original: String
        do {
            let store = try Store(path: path)
            row = try #require(try store.db.scalar("SELECT min(id) FROM notifications"))
            original = try #require(try store.db.first("SELECT kind FROM notifications WHERE id = ?", [row]) { $0.string(0) })
            try store.db.run("UPDATE notifications SET kind = ? WHERE id = ?", value, row)
            #expect(throws: RowDecodingError(table: "notifications", column: "kind", value: value)) {
                try store.inboxes.rows(afterRow: 0, limit: 10)
            }
            // The rows before it still read; the one after it too.
            #expect(try store.inboxes.rows(afterRow: row, limit: 1).count == 1)
        }
        let printed = try Stepo.run(["rows", "--db", path, "--after", "0"])
        #expect(printed.status == 1)
        #expect(printed.stderr.contains(#"notifications.kind holds "hologram\u{1B}[31m", which this build cannot read"#), "\(printed.stderr)")
        #expect(!printed.stderr.contains("\u{1B}"))
        // Put back, it reads again: nothing was changed by the failed reads.
        let store = try Store(path: path)
        try store.db.run("UPDATE notifications SET kind = ? WHERE id = ?", original, row)
        #expect(try store.inboxes.rows(afterRow: 0, limit: 10).count == 10)
    }

    @Test("a push state or an account state this build does not know is not read as sent or active")
    func unknownStates() throws {
        let path = try sampleStore("states")
        let store = try Store(path: path)
        let row: Int = try #require(try store.db.scalar("SELECT min(id) FROM notifications"))
        try store.db.run("UPDATE notifications SET push = 'beamed' WHERE id = ?", row)
        #expect(throws: RowDecodingError(table: "notifications", column: "push", value: "beamed")) {
            try store.inboxes.rows(afterRow: 0, limit: 10)
        }
        let user = try #require(try store.db.first("SELECT ext FROM users ORDER BY id LIMIT 1", []) { $0.string(0) })
        // The schema's CHECK refuses it; a newer build's schema, or a damaged file, would not.
        try store.db.execute("PRAGMA ignore_check_constraints = ON")
        try store.db.run("UPDATE users SET state = 'hibernating' WHERE ext = ?", user)
        #expect(throws: RowDecodingError(table: "users", column: "state", value: "hibernating")) {
            try store.user(user)
        }
    }
}
