import BenchSupport
import Foundation
import Notifications
import Testing
import TestSupport
@testable import Backend

/// A first sync in a terminal says how far it is and how fast it goes, on one line redrawn in
/// place; piped, it says nothing but its result.
@Suite("A first sync's progress", .enabled(if: !TestEngine.isPostgres))
struct ProgressTests {
    let folder = NSTemporaryDirectory() + "stepo-progress-" + UUID().uuidString

    @Test("in a terminal: one line with the rows and the rate, ending at 100%; through a pipe: no progress at all")
    func progress() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Three pages' worth of rows for u1.
        let store = try Store(path: folder + "/server.db")
        let world = BulkWorld(store)
        try world.build {
            try world.addUsers(1...21)
            try world.addJourneys(1, owners: 1)
            try world.addSteps(10, journeys: 1, publishedAt: 0)
            try world.addRows(recipient: 1, count: 12_000, newest: Timestamp.parse("2026-11-29T12:00:00Z")!, spacing: 1000,
                              actors: 2...21, steps: 10)
        }
        let token = try store.tokens.create(for: try store.user("u1"), admin: false, at: 0)
        let (server, address) = try Stepo.serve(folder + "/server.db", log: folder + "/serve.log")
        defer { server.stop() }

        let tmux = try Tmux(folder: folder + "/tmux")
        try tmux.start("env XDG_STATE_HOME=\(folder)/terminal \(Stepo.binary) sync --server \(address) --token \(token); sleep 30",
                       width: 120, height: 10)
        defer { tmux.stop() }
        let screen = try tmux.waitFor(seconds: 30) { $0.contains("synced 12,000 rows") || $0.contains("synced 12000 rows") }
        let bar = screen.split(separator: "\n").first { $0.contains("100%") }
        #expect(bar?.contains("12,000 / 12,000 rows") == true, "\(screen)")
        #expect(bar?.contains("rows/s") == true, "\(screen)")
        // Redrawn in place: one progress line on the screen, not one per page.
        #expect(screen.split(separator: "\n").filter { $0.contains("%") }.count == 1, "\(screen)")

        let piped = try Stepo.run(["sync", "--server", address, "--token", token], environment: ["XDG_STATE_HOME": folder + "/piped"])
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stdout.contains("synced 12"), "\(piped.stdout)")
        #expect(!piped.stderr.contains("\r") && !piped.stderr.contains("rows/s") && !piped.stdout.contains("%"), "\(piped.stderr)")
    }
}
