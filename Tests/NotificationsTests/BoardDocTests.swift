import Foundation
import Notifications
import Testing

/// docs/board.md states the product's rules as this project implements them. Its tables are
/// drawn from the engine here, and the suite fails while the file says something else:
/// `STEPO_WRITE_DOCS=1 swift test --filter BoardDoc` rewrites them in place.
@Suite("docs/board.md")
struct BoardDocTests {
    static var path: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/board.md").path
    }

    static let maya = Person(id: "maya", username: "maya.o", name: "Maya Okonkwo", avatarUrl: "https://cdn.stepo.app/u/maya.jpg")
    static let subject = Subject(stepId: "ridge-3", caption: "Trail run before work", photoUrl: "https://cdn.stepo.app/s/ridge-3.jpg",
                                 commentId: "c1", commentText: "so proud of this one", journeyId: "guitar",
                                 journeyTitle: "Learn to play guitar", tier: "Celebrator",
                                 text: "Share your journey with a link — new in Stepo", link: "https://stepo.app/new")

    static func media(_ n: Notifications.Notification) -> String {
        switch (n.media.face != nil, n.media.image != nil) {
        case (true, true): return "face + step photo"
        case (true, false): return "face"
        case (false, true): return "step photo"
        case (false, false): return "Stepo's mark"
        }
    }

    static func lands(_ tap: Tap) -> String {
        switch tap {
        case let .step(_, comments, _):
            switch comments {
            case .closed: return "the step"
            case .open: return "the step, comments open"
            case .highlight: return "the step, the comment highlighted"
            }
        case let .profile(_, action):
            switch action {
            case .followBack: return "their profile, offering Follow back"
            case .acceptDecline: return "their profile, offering Accept / Decline"
            case .none: return "their profile"
            }
        case let .journey(_, panel): return panel == .people ? "the journey, its people panel" : "the journey"
        case .link: return "the link it announces (else the feed)"
        case .interactions: return "the step's interactions list"
        }
    }

    /// The kinds table: one line per kind the engine produces, from the engine itself.
    static var kinds: String {
        var lines = ["| kind | category | priority | the push carries | a tap opens | title: body (example) |",
                     "|---|---|---|---|---|---|"]
        for kind in Kind.live {
            let n = Notifications.Notification(kind: kind, actor: kind == .announcement ? nil : maya, subject: subject)
            lines.append("| `\(kind.rawValue)` | \(kind.category.rawValue) | \(kind.priority.rawValue) | \(media(n)) | \(lands(n.tap)) | \(n.title): \(n.body) |")
        }
        // A batch has its action's category and priority; its example is seven hearts.
        let batchable = Kind.live.filter(\.batches).map { "`\($0.rawValue)`" }.joined(separator: ", ")
        lines.append("| `batch` (of \(batchable)) | its action's | its action's | facepile (≤ \(Batching.faces) faces) + step photo | "
                     + "\(lands(.interactions("s"))) | \(Batching.title(latest: "Jules", people: 7)): \(Batching.body(.steppedWithHeart)) |")
        return lines.joined(separator: "\n")
    }

    /// The quiet rules table, in the order they are checked.
    static var reasons: String {
        var lines = ["| reason | outcome |", "|---|---|"]
        for reason in Reason.allCases {
            lines.append("| `\(reason.rawValue)` | \(reason.keepsRow ? "the row is kept, the push withheld" : "no row, no push") |")
        }
        return lines.joined(separator: "\n")
    }

    /// Quiet hours at work: when a push decided at an instant goes, in examples the engine
    /// computes (a usual night, both daylight-saving changes, a zone far from UTC).
    static var quiet: String {
        let examples: [(from: String, to: String, zone: String, at: String, note: String)] = [
            ("22:00", "07:00", "Europe/Paris", "2026-11-10T22:30:00Z", "23:30 in Paris"),
            ("22:00", "07:00", "Europe/Paris", "2026-11-11T12:00:00Z", "13:00 in Paris: outside"),
            ("22:00", "02:30", "Europe/Paris", "2027-03-27T23:00:00Z", "02:30 never happens that night"),
            ("22:00", "02:30", "Europe/Paris", "2026-10-24T21:00:00Z", "02:30 happens twice that night"),
            ("22:00", "07:00", "Pacific/Kiritimati", "2026-11-01T09:00:00Z", "23:00 there, UTC+14"),
        ]
        var lines = ["| quiet hours | push decided at | goes at | |", "|---|---|---|---|"]
        for e in examples {
            let until = (try? QuietHours(from: e.from, to: e.to, zone: e.zone))?.heldUntil(Timestamp.parse(e.at)!)
            lines.append("| \(e.from)–\(e.to) \(e.zone) | \(e.at) | \(until.map(Timestamp.format) ?? "at once") | \(e.note) |")
        }
        return lines.joined(separator: "\n")
    }

    /// `text` with the part between `<!-- NAME -->` and `<!-- /NAME -->` replaced by `table`.
    static func replacing(_ name: String, with table: String, in text: String) throws -> String {
        guard let start = text.range(of: "<!-- \(name) -->\n"), let end = text.range(of: "<!-- /\(name) -->", range: start.upperBound..<text.endIndex) else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "docs/board.md lost its <!-- \(name) --> markers"])
        }
        return String(text[..<start.upperBound]) + table + "\n" + String(text[end.lowerBound...])
    }

    @Test("its tables are the engine's: every kind with its category, priority, media, tap and copy; every quiet rule in order")
    func tables() throws {
        let stored = try String(contentsOfFile: Self.path, encoding: .utf8)
        let drawn = try Self.replacing("quiet", with: Self.quiet,
                                       in: Self.replacing("reasons", with: Self.reasons, in: Self.replacing("kinds", with: Self.kinds, in: stored)))
        if ProcessInfo.processInfo.environment["STEPO_WRITE_DOCS"] == "1", stored != drawn {
            try drawn.write(toFile: Self.path, atomically: true, encoding: .utf8)
            return
        }
        if stored != drawn { Issue.record("docs/board.md's tables are stale: STEPO_WRITE_DOCS=1 swift test --filter BoardDoc") }
    }

    @Test("the quiet rules are listed in the order they are checked: with every later rule also applying, each one still decides")
    func order() {
        let applies: [Reason: (inout Candidate) -> Void] = [
            .self: { $0.isSelf = true }, .blocked: { $0.blocked = true }, .actorInactive: { $0.actorActive = false },
            .recipientInactive: { $0.recipientActive = false }, .notVisible: { $0.visible = false },
            .duplicate: { $0.duplicate = true }, .ladder: { $0.coveredByHigherRung = true },
            .deleted: { $0.contentDeleted = true }, .preferences: { $0.preferences.all = false },
            .dailyCeiling: { $0.ceilingReached = true },
        ]
        #expect(applies.count == Reason.allCases.count)
        for (index, reason) in Reason.allCases.enumerated() {
            var candidate = Candidate()
            for later in Reason.allCases[index...] { applies[later]?(&candidate) }
            #expect(QuietRules.decide(.heart, for: candidate) == (reason.keepsRow ? .row(.suppressed(reason)) : .noRow(reason)))
        }
    }

    @Test("every quiet rule and every preference switch is explained in words")
    func words() throws {
        let stored = try String(contentsOfFile: Self.path, encoding: .utf8)
        let prose = stored.components(separatedBy: "<!-- /reasons -->").last ?? ""
        for reason in Reason.allCases { #expect(prose.contains("`\(reason.rawValue)`"), "no words on \(reason.rawValue)") }
        for name in Preferences.switchNames { #expect(stored.contains("`\(name)`"), "no words on the \(name) switch") }
        #expect(stored.contains("\(QuietRules.dailyCeiling)"))
        #expect(stored.contains("\(Preview.limit)"))
    }
}
