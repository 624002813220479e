import Foundation
import TestSupport
import Notifications
import Wire
import Testing
@testable import Backend
@testable import Replica
@testable import Server

@Suite("A client killed mid-sync")
struct KillTests {
    static var binary: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("stepo").path
    }

    func runSync(_ url: String, _ token: String, state: String, killAfter: Double?) throws -> Int32? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["sync", "--server", url, "--token", token]
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_STATE_HOME"] = state
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        if let killAfter {
            Thread.sleep(forTimeInterval: killAfter)
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        return process.terminationReason == .exit ? process.terminationStatus : nil
    }

    @Test("it restarts on the same file and converges: no mutation lost, none applied twice")
    func killedMidSync() throws {
        let folder = NSTemporaryDirectory() + "stepo-kill-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let store = try Store(location: try TestEngine.location(folder, "server.db"))
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("sample-data/events.ndjson")
        for line in try String(contentsOf: sample, encoding: .utf8).split(separator: "\n") {
            _ = try Ingestor(store: store).apply(Data(line.utf8))
        }
        let token = try store.tokens.create(for: try store.user("chaucao"), admin: false, at: 0)
        let server = try HTTPServer(databasePath: try TestEngine.location(folder, "server.db"), port: 0, threads: 2)
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)"
        let state = folder + "/state"
        setenv("XDG_STATE_HOME", state, 1)
        let path = try Replica.defaultPath(server: URL(string: url)!.absoluteString, token: token)
        unsetenv("XDG_STATE_HOME")

        // A first sync, then stamps and acts queued while the client is not running.
        #expect(try runSync(url, token, state: state, killAfter: nil) == 0)
        var replica: Replica? = try Replica(path: path)
        let rows = try replica!.rows(limit: 20)
        for row in rows.prefix(10) { try replica!.markRead(row.id, at: 1) }
        try replica!.enqueue(.acceptRequest(user: "an"))
        try replica!.markAllSeen(at: 2)
        #expect(try replica!.pendingCount() == 12)
        replica = nil

        // Killed at several points mid-sync, then let finish.
        for delay in [0.02, 0.05, 0.1] { _ = try runSync(url, token, state: state, killAfter: delay) }
        #expect(try runSync(url, token, state: state, killAfter: nil) == 0)

        let after = try Replica(path: path)
        #expect(try after.pendingCount() == 0)
        let me = try #require(try store.user("chaucao"))
        let fresh = try store.recount(for: me.key)
        let (unseen, unread) = (fresh.unseen, fresh.unread)
        #expect(try after.counts == ServerCounts(unseen: unseen, unread: unread, stale: false))
        #expect(unseen == 0 && unread == 96)
        for row in rows.prefix(10) { #expect(try store.inboxes.row(row.id)?.readAt != nil) }
        #expect(try store.sync.lastApplied(client: try after.clientId, for: me) == 12)
        let an = try #require(try store.user("an"))
        #expect(try store.inboxes.activity(of: an).filter { $0.kind == .followRequestAccepted }.count == 1)
        #expect(try store.follows(an.key, me.key))
    }
}
