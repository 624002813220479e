import Notifications
import SQLite

/// A client's mutation: a stamp, or an act on the world, numbered per client.
public struct Mutation: Sendable {
    public enum Action: Sendable {
        case seen(upTo: Int)
        case read(row: Int)
        case followBack(user: String)
        case acceptRequest(user: String)
        case declineRequest(user: String)
        case preferences([(Category?, Bool)])
    }

    public var seq: Int
    public var action: Action

    public init(seq: Int, action: Action) {
        self.seq = seq
        self.action = action
    }
}

/// Why a batch of mutations was refused; nothing of it was applied.
public enum MutationError: Error, Equatable, CustomStringConvertible {
    /// The row is not the user's (or does not exist): the same answer either way.
    case noSuchRow(Int)
    case refused(seq: Int, reason: String)

    public var description: String {
        switch self {
        case .noSuchRow(let id): return "no row \(id)"
        case let .refused(seq, reason): return "mutation \(seq): \(reason)"
        }
    }
}

extension Store {
    /// The user's rows changed after `version`, oldest change first, at most about `limit`:
    /// a page ends at a version boundary, so the next page starts cleanly after `next`. One
    /// change larger than `limit` (a seen stamp of many rows) comes whole.
    public func changes(for user: UserRecord, after version: Int, limit: Int) throws -> (rows: [ActivityRow], next: Int) {
        var rows = try db.query(Store.changesSQL, [user.key, version, limit + 1], ActivityRow.init)
        guard rows.count > limit, let last = rows.last?.version else {
            return (rows, rows.last?.version ?? version)
        }
        if let first = rows.first?.version, first == last {
            // One change bigger than a page: take all of it.
            rows = try db.query(Store.changesOfVersionSQL, [user.key, last], ActivityRow.init)
            return (rows, last)
        }
        rows.removeAll { $0.version == last }
        return (rows, rows.last?.version ?? version)
    }

    private static let changesSQL = "\(ActivityRow.select) WHERE n.recipient = ? AND n.version > ? ORDER BY n.version, n.id LIMIT ?"
    private static let changesOfVersionSQL = "\(ActivityRow.select) WHERE n.recipient = ? AND n.version = ? ORDER BY n.id"

    /// Applies, in one transaction, the mutations of `client` for `user` that were not applied
    /// before (each at most once, by sequence number), records the last sequence applied, and
    /// returns it with fresh counts. A refused mutation refuses the whole batch.
    public func apply(_ mutations: [Mutation], client: String, for user: UserRecord, at: Int64) throws -> (applied: Int, counts: Counts) {
        try db.transaction {
            var last = try db.scalar("SELECT last_seq FROM client_mutations WHERE client = ? AND user = ?", client, user.key) ?? 0
            for mutation in mutations.sorted(by: { $0.seq < $1.seq }) where mutation.seq > last {
                try apply(mutation, client: client, for: user, at: at)
                last = mutation.seq
            }
            try db.run("""
                INSERT INTO client_mutations(client, user, last_seq) VALUES (?, ?, ?)
                ON CONFLICT (client, user) DO UPDATE SET last_seq = excluded.last_seq
                """, client, user.key, last)
            return (last, try counts(for: user.key))
        }
    }

    private func apply(_ mutation: Mutation, client: String, for user: UserRecord, at: Int64) throws {
        let body: Event.Body
        switch mutation.action {
        case .seen(let upTo):
            try markSeen(user, upTo: upTo, at: at)
            return
        case .read(let row):
            guard try markRead(user, row: row, at: at) != nil else { throw MutationError.noSuchRow(row) }
            return
        case .followBack(let other):
            body = .relation("follow", actor: user.id, target: other)
        case .acceptRequest(let other):
            body = .relation("followRequestAccepted", actor: user.id, target: other)
        case .declineRequest(let other):
            body = .relation("followRequestDeclined", actor: user.id, target: other)
        case .preferences(let changes):
            body = .preferences(user: user.id, changes: changes)
        }
        do {
            try apply(Event(id: "mutation:\(client):\(user.id):\(mutation.seq)", at: at, body: body))
        } catch let error as EventError {
            throw MutationError.refused(seq: mutation.seq, reason: error.description)
        }
    }
}
