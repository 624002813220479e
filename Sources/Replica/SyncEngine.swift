import Foundation
import Notifications
import Wire

/// Where sync stands, for the inbox's header ("synced 3s ago", "offline · 2 pending").
public enum SyncStatus: Equatable, Sendable {
    case never
    case synced(at: Date)
    case offline(since: Date, reason: String)
}

/// A server answer the sync cannot get past (a refused token, a broken server).
public struct SyncError: Error, CustomStringConvertible {
    public let status: Int
    public let description: String
}

/// Keeps a replica converged with its server: send pending mutations, then pull the changes
/// after the stored version, each page applied with its version in one transaction.
public final class SyncEngine: @unchecked Sendable {
    public let replica: Replica
    private let transport: Transport
    private let lock = NSLock()
    private var _status = SyncStatus.never
    private var stopped = false
    private var refusals: [String] = []
    /// Called (on the sync thread) after each pass that changed the replica or its status.
    public var onChange: (@Sendable () -> Void)?
    /// Called (on the sync thread) after each page of a first sync: rows received, rows in all.
    public var onProgress: (@Sendable (Int, Int) -> Void)?

    /// Rows per page: large pages keep a first sync of a million rows to a few hundred trips.
    public static let pageSize = 2000
    /// Mutations per request at most.
    public static let batchSize = 500

    /// Rows this engine asks for per page.
    public let pageSize: Int

    public init(replica: Replica, transport: Transport, pageSize: Int = SyncEngine.pageSize) {
        self.replica = replica
        self.transport = transport
        self.pageSize = max(1, pageSize)
    }

    public var status: SyncStatus {
        lock.lock()
        defer { lock.unlock() }
        return _status
    }

    /// What the server refused since last asked, in words for the reader ("…: no pending
    /// follow request from an"); each is asked for once.
    public func takeRefusals() -> [String] {
        lock.lock()
        defer { refusals = []; lock.unlock() }
        return refusals
    }

    /// One pass: push the queue, then pull every page after the stored version. With `wait`,
    /// the first pull long-polls when nothing has changed yet. Returns the rows applied.
    /// Throws `Unreachable` when offline (nothing is lost: the queue stays), `SyncError` on an
    /// answer it cannot use.
    @discardableResult
    public func sync(wait: Int = 0) throws -> Int {
        do {
            try push()
            var applied = 0
            var next: PageFetch? = PageFetch(after: replica.version, afterRow: replica.afterRow, wait: wait, engine: self)
            while let fetch = next {
                let asked = fetch.position
                let page = try fetch.page()
                next = nil
                if let store = page.store, store != replica.storeIdentity {
                    if replica.storeIdentity != nil || replica.version > 0 {
                        // Another store answers now: what is held here belongs to the old one.
                        try replica.reset(for: store)
                        next = PageFetch(after: 0, afterRow: 0, wait: 0, engine: self)
                        continue
                    }
                    try replica.reset(for: store)
                }
                // The next page is asked for while this one is written: the server and the
                // replica work side by side.
                if page.more {
                    // A server that answers "more" without moving on would keep this loop forever.
                    let ask = (page.next, page.nextRow ?? 0)
                    guard ask != asked else {
                        throw SyncError(status: 200, description: "the server answered more rows after \(asked.0) but did not move past it")
                    }
                    next = PageFetch(after: ask.0, afterRow: ask.1, wait: 0, engine: self)
                }
                try replica.apply(page)
                applied += page.rows.count
                if let progress = replica.initialSync { onProgress?(progress.received, progress.total) }
            }
            setStatus(.synced(at: Date()))
            return applied
        } catch let error as Unreachable {
            if case .offline = status {} else { setStatus(.offline(since: Date(), reason: error.description)) }
            throw error
        } catch let error as WireError {
            throw SyncError(status: 200, description: "the server's answer was not understood: \(error.description)")
        }
    }

    /// Sends the queued mutations, a batch at a time. The server applies what it can and
    /// says what it refused; a refused mutation is dropped (and told to the reader). A batch
    /// the server cannot read at all is sent one by one, and what it cannot read dropped.
    private func push() throws {
        while true {
            let pending = Array(try replica.pending().prefix(SyncEngine.batchSize))
            guard !pending.isEmpty else { return }
            let (status, answer) = try send(pending)
            guard status == 200 else {
                for mutation in pending {
                    let (single, reply) = try send([mutation])
                    if single == 200, let receipt = try? MutationReceipt(json: reply) {
                        try settle(receipt, sent: [mutation])
                    } else {
                        try replica.acknowledge(upTo: mutation.seq, counts: replica.counts.asCounts)
                        note("\(describe(mutation)) was refused: \(reply["error"]?["message"]?.string ?? "HTTP \(single)")")
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
            note("\(mutation.map(describe) ?? "A change") was refused: \(refusal.reason)")
        }
        // An act on a person changes how the two stand: keep the server's word on it.
        for mutation in sent {
            switch mutation.action {
            case .acceptRequest(let user), .declineRequest(let user), .followBack(let user):
                if let json = try? call("GET", "/v1/users/\(user)", query: [:], body: nil), let person = json["user"],
                   let entity = try? PersonEntity(json: person) {
                    try replica.update(entity)
                }
            default: break
            }
        }
    }

    private func describe(_ mutation: Mutation) -> String {
        switch mutation.action {
        case .acceptRequest(let user): return "Accepting \(user)"
        case .declineRequest(let user): return "Declining \(user)"
        case .followBack(let user): return "Following \(user) back"
        case .read(let row): return "Opening row \(row)"
        case .seen, .readAll: return "Marking Activity seen"
        case .preferences: return "A settings change"
        }
    }

    private func note(_ refusal: String) {
        lock.lock()
        refusals.append(refusal)
        lock.unlock()
    }

    private func send(_ mutations: [Mutation]) throws -> (Int, JSON) {
        let body = JSON.object([("client", .string(replica.clientId)), ("mutations", .array(mutations.map(\.json)))])
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

    /// One page of changes, asked for on a thread of its own as soon as it is made.
    final class PageFetch: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var result: Result<ActivityPage, Error> = .failure(Unreachable(description: "not fetched"))
        /// Where this page starts: the version and the row after which it was asked for.
        let position: (Int, Int)

        init(after: Int, afterRow: Int, wait: Int, engine: SyncEngine) {
            position = (after, afterRow)
            var query = ["after": String(after), "afterRow": String(afterRow), "limit": String(engine.pageSize)]
            if wait > 0 { query["wait"] = String(wait) }
            let asked = query
            Thread { [self] in
                result = Result { try ActivityPage(json: try engine.call("GET", "/v1/activity", query: asked, body: nil)) }
                done.signal()
            }.start()
        }

        /// The page, once it has come (or the failure that stopped it).
        func page() throws -> ActivityPage {
            done.wait()
            return try result.get()
        }
    }

    fileprivate func call(_ method: String, _ path: String, query: [String: String], body: Data?) throws -> JSON {
        let (status, data) = try transport.perform(method: method, path: path, query: query, body: body)
        guard status == 200, let json = try? JSON.parse(data) else { throw error(status, data) }
        return json
    }

    private func error(_ status: Int, _ data: Data) -> SyncError {
        let message = (try? JSON.parse(data))?["error"]?["message"]?.string ?? "HTTP \(status)"
        return SyncError(status: status, description: "the server answered \(status): \(message)")
    }

    private func setStatus(_ new: SyncStatus) {
        lock.lock()
        _status = new
        lock.unlock()
    }

    // MARK: Running in the background

    /// Syncs until `stop()`: long-polls while all is well; while the server is unreachable,
    /// retries with a backoff from 0.5 s up to 30 s, and says so in `status`.
    public func run(longPoll: Int = 25) {
        var backoff = 0.5
        var first = true
        while !isStopped {
            do {
                // The first pass answers at once (the status says "synced"); then long-polls.
                try sync(wait: first ? 0 : longPoll)
                first = false
                backoff = 0.5
                onChange?()
            } catch {
                onChange?()
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, 30)
            }
        }
    }

    public func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }
}

extension ServerCounts {
    var asCounts: Counts { Counts(unseen: unseen, unread: unread) }
}
