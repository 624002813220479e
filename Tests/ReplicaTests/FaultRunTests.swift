import Foundation
import Notifications
import Testing
import TestSupport
import Wire
@testable import API
@testable import Backend
@testable import Replica

/// Seeded fault runs: two clients of one user stamp and act offline, their `stepo sync` is
/// killed with SIGKILL at random points, and the server meanwhile deletes, blocks and notifies.
/// After both have synced in peace: no mutation lost, none applied twice, each replica what the
/// server would send now, and every count equal.
///
/// `STEPO_FAULT_RUNS=200 swift test --filter FaultRunTests` runs as many as asked; the suite
/// runs a few.
@Suite("Seeded fault runs: kills, offline deletions, blocks, two clients")
struct FaultRunTests {
    static var runs: Int { ProcessInfo.processInfo.environment["STEPO_FAULT_RUNS"].flatMap(Int.init) ?? 4 }

    @Test("seen after an offline deletion: the rows shown are seen, though a deletion changed their version meanwhile")
    func offlineDeletion() throws {
        let run = try FaultRun(seed: 0)
        let path = run.folder + "/client.db"
        let storePath = run.store.path
        let engine = SyncEngine(replica: try Replica(path: path), transport: InProcessTransport(user: "me") { Router(store: try Store(location: storePath)) })
        try run.event("heart", [("actor", "d"), ("step", "s2")])
        try engine.sync()
        // Offline: the step is deleted on the server (its rows, the newest, change version), and
        // the reader opens Activity here.
        try run.event("delete", [("step", "s2")])
        try engine.replica.markAllSeen(at: 1)
        try engine.sync()
        let me = try #require(try run.store.user("me"))
        #expect(try run.store.inboxes.counts(for: me.key).unseen == 0)
        #expect(try engine.replica.counts.unseen == 0)
        #expect(try engine.replica.rows().allSatisfy { $0.seenAt != nil })
    }

    @Test("every seeded run converges")
    func converge() throws {
        RawSocket.raiseFileLimit()
        var failures: [String] = []
        for seed in 1...Self.runs {
            let problems = try FaultRun(seed: UInt64(seed)).run()
            failures += problems.map { "seed \(seed): \($0)" }
        }
        #expect(failures.isEmpty, "\(failures.prefix(10).joined(separator: "\n"))")
    }
}

/// One seeded run.
final class FaultRun {
    let folder = NSTemporaryDirectory() + "stepo-fault-" + UUID().uuidString
    var rng: SplitMix
    let store: Store
    var n = 0
    var clock = Timestamp.parse("2026-11-20T08:00:00Z")!
    let fans = ["a", "b", "c", "d", "e"]
    var steps = ["s0", "s1", "s2"]
    /// Mutations each client queued (its last seq).
    var queued: [String: Int] = [:]

    init(seed: UInt64) throws {
        rng = SplitMix(seed: seed)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        store = try Store(location: try TestEngine.location(folder, "server.db"))
        try event("user", [("user", .object([("id", "me"), ("username", "me"), ("name", "Me")]))])
        for fan in fans { try event("user", [("user", .object([("id", .string(fan)), ("username", .string(fan)), ("name", .string("Fan \(fan)"))]))]) }
        try event("privacy", [("user", "me"), ("private", true)])
        try event("journey", [("journey", .object([("id", "j"), ("owner", "me"), ("title", "Journey")]))])
        for step in steps {
            try event("step", [("step", .object([("id", .string(step)), ("journey", "j"), ("caption", .string("Caption \(step)"))]))])
            try event("mediaReady", [("step", .string(step))])
        }
        for fan in fans.prefix(3) { try event("follow", [("actor", .string(fan)), ("target", "me")]) }  // requests
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    func event(_ type: String, _ fields: [(String, JSON)]) throws {
        n += 1
        clock += 60_000
        let json = JSON.object([("id", .string("f\(n)")), ("type", .string(type)), ("at", .string(Timestamp.format(clock)))] + fields)
        _ = try? Ingestor(store: store).apply(Data(json.serialized.utf8))  // a refused event (a dead step) is fine
    }

    func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }

    /// Runs the seeded steps, then lets both clients finish, and checks. Returns problems found.
    func run() throws -> [String] {
        let tokens = ["A": try store.tokens.create(for: try store.user("me"), admin: false, at: 0),
                      "B": try store.tokens.create(for: try store.user("me"), admin: false, at: 0)]
        let (server, url) = try Stepo.serve(try TestEngine.location(folder, "server.db"), log: folder + "/serve.log")
        defer { server.stop() }
        let environment = ["XDG_STATE_HOME": folder + "/state"]
        let paths = try tokens.mapValues { try Replica.defaultPath(server: url, token: $0, in: folder + "/state/stepo/replicas") }
        func sync(_ client: String, killAfter: Double?) throws {
            let arguments = [Stepo.binary, "sync", "--server", url, "--token", tokens[client]!]
            if let killAfter {
                let child = try Spawn.start(arguments, log: folder + "/sync.log", environment: environment)
                usleep(useconds_t(killAfter * 1_000_000))
                kill(child.pid, SIGKILL)
                child.stop()
            } else {
                _ = try Spawn.run(arguments, environment: environment, timeout: 60)
            }
        }
        try sync("A", killAfter: nil)
        try sync("B", killAfter: nil)
        let hazard = Int(rng.next() % 14)
        for round in 0..<14 {
            let client = pick(["A", "B"])
            if round == hazard {
                // Once per run: a client synced, a new row, its step deleted while the client is
                // offline, then Activity opened there — seen must mean the rows it showed.
                try sync(client, killAfter: nil)
                let step = pick(steps)
                try event("heart", [("actor", .string(pick(fans))), ("step", .string(step))])
                try sync(client, killAfter: nil)
                try event("delete", [("step", .string(step))])
                steps.removeAll { $0 == step }
                try local(client, paths) { try $0.markAllSeen(at: 1) }
                if steps.isEmpty {
                    steps = ["s\(n)"]
                    try event("step", [("step", .object([("id", .string(steps[0])), ("journey", "j"), ("caption", "Again")]))])
                    try event("mediaReady", [("step", .string(steps[0]))])
                }
            }
            switch rng.next() % 9 {
            case 0: try event("heart", [("actor", .string(pick(fans))), ("step", .string(pick(steps)))])
            case 1:
                try event("comment", [("actor", .string(pick(fans))), ("step", .string(pick(steps))),
                                      ("comment", .object([("id", .string("k\(n)")), ("text", "@me look")]))])
            case 2:
                // Deleted while the clients may be offline: its rows change version under them.
                let step = pick(steps)
                try event("delete", [("step", .string(step))])
                steps.removeAll { $0 == step }
                if steps.isEmpty {
                    steps = ["s\(n)"]
                    try event("step", [("step", .object([("id", .string(steps[0])), ("journey", "j"), ("caption", "Again")]))])
                    try event("mediaReady", [("step", .string(steps[0]))])
                }
            case 3: try event(rng.next() % 2 == 0 ? "block" : "unblock", [("actor", "me"), ("target", .string(pick(fans)))])
            case 4: try local(client, paths) { try $0.markAllSeen(at: 1) }
            case 5: try local(client, paths) { replica in
                if let row = try replica.rows().randomElement(using: &self.rng) { try replica.markRead(row.id, at: 1) }
            }
            case 6: try local(client, paths) { replica in
                let fan = self.pick(self.fans)
                try replica.enqueue(self.pick([.acceptRequest(user: fan), .declineRequest(user: fan), .followBack(user: fan)]))
            }
            case 7: try sync(client, killAfter: Double(rng.next() % 80) / 1000)
            default: try sync(client, killAfter: nil)
            }
        }
        // In peace: each syncs twice (the second brings what the other sent).
        for client in ["A", "B", "A", "B"] { try sync(client, killAfter: nil) }
        return try check(paths)
    }

    /// Opens a client's replica in this process (the app running offline), does `body`, closes.
    func local(_ client: String, _ paths: [String: String], _ body: (Replica) throws -> Void) throws {
        let replica = try Replica(path: paths[client]!)
        try body(replica)
        queued[client] = try replica.number("nextSeq", otherwise: 1) - 1
    }

    func check(_ paths: [String: String]) throws -> [String] {
        var problems: [String] = []
        let me = try #require(try store.user("me"))
        let counts = try store.inboxes.counts(for: me.key)
        if counts != (try store.recount(for: me.key)) { problems.append("counters \(counts) differ from a recount") }
        let truth = try store.sync.page(for: me, after: 0, limit: 100_000)
        func state(_ row: ActivityRow) -> String {
            "\(row.id) \(row.kind.rawValue) \(row.body) deleted:\(row.deleted) withheld:\(row.withheld) seen:\(row.seenAt != nil) read:\(row.readAt != nil)"
        }
        let expected = Set(truth.rows.map(state))
        for (client, path) in paths.sorted(by: { $0.key < $1.key }) {
            let replica = try Replica(path: path)
            if try replica.pendingCount() != 0 { problems.append("\(client): \(try replica.pendingCount()) mutations still queued") }
            let applied = try store.sync.lastApplied(client: try replica.clientId, for: me)
            let made = try replica.number("nextSeq", otherwise: 1) - 1
            if applied != made { problems.append("\(client): the server applied through seq \(applied), the client made \(made)") }
            // A mutation is applied as the event `mutation:CLIENT:USER:SEQ`: none past the last made.
            let doubled = try (made + 1...made + 20).filter { try store.explanations.event("mutation:\(try replica.clientId):me:\($0)") != nil }.count
            if doubled > 0 { problems.append("\(client): \(doubled) mutations applied past the last made") }
            let held = Set(try replica.rows(limit: 100_000).map(state))
            if held != expected {
                problems.append("\(client): replica differs: missing \(expected.subtracting(held).sorted().prefix(3)), extra \(held.subtracting(expected).sorted().prefix(3))")
            }
            if try replica.counts != ServerCounts(unseen: counts.unseen, unread: counts.unread, stale: false) {
                problems.append("\(client): counts \(try replica.counts) against the server's \(counts)")
            }
        }
        return problems
    }
}
