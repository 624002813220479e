import Foundation
import Notifications
import SQLite
import Wire

/// The seen and read marks in memory: for any row, the earliest mark that covers it.
struct MarkIndex {
    /// Every mark's reach (a row id), ascending, with the earliest time among it and all that
    /// reach further.
    private var reach: [Int] = []
    private var earliestFrom: [Int64] = []
    /// Read marks only, ascending (each reaches further and comes later than the one before).
    private var reads: [(reach: Int, at: Int64)] = []

    /// The furthest any mark reaches: every row up to it is seen.
    private(set) var seenThrough = 0
    /// The furthest a read mark reaches: every row up to it is read.
    private(set) var readThrough = 0

    init(_ marks: [(kind: String, reach: Int, at: Int64)]) {
        let sorted = marks.sorted { $0.reach < $1.reach }
        reach = sorted.map(\.reach)
        earliestFrom = sorted.map(\.at)
        for index in earliestFrom.indices.reversed().dropFirst() {
            earliestFrom[index] = min(earliestFrom[index], earliestFrom[index + 1])
        }
        reads = sorted.filter { $0.kind == "read" }.map { ($0.reach, $0.at) }
        seenThrough = reach.last ?? 0
        readThrough = reads.last?.reach ?? 0
    }

    private static func firstReaching(_ reaches: [Int], _ id: Int) -> Int? {
        var low = 0, high = reaches.count
        while low < high {
            let middle = (low + high) / 2
            if reaches[middle] >= id { high = middle } else { low = middle + 1 }
        }
        return low < reaches.count ? low : nil
    }

    func seen(_ id: Int) -> Int64? {
        MarkIndex.firstReaching(reach, id).map { earliestFrom[$0] }
    }

    func read(_ id: Int) -> Int64? {
        MarkIndex.firstReaching(reads.map(\.reach), id).map { reads[$0].at }
    }

    static func earliest(_ a: Int64?, _ b: Int64?) -> Int64? {
        switch (a, b) {
        case let (a?, b?): return min(a, b)
        default: return a ?? b
        }
    }
}

/// Writing the replica: local acts, shown at once and queued; and what the server sent.
extension Replica {
    func markIndex() throws -> MarkIndex {
        if let cached = markCache { return cached }
        let index = MarkIndex(try db.query("SELECT kind, through_row, at FROM marks") { ($0.string(0), $0.int(1), $0.int64(2)) })
        markCache = index
        return index
    }

    /// The furthest row any mark reaches: rows above it arrived since Activity last looked.
    public var seenThrough: Int { get throws { try locked { try markIndex().seenThrough } } }

    // MARK: Local acts

    /// Opening Activity: every row held here is seen — one mark, one queued mutation — and
    /// the server is told which rows those were (every row made up to the version synced).
    public func markAllSeen(at: Int64) throws {
        try mark(.seen, at: at)
    }

    /// Every row held here read (and seen): one mark, one queued mutation.
    public func markAllRead(at: Int64) throws {
        try mark(.read, at: at)
    }

    private func mark(_ kind: Mark.Kind, at: Int64) throws {
        try locked {
            try db.transaction {
                guard let newest = try db.scalar("SELECT max(id) FROM rows") else { return }
                let index = try markIndex()
                if kind == .seen && newest <= index.seenThrough { return }
                try db.run("INSERT INTO marks(version, kind, through_row, at) VALUES (NULL, ?, ?, ?)", kind.rawValue, newest, at)
                markCache = nil
                let upTo = try number("version")
                try enqueueLocked(kind == .seen ? .seen(upTo: upTo) : .readAll(upTo: upTo))
            }
        }
    }

    /// Opening a row: it is read (and seen), and the server is told.
    public func markRead(_ id: Int, at: Int64) throws {
        try locked {
            try db.transaction {
                try db.run("UPDATE rows SET read_at = coalesce(read_at, ?), seen_at = coalesce(seen_at, ?) WHERE id = ?", at, at, id)
                try enqueueLocked(.read(row: id))
            }
        }
    }

    /// Opening a card from its header: its unread rows are read (and seen), newest first, at
    /// most `ListCard.readAtOnce` of them, and the server is told of each. Returns how many
    /// rows changed.
    @discardableResult
    public func markRead(card key: String, at: Int64) throws -> Int {
        try locked {
            let through = try markIndex().readThrough
            let (condition, values) = CardPart(key: key).condition
            return try markReadLocked("""
                SELECT id FROM rows INDEXED BY rows_unread WHERE \(condition) AND id > ? AND read_at IS NULL ORDER BY id DESC LIMIT ?
                """, values + [through, ListCard.readAtOnce], at: at)
        }
    }

    /// A bulk read under a filter: every unread row the filter lets through is read (and seen),
    /// and the server is told of each; rows the filter hides stay as they are. Returns how many
    /// rows changed.
    @discardableResult
    public func markRead(matching filter: RowFilter, at: Int64) throws -> Int {
        try locked {
            let through = try markIndex().readThrough
            let (condition, values) = filter.condition(readThrough: through)
            return try markReadLocked("SELECT id FROM rows WHERE \(condition) AND id > ? AND read_at IS NULL ORDER BY id",
                                      values + [through], at: at)
        }
    }

    /// How many rows the filter lets through that are still unread: what a bulk read would change.
    public func unreadCount(matching filter: RowFilter) throws -> Int {
        try locked {
            let through = try markIndex().readThrough
            let (condition, values) = filter.condition(readThrough: through)
            return try db.first("SELECT count(*) FROM rows WHERE \(condition) AND id > ? AND read_at IS NULL",
                                values + [through]) { $0.int(0) } ?? 0
        }
    }

    /// Reads the rows `select` names (their ids), in one transaction with one queued read each.
    private func markReadLocked(_ select: String, _ values: [SQLBindable], at: Int64) throws -> Int {
        try db.transaction {
            let ids = try db.query(select, values) { $0.int(0) }
            for id in ids {
                try db.run("UPDATE rows SET read_at = ?, seen_at = coalesce(seen_at, ?) WHERE id = ?", at, at, id)
                try enqueueLocked(.read(row: id))
            }
            return ids.count
        }
    }

    /// Any other mutation, queued; a relation's act also shows at once on the person, as the
    /// server will make it (the next sync brings the truth, whatever the server decided).
    public func enqueue(_ action: Mutation.Action) throws {
        try locked {
            try db.transaction {
                switch action {
                case .acceptRequest(let user):
                    try db.run("UPDATE users SET requested_you = 0, follows_you = 1 WHERE id = ?", user)
                case .declineRequest(let user):
                    try db.run("UPDATE users SET requested_you = 0 WHERE id = ?", user)
                case .followBack(let user):
                    try db.run("UPDATE users SET following = NOT private, requested = private WHERE id = ?", user)
                case let .alert(target, mode):
                    try setAlertLocked(target, mode)
                case .seen, .readAll, .read, .preferences:
                    // Stamps change the replica through their own calls (`markAllSeen`,
                    // `markRead`); a switch is shown from the server's answer. Here they only wait.
                    break
                }
                try enqueueLocked(action)
            }
        }
    }

    private func setAlertLocked(_ target: AlertTarget, _ mode: AlertMode) throws {
        if mode == .default {
            try db.run("DELETE FROM alerts WHERE target = ?", target.key)
        } else {
            try db.run("INSERT INTO alerts(target, mode) VALUES (?, ?) ON CONFLICT (target) DO UPDATE SET mode = excluded.mode",
                       target.key, mode.rawValue)
        }
    }

    /// The reader's custom follow alerts as the server lists them now: they replace what is held.
    public func replaceAlerts(_ alerts: [(target: AlertTarget, mode: AlertMode)]) throws {
        try locked {
            try db.transaction {
                try db.run("DELETE FROM alerts")
                for alert in alerts { try setAlertLocked(alert.target, alert.mode) }
            }
        }
    }

    private func enqueueLocked(_ action: Mutation.Action) throws {
        let seq = try number("nextSeq", otherwise: 1)
        try db.run("INSERT INTO pending(seq, mutation) VALUES (?, ?)", seq, Mutation(seq: seq, action: action).json.serialized)
        try setMeta("nextSeq", String(seq + 1))
    }

    // MARK: Applying what the server said

    /// The server applied every mutation up to `seq`: drop them from the queue, keep its counts.
    public func acknowledge(upTo seq: Int, counts: Counts) throws {
        try locked {
            try db.transaction {
                try db.run("DELETE FROM pending WHERE seq <= ?", seq)
                try store(counts)
            }
        }
    }

    /// A person as the server sees them now (after an act on them), kept for their profile.
    public func update(_ person: PersonEntity) throws {
        try locked { try db.transaction { try upsert(person) } }
    }

    /// Forgets everything of another store — rows, entities, marks, the queue — and belongs
    /// to `identity` from now on. Also what a replica does when its store went back in time
    /// (the same identity): what it held may name rows the store no longer has.
    public func reset(for identity: String) throws {
        try locked {
            try db.transaction {
                for table in ["rows", "cards", "card_people", "marks", "users", "steps", "comments", "journeys",
                              "journey_steps", "supporters", "pending"] {
                    try db.execute("DELETE FROM \(table)")
                }
                // The mutation numbers go on: the store may remember this client's earlier ones
                // (a store restored from a copy does), and numbers below those are ignored.
                for key in ["version", "afterRow", "history", "unseen", "unread", "initialTotal", "initialReceived", "initialDone", "prunedThrough"] {
                    try clearMeta(key)
                }
                try setMeta("store", identity)
                markCache = nil
            }
            try truncateLog()
        }
    }

    /// Copies the whole write-ahead log into the file and empties it, so that no earlier copy
    /// of an overwritten page stays behind in the log. SQLite answers "busy" (not an error)
    /// while another connection checkpoints or reads; this waits for our checkpointer and
    /// tries again, and throws if the log still could not be emptied.
    func truncateLog() throws {
        if try checkpointer.truncate(db) { return }
        throw SQLiteError(code: 5, message: "the replica's log could not be emptied: another process is reading it")
    }

    /// One page of changes, in one transaction: rows, entities, marks, drops, the counts and
    /// the version after it. When something was dropped, the write-ahead log is truncated
    /// after the commit, so no copy of it stays in the file.
    public func apply(_ page: ActivityPage) throws {
        try locked {
            // The page's commit leaves the copying into the file to the checkpointer.
            try db.execute("PRAGMA wal_autocheckpoint = 0")
            // A long pull (a first sync) inserts into every index at once: their working pages
            // stay cached until it ends, then the cache is given back.
            try db.execute(page.more ? "PRAGMA cache_size = -\(Replica.pullCacheKiB)" : "PRAGMA cache_size = -2000")
            // The log restarts only once a checkpoint has caught up with it: past its bound,
            // wait for the checkpointer and finish its work here, so the log cannot grow
            // beside the file for a whole first sync.
            if Checkpointer.logSize(path) > Checkpointer.largestLog { try truncateLog() }
            defer {
                try? db.execute("PRAGMA wal_autocheckpoint = \(Checkpointer.defaultAutocheckpoint)")
                checkpointer.nudge()
            }
            try db.transaction {
                if page.total != nil, try number("version") == 0 {
                    try setMeta("initialTotal", String(page.total ?? 0))
                }
                // A first pull of many pages fills empty tables: their indexes are made once at
                // its end, from the rows in order, instead of growing row by row in every page.
                if page.more, try number("version") == 0, try meta("initialDone") == nil { try deferIndexes() }
                let added = try upsert(rows: page.rows)
                if let pruned = page.prunedThrough, pruned > (try number("prunedThrough")) { try prune(through: pruned) }
                if try meta("initialDone") == nil {
                    try setMeta("initialReceived", String(try number("initialReceived") + added))
                }
                // What may no longer be seen is given up before the entities are written: an
                // entity the page sends is as the reader may see it now (a deleted comment kept
                // in its thread without words), whatever an earlier row dropped.
                try drop(page.drops)
                for person in page.entities.users { try upsert(person) }
                for step in page.entities.steps { try upsert(step) }
                for comment in page.entities.comments { try upsert(comment) }
                for journey in page.entities.journeys { try upsert(journey) }
                for mark in page.marks { try add(mark) }
                let held = try number("version")
                if let row = page.nextRow {
                    // Inside a version: go on after this row of the version after `next`.
                    try setMeta("version", String(page.next))
                    try setMeta("afterRow", String(row))
                } else {
                    try setMeta("version", String(max(page.next, held)))
                    try setMeta("afterRow", "0")
                }
                // The store's mark at the version kept, asked back with it next time; a server
                // that gives none leaves none (a stale one would name another version).
                if page.nextRow != nil || page.next >= held {
                    if let history = page.history { try setMeta("history", history) } else { try clearMeta("history") }
                }
                if !page.more {
                    try setMeta("initialDone", "1")
                    try restoreIndexes()
                }
                try store(page.counts)
            }
            // A withheld row overwrote what it quoted: that must not stay in the log either.
            if !page.drops.isEmpty || page.rows.contains(where: { $0.withheld }) { try truncateLog() }
        }
    }

    /// Drops every row up to `id` (the store pruned them), and builds again the cards they
    /// were in, in set statements: a replica's oldest row follows the store's.
    private func prune(through id: Int) throws {
        try db.execute("CREATE TEMP TABLE IF NOT EXISTS pruned_cards (card TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID")
        try db.run("INSERT OR IGNORE INTO temp.pruned_cards(card) SELECT DISTINCT card FROM rows WHERE id <= ?", id)
        try db.run("DELETE FROM rows WHERE id <= ?", id)
        try db.execute("""
            DELETE FROM card_people WHERE card IN (SELECT card FROM temp.pruned_cards);
            INSERT OR IGNORE INTO card_people(card, person)
                SELECT card, coalesce(actor, title) FROM rows WHERE card IN (SELECT card FROM temp.pruned_cards) AND kind <> 'batch';
            DELETE FROM cards WHERE key IN (SELECT card FROM temp.pruned_cards)
                AND NOT EXISTS (SELECT 1 FROM rows WHERE rows.card = cards.key);
            UPDATE cards SET newest = (SELECT max(id) FROM rows WHERE rows.card = cards.key),
                oldest = (SELECT min(id) FROM rows WHERE rows.card = cards.key),
                rows = (SELECT count(*) FROM rows WHERE rows.card = cards.key),
                people = (SELECT count(*) FROM card_people AS p WHERE p.card = cards.key),
                batch_people = (SELECT coalesce(sum(CASE WHEN kind = 'batch' THEN max(coalesce(members, 1), 1) ELSE 0 END), 0)
                                FROM rows WHERE rows.card = cards.key)
            WHERE key IN (SELECT card FROM temp.pruned_cards);
            DELETE FROM temp.pruned_cards;
            """)
        try setMeta("prunedThrough", String(id))
        markCache = nil
    }

    /// The indexes a first pull keeps while it fills the tables: the ones the inbox's list
    /// reads by (its cards in order, a card's rows, its unread ones), so the list paints as the
    /// rows come. Every other secondary index waits for the pull's end (the keys and uniques
    /// always stay: the writes look rows up by them).
    static let indexesKeptWhileFilling: Set<String> = ["rows_by_card", "rows_unread", "cards_by_newest", "cards_threads"]

    /// Drops the secondary indexes a first pull can do without, keeping how to make each again
    /// in `meta`, in the caller's transaction. Nothing when they are already waiting.
    func deferIndexes() throws {
        guard try meta("deferredIndexes") == nil else { return }
        let indexes = try db.query("""
            SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name
            """) { ($0.string(0), $0.string(1)) }.filter { !Replica.indexesKeptWhileFilling.contains($0.0) }
        guard !indexes.isEmpty else { return }
        try setMeta("deferredIndexes", JSON.array(indexes.map { .string($0.1) }).serialized)
        for (name, _) in indexes { try db.execute("DROP INDEX \"\(name)\"") }
    }

    /// Makes the indexes `deferIndexes` dropped, in the caller's transaction.
    func restoreIndexes() throws {
        guard let text = try meta("deferredIndexes") else { return }
        guard case .array(let statements)? = try? JSON.parse(Data(text.utf8)) else {
            throw SQLiteError(code: 11, message: "the replica's deferred indexes cannot be read back: \(text.prefix(80))")
        }
        for statement in statements {
            guard let sql = statement.string else { continue }
            // Made from the schema's own words: IF NOT EXISTS makes a repeat harmless.
            try db.execute(sql.replacingOccurrences(of: "CREATE INDEX ", with: "CREATE INDEX IF NOT EXISTS ", options: .anchored))
        }
        try clearMeta("deferredIndexes")
    }

    private func store(_ counts: Counts) throws {
        try setMeta("unseen", String(counts.unseen))
        try setMeta("unread", String(counts.unread))
    }

    /// The card a row belongs to: every row about one step (its thread), batches included,
    /// is one card, which the list splits at the last visit (`Replica.cards`); every other row
    /// stands alone.
    static func cardKey(_ row: ActivityRow) -> String {
        row.thread.hasPrefix("step:") ? row.thread : "row:\(row.id)"
    }

    /// What a page adds to one card: its newest row, how many rows are new to it, who, and how
    /// many more people its batches count.
    struct CardChange {
        var newest = 0
        var oldest = Int.max
        var added = 0
        var people: Set<String> = []
        var batchPeople = 0
        /// A row became a batch (or stopped being one): the card's people are counted again.
        var recount = false
    }

    /// The people a stored row counts for its card: a batch its members, any other row none
    /// here (its person is in `card_people`).
    static func batchPeople(kind: String?, members: Int?) -> Int {
        kind == Kind.batch.rawValue ? max(members ?? 1, 1) : 0
    }

    /// Writes one row: whether it is new here, and what it was before (kind and members) when
    /// it was not. A row seen before keeps the earliest `seenAt`/`readAt` either side has.
    private func upsert(_ row: ActivityRow, card: String) throws -> (isNew: Bool, was: (kind: String, members: Int?)?) {
        let values: [SQLBindable] = [
            row.version, row.kind.rawValue, row.actor, row.title, row.body, row.media.face, row.media.image,
            row.media.facepile?.joined(separator: "\n"), row.tap.jsonText, row.push.description, row.deleted, row.withheld,
            row.seenAt, row.readAt, row.id, row.members, row.action?.rawValue, Replica.searchKey(row),
        ]
        // Most rows of a sync are new: one statement for them, a second only for the rest.
        try db.run("""
            INSERT OR IGNORE INTO rows(version, kind, actor, title, body, face, image, facepile, tap, push, deleted, withheld,
                                       seen_at, read_at, id, members, action, search, event, created_at, thread, step, journey,
                                       comment, tier, card)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, binding: values + [row.event, row.createdAt, row.thread, row.subject.step, row.subject.journey, row.subject.comment,
                           row.subject.tier, card])
        if db.changes > 0 { return (true, nil) }
        let was = try db.first("SELECT kind, members FROM rows WHERE id = ?", [row.id]) { ($0.string(0), $0.optionalInt(1)) }
        try db.run("""
            UPDATE rows SET version = ?1, kind = ?2, actor = ?3, title = ?4, body = ?5, face = ?6, image = ?7, facepile = ?8,
                tap = ?9, push = ?10, deleted = ?11, withheld = ?12, members = ?16, action = ?17, search = ?18,
                seen_at = CASE WHEN seen_at IS NULL THEN ?13 WHEN ?13 IS NULL THEN seen_at ELSE min(seen_at, ?13) END,
                read_at = CASE WHEN read_at IS NULL THEN ?14 WHEN ?14 IS NULL THEN read_at ELSE min(read_at, ?14) END
            WHERE id = ?15
            """, binding: values)
        return (false, was)
    }

    /// A page's rows, and the cards they land in: one write per card, not per row.
    private func upsert(rows: [ActivityRow]) throws -> Int {
        var cards: [String: CardChange] = [:]
        var added = 0
        for row in rows {
            // A row's thread never changes, so neither does its card.
            let key = Replica.cardKey(row)
            let (isNew, was) = try upsert(row, card: key)
            cards[key, default: CardChange()].newest = max(cards[key]?.newest ?? 0, row.id)
            cards[key]!.oldest = min(cards[key]!.oldest, row.id)
            // A batch counts its members; any other row its person (a person in a batch and
            // beside it counts twice: the replica knows a batch's number, not its people).
            let now = Replica.batchPeople(kind: row.kind.rawValue, members: row.members)
            cards[key]!.batchPeople += now - (was.map { Replica.batchPeople(kind: $0.kind, members: $0.members) } ?? 0)
            if let was, (was.kind == Kind.batch.rawValue) != (row.kind == .batch) { cards[key]!.recount = true }
            if isNew {
                added += 1
                cards[key]!.added += 1
            }
            if row.kind != .batch { cards[key]!.people.insert(row.actor ?? row.title) }
        }
        for (key, change) in cards {
            var people = 0
            for person in change.people {
                try db.run("INSERT OR IGNORE INTO card_people(card, person) VALUES (?, ?)", key, person)
                people += db.changes
            }
            try db.run("""
                INSERT INTO cards(key, newest, oldest, rows, people, batch_people) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (key) DO UPDATE SET newest = max(newest, excluded.newest), oldest = min(oldest, excluded.oldest),
                    rows = rows + excluded.rows, people = people + excluded.people,
                    batch_people = batch_people + excluded.batch_people
                """, key, change.newest, change.oldest, change.added, people, change.batchPeople)
            if change.recount {
                // A single row turned into a batch: its first person is one of the members now.
                try db.run("DELETE FROM card_people WHERE card = ?", key)
                try db.run("INSERT INTO card_people(card, person) SELECT DISTINCT card, coalesce(actor, title) FROM rows WHERE card = ? AND kind <> 'batch'", key)
                try db.run("UPDATE cards SET people = (SELECT count(*) FROM card_people WHERE card = ?1) WHERE key = ?1", key)
            }
        }
        return added
    }

    func upsert(_ person: PersonEntity) throws {
        let r = person.relationship
        try db.run("""
            INSERT INTO users(id, username, name, avatar_url, private, state, following, follows_you, requested, requested_you)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET username = excluded.username, name = excluded.name, avatar_url = excluded.avatar_url,
                private = excluded.private, state = excluded.state, following = excluded.following,
                follows_you = excluded.follows_you, requested = excluded.requested, requested_you = excluded.requested_you
            """, person.id, person.username, person.name, person.avatarUrl, person.isPrivate, person.state.rawValue,
                   r.following, r.followsYou, r.requested, r.requestedYou)
    }

    private func upsert(_ step: StepEntity) throws {
        try db.run("""
            INSERT INTO steps(id, journey, journey_title, owner, caption, photo_url, final, published_at, deleted, hearts, shares)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET journey = excluded.journey, journey_title = excluded.journey_title,
                owner = excluded.owner, caption = excluded.caption, photo_url = excluded.photo_url, final = excluded.final,
                published_at = excluded.published_at, deleted = excluded.deleted, hearts = excluded.hearts, shares = excluded.shares
            """, step.id, step.journey, step.journeyTitle, step.owner, step.caption, step.photoUrl, step.isFinal,
                   step.publishedAt, step.deleted, step.hearts, step.shares)
    }

    private func upsert(_ comment: CommentEntity) throws {
        try db.run("""
            INSERT INTO comments(id, step, author, text, parent, at, deleted) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET text = excluded.text, parent = excluded.parent, deleted = excluded.deleted
            """, comment.id, comment.step, comment.author, comment.text, comment.parent, comment.at, comment.deleted)
    }

    private func upsert(_ journey: JourneyEntity) throws {
        try db.run("""
            INSERT INTO journeys(id, title, owner) VALUES (?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET title = excluded.title, owner = excluded.owner
            """, journey.id, journey.title, journey.owner)
        try db.run("DELETE FROM journey_steps WHERE journey = ?", journey.id)
        for (position, step) in journey.steps.enumerated() {
            try db.run("INSERT INTO journey_steps(journey, position, step, final, published_at) VALUES (?, ?, ?, ?, ?)",
                       journey.id, position, step.id, step.isFinal, step.publishedAt)
        }
        if let people = journey.people {
            try db.run("DELETE FROM supporters WHERE journey = ?", journey.id)
            for (position, supporter) in people.enumerated() {
                try db.run("INSERT INTO supporters(journey, position, user, tier, at) VALUES (?, ?, ?, ?, ?)",
                           journey.id, position, supporter.user, supporter.tier, supporter.at)
            }
        }
    }

    private func add(_ mark: Mark) throws {
        try db.run("INSERT INTO marks(version, kind, through_row, at) VALUES (?, ?, ?, ?)",
                   mark.version, mark.kind.rawValue, mark.throughRow, mark.at)
        // The server's mark stands for the ones made here that it reaches (with the server's clock).
        try db.run("DELETE FROM marks WHERE version IS NULL AND kind = ? AND through_row <= ?", mark.kind.rawValue, mark.throughRow)
        markCache = nil
    }

    // MARK: Giving up what may no longer be seen

    /// Rows that quote content, matched by `condition` (SQL over `rows`), keep only their verb.
    private func withhold(where condition: String, _ values: [SQLBindable]) throws {
        let found = try db.query("SELECT id, kind, tier FROM rows WHERE withheld = 0 AND (\(condition))", values) {
            ($0.int(0), try $0.decoded(1, table: "rows", column: "kind", Kind.init(rawValue:)), $0.optionalString(2))
        }
        for (id, kind, tier) in found where Copy.quotesContent(kind) {
            // The search key goes with the words it was made of.
            try db.run("UPDATE rows SET body = ?, image = NULL, withheld = 1, search = stepo_search_key(title || ' ' || ?) WHERE id = ?",
                       Copy.withheld(kind, tier: tier), Copy.withheld(kind, tier: tier), id)
        }
    }

    private func drop(_ drops: Drops) throws {
        for person in drops.people {
            try db.run("UPDATE rows SET face = NULL, facepile = NULL WHERE actor = ?", person)
            try withhold(where: """
                actor = ?1 OR step IN (SELECT id FROM steps WHERE owner = ?1) OR journey IN (SELECT id FROM journeys WHERE owner = ?1)
                OR comment IN (SELECT id FROM comments WHERE author = ?1)
                """, [person])
            try db.run("DELETE FROM comments WHERE author = ?", person)
            try dropContent(of: person)
            try db.run("DELETE FROM supporters WHERE user = ?", person)
            try db.run("DELETE FROM users WHERE id = ?", person)
        }
        for owner in drops.owners {
            try withhold(where: """
                step IN (SELECT id FROM steps WHERE owner = ?1) OR journey IN (SELECT id FROM journeys WHERE owner = ?1)
                """, [owner])
            try dropContent(of: owner)
        }
        for step in drops.steps { try dropStep(step) }
        for comment in drops.comments { try dropComment(comment) }
        for journey in drops.journeys {
            try withhold(where: "journey = ?1 OR step IN (SELECT id FROM steps WHERE journey = ?1)", [journey])
            for step in try db.query("SELECT id FROM steps WHERE journey = ?", [journey], { $0.string(0) }) { try dropStep(step) }
            try dropJourney(journey)
        }
    }

    /// An owner's steps and journeys, and the comments on those steps.
    private func dropContent(of owner: String) throws {
        for step in try db.query("SELECT id FROM steps WHERE owner = ?", [owner], { $0.string(0) }) { try dropStep(step) }
        for journey in try db.query("SELECT id FROM journeys WHERE owner = ?", [owner], { $0.string(0) }) { try dropJourney(journey) }
    }

    private func dropStep(_ step: String) throws {
        try withhold(where: "step = ?1", [step])
        try db.run("DELETE FROM comments WHERE step = ?", step)
        try db.run("DELETE FROM journey_steps WHERE step = ?", step)
        try db.run("DELETE FROM steps WHERE id = ?", step)
    }

    private func dropComment(_ comment: String) throws {
        try withhold(where: "comment = ?1", [comment])
        try db.run("DELETE FROM comments WHERE id = ?", comment)
    }

    private func dropJourney(_ journey: String) throws {
        try withhold(where: "journey = ?1", [journey])
        try db.run("DELETE FROM journey_steps WHERE journey = ?", journey)
        try db.run("DELETE FROM supporters WHERE journey = ?", journey)
        try db.run("DELETE FROM journeys WHERE id = ?", journey)
    }
}

extension Replica {
    /// What the `/` filter compares for a row: its name and words, folded (`SearchKey`).
    static func searchKey(_ row: ActivityRow) -> String {
        SearchKey.of(row.title + " " + row.body)
    }
}
