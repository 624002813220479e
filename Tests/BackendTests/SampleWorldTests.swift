import Foundation
import Notifications
import Wire
import Testing
@testable import Backend

/// The sample stream, ingested into a real SQLite file, shows the board's matrix verbatim.
@Suite("The sample world")
struct SampleWorldTests {
    static let samplePath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("sample-data/events.ndjson").path

    static func ingestSample(into world: World) throws -> Ingestor.Report {
        let descriptor = open(samplePath, O_RDONLY)
        guard descriptor >= 0 else { throw EventError("cannot open \(samplePath)") }
        defer { close(descriptor) }
        let reader = LineReader(fileDescriptor: descriptor)
        var rejects: [String] = []
        let report = try Ingestor(store: world.store).ingest(reader, onRow: { _ in }, onReject: { rejects.append("\($0): \($1)") })
        #expect(rejects.isEmpty)
        return report
    }

    @Test("every example of the board appears verbatim in chaucao's activity", arguments: [
        ("steppedWithHeart", "Maya Okonkwo", "Stepped with you by heart: Trail run before work — up the ridge and back."),
        ("steppedWithComment", "Linh Trần", "Stepped with you: so proud of this one"),
        ("steppedWithShare", "Devin Cole", "Stepped with you by share: Trail run before work…"),
        ("steppedWithShare", "Kofi Asante", "Stepped with you by share: Trail run before work…"),
        ("heart", "Priya Nair", "Hearted your step: First open-water session done."),
        ("comment", "Jules Moreau", "Commented: this is the kind of consistency I aspire to"),
        ("share", "Theo Salas", "Shared your step: First open-water session done."),
        ("reply", "Hana Watanabe", "Replied to you: same happened to me week one"),
        ("mention", "Ray Delgado", "Mentioned you: @chaucao you have to try this route"),
        ("newFollower", "Kofi Asante", "Started following you"),
        ("followRequest", "An Nguyễn", "Requested to follow you"),
        ("followRequestAccepted", "Vy Đặng", "Accepted your follow request"),
        ("firstStep", "Lena Ortiz", "Started a journey: Bake sourdough from scratch — day one is on air"),
        ("achievement", "Marco Ferri", "Finished Learn to play guitar — the finale is on air"),
        ("newStep", "Vy Đặng", "New step in Learning guitar at forty: barre chords finally ring clean"),
        ("recognitionReceived", "Priya Nair", "Became a Die-Hard Fan of your Learn to freedive"),
        ("recognitionEarned", "Marco Ferri", "You're now a Celebrator on Learn to play guitar"),
        ("announcement", "Stepo", "Share your journey with a link — new in Stepo"),
    ])
    func boardExample(kind: String, title: String, body: String) throws {
        let world = try World()
        _ = try Self.ingestSample(into: world)
        let rows = try world.activity("chaucao")
        let match = rows.filter { $0.kind.rawValue == kind && $0.title == title && $0.body == body }
        #expect(match.count == 1, "\(title) — \(body)")
        #expect(match.first?.deleted == false)
    }

    @Test("the store keeps every reference whole: PRAGMA foreign_key_check finds nothing")
    func referentialIntegrity() throws {
        let world = try World()
        _ = try Self.ingestSample(into: world)
        let violations = try world.referenceViolations()
        #expect(violations.isEmpty, "\(violations.prefix(5))")
    }

    @Test("replaying the whole sample stream is a no-op")
    func replay() throws {
        let world = try World()
        let first = try Self.ingestSample(into: world)
        #expect(first.rejected == 0)
        #expect(first.rows > 300)
        let total = try world.store.db.scalar("SELECT count(*) FROM notifications")
        let version = try world.store.currentVersion()
        let second = try Self.ingestSample(into: world)
        #expect(second.applied == 0)
        #expect(second.repeated == first.applied)
        #expect(second.rows == 0)
        #expect(try world.store.db.scalar("SELECT count(*) FROM notifications") == total)
        #expect(try world.store.currentVersion() == version)
    }
}

@Suite("The demo world moved to today")
struct SampleStreamTests {
    static func times(_ data: Data) throws -> [Int64] {
        try data.split(separator: UInt8(ascii: "\n")).map { try #require(Timestamp.parse(try JSON.parse(Data($0))["at"]?.string ?? "")) }
    }

    @Test("whole days forward, so the newest event is within the last 24 hours; every interval kept")
    func moved() throws {
        let original = try #require(FileManager.default.contents(atPath: SampleWorldTests.samplePath))
        let now = try #require(Timestamp.parse("2027-03-14T08:00:00Z"))
        let moved = try SampleStream.movedToToday(original, now: now)
        let before = try Self.times(original), after = try Self.times(moved)
        #expect(before.count == after.count)
        let shift = after[0] - before[0]
        #expect(shift > 0 && shift % Timestamp.day == 0)
        #expect(zip(before, after).allSatisfy { $1 - $0 == shift })
        let newest = try #require(after.max())
        #expect(newest <= now && now - newest < Timestamp.day)
        // Only the times changed: the same events, ingested, make the same rows.
        let a = try World(), b = try World()
        let reportA = try Ingestor(store: a.store).ingest(LineReader(data: original), onRow: { _ in }, onReject: { _, _ in })
        let reportB = try Ingestor(store: b.store).ingest(LineReader(data: moved), onRow: { _ in }, onReject: { _, _ in })
        #expect(reportA.rows == reportB.rows && reportB.rejected == 0)
        let bodies = { (w: World) in try w.store.activity(of: try #require(try w.store.user("chaucao"))).map(\.body) }
        #expect(try bodies(a) == bodies(b))
    }

    @Test("a stream already within the last day, or a clock behind it, is left as it is")
    func unchanged() throws {
        let original = try #require(FileManager.default.contents(atPath: SampleWorldTests.samplePath))
        let newest = try #require(try Self.times(original).max())
        #expect(try SampleStream.movedToToday(original, now: newest + Timestamp.day - 1) == original)
        #expect(try SampleStream.movedToToday(original, now: newest - 10 * Timestamp.day) == original)
    }
}
