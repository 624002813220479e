import Foundation
import Notifications
import Testing
import TestSupport
@testable import Backend

/// `stepo stats`: the real binary over a real store, piped and in a terminal.
@Suite("stepo stats")
struct StatsCommandTests {
    let folder = NSTemporaryDirectory() + "stepo-stats-" + UUID().uuidString

    /// The sample world: its mutes at the end of the stream (docs/stats.md).
    func sampleStore() throws -> String {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let location = try TestEngine.location(folder, "stats.db")
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../sample-data/events.ndjson").path
        let ingest = try Stepo.run(["ingest"] + TestEngine.storeArguments(location) + ["--quiet", sample], timeout: 120)
        #expect(ingest.status == 0, "\(ingest.stderr)")
        return location
    }

    @Test("--json prints the contract's object: the sample world's mutes with the kinds that preceded them")
    func json() throws {
        let store = try sampleStore()
        let result = try Stepo.run(["stats"] + TestEngine.storeArguments(store) + ["--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSON.parse(result.stdout)
        #expect(json["until"] == "2026-11-29T12:00:00Z" && json["since"] == "2026-11-22T12:00:00Z")
        // Sofia (journeys, six days before the end), Arjun (journeys), Diego (everything, after
        // journey pushes) and Maya (stepped-with); Noah's switch had no push before it.
        #expect(json["mutes"] == 4)
        #expect(json["categories"]?["journeys"]?["mutes"] == 3)
        #expect(json["categories"]?["stepWith"]?["mutes"] == 1)
        #expect(json["categories"]?["stepWith"]?["mutedAfter"]?["steppedWithHeart"] == 1)
        #expect(json["categories"]?["social"]?["mutes"] == 0)
        let rate = try #require(json["muteRate"]?.number)
        let recipients = try #require(json["recipients"]?.int)
        #expect(rate > 0 && rate == 4 / Double(recipients))

        let narrow = try Stepo.run(["stats"] + TestEngine.storeArguments(store)
                                   + ["--json", "--since", "2026-11-29T00:00:00Z", "--until", "2026-11-29T11:00:00Z"])
        #expect(try JSON.parse(narrow.stdout)["mutes"] == 0)
    }

    @Test("piped, the report is plain text: no escape sequences, the headline first, lines within 80 columns")
    func plain() throws {
        let store = try sampleStore()
        let result = try Stepo.run(["stats"] + TestEngine.storeArguments(store), environment: ["LANG": "C.UTF-8", "COLUMNS": "80"])
        #expect(result.status == 0)
        #expect(!result.stdout.contains("\u{1B}"))
        #expect(result.lines.contains { $0.hasPrefix("Mute rate  ") && $0.contains("4 mutes among 42 people") })
        #expect(result.lines.contains { $0.contains("Journeys") && $0.contains("3") })
        #expect(result.lines.allSatisfy { $0.count <= 80 }, "\(result.lines.filter { $0.count > 80 })")
        #expect(result.stdout.contains("▁") || result.stdout.contains("█"))
    }

    @Test("under LANG=C the charts are ASCII")
    func ascii() throws {
        let store = try sampleStore()
        let result = try Stepo.run(["stats"] + TestEngine.storeArguments(store), environment: ["LANG": "C", "LC_ALL": "C"])
        #expect(result.status == 0)
        #expect(result.stdout.unicodeScalars.allSatisfy { $0.isASCII || "→…·–".unicodeScalars.contains($0) },
                "\(result.stdout.unicodeScalars.filter { !$0.isASCII })")
        #expect(result.stdout.contains("#"))
    }

    @Test("in a terminal: fitted to its width, colour, and attributes only under NO_COLOR")
    func terminal() throws {
        let store = try sampleStore()
        let command = ([Stepo.binary, "stats"] + TestEngine.storeArguments(store)).map { "'\($0)'" }.joined(separator: " ")
        for (environment, expectsColour) in [("-u NO_COLOR ", true), ("NO_COLOR=1 ", false)] {
            let tmux = try Tmux(folder: folder + "/tmux-\(expectsColour)")
            try tmux.start("env \(environment)LANG=C.UTF-8 TERM=xterm-256color \(command); sleep 30", width: 64, height: 60)
            defer { tmux.stop() }
            let text = try tmux.waitFor { $0.contains("Delivery") }
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.allSatisfy { $0.count <= 64 })
            #expect(text.contains("Mute rate"))
            let styled = try tmux.run(["capture-pane", "-p", "-e", "-t", tmux.session])
            #expect(styled.contains("\u{1B}[1m"))  // the headings are bold either way
            #expect(styled.contains("38;5;208") == expectsColour, "\(environment): \(styled.prefix(400).debugDescription)")
        }
    }

    @Test("bad input: a time that is not RFC 3339, or a span that ends before it starts, is a usage error (exit 2)")
    func badInput() throws {
        let store = try sampleStore()
        let bad = try Stepo.run(["stats"] + TestEngine.storeArguments(store) + ["--since", "last week"])
        #expect(bad.status == 2 && bad.stderr.contains("RFC 3339") && bad.stdout.isEmpty)
        let backwards = try Stepo.run(["stats"] + TestEngine.storeArguments(store)
                                      + ["--since", "2026-11-29T00:00:00Z", "--until", "2026-11-28T00:00:00Z"])
        #expect(backwards.status == 2 && backwards.stderr.contains("after"))
        // Year 1 is said in RFC 3339 as 0001, and read back as such.
        let early = try Stepo.run(["stats"] + TestEngine.storeArguments(store)
                                  + ["--json", "--since", "0001-01-01T00:00:00Z", "--until", "0001-06-01T00:00:00Z"])
        #expect(early.status == 0)
        #expect(try JSON.parse(Data(early.stdout.utf8))["since"]?.string == "0001-01-01T00:00:00Z")
        let escape = try Stepo.run(["stats"] + TestEngine.storeArguments(store) + ["--since", "\u{1B}[2J"])
        #expect(escape.status == 2 && !escape.stderr.contains("\u{1B}"))
        let option = try Stepo.run(["stats"] + TestEngine.storeArguments(store) + ["--\u{1B}[2Jx"])
        #expect(option.status == 2 && !option.stderr.contains("\u{1B}"))
        let stray = try Stepo.run(["stats"] + TestEngine.storeArguments(store) + ["--json", "extra"])
        #expect(stray.status == 2 && stray.stdout.isEmpty)
        // A span of centuries would be a day-by-day series of centuries: refused.
        let ages = try Stepo.run(["stats"] + TestEngine.storeArguments(store) + ["--since", "0001-01-01T00:00:00Z", "--json"])
        #expect(ages.status == 2 && ages.stderr.contains("at most 366 days"))
        // A report never makes a store: a mistyped path, a folder or an empty file is an error, and stays as it was.
        let missing = folder + "/typo.db"
        let typo = try Stepo.run(["stats", "--db", missing])
        #expect(typo.status == 1 && typo.stderr.contains("no store at") && !FileManager.default.fileExists(atPath: missing))
        #expect(FileManager.default.createFile(atPath: folder + "/empty.db", contents: Data()))
        #expect(try Stepo.run(["stats", "--db", folder + "/empty.db"]).status == 1)
        #expect((try FileManager.default.attributesOfItem(atPath: folder + "/empty.db")[.size] as? Int) == 0)
        #expect(try Stepo.run(["stats", "--db", folder]).status == 1)
    }
}

/// The Stats screen of the embedded inbox: the real binary in tmux, on the sample world.
@Suite("The inbox's Stats screen")
struct StatsScreenTests {
    let folder = NSTemporaryDirectory() + "stepo-stats-screen-" + UUID().uuidString

    @Test("S opens the trust budget over the Activity tab: the mute rate and each category; r reloads; q comes back")
    func screen() throws {
        let tmux = try Tmux(folder: folder)
        try tmux.start(tmux.inbox(), width: 100, height: 40)
        defer { tmux.stop() }
        _ = try tmux.waitFor(seconds: 30) { $0.contains(" New") && $0.contains("synced") }
        try tmux.keys("S")
        let text = try tmux.waitFor { $0.contains("Mute rate") && $0.contains("Journeys") }
        #expect(text.contains(" Trust budget"))
        #expect(text.contains("4 mutes among 42 people pushed to"), "\(text)")
        #expect(text.contains("j/k scroll  r reload  q back"))
        let lines = text.split(separator: "\n")
        #expect(lines.allSatisfy { $0.count <= 100 })
        try tmux.keys("G")
        _ = try tmux.waitFor { $0.contains("Delivery") }
        // Reloading from far down the report starts it again from the top (it once crashed here).
        try tmux.keys("r")
        _ = try tmux.waitFor { $0.contains("Mute rate") && $0.contains("r reload") }
        try tmux.keys("G", "r", "j", "j")
        _ = try tmux.waitFor { $0.contains("r reload") }
        try tmux.keys("q")
        _ = try tmux.waitFor { $0.contains(" New") && !$0.contains("Mute rate") }
        try tmux.keys("q")
    }
}
