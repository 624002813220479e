import Foundation
import Testing
import TestSupport

/// docs/screens.md is this tour's captures: the real binary on the demo world in tmux, under a
/// pinned clock (`STEPO_CLOCK`) so the ages read the same on any day. The test fails when the
/// file differs from what the inbox draws today; `STEPO_WRITE_SCREENS=1 swift test --filter
/// ScreensDoc` writes it afresh.
@Suite("docs/screens.md")
struct ScreensDocTests {
    let folder = NSTemporaryDirectory() + "stepo-screens-" + UUID().uuidString

    static let clock = "2026-11-30T15:00:00Z"
    static var path: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/screens.md").path
    }

    /// One screen of the tour: what to press from where the previous one left off, what the
    /// screen must show before it is captured, and the words around it.
    struct Stop: Sendable {
        let title: String
        let prose: String
        let press: @Sendable (Tmux) throws -> Void
        let ready: @Sendable (String) -> Bool
    }

    static let tour: [Stop] = [
        Stop(title: "Activity, first visit",
             prose: """
             The New section holds what was unseen when the tab opened: each row with the tangerine dot \
             and the warm tint. Opening the tab stamps everything seen, so the badge beside "Activity" \
             reads 0. Every row about one step — hearts, comments, shares, a batch — stacks into one \
             card with its people's initials; ▣ marks a row that carries a photo; a chip names an earned \
             tier. The bar above the footer lists the categories with their unread counts; the footer \
             ends with where the selection is.
             """,
             // Once the first look's seen stamp is in: the badge reads 0.
             press: { _ in }, ready: { $0.contains(" New") && $0.contains("synced") && $0.hasPrefix(" Activity  0 ") }),
        Stop(title: "A thread expanded",
             prose: "Space (or →) opens a card into its rows; ← closes it.",
             press: { try $0.keys("Space") }, ready: { $0.contains("▾") }),
        Stop(title: "A step, landed on its comments",
             prose: """
             Enter on a comment row opens the step scrolled to the comments; k scrolls up to the caption, \
             the photo and the counts.
             """,
             press: { try $0.keys("j", "Enter") }, ready: { $0.contains(" Step") && $0.contains("Comments (") }),
        Stop(title: "Hearts and shares on a step",
             prose: """
             `i` on a step lists the people behind its hearts and shares, newest first: the list a \
             batched "and 12 others" row opens too.
             """,
             press: { try $0.keys("i") }, ready: { $0.contains(" Interactions") }),
        Stop(title: "Back on the list: what was opened is read",
             prose: """
             q goes back one screen at a time, to the row that was left (the cursor › marks the selected \
             row, with or without colour). The row that was opened lost its dot and its bold name (read \
             rows are drawn plain); it keeps the New section's tint until the tab is next opened. Rows seen \
             on an earlier visit and not opened carry ○. The header counts what is still unread.
             """,
             press: { try $0.keys("q", "q") }, ready: { $0.contains("›     Linh Trần Stepped with you") }),
        Stop(title: "A follow request's profile",
             prose: """
             A request taps to the requester's profile, with the relation as the replica knows it and \
             the actions it still allows.
             """,
             press: { try $0.filter("An Ng", then: "Enter") }, ready: { $0.contains(" Profile") && $0.contains("Accept") }),
        Stop(title: "A journey",
             prose: "Marco Ferri's finale taps to the journey: its steps, the final one starred.",
             press: { try $0.keys("q", "Escape"); try $0.filter("finale", then: "Enter") },
             // The live copy: a replica holds a journey's steps without their captions.
             ready: { $0.contains(" Journey") && $0.contains("★ ") && !$0.contains("shown when online") }),
        Stop(title: "Content that is gone",
             prose: """
             A row whose step was deleted says so in the board's words and falls back to its actor's \
             profile.
             """,
             press: { try $0.keys("q", "Escape"); try $0.filter("Hana", then: "j", "j", "Enter") },
             ready: { $0.contains(" Not available") }),
        Stop(title: "A batch",
             prose: """
             Seven people hearted one step within half an hour: one row, "Jules and 6 others", with the \
             newest member's initial and how many more. Its first heart made the one sound; each next \
             person replaced the lock-screen card silently. In the list the batch is one of its step's \
             rows, in the step's card; the filter shows it alone.
             """,
             press: { try $0.keys("q", "Escape"); try $0.filter("kind:batch") },
             // The filter's own footer, not the typing one: the list may match before Enter lands.
             ready: { $0.contains("Jules and 6 others") && $0.contains("filter /kind:batch (Esc clears)") }),
        Stop(title: "Who is in a batch",
             prose: """
             Enter on a batch lands where the board's tap column says: the list of who did it, newest \
             first, everyone by name as the server has them (the counts leave out people the reader may \
             not see).
             """,
             press: { try $0.keys("Enter") },
             ready: { $0.contains(" Interactions") && $0.contains("♥ Jules · ") }),
        Stop(title: "Push preview",
             prose: """
             `p` draws the push this row sends, from the same payload `stepo push` builds: the iOS banner \
             collapsed and expanded, the Android banner, and the grouped thread.
             """,
             press: { try $0.keys("q", "Escape", "g", "p") }, ready: { $0.contains(" Push preview") && $0.contains("Grouped") }),
        Stop(title: "A filter",
             prose: """
             `/` filters the list, in a small language: words (every one must match, in any order, \
             case and accents aside), a "quoted phrase", `kind:A,B`, `from:NAME`, `category:NAME`, \
             `is:unread` or `is:read`, and `-TERM` to leave rows out. A filtered list shows rows \
             standing alone; Esc clears it and keeps the selected row selected.
             """,
             press: { try $0.keys("q"); try $0.filter("kind:follow") }, ready: { $0.contains("filter /kind:follow (Esc clears)") }),
        Stop(title: "A filter's words, in any order",
             prose: "`/guitar marco` finds Marco Ferri's finale: its name holds one word, its copy the other.",
             press: { try $0.keys("Escape"); try $0.filter("guitar marco") },
             ready: { $0.contains("filter /guitar marco (Esc clears)") && $0.contains("Marco Ferri Finished") }),
        Stop(title: "A filter that matches nothing",
             prose: "The list says so, and how to get back; a key it cannot read says what the key takes.",
             press: { try $0.keys("Escape"); try $0.filter("zzz") }, ready: { $0.contains("No rows match /zzz") && $0.contains("filter /zzz (Esc clears)") }),
        Stop(title: "A category",
             prose: """
             `1`–`5` show one category's rows (step-with, social, engagement, journeys, Stepo), `0` all \
             of them. The bar above the footer names the categories with their keys and unread counts, the \
             one shown lit; the header names it too.
             """,
             press: { try $0.keys("Escape", "2") }, ready: { $0.contains("Social only (0 all)") && $0.contains("Requested to follow you") }),
        Stop(title: "A bulk read asks first",
             prose: """
             `A` marks read what the list shows — under a filter or a category, only that — and asks \
             first, saying how many rows it changes. Any key but y keeps them as they are.
             """,
             press: { try $0.keys("A") }, ready: { $0.contains("this list shows read (the rest stay as they are)? y / n") }),
        Stop(title: "Notification settings",
             prose: """
             `s`: the master switch and the categories, toggled in place with Space and sent as a \
             preferences change; quiet hours, typed after Enter (`22:00-07:00 Europe/Paris`), or turned off with x.
             """,
             press: { try $0.keys("n", "0", "s") }, ready: { $0.contains(" Notification settings") }),
        Stop(title: "Help",
             prose: "`?` lists every key.",
             press: { try $0.keys("q", "?") }, ready: { $0.contains("this help") }),
    ]

    /// The document the tour draws today.
    func render() throws -> String {
        let tmux = try Tmux(folder: folder)
        try tmux.start("env STEPO_CLOCK=\(Self.clock) " + tmux.inbox(), width: 100, height: 30)
        defer { tmux.stop() }
        var out = """
        # The inbox, as the terminal shows it

        Generated from the terminal tests' captures: `stepo` on the demo world (the demo user is
        chaucao) in a 100×30 tmux window, the tangerine theme, the clock pinned to \(Self.clock) so
        the ages stay put. Colours do not survive a text capture: the dot is tangerine and New rows
        carry a warm tint. Regenerate with `STEPO_WRITE_SCREENS=1 swift test --filter ScreensDoc`;
        the suite fails while this file differs from what the inbox draws.

        """
        for stop in Self.tour {
            try stop.press(tmux)
            let screen = try tmux.waitFor(seconds: 40, stop.ready)
            guard stop.ready(screen) else {
                throw Spawn.Failure(description: "the tour stopped at \"\(stop.title)\":\n\(screen)")
            }
            let lines = screen.split(separator: "\n", omittingEmptySubsequences: false).map { $0.replacingOccurrences(of: #"\s+$"#, with: "", options: .regularExpression) }
            out += "\n## \(stop.title)\n\n\(stop.prose)\n\n```\n" + lines.joined(separator: "\n")
                .trimmingCharacters(in: .newlines) + "\n```\n"
        }
        return out
    }

    @Test("docs/screens.md is what the inbox draws today")
    func current() throws {
        let drawn = try render()
        if ProcessInfo.processInfo.environment["STEPO_WRITE_SCREENS"] == "1" {
            try drawn.write(toFile: Self.path, atomically: true, encoding: .utf8)
        }
        let stored = (try? String(contentsOfFile: Self.path, encoding: .utf8)) ?? ""
        let storedLines = stored.split(separator: "\n", omittingEmptySubsequences: false)
        let drawnLines = drawn.split(separator: "\n", omittingEmptySubsequences: false)
        let first = zip(storedLines, drawnLines).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(storedLines.count, drawnLines.count)
        if stored != drawn {
            Issue.record("""
            docs/screens.md is stale from line \(first + 1): \
            stored "\(first < storedLines.count ? storedLines[first] : "(end)")", \
            drawn "\(first < drawnLines.count ? drawnLines[first] : "(end)")". \
            Run STEPO_WRITE_SCREENS=1 swift test --filter ScreensDoc
            """)
        }
    }
}
