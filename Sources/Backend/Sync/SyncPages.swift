import Notifications
import Storage
import Wire

/// Pulls and client mutations: what the sync protocol asks of the store.
extension Store {
    /// A revocation a reader's sync must act on.
    struct RevocationEntry {
        var reason: Revocation
        var owner: UserRecord?
        var comment: String?
    }

    func revocations(for userKey: Int, after: Int, through: Int) throws -> [RevocationEntry] {
        let found = try db.query("""
            SELECT reason, owner, c.ext FROM revocations AS r LEFT JOIN comments AS c ON c.id = r.comment
            WHERE r.viewer IN (?, 0) AND r.version > ? AND r.version <= ? ORDER BY r.version
            """, [userKey, after, through]) { (try $0.decoded(0, table: "revocations", column: "reason", Revocation.init(rawValue:)), $0.optionalInt(1), $0.optionalString(2)) }
        return try found.map { reason, owner, comment in
            RevocationEntry(reason: reason, owner: try owner.flatMap { try user(key: $0) }, comment: comment)
        }
    }

    static let hasChangesSQL = "SELECT " + changed(user: "?", after: "?")

    /// Whether `user` has a row, a mark or a revocation after version `after` (SQL expressions
    /// both): what a change is, to a long-poll.
    static func changed(user: String, after: String) -> String {
        """
        (EXISTS (SELECT 1 FROM notifications WHERE recipient = \(user) AND version > \(after))
         OR EXISTS (SELECT 1 FROM marks WHERE user = \(user) AND version > \(after))
         OR EXISTS (SELECT 1 FROM revocations WHERE viewer IN (\(user), 0) AND version > \(after)))
        """
    }

}

/// Gathers the entities a page's rows point at, and what the reader must give up.
struct EntityCollector {
    let store: Store
    let visibility: Visibility
    private var users: [Int] = []
    private var userSet = Set<Int>()
    private var steps: [Int] = []
    private var stepSet = Set<Int>()
    private var journeys: [Int] = []
    private var journeySet = Set<Int>()
    private var comments: [Int] = []
    private var commentSet = Set<Int>()
    private(set) var drops = Drops()
    private var dropped = Set<String>()

    init(store: Store, visibility: Visibility) {
        self.store = store
        self.visibility = visibility
    }

    private mutating func addUser(_ key: Int?) {
        guard let key, userSet.insert(key).inserted else { return }
        users.append(key)
    }

    private mutating func drop(_ id: String, _ list: WritableKeyPath<Drops, [String]>, _ kind: String) {
        guard dropped.insert(kind + ":" + id).inserted else { return }
        drops[keyPath: list].append(id)
    }

    /// A row that quotes its content: everything it points at travels with it.
    mutating func quote(_ row: StoredRow) throws {
        addUser(row.actorKey)
        if let key = row.stepKey, stepSet.insert(key).inserted { steps.append(key) }
        if let key = row.journeyKey, journeySet.insert(key).inserted { journeys.append(key) }
        if let key = row.commentKey, commentSet.insert(key).inserted { comments.append(key) }
    }

    /// A withheld row: what it points at and the reader may not see is to be given up.
    mutating func withhold(_ row: StoredRow) throws {
        if let key = row.actorKey, let actor = try visibility.person(key) {
            if try visibility.canSee(person: actor) { addUser(key) } else { drop(actor.id, \.people, "person") }
        }
        if let key = row.stepKey, let step = try visibility.step(key) {
            if try visibility.canSee(step: step) {
                if stepSet.insert(key).inserted { steps.append(key) }
            } else {
                drop(step.id, \.steps, "step")
            }
        }
        if let key = row.journeyKey, let journey = try store.journey(key: key) {
            if try visibility.canSee(journey: journey) {
                if journeySet.insert(key).inserted { journeys.append(key) }
            } else {
                drop(journey.id, \.journeys, "journey")
            }
        }
        if let key = row.commentKey, let comment = try store.comment(key: key), !(try visibility.canSee(comment: comment)) {
            drop(comment.id, \.comments, "comment")
        }
    }

    /// What the revocations since the last pull take away, as it stands now.
    mutating func revoke(_ entries: [Store.RevocationEntry]) throws {
        for entry in entries {
            switch entry.reason {
            case .block, .inactive:
                guard let owner = entry.owner, owner.key != visibility.viewer.key,
                      !(try visibility.canSee(person: owner)) else { continue }
                drop(owner.id, \.people, "person")
            case .private, .unfollow:
                guard let owner = entry.owner, !(try visibility.canSeeContent(of: owner)) else { continue }
                drop(owner.id, \.owners, "owner")
            case .comment:
                if let comment = entry.comment { drop(comment, \.comments, "comment") }
            }
        }
    }

    /// The entities gathered, each as the reader may see it now. Each step the reader owns
    /// brings its newest comments (its thread, for the step's page offline) while `threads`
    /// comments are left to send, the steps quoted last first: a page with more after it sends
    /// none (the pull's last page brings them as they are when it ends; every page would send
    /// the same threads again), and no page carries more of them than it may carry rows.
    mutating func entities(threads: Int = Int.max) throws -> Entities {
        var result = Entities()
        var commentEntities: [CommentEntity] = []
        var shown: [StepRecord] = []
        for key in steps {
            guard let step = try visibility.step(key), try visibility.canSee(step: step) else { continue }
            result.steps.append(try store.entities.step(step))
            addUser(step.ownerKey)
            shown.append(step)
        }
        var budget = threads
        for step in shown.reversed() where budget > 0 && step.ownerKey == visibility.viewer.key {
            let thread = try store.entities.comments(ofStep: step, visibility: visibility)
            guard thread.count <= budget else { continue }
            commentEntities += thread
            budget -= thread.count
        }
        // The comments rows are about, with the comment each answers.
        var extra: [Int] = []
        for key in comments {
            if let parent = try visibility.comment(key)?.parentKey, !commentSet.contains(parent) { extra.append(parent) }
        }
        // The threads' authors by id (few: one page a pull has them); the rows' by key.
        for comment in commentEntities {
            if let author = try store.user(comment.author) { addUser(author.key) }
        }
        var shownComments = Set(commentEntities.map(\.id))
        for key in comments + extra {
            guard let record = try visibility.comment(key), try visibility.canSee(comment: record),
                  let step = try visibility.step(record.stepKey), !shownComments.contains(record.id) else { continue }
            shownComments.insert(record.id)
            commentEntities.append(try store.entities.commentEntity(record, on: step, visibility: visibility))
            addUser(record.authorKey)
        }
        result.comments = commentEntities
        for key in journeys {
            guard let journey = try store.journey(key: key), try visibility.canSee(journey: journey) else { continue }
            let entity = try store.entities.journey(journey, people: true, captions: false, visibility: visibility)
            result.journeys.append(entity)
            addUser(journey.ownerKey)
            for supporter in entity.people ?? [] {
                if let person = try store.user(supporter.user) { addUser(person.key) }
            }
        }
        for key in users {
            guard let person = try visibility.person(key), try visibility.canSee(person: person) else { continue }
            result.users.append(try store.entities.person(person, seenBy: visibility.viewer))
        }
        return result
    }
}

extension Store {
    /// The pages and mutations of replicas' syncs.
    public var sync: SyncPages { SyncPages(store: self) }
}

/// What replicas sync through: a user's pages of changes since a version, who has changes,
/// and the mutations (seen, read, acts) a device made while it was away.
public struct SyncPages {
    let store: Store
    var db: Connection { store.db }

    /// The last of `client`'s mutations for `user` the store has applied (0 before its first):
    /// what its receipts answer as `applied`, so a client that retries sends only what follows.
    public func lastApplied(client: String, for user: UserRecord) throws -> Int {
        try db.scalar("SELECT last_seq FROM client_mutations WHERE client = ? AND user = ?", client, user.key) ?? 0
    }

    /// The store's history mark at `version`: the mark of the newest change at or below it
    /// ("0" before the first). Versions only grow, so a replica's version names a point in the
    /// store's history, and the mark names which history: a store restored from an older copy
    /// hands out the versions it lost again, with other marks, and one that has not reached
    /// the replica's version yet answers the mark of an older change. Raft checks a log the
    /// same way (the index and the term of the entry before). Below the history floor (the
    /// oldest events pruned, `Store.prune`) every version has the floor's one mark.
    public func historyMark(at version: Int) throws -> String {
        String(UInt64(bitPattern: try store.historyNonce(at: version)), radix: 16)
    }

    /// A name for what `user`'s page asked with `query` (its `after`, `afterRow` and `limit`)
    /// answers now, read without reading the page: the page's `ETag`. Every change to the store
    /// takes a version (an `events` row: events, marks, revocations alike), so while the newest
    /// settled version and its history mark stand, every page reads the same bytes; a store
    /// restored from an older copy hands out versions again with other marks. Read before the
    /// page's own snapshot: a change in between makes the tag name the older state, and the
    /// next request with it then reads the page again (never the reverse).
    /// Returns the state whole (`key`: what a page cache keys it by, unhashed) and as the tag.
    public func pageState(for user: UserRecord, query: String) throws -> (key: String, tag: String) {
        let below = try store.horizon()
        let state: (version: Int, mark: Int64)
        if below == Int.max {
            state = try db.cached("SELECT id, coalesce(nonce, 0) FROM events WHERE id = (SELECT max(id) FROM events)").bind([]).first {
                ($0.int(0), $0.int64(1))
            } ?? (0, 0)
        } else {
            state = try db.cached("SELECT id, coalesce(nonce, 0) FROM events WHERE id < ? ORDER BY id DESC LIMIT 1").bind([below]).first {
                ($0.int(0), $0.int64(1))
            } ?? (0, 0)
        }
        let key = "\(store.identity)|\(state.version)|\(state.mark)|\(user.key)|\(query)"
        // FNV-1a, 64 bits: the same on every server of a store, unlike Swift's seeded Hasher.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return (key, "\"" + String(hash, radix: 16) + "-" + String(state.version, radix: 36) + "\"")
    }

    /// Throws `HistoryDiverged` unless `mark` — what a replica was handed with `version` — is
    /// still the store's mark there. Asked after the horizon, so a standby has replayed the
    /// replica's version before it answers.
    public func requireHistory(_ mark: String, at version: Int) throws {
        guard version > 0 else { return }
        _ = try store.horizon()
        let ours = try historyMark(at: version)
        guard ours == mark else { throw HistoryDiverged(version: version, pruned: version < (try store.historyFloor().below)) }
    }

    /// The reader's changes after `version`, at most about `limit` rows, evaluated now.
    ///
    /// One snapshot gives the rows changed (oldest change first), the marks and revocations up
    /// to the page's end, and the entities the rows point at. Each row's copy, and each entity,
    /// goes through `Visibility`: a row whose content the reader may no longer see goes
    /// withheld, and what they may no longer hold is listed in `drops` — from this page's rows,
    /// and from the revocations since `version`.
    ///
    /// Without `afterRow`, a page ends at a version boundary and one change bigger than a page
    /// comes whole (the contract). With it (0 on a first page), a page may end inside a version:
    /// it then answers `next` = that version less one and `nextRow` = its last row, and the
    /// client asks again with both — so a change of a million rows (a deleted step's) still
    /// comes a page at a time.
    public func page(for user: UserRecord, after version: Int, afterRow: Int? = nil, limit: Int) throws -> ActivityPage {
        // Only settled versions are handed out (see `horizon`): asked before the snapshot.
        let below = try store.horizon()
        return try store.snapshot {
            var reader = RowReader()
            var stored: [StoredRow]
            if let afterRow, afterRow > 0 {
                // The rest of version + 1 after row `afterRow`, then the versions after it: two
                // ranges of the version index (a row-value comparison would walk the version
                // from its start, and a million-row change page by page is then quadratic).
                // The horizon is checked here, not in the first statement: given `version = ?`
                // and `version < ?` both, SQLite sought the range and sorted the whole version,
                // and a first sync of a million rows took a minute.
                stored = version + 1 < below ? try db.query("""
                    \(RowReader.select) WHERE n.recipient = ? AND n.version = ? AND n.id > ? ORDER BY n.id LIMIT ?
                    """, [user.key, version + 1, afterRow, limit + 1]) { try reader.read($0) } : []
                if stored.count <= limit {
                    stored += try db.query("""
                        \(RowReader.select) WHERE n.recipient = ? AND n.version > ? AND n.version < ? ORDER BY n.version, n.id LIMIT ?
                        """, [user.key, version + 1, below, limit + 1 - stored.count]) { try reader.read($0) }
                }
            } else {
                stored = try db.query("""
                    \(RowReader.select) WHERE n.recipient = ? AND n.version > ? AND n.version < ? ORDER BY n.version, n.id LIMIT ?
                    """, [user.key, version, below, limit + 1]) { try reader.read($0) }
            }
            var more = false
            var nextRow: Int?
            // On PostgreSQL every version below the horizon is settled and in this snapshot.
            var next = max(version, below == Int.max ? try store.currentVersion() : below - 1)
            if stored.count > limit, let last = stored.last?.row.version {
                more = true
                if afterRow != nil {
                    // Cut after `limit` rows, inside a version if need be.
                    stored.removeLast(stored.count - limit)
                    let end = stored.last!
                    if end.row.version == last {
                        next = end.row.version - 1
                        nextRow = end.row.id
                    } else {
                        stored.removeAll { $0.row.version == last }
                        next = stored.last?.row.version ?? version
                    }
                } else if stored.first?.row.version == last {
                    // One change bigger than a page: take all of it.
                    stored = try db.query("\(RowReader.select) WHERE n.recipient = ? AND n.version = ? ORDER BY n.id",
                                          [user.key, last]) { try reader.read($0) }
                    next = last
                } else {
                    stored.removeAll { $0.row.version == last }
                    next = stored.last?.row.version ?? version
                }
            }
            try store.applyMarks(to: &stored, of: user.key)
            let visibility = Visibility(store: store, viewer: user)
            var collector = EntityCollector(store: store, visibility: visibility)
            var rows: [ActivityRow] = []
            rows.reserveCapacity(stored.count)
            for row in stored {
                // An actor out of sight keeps no face on any row, whatever its kind quotes.
                let actorVisible = try visibility.canSeeActor(row)
                if actorVisible, try visibility.canQuote(row) {
                    rows.append(row.row)
                    try collector.quote(row)
                } else {
                    rows.append(row.row.withholding(face: !actorVisible))
                    try collector.withhold(row)
                }
            }
            // A first pull holds nothing yet: there is nothing to give up.
            if version > 0 { try collector.revoke(try store.revocations(for: user.key, after: version, through: next)) }
            let counters = try store.counters(of: user.key)
            var page = ActivityPage(rows: rows, entities: try collector.entities(threads: more ? 0 : limit), counts: counters.counts, next: next,
                                    marks: try store.marks(of: user.key, after: version, through: next), drops: collector.drops,
                                    store: store.identity, total: version == 0 && (afterRow ?? 0) == 0 ? counters.total : nil, more: more)
            page.nextRow = nextRow
            page.history = try historyMark(at: next)
            if let pruned = try db.first("SELECT pruned_row, pruned_ord FROM inboxes WHERE user = ?", [user.key], { ($0.int(0), $0.int(1)) }),
               pruned.0 > 0 {
                page.prunedThrough = pruned.0
                // The rows a first pull will receive: those the prune left (their places above its mark).
                page.total = page.total.map { max(0, $0 - pruned.1) }
            }
            return page
        }
    }

    /// Which of `polls` (a user's key, and the version they have) have a change after it: one
    /// query for every parked long-poll of a server, however many there are.
    public func usersWithChanges(_ polls: [(user: Int, after: Int)]) throws -> Set<Int> {
        var changed = Set<Int>()
        var start = 0
        while start < polls.count {
            let chunk = polls[start..<min(start + 500, polls.count)]
            start += chunk.count
            // Integers only, written into the text: one statement whatever the count.
            let values = chunk.map { "(\($0.user), \($0.after))" }.joined(separator: ", ")
            try db.prepare("WITH p(u, v) AS (VALUES \(values)) SELECT p.u FROM p WHERE \(Store.changed(user: "p.u", after: "p.v"))")
                .bind([]).forEach { changed.insert($0.int(0)) }
        }
        return changed
    }

    /// The users with a row, a mark or a revocation at version `since` or later (0 among them:
    /// a revocation for everyone), and where to look from next time: the horizon, below which
    /// nothing new can still appear. What a server's waker asks on each commit it hears, at a
    /// cost that grows with the changes, not with the long-polls parked. On PostgreSQL, whose
    /// schema indexes these tables by version.
    public func usersChanged(since: Int) throws -> (users: Set<Int>, next: Int) {
        let next = try store.horizon()
        var users = Set<Int>()
        try db.cached("""
            SELECT recipient FROM notifications WHERE version >= ?
            UNION SELECT user FROM marks WHERE version >= ?
            UNION SELECT viewer FROM revocations WHERE version >= ?
            """).bind([since, since, since]).forEach { users.insert($0.int(0)) }
        return (users, max(since, next))
    }

    /// Whether `userKey` has any change after `version`: a row, a mark or a revocation.
    public func hasChanges(for userKey: Int, after version: Int) throws -> Bool {
        try db.scalar(Store.hasChangesSQL, userKey, version, userKey, version, userKey, version) == 1
    }

    /// Applies, in one transaction and in order of `seq`, the mutations of `client` for `user`
    /// that were not applied before (each at most once), and records the last sequence seen.
    /// A mutation the world refuses (a row that is not theirs, a request already answered) is
    /// consumed and reported in the receipt, not retried; the others apply.
    ///
    /// With `history` (the version the client synced to and the mark it was handed there),
    /// nothing is applied unless that is still a point of this store's history: a queue made
    /// against a store since restored from an older copy may name rows that are other rows now
    /// (`HistoryDiverged`).
    public func apply(_ mutations: [Mutation], client: String, for user: UserRecord, at: Int64,
                      history: (mark: String, version: Int)? = nil) throws -> MutationReceipt {
        try db.transaction {
            if let history { try requireHistory(history.mark, at: history.version) }
            // On PostgreSQL the person's counters first, held: a person's mutations then apply one
            // request at a time, so a request a killed client left running and its retry never
            // both find the same mutations new; and the counters come before anything a mutation
            // locks (an accepted request's fan-out locks the requester's), the order every stamp
            // takes them in.
            if db.dialect.writersSideBySide { _ = try store.countersForChange(of: user.key) }
            var last = try db.scalar("SELECT last_seq FROM client_mutations WHERE client = ? AND user = ?", client, user.key) ?? 0
            var refused: [MutationReceipt.Refusal] = []
            for mutation in mutations.sorted(by: { $0.seq < $1.seq }) where mutation.seq > last {
                do {
                    try db.transaction { try apply(mutation, client: client, for: user, at: at) }
                } catch let error as EventError {
                    refused.append(MutationReceipt.Refusal(seq: mutation.seq, reason: error.description))
                }
                last = mutation.seq
            }
            try db.run("""
                INSERT INTO client_mutations(client, user, last_seq) VALUES (?, ?, ?)
                ON CONFLICT (client, user) DO UPDATE SET last_seq = excluded.last_seq
                """, client, user.key, last)
            return MutationReceipt(applied: last, counts: try store.inboxes.counts(for: user.key), refused: refused)
        }
    }

    private func apply(_ mutation: Mutation, client: String, for user: UserRecord, at: Int64) throws {
        let body: Event.Body
        switch mutation.action {
        case .seen(let upTo):
            try store.inboxes.markSeen(user, upTo: upTo, at: at)
            return
        case .readAll(let upTo):
            try store.inboxes.markAllRead(user, upTo: upTo, at: at)
            return
        case .read(let row):
            guard try store.inboxes.markRead(user, row: row, at: at) != nil else { throw EventError("no row \(row)") }
            return
        case .followBack(let other):
            try requireReachable(other, from: user, "followed")
            body = .relation(.follow, actor: user.id, target: other)
        case .acceptRequest(let other):
            try requireReachable(other, from: user, "accepted")
            body = .relation(.followRequestAccepted, actor: user.id, target: other)
        case .declineRequest(let other):
            body = .relation(.followRequestDeclined, actor: user.id, target: other)
        case let .preferences(changes, quietHours):
            body = .preferences(user: user.id, changes: changes.map { ($0.category, $0.on) }, quietHours: quietHours)
        case let .alert(target, mode):
            body = .alert(user: user.id, target: target, mode: mode)
        }
        try store.apply(Event(id: "mutation:\(client):\(user.id):\(mutation.seq)", at: at, body: body))
    }
}

extension SyncPages {
    /// A relationship a person makes towards `other` (following back, accepting their request)
    /// needs `other` to be there for them: not banned or deactivated, and no block between the
    /// two either way. A decline, which only takes a request away, needs none of it.
    func requireReachable(_ other: String, from user: UserRecord, _ done: String) throws {
        // (`done`: what would be done to them, in the refusal's words.)
        let target = try store.requireUser(other)
        guard target.isActive else { throw EventError("\(other) is \(target.state.rawValue) now, and cannot be \(done)") }
        if try store.blocked(user.key, target.key) { throw EventError("a block stands between \(user.id) and \(other)") }
    }
}

/// A replica's version is not a point of this store's history: the store went back in time
/// (restored from an older copy) after the replica synced, so what the replica holds may name
/// rows the store no longer has; or (`pruned`) the store pruned its history past that version,
/// the replica having been away longer than the store keeps. The replica starts again
/// (docs/operations.md).
public struct HistoryDiverged: Error, CustomStringConvertible {
    public let version: Int
    public var pruned = false
    public var description: String {
        pruned
            ? "this copy last synced at version \(version), older than the history the store keeps (stepo prune): start again from the beginning"
            : "the store's history is not the one this copy synced from at version \(version) (it was restored from an older copy): start again from the beginning"
    }
}
