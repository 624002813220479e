import Foundation
import Synchronization
import Notifications
import Wire

/// Where sync stands, for the inbox's header ("synced 3s ago", "offline · 2 pending").
public enum SyncStatus: Equatable, Sendable {
    case never
    case synced(at: Date)
    case offline(since: Date, reason: String)
}

/// A server answer the sync cannot get past (a refused token, a broken server), or one it
/// may get past later (`isRetryable`: the server's store is full or restarting, or it asked
/// this client to slow down).
public struct SyncError: Error, CustomStringConvertible {
    public let status: Int
    public let description: String
    /// The server's own words (its error message), without the status.
    public var message: String
    /// Seconds the server asked to wait before trying again, when it said.
    public var retryAfter: Double?
    /// The server's machine code for it (`historyDiverged`, `unauthorized`, …), when it gave one.
    public var code: String?

    public init(status: Int, description: String, message: String? = nil, retryAfter: Double? = nil, code: String? = nil) {
        self.status = status
        self.description = description
        self.message = message ?? description
        self.retryAfter = retryAfter
        self.code = code
    }

    /// The store went back in time under this replica (409 `historyDiverged`).
    public var historyDiverged: Bool { status == 409 && code == "historyDiverged" }

    /// A 503 (the server's store cannot answer just now), 502/504 (a proxy's), or 429.
    public var isRetryable: Bool { status == 503 || status == 502 || status == 504 || status == 429 }
}

/// Keeps a replica converged with its server: send pending mutations, then pull the changes
/// after the stored version, each page applied with its version in one transaction.
public final class SyncEngine: @unchecked Sendable {  // its replica owns a SQLite handle (with its own lock); `onChange` and `onProgress` are set before it runs
    public let replica: Replica
    private let transport: Transport
    /// Where sync stands, whether it was stopped, and the refusals not yet told.
    private let state = Mutex<(status: SyncStatus, stopped: Bool, refusals: [String])>((.never, false, []))
    /// Called (on the sync thread) after each pass that changed the replica or its status.
    public var onChange: (@Sendable () -> Void)?
    /// Called (on the sync thread) after each page of a first sync: rows received, rows in all.
    public var onProgress: (@Sendable (Int, Int) -> Void)?

    /// How many times one sync may start again from the beginning (another store answered, or
    /// the store went back in time) before it gives up with an error.
    public static let resetsPerSync = 3

    /// Rows per page: large pages keep a first sync of a million rows to a few hundred trips.
    public static let pageSize = 5000
    /// Mutations per request at most.
    public static let batchSize = 500

    /// Rows this engine asks for per page.
    public let pageSize: Int

    public init(replica: Replica, transport: Transport, pageSize: Int = SyncEngine.pageSize) {
        self.replica = replica
        self.transport = transport
        self.pageSize = max(1, pageSize)
    }

    public var status: SyncStatus { state.withLock { $0.status } }

    /// What the server refused since last asked, in words for the reader ("…: no pending
    /// follow request from an"); each is asked for once.
    public func takeRefusals() -> [String] {
        state.withLock { state in defer { state.refusals = [] }; return state.refusals }
    }

    /// One pass: push the queue, then pull every page after the stored version. With `wait`,
    /// the first pull long-polls when nothing has changed yet. Returns the rows applied.
    /// Throws `Unreachable` when offline (nothing is lost: the queue stays), `SyncError` on an
    /// answer it cannot use.
    @discardableResult
    public func sync(wait: Int = 0) throws -> Int {
        do {
            var resets = 0
            do {
                try push()
            } catch let error as SyncError where error.historyDiverged {
                // The store went back in time: the queue may name rows that are other rows now.
                // It is dropped with everything else held, and the pull below starts afresh.
                try replica.reset(for: try replica.place().store ?? "")
                resets += 1
                note("The server's history no longer holds where this copy was (its store was restored from an earlier copy, or pruned past it): the local copy started again from it, and the changes waiting to be sent were dropped")
            }
            var applied = 0
            // The next page is fetched and read while this one is written: the server and the
            // replica work side by side.
            let start = try replica.place()
            var pages = PagePipe(engine: self, after: start.version, afterRow: start.afterRow, history: start.history, wait: wait)
            defer { pages.close() }
            /// Forgets what is held and pulls from the beginning; a server whose store keeps
            /// changing under one sync is an error after a few times, not a loop.
            func startAgain(for store: String, because why: String) throws {
                resets += 1
                guard resets <= SyncEngine.resetsPerSync else {
                    throw SyncError(status: 200, description: "the server's store changed \(resets) times during one sync (\(why)): not syncing until it holds still")
                }
                try replica.reset(for: store)
                pages.close()
                pages = PagePipe(engine: self, after: 0, afterRow: 0, history: nil, wait: 0)
            }
            while true {
                let page: ActivityPage
                do {
                    page = try pages.take()
                } catch let error as SyncError where error.historyDiverged {
                    // The store was restored from an older copy: what is held here may name
                    // rows it no longer has, and later changes could never reach it.
                    let held = try replica.place()
                    try startAgain(for: held.store ?? "", because: "it went back in time")
                    note("The server's history no longer holds where this copy was (its store was restored from an earlier copy, or pruned past it): the local copy started again from it")
                    continue
                }
                let held = try replica.place()
                if let store = page.store, store != held.store {
                    if held.store != nil || held.version > 0 {
                        // Another store answers now: what is held here belongs to the old one.
                        try startAgain(for: store, because: "another store answered")
                        continue
                    }
                    try replica.reset(for: store)
                }
                try replica.apply(page)
                applied += page.rows.count
                if let progress = try replica.initialSync { onProgress?(progress.received, progress.total) }
                if !page.more { break }
            }
            setStatus(.synced(at: Date()))
            return applied
        } catch let error as Unreachable {
            if case .offline = status {} else { setStatus(.offline(since: Date(), reason: error.description)) }
            throw error
        } catch let error as SyncError where error.isRetryable {
            // The server answers but cannot serve now: as good as offline until it can.
            if case .offline = status {} else { setStatus(.offline(since: Date(), reason: error.description)) }
            throw error
        } catch let error as SyncError {
            // An answer it cannot use: no sync until the server answers otherwise, and said so.
            setStatus(.offline(since: Date(), reason: error.description))
            throw error
        } catch let error as WireError {
            let failure = SyncError(status: 200, description: "the server's answer was not understood: \(error.description)")
            setStatus(.offline(since: Date(), reason: failure.description))
            throw failure
        }
    }

    /// Sends the queued mutations, a batch at a time. The server applies what it can and
    /// says what it refused; a refused mutation is dropped (and told to the reader). A batch
    /// the server cannot read at all is sent one by one, and what it cannot read dropped.
    private func push() throws {
        let lost = try replica.discardUnreadable()
        if lost > 0 {
            note("\(lost == 1 ? "A change" : "\(lost) changes") waiting to be sent could not be read back from the local copy, and \(lost == 1 ? "was" : "were") dropped")
        }
        while true {
            let pending = try replica.pending(limit: SyncEngine.batchSize)
            guard !pending.isEmpty else { return }
            let (status, answer) = try send(pending)
            guard status == 200 else {
                for mutation in pending {
                    let (single, reply) = try send([mutation])
                    if single == 200, let receipt = try? MutationReceipt(json: reply) {
                        try settle(receipt, sent: [mutation])
                    } else {
                        try replica.acknowledge(upTo: mutation.seq, counts: replica.counts.asCounts)
                        note("\(describe(mutation)) was refused: \(named(reply["error"]?["message"]?.string ?? "HTTP \(single)", mutation))")
                    }
                }
                continue
            }
            try settle(try MutationReceipt(json: answer), sent: pending)
        }
    }

    private func settle(_ receipt: MutationReceipt, sent: [Mutation]) throws {
        try replica.acknowledge(upTo: receipt.applied, counts: receipt.counts)
        for refusal in receipt.refused {
            let mutation = sent.first { $0.seq == refusal.seq }
            note("\(mutation.map(describe) ?? "A change") was refused: \(mutation.map { named(refusal.reason, $0) } ?? refusal.reason)")
        }
        // An act on a person changes how the two stand: keep the server's word on it.
        for mutation in sent {
            switch mutation.action {
            case .acceptRequest(let user), .declineRequest(let user), .followBack(let user):
                if let json = try? call("GET", "/v1/users/\(Self.segment(user))", query: [:], body: nil), let person = json["user"],
                   let entity = try? PersonEntity(json: person) {
                    try replica.update(entity)
                }
            case .seen, .readAll, .read, .preferences, .alert: break
            }
        }
    }

    /// A person's name as the reader knows them (their id when the replica has no name).
    private func name(_ user: String) -> String {
        (try? replica.person(user))?.name ?? user
    }

    /// The server's words with the people of `mutation` (and the reader) named, not by id.
    private func named(_ reason: String, _ mutation: Mutation) -> String {
        // Naming is a courtesy: a reader the replica cannot name is left as the server said.
        let reader = (try? replica.user) ?? nil
        var people: [String] = reader.map { [$0] } ?? []
        switch mutation.action {
        case .acceptRequest(let user), .declineRequest(let user), .followBack(let user): people.append(user)
        case .seen, .readAll, .read, .preferences, .alert: break
        }
        var words = reason.components(separatedBy: " ")
        for (index, word) in words.enumerated() {
            let bare = word.trimmingCharacters(in: .punctuationCharacters)
            guard people.contains(bare) else { continue }
            let name = bare == reader ? "you" : self.name(bare)
            words[index] = word.replacingOccurrences(of: bare, with: name)
        }
        return words.joined(separator: " ")
    }

    private func describe(_ mutation: Mutation) -> String {
        switch mutation.action {
        case .acceptRequest(let user): return "Accepting \(name(user))"
        case .declineRequest(let user): return "Declining \(name(user))"
        case .followBack(let user): return "Following \(name(user)) back"
        case .read(let row): return "Opening row \(row)"
        case .seen, .readAll: return "Marking Activity seen"
        case .preferences: return "A settings change"
        case .alert(let target, _): return "The alert for \(target.key)"
        }
    }

    private func note(_ refusal: String) {
        state.withLock { $0.refusals.append(refusal) }
    }

    private func send(_ mutations: [Mutation]) throws -> (Int, JSON) {
        var members: [(String, JSON)] = [("client", .string(try replica.clientId)), ("mutations", .array(mutations.map(\.json)))]
        // Applied only on the history this copy synced from (a 409 when the store went back).
        let place = try replica.place()
        if place.version > 0, let mark = place.history {
            members.append(("history", .object([("version", .int(place.version)), ("mark", .string(mark))])))
        }
        let body = JSON.object(members)
        let (status, data) = try transport.perform(method: "POST", path: "/v1/mutations", query: [:], body: Data(body.serialized.utf8))
        guard status == 200 || status == 400 || status == 404 || status == 422 else { throw error(status, data) }
        return (status, (try? JSON.parse(data)) ?? .null)
    }

    /// A read (or small write) straight to the server, for screens that need it live:
    /// settings, the push preview, a destination refreshed. Throws `Unreachable` offline,
    /// `SyncError` on a refusal (its status says which: 410 for content gone).
    public func fetch(_ method: String, _ path: String, query: [String: String] = [:], body: JSON? = nil) throws -> JSON {
        try call(method, path, query: query, body: body.map { Data($0.serialized.utf8) })
    }

    /// The pages of one pull, fetched and read on a thread of its own one page ahead of the
    /// writer: the fetcher holds at most one page that has not been taken.
    final class PagePipe: @unchecked Sendable {  // its condition guards the page in flight
        private let condition = NSCondition()
        private var waiting: Result<ActivityPage, Error>?
        private var closed = false

        init(engine: SyncEngine, after: Int, afterRow: Int, history: String?, wait: Int) {
            Thread { [self] in run(engine, ask: (after, afterRow), history: history, wait: wait) }.start()
        }

        private func run(_ engine: SyncEngine, ask first: (Int, Int), history: String?, wait: Int) {
            var ask = first
            var history = history
            var wait = wait
            while true {
                var result = Result { try engine.page(after: ask.0, afterRow: ask.1, history: history, wait: wait) }
                var next: (Int, Int)?
                if case .success(let page) = result, page.more {
                    next = (page.next, page.nextRow ?? 0)
                    history = page.history
                    // A server that answers "more" without moving on would keep this loop forever.
                    if next! == ask {
                        result = .failure(SyncError(status: 200, description: "the server answered more rows after \(ask.0) but did not move past it"))
                        next = nil
                    }
                }
                condition.lock()
                while waiting != nil && !closed { condition.wait() }
                if closed { condition.unlock(); return }
                waiting = result
                condition.broadcast()
                condition.unlock()
                guard let next else { return }
                ask = next
                wait = 0
            }
        }

        /// The next page, once it has come (or the failure that stopped the pull).
        func take() throws -> ActivityPage {
            condition.lock()
            defer { condition.unlock() }
            while waiting == nil { condition.wait() }
            let result = waiting!
            waiting = nil
            condition.broadcast()
            return try result.get()
        }

        /// The writer is done with this pull: the fetcher stops at its next page.
        func close() {
            condition.lock()
            closed = true
            condition.broadcast()
            condition.unlock()
        }
    }

    /// One page of changes from the server, read straight from its bytes.
    private func page(after: Int, afterRow: Int, history: String?, wait: Int) throws -> ActivityPage {
        var query = ["after": String(after), "afterRow": String(afterRow), "limit": String(pageSize)]
        if wait > 0 { query["wait"] = String(wait) }
        // The store's mark at `after`, so a store that went back in time says so (409).
        if after > 0, let history { query["history"] = history }
        let (status, data) = try transport.perform(method: "GET", path: "/v1/activity", query: query, body: nil)
        guard status == 200 else { throw error(status, data) }
        do { return try ActivityPage(data: data) } catch let error as JSON.ParseError {
            throw WireError(error.description)
        }
    }

    private func call(_ method: String, _ path: String, query: [String: String], body: Data?) throws -> JSON {
        let (status, data) = try transport.perform(method: method, path: path, query: query, body: body)
        guard status == 200, let json = try? JSON.parse(data) else { throw error(status, data) }
        return json
    }

    private func error(_ status: Int, _ data: Data) -> SyncError {
        let json = try? JSON.parse(data)
        let message = json?["error"]?["message"]?.string ?? "HTTP \(status)"
        let retryAfter = json?["error"]?["retryAfter"]?.int.map(Double.init)
        return SyncError(status: status, description: "the server answered \(status): \(Preview.visible(message))",
                         message: Preview.visible(message), retryAfter: retryAfter, code: json?["error"]?["code"]?.string)
    }

    private func setStatus(_ new: SyncStatus) {
        state.withLock { $0.status = new }
    }

    // MARK: Running in the background

    /// Syncs until `stop()`: long-polls while all is well; while the server is unreachable or
    /// cannot serve, retries with a backoff from 0.5 s up to 30 s (never sooner than the
    /// server asked), and says so in `status`.
    public func run(longPoll: Int = 25) {
        var backoff = Backoff()
        var first = true
        while !isStopped {
            do {
                // The first pass answers at once (the status says "synced"); then long-polls.
                try sync(wait: first ? 0 : longPoll)
                first = false
                backoff.reset()
                onChange?()
            } catch {
                onChange?()
                sleep(backoff.next(after: (error as? SyncError)?.retryAfter))
            }
        }
    }

    /// Sleeps `seconds` in short naps, waking early when stopped.
    private func sleep(_ seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while !isStopped, Date() < deadline { Thread.sleep(forTimeInterval: min(0.1, max(0, deadline.timeIntervalSinceNow))) }
    }

    public func stop() { state.withLock { $0.stopped = true } }

    private var isStopped: Bool { state.withLock { $0.stopped } }
}

extension ServerCounts {
    var asCounts: Counts { Counts(unseen: unseen, unread: unread) }
}

/// Waits between tries at a server that did not answer: doubling from 0.5 s up to 30 s, with
/// ±20 % jitter so many clients that lost the same server do not return in step, and never
/// sooner than the server asked (`Retry-After`).
public struct Backoff: Sendable {
    public static let first = 0.5
    public static let longest = 30.0
    private var current = Backoff.first

    public init() {}

    public mutating func reset() { current = Backoff.first }

    /// The next wait, in seconds.
    public mutating func next(after asked: Double? = nil) -> Double {
        let wait = max(current * Double.random(in: 0.8...1.2), asked ?? 0)
        current = min(current * 2, Backoff.longest)
        return min(wait, max(Backoff.longest, asked ?? 0))
    }
}
