import Foundation
import TestSupport
import Notifications
import Testing
import Wire
@testable import API
@testable import Backend
@testable import Replica
@testable import Inbox
import SQLite

/// The inbox's runner — the state, the reducer, the effects — against the real API in this
/// process (the embedded default's transport) over a real SQLite store of the sample world:
/// everything the terminal app does but draw.
@Suite("The inbox runner over the in-process API")
struct RunnerTests {
    let folder = NSTemporaryDirectory() + "stepo-runner-" + UUID().uuidString
    let storePath: String
    let store: Store
    let replica: Replica
    let engine: SyncEngine
    let host = HeadlessHost()

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        storePath = try TestEngine.location(folder, "server.db")
        store = try Store(location: storePath)
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("sample-data/events.ndjson")
        for line in try String(contentsOf: sample, encoding: .utf8).split(separator: "\n") {
            _ = try Ingestor(store: store).apply(Data(line.utf8))
        }
        replica = try Replica(path: folder + "/chaucao.db")
        let path = storePath
        engine = SyncEngine(replica: replica, transport: InProcessTransport(user: "chaucao") { Router(store: try Store(location: path)) })
    }

    func runner(synced: Bool = true) throws -> InboxRunner {
        if synced { try engine.sync() }
        let runner = InboxRunner(replica: replica, engine: engine, host: host)
        runner.send(.resized(width: 100, height: 30))
        runner.open()
        #expect(runner.settle(), "background work did not finish")
        return runner
    }

    /// Types `text` into the filter as a paste: one batch of keys.
    func paste(_ runner: InboxRunner, _ text: String) {
        runner.send(contentsOf: text.map { $0 == " " ? .keyPressed(.space) : .keyPressed(.character($0)) })
    }

    @Test("Esc on a filter whose selected row sits inside a card lands on that card; 0 from a tab keeps the selection too")
    func escapeKeepsTheCard() throws {
        let runner = try runner()
        runner.send(.keyPressed(.character("/")))
        paste(runner, "keep going")
        runner.send(.keyPressed(.enter))
        #expect(runner.settle())
        let found = try #require(runner.state.list.selectedLine?.row)
        #expect(found.body.contains("keep going"), "\(found.body)")
        let card = try #require(try replica.card(holding: found.id, newAbove: runner.state.newAbove ?? 0))
        runner.send(.keyPressed(.escape))
        #expect(runner.settle())
        #expect(runner.state.list.selectedLine?.identity == "card:" + card.key)
        // A tab, a row in it, then all: the same row's card stays selected.
        runner.send(.keyPressed(.character("2")))
        runner.send(.keyPressed(.character("j")))
        let social = try #require(runner.state.list.selectedLine?.row)
        runner.send(.keyPressed(.character("0")))
        #expect(runner.settle())
        let back = try #require(try replica.card(holding: social.id, newAbove: runner.state.newAbove ?? 0))
        #expect(runner.state.list.selectedLine?.identity == "card:" + back.key)
    }

    @Test("a paste into the filter is one read of the list, and a filter longer than 200 characters is cut there, said")
    func pasteIntoTheFilter() throws {
        let runner = try runner()
        runner.send(.keyPressed(.character("/")))
        let reads = runner.listReads
        paste(runner, String(repeating: "abc ", count: 1500))
        #expect(runner.listReads == reads + 1)
        #expect(runner.state.filter?.text.count == FilterState.longest)
        #expect(runner.state.notice == "A filter holds at most \(FilterState.longest) characters")
        // Control characters are not text; ^U empties the line, ^W takes a word.
        runner.send(.keyPressed(.character("\u{15}")))
        paste(runner, "marco guitar")
        runner.send(.keyPressed(.character("\u{01}")))
        runner.send(.keyPressed(.character("\u{17}")))
        #expect(runner.state.filter?.text == "marco ")
    }

    @Test("a replica whose own record cannot be read says so in the header and when the tab opens, never as zero counts")
    func unreadableRecord() throws {
        try engine.sync()
        #expect(try replica.version > 0 && replica.firstSyncDone)
        // Another hand breaks the file under the replica: its record of itself is gone.
        try Database(path: folder + "/chaucao.db").execute("DROP TABLE meta")
        #expect(throws: (any Error).self) { try replica.counts }
        #expect(throws: (any Error).self) { try replica.version }
        #expect(throws: (any Error).self) { try replica.user }
        let runner = InboxRunner(replica: replica, engine: engine, host: host)
        runner.send(.resized(width: 100, height: 30))
        runner.open()
        #expect(runner.state.sync.status == "local copy unreadable" && runner.state.sync.counts.stale)
        #expect(runner.state.notice?.hasPrefix("Your activity cannot be read from its local copy") == true, "\(runner.state.notice ?? "no notice")")
    }

    var serverCounts: Counts {
        get throws { try store.recount(for: try #require(try store.user("chaucao")).key) }
    }

    @Test("the tab opens from the replica, draws the New section, and its seen stamp reaches the server")
    func opens() throws {
        #expect(try serverCounts.unseen > 0)
        let runner = try runner()
        let screen = runner.render().lines.joined(separator: "\n")
        #expect(screen.contains("New"))
        #expect(runner.state.list.loaded && !runner.state.list.cards.isEmpty)
        #expect(try serverCounts.unseen == 0)
        #expect(runner.state.sync.counts.unseen == 0)
    }

    @Test("a stamp waits for the frame that earned it: nothing is written before the screen is drawn")
    func stampsAfterTheFrame() throws {
        try engine.sync()
        let before = try replica.seenThrough
        let runner = InboxRunner(replica: replica, engine: engine, host: host)
        runner.send(.resized(width: 100, height: 30))
        runner.open()
        #expect(runner.state.list.loaded)
        #expect(try replica.seenThrough == before, "the seen stamp was written before the tab was drawn")
        _ = runner.render()
        runner.drawn()
        #expect(try replica.seenThrough > before)
        let row = try #require(try replica.rows(limit: 500).first { $0.kind == .comment && !$0.deleted && $0.readAt == nil })
        runner.send(.openRow(row))
        #expect(try replica.row(row.id)?.readAt == nil, "the read stamp was written before its screen was drawn")
        runner.drawn()
        #expect(try replica.row(row.id)?.readAt != nil)
    }

    @Test("Enter opens the replica's copy at once, and the server's live copy replaces it when it comes")
    func destinationGoesLive() throws {
        let runner = try runner()
        let row = try #require(try replica.rows(limit: 500).first { $0.kind == .comment && !$0.deleted })
        runner.send(.openRow(row))
        guard case .destination(let opened)? = runner.state.screens.last, case .step(let offline)? = opened.destination else {
            Issue.record("Enter on a comment did not open its step"); return
        }
        #expect(offline.offline && offline.commentsMode == .open)
        #expect(runner.settle())
        guard case .destination(let live)? = runner.state.screens.last, case .step(let page)? = live.destination else {
            Issue.record("the live copy did not come"); return
        }
        #expect(!page.offline)
        // The server's comments of the step, as the reader may see them — every one.
        let detail = try #require(try engine.step(page.step.id).value)
        #expect(page.comments.map(\.comment) == detail.comments)
        // Opened at the comments: the screen shows the Comments heading.
        #expect(runner.render().lines.contains { $0.contains("Comments (\(detail.comments.count))") })
        // The read stamp went to the server.
        #expect(try store.inboxes.row(row.id, of: try #require(try store.user("chaucao")))?.readAt != nil)
    }

    @Test("content deleted on the server after the sync: the live answer turns the screen into 'no longer available'")
    func goneOnTheServer() throws {
        let runner = try runner()
        let row = try #require(try replica.rows(limit: 500).first {
            if case .step("ridge-3", _, _) = $0.tap { return !$0.deleted }
            return false
        })
        // The long-poll is not running: the replica does not know yet.
        _ = try Ingestor(store: store).apply(Data(#"{"id":"gone-1","type":"delete","at":"2026-11-30T00:00:00Z","step":"ridge-3"}"#.utf8))
        runner.send(.openRow(row))
        #expect(runner.settle())
        guard case .destination(let screen)? = runner.state.screens.last, case .gone? = screen.destination else {
            Issue.record("a step deleted on the server still shows: \(String(describing: runner.state.screens.last))"); return
        }
        #expect(runner.render().lines.contains { $0.contains("This content is no longer available") })
    }

    @Test("p: the push preview comes typed from the server, as the lock screen would show the row")
    func pushPreview() throws {
        let runner = try runner()
        let row = try #require(try replica.rows(limit: 500).first { $0.push == .sent && !$0.deleted })
        runner.send(.openRow(row))
        runner.send(.keyPressed(.character("q")))
        runner.send(.keyPressed(.character("p")))
        #expect(runner.settle())
        guard case .destination(let screen)? = runner.state.screens.last, case .push(let page)? = screen.destination else {
            Issue.record("p did not open a push preview: \(String(describing: runner.state.screens.last))"); return
        }
        let apns = try #require(page.apns)
        #expect(page.unavailable == nil)
        #expect(apns.request == (try #require(try engine.pushPreview(row: apns.rowIdForTest, platform: .apns).value)).request)
        #expect(runner.render().lines.contains { $0.contains("iOS · collapsed") })
    }

    @Test("p on a struck-through row says its content was deleted, with no server at all, and names no id or code")
    func pushOfDeletedRow() throws {
        try engine.sync()
        let nowhere = try #require(URL(string: "http://127.0.0.1:\(try refusedPort())"))
        let offline = SyncEngine(replica: replica, transport: HTTPTransport(baseURL: nowhere, token: "stp_nowhere"))
        let runner = InboxRunner(replica: replica, engine: offline, host: host)
        runner.send(.resized(width: 100, height: 30))
        runner.open()
        #expect(runner.settle())
        // Down the list to the struck-through row (j, as a reader would).
        for _ in 0..<200 where runner.state.list.selectedLine?.row?.deleted != true {
            runner.send(.keyPressed(.character("j")))
            _ = runner.settle()
        }
        #expect(runner.state.list.selectedLine?.row?.deleted == true)
        runner.send(.keyPressed(.character("p")))
        #expect(runner.settle())
        guard case .destination(let screen)? = runner.state.screens.last, case .push(let page)? = screen.destination else {
            Issue.record("p did not open a push preview"); return
        }
        #expect(page.unavailable == "Its content was deleted, so no push goes out for it.")
        let text = runner.render().lines.joined(separator: "\n")
        #expect(!text.contains("cannot be reached") && !text.contains("suppressed:"))
    }

    @Test("a profile the replica gave up (a block) is asked of the server, which says it is out of sight: never 'not synced yet'")
    func profileOutOfSight() throws {
        try engine.sync()
        let row = try #require(try replica.rows(limit: 500).first { $0.kind == .newFollower && $0.actor == "kofi" })
        _ = try Ingestor(store: store).apply(Data(#"{"id":"blk-kofi","type":"block","at":"2026-11-30T12:00:00Z","actor":"chaucao","target":"kofi"}"#.utf8))
        try engine.sync()
        #expect(try replica.person("kofi") == nil)
        let runner = InboxRunner(replica: replica, engine: engine, host: host)
        runner.send(.resized(width: 100, height: 30))
        runner.open()
        runner.send(.openRow(try #require(try replica.row(row.id))))
        #expect(runner.settle())
        guard case .destination(let screen)? = runner.state.screens.last, case .gone? = screen.destination else {
            Issue.record("a blocked person's profile shows: \(String(describing: runner.state.screens.last))"); return
        }
        #expect(!runner.render().lines.joined().contains("not synced yet"))
    }

    @Test("settings load typed from the server; Space on a switch reaches the server's preferences")
    func settings() throws {
        let runner = try runner()
        runner.send(.keyPressed(.character("s")))
        #expect(runner.settle())
        #expect(runner.state.settings == Preferences())
        runner.send(.keyPressed(.character("j")))
        runner.send(.keyPressed(.character("j")))
        runner.send(.keyPressed(.space))
        #expect(runner.settle())
        #expect(try store.user("chaucao")?.preferences == Preferences(social: false))
        #expect(try engine.preferences().switches == Preferences(social: false))
    }

    @Test("y copies the row's deep link through the host; with no server, settings say they need it")
    func hostAndOffline() throws {
        let runner = try runner()
        runner.send(.keyPressed(.character("y")))
        let row = try #require(runner.state.list.selectedLine?.row)
        #expect(host.copied == [row.tap.deepLink])

        // The same replica with a server that refuses connections: the list still opens.
        let offline = SyncEngine(replica: replica, transport: HTTPTransport(baseURL: URL(string: "http://127.0.0.1:9")!, token: "t"))
        let away = InboxRunner(replica: replica, engine: offline, host: HeadlessHost())
        away.send(.resized(width: 100, height: 30))
        away.open()
        #expect(away.settle(timeout: 20))
        #expect(!away.state.list.cards.isEmpty)
        away.send(.keyPressed(.character("s")))
        #expect(away.settle(timeout: 20))
        #expect(away.state.notice == "Offline: that needs the server")
        #expect(away.state.settings == nil)
    }
}

private extension PushPreview {
    /// The row the preview is of, as its payload carries it.
    var rowIdForTest: Int { request["payload"]?["rowId"]?.int ?? -1 }
}
