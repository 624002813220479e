import Foundation
import Notifications
import SQLite
import Testing
import Wire
@testable import API
@testable import Backend

/// Every statement the store prepares, while a populated world goes through every path —
/// ingest (every event type), fan-out, pulls, mutations, destinations, pushes, tokens — is
/// asked for its query plan. None may scan a table that grows with use, nor read a whole
/// recipient's history: each costs O(log n) or O(what it returns).
@Suite("Query plans", .serialized)
struct QueryPlanTests {
    /// Tables that grow with use (the world's size or its history).
    static let growing: Set<String> = [
        "notifications", "events", "suppressions", "interactions", "comments", "follows", "follow_requests",
        "journey_follows", "steps", "users", "marks", "revocations", "tokens", "inboxes", "tiers", "blocks", "mutes",
        "journeys", "client_mutations",
    ]

    /// Statements allowed what the rule forbids, each with why.
    static let allowed: [(fragment: String, why: String)] = [
        ("SELECT count(*) FROM notifications AS n WHERE n.recipient = ? AND n.seen_at IS NULL",
         "Store.recount: the slow reference the counters are checked against, in tests only"),
        ("SELECT count(*) FROM notifications AS n WHERE n.recipient = ? AND n.read_at IS NULL",
         "Store.recount: the slow reference the counters are checked against, in tests only"),
        ("SELECT u.ext, u.name, s.kind, s.reason FROM suppressions",
         "stepo explain: every candidate of one event, what it returns"),
        ("FROM tokens AS t LEFT JOIN users AS u ON u.id = t.user  ORDER BY t.created_at DESC",
         "stepo token --list for every user: an operator's listing of every token, what it returns"),
        ("UPDATE tokens SET revoked_at = ? WHERE revoked_at IS NULL AND substr(lower(hex(hash))",
         "stepo token --revoke by id prefix: an operator's command over the tokens table"),
        ("SELECT id AS u FROM users", "an announcement's fan-out: every user is its audience"),
        ("SELECT max(id) FROM events", "the newest version: max() reads the end of the primary key"),
        ("EXISTS (SELECT 1 FROM events WHERE ext IS NOT NULL)", "is the store empty: stops at the first event"),
    ]

    @Test("no statement scans a growing table or a whole recipient's history")
    func plans() throws {
        let witness = StatementWitness()
        Database.witness = witness
        defer { Database.witness = nil }
        let folder = NSTemporaryDirectory() + "stepo-plans-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/plans.db"
        let store = try Store(path: path)
        try exercise(store, path: path)

        // Foreign keys off, as the store's own connection has them (with them on, SQLite plans
        // the reference checks of a parent's INSERT … RETURNING too, which the store never runs).
        let db = try Database(path: path, foreignKeys: false)
        // The fan-out's table of the moment, as its own connection has it.
        try db.execute("CREATE TEMP TABLE fanout (u INTEGER PRIMARY KEY, reason TEXT, push TEXT, quiet TEXT)")
        var problems: [String] = []
        let statements = witness.statements(on: path)
        #expect(statements.count > 60, "only \(statements.count) statements were seen: the world did not go everywhere")
        var planned = 0
        for sql in statements.sorted() {
            let flat = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            if Self.allowed.contains(where: { flat.contains($0.fragment.split(whereSeparator: \.isWhitespace).joined(separator: " ")) }) { continue }
            // Statements of a session's own (savepoints, pragmas, the temp table of a fan-out) have no plan to read.
            if flat.hasPrefix("SAVEPOINT") || flat.hasPrefix("RELEASE") || flat.hasPrefix("BEGIN") || flat.hasPrefix("COMMIT")
                || flat.hasPrefix("PRAGMA") || flat.hasPrefix("ROLLBACK") { continue }
            let plan: [String]
            do {
                plan = try db.query("EXPLAIN QUERY PLAN " + sql, [SQLBindable](repeating: SQLValue.null, count: parameters(sql)), { $0.string(3) })
            } catch {
                problems.append("no plan (\(error)) for: \(flat.prefix(200))")
                continue
            }
            planned += 1
            for step in plan {
                let words = step.split(separator: " ").map(String.init)
                if words.first == "SCAN", words.count > 1, Self.growing.contains(words[1]) {
                    problems.append("\(step)\n    in: \(flat.prefix(200))")
                }
                // A range over a whole recipient's history: only recipient= bounds the search,
                // and nothing limits what it reads.
                if words.first == "SEARCH", words.count > 1, words[1] == "notifications" || words[1] == "n",
                   step.hasSuffix("(recipient=?)"), !flat.contains("LIMIT"), !flat.contains("EXISTS") {
                    problems.append("\(step)\n    in: \(flat.prefix(200))")
                }
            }
            // A page read that sorts before its LIMIT: it reads (and sorts) every row its
            // search finds, however few it hands out — a million-row version, page after page.
            if flat.contains("LIMIT"), plan.contains(where: { $0.hasPrefix("USE TEMP B-TREE FOR ORDER BY") }),
               plan.contains(where: { $0.hasPrefix("SEARCH notifications") || $0.hasPrefix("SEARCH n ") }) {
                problems.append("sorts before its LIMIT: \(plan.joined(separator: " / "))\n    in: \(flat.prefix(200))")
            }
        }
        #expect(planned > 60, "only \(planned) plans were read")
        if ProcessInfo.processInfo.environment["STEPO_PLANS"] != nil {
            for sql in statements.sorted() {
                let plan = (try? db.query("EXPLAIN QUERY PLAN " + sql, [SQLBindable](repeating: SQLValue.null, count: parameters(sql)), { $0.string(3) })) ?? ["?"]
                print("PLAN \(sql.split(whereSeparator: \.isWhitespace).joined(separator: " ").prefix(150))\n    " + plan.joined(separator: "\n    "))
            }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    /// The number of `?` and `:name` parameters of `sql`.
    func parameters(_ sql: String) -> Int {
        var count = 0
        var names = Set<String>()
        var index = sql.startIndex
        var inString = false
        while index < sql.endIndex {
            let c = sql[index]
            if c == "'" { inString.toggle() }
            if !inString && c == "?" {
                var end = sql.index(after: index)
                while end < sql.endIndex, sql[end].isNumber { end = sql.index(after: end) }
                if end == sql.index(after: index) { count += 1 } else { names.insert(String(sql[index..<end])) }
            }
            if !inString && c == ":" {
                var end = sql.index(after: index)
                while end < sql.endIndex, sql[end].isLetter || sql[end].isNumber || sql[end] == "_" { end = sql.index(after: end) }
                if end > sql.index(after: index) { names.insert(String(sql[index..<end])) }
                index = end
                continue
            }
            index = sql.index(after: index)
        }
        return count + names.count
    }

    /// Every path the store has, on the sample world.
    func exercise(_ store: Store, path: String) throws {
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("sample-data/events.ndjson")
        let report = try Ingestor(store: store).ingest(LineReader(data: try Data(contentsOf: sample)), onRow: { _ in }, onReject: { _, _ in })
        #expect(report.rejected == 0)
        let me = try #require(try store.user("chaucao"))
        let token = try store.tokens.create(for: me, admin: false, at: 0, expiresAt: Int64.max, label: "plans")
        let admin = try store.tokens.create(for: nil, admin: true, at: 0)
        _ = try store.tokens.holder(of: token, at: 1)
        _ = try store.tokens.list(of: me)
        _ = try store.tokens.revoke(String(try store.tokens.list(of: me)[0].id.prefix(8)), at: 2)
        _ = try store.tokens.revokeAll(of: me, at: 3)
        let router = Router(store: try Store(path: path))
        func call(_ method: String, _ path: String, query: [String: String] = [:], body: String = "", admin token: String? = nil) {
            var request = HTTPRequest(method: method, path: path, query: query,
                                      headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:], body: Data(body.utf8))
            if token == nil { request.trustedUser = "chaucao" }
            _ = router.respond(to: request)
        }
        call("GET", "/v1/health")
        call("GET", "/v1/me")
        call("GET", "/v1/counts")
        call("GET", "/v1/activity", query: ["after": "0", "limit": "50"])
        call("GET", "/v1/activity", query: ["after": "700"])
        // Paged inside a version (a first sync of one large change, as the replica asks).
        call("GET", "/v1/activity", query: ["after": "0", "afterRow": "0", "limit": "20"])
        call("GET", "/v1/activity", query: ["after": "5", "afterRow": "3", "limit": "20"])
        call("GET", "/v1/steps/ridge-3")
        call("GET", "/v1/steps/ridge-3/interactions")
        call("GET", "/v1/users/an")
        call("GET", "/v1/journeys/guitar")
        call("GET", "/v1/preferences")
        call("PUT", "/v1/preferences", body: #"{"journeys":false}"#)
        let row = try #require(try store.inboxes.activity(of: me, limit: 1).first)
        call("GET", "/v1/rows/\(row.id)/push", query: ["platform": "fcm"])
        call("POST", "/v1/mutations", body: """
            {"client":"c-plans","mutations":[{"seq":1,"type":"read","id":\(row.id)},{"seq":2,"type":"seen","upTo":500},
             {"seq":3,"type":"acceptRequest","user":"an"},{"seq":4,"type":"followBack","user":"kofi"},
             {"seq":5,"type":"readAll","upTo":900},{"seq":6,"type":"seen","upTo":100000}]}
            """)
        call("POST", "/v1/events", body: #"{"id":"plans-1","type":"heart","at":"2026-11-29T11:00:00Z","actor":"kofi","step":"ridge-3"}"#,
             admin: admin)
        _ = try store.sync.hasChanges(for: me.key, after: 10)
        _ = try store.sync.page(for: me, after: 10, limit: 20)
        _ = try store.inboxes.activity(of: me, limit: 20, before: row.id)
        _ = try store.inboxes.rows(afterRow: 100, limit: 10)
        _ = try store.explanations.event("ev00853")
        _ = try store.outbox.pushContent(row: row.id)
        _ = try store.inboxes.counts(for: me.key)
        _ = try store.inboxes.markRead(me, row: row.id - 1, at: 5)
        // A reader who lost sight of things since their last pull (revocations).
        let vy = try #require(try store.user("vy"))
        _ = try store.sync.page(for: vy, after: 100, limit: 500)
    }
}
