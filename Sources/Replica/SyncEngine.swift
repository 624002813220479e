import Foundation
import Notifications

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
    /// Called (on the sync thread) after each pass that changed the replica or its status.
    public var onChange: (@Sendable () -> Void)?

    public static let pageSize = 500

    public init(replica: Replica, transport: Transport) {
        self.replica = replica
        self.transport = transport
    }

    public var status: SyncStatus {
        lock.lock()
        defer { lock.unlock() }
        return _status
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
            var first = true
            while true {
                var query = ["after": String(replica.version), "limit": String(SyncEngine.pageSize)]
                if first && wait > 0 { query["wait"] = String(wait) }
                first = false
                let page = try call("GET", "/v1/activity", query: query, body: nil)
                let rows = page["rows"]?.array ?? []
                try replica.apply(page: rows, next: page["next"]?.int ?? replica.version, counts: page["counts"],
                                  entities: page["entities"])
                applied += rows.count
                if rows.isEmpty { break }
            }
            setStatus(.synced(at: Date()))
            return applied
        } catch let error as Unreachable {
            if case .offline = status {} else { setStatus(.offline(since: Date(), reason: error.description)) }
            throw error
        }
    }

    /// Sends the queued mutations. A batch the server refuses (a row that is gone, an act no
    /// longer possible) is sent one by one, and a refused mutation is dropped: one bad stamp
    /// must not block the queue forever.
    private func push() throws {
        let pending = try replica.pending()
        guard !pending.isEmpty else { return }
        let (status, answer) = try send(pending)
        if status == 200 {
            try replica.acknowledge(upTo: answer["applied"]?.int ?? 0, counts: answer["counts"])
            return
        }
        for mutation in pending {
            let (single, reply) = try send([mutation])
            let seq = mutation["seq"]?.int ?? 0
            try replica.acknowledge(upTo: single == 200 ? (reply["applied"]?.int ?? seq) : seq, counts: reply["counts"])
        }
    }

    private func send(_ mutations: [JSON]) throws -> (Int, JSON) {
        let body = JSON.object([("client", .string(replica.clientId)), ("mutations", .array(mutations))])
        let (status, data) = try transport.perform(method: "POST", path: "/v1/mutations", query: [:], body: Data(body.serialized.utf8))
        guard status == 200 || status == 404 || status == 422 else { throw error(status, data) }
        return (status, (try? JSON.parse(data)) ?? .null)
    }

    /// A read (or small write) straight to the server, for screens that need it live:
    /// settings, the push preview. Throws `Unreachable` offline, `SyncError` on a refusal.
    public func fetch(_ method: String, _ path: String, query: [String: String] = [:], body: JSON? = nil) throws -> JSON {
        try call(method, path, query: query, body: body.map { Data($0.serialized.utf8) })
    }

    private func call(_ method: String, _ path: String, query: [String: String], body: Data?) throws -> JSON {
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
