import Notifications
import Storage
import Wire

/// Hearts, shares and comments applied set at a time: **gather → decide → write**.
///
/// A run of these events (the ingest's chunk, between events of other types) reads every fact
/// its decisions need by key set — a few statements for the whole run, not several round trips
/// an event — then decides each event in order over those facts and an overlay that its own
/// earlier events update (an interaction already made on line 3 makes line 9 a repeat; a batch
/// opened on line 4 is joined on line 12; the pushes counted so far move the daily ceiling),
/// and writes what was decided in one pass at the end.
///
/// The rules are the engine's (`QuietRules.decide`, `Ladder`, `Batching`, `CommentRecipients`):
/// this type only feeds them the same facts the one-event path reads from the store, and
/// writes the same rows. Where a decision needs a read of something the run has not written
/// yet (the exact ceiling test, which counts sent rows), the pending writes are written first
/// and the store is asked, as the one-event path asks it. The differential tests hold the two
/// paths to the same tables, row for row.
///
/// A line the rules refuse (an unknown step, a comment id taken) costs only itself: it is
/// refused at decide time and writes nothing. A write that fails throws, and the ingest rolls
/// the batch back and applies it event by event.
final class EventSet {
    let store: Store
    var db: Connection { store.db }

    init(store: Store) { self.store = store }

    /// Whether an event is decided here.
    static func takes(_ event: Event) -> Bool {
        switch event.body {
        case .interaction, .comment: return true
        default: return false
        }
    }

    // MARK: Facts gathered for the run, and the overlay its events update

    private var applied: Set<String> = []
    private var steps: [String: StepRecord] = [:]
    private var users: [String: UserRecord] = [:]
    private var usersByKey: [Int: UserRecord] = [:]
    private var usersByName: [String: UserRecord] = [:]
    private var comments: [String: CommentRecord] = [:]
    private var blocks: Set<Pair> = []
    private var follows: [Pair: Bool] = [:]
    private var interactions: Set<InteractionKey> = []
    private var inboxes: [Int: InboxCounters] = [:]
    private var batches: [BatchKey: [BatchState]] = [:]
    private var members: Set<Pair> = []
    private var withDevices: Set<Int> = []
    /// The batch rows the set knows (a gather finds again those it knows, maybe as they were).
    private var batchRows: Set<Int> = []
    private var keysReady = false
    private var eventKeys = KeyPool()
    private var rowKeys = KeyPool()
    private var commentKeys = KeyPool()

    struct Pair: Hashable { var a: Int, b: Int }
    struct InteractionKey: Hashable { var step: Int, type: String, actor: Int }
    struct BatchKey: Hashable { var recipient: Int, step: Int, action: String }

    /// A person's row counter and sent pushes by day (`PushDays`), as the run leaves them.
    struct InboxCounters {
        var total = 0
        var pushDay: Int64 = 0
        var pushes = [0, 0, 0]
        var stored = true
        var changed = false

        /// `PushDays.count`, on the values: one sent push on the day of `at`.
        mutating func countPush(at: Int64) {
            let p = PushDays.day(of: at)
            if p > pushDay {
                let shift = p - pushDay
                pushes = [1, shift == 1 ? pushes[0] : 0, shift == 1 ? pushes[1] : shift == 2 ? pushes[0] : 0]
                pushDay = p
            } else if p >= pushDay - 2 {
                pushes[Int(pushDay - p)] += 1
            }
            changed = true
        }
    }

    /// A batchable row as the run knows it: stored before the run, or written in it.
    final class BatchState {
        var open: OpenBatch
        var openedAt: Int64
        var recipientKey: Int
        /// The row's columns a join changes, once some join changed them.
        var changed: BatchChange?
        /// Whether the row is written by this run (its joins fold into the insert).
        let isNew: Bool

        init(open: OpenBatch, openedAt: Int64, recipientKey: Int, isNew: Bool) {
            self.open = open
            self.openedAt = openedAt
            self.recipientKey = recipientKey
            self.isNew = isNew
        }
    }

    struct BatchChange {
        var action: Kind
        var members: Int
        var faces: [String]
        var actor: Int
        var title: String
        var body: String
        var pushImage: String?
        var tap: Tap
        var push: PushStatus
        var version: Int
    }

    /// Keys handed out in order: from the engine's counter on SQLite (the run's writer is the
    /// only one), from PostgreSQL's sequence (taken ahead for the run; those left unused are
    /// gaps, as a rolled-back insert leaves).
    struct KeyPool {
        var next = 0
        var taken: [Int] = []
        var index = 0
        var counting = true

        mutating func take() throws -> Int {
            if counting {
                next += 1
                return next
            }
            guard index < taken.count else { throw EventSetOverflow() }
            index += 1
            return taken[index - 1]
        }
    }

    struct EventSetOverflow: Error {}

    // MARK: Pending writes

    private var pending = Pending()

    struct Pending {
        var events: [[SQLBindable]] = []
        var comments: [[SQLBindable]] = []
        var interactions: [[SQLBindable]] = []
        var tallies: [Int: (hearts: Int, shares: Int)] = [:]
        var rows: [NewRow] = []
        var rowIndex: [Int: Int] = [:]
        var changedRows: [Int: (recipient: Int, change: BatchChange)] = [:]
        var batches: [[SQLBindable]] = []
        var members: [[SQLBindable]] = []
        var suppressions: [[SQLBindable]] = []
        var statsRows: [StatsRowKey: Int] = [:]
        var loads: [LoadKey: (sent: Int, held: Int)] = [:]
        var daily: [LoadKey: (sent: Int, held: Int)] = [:]
        var withheld: [WithheldKey: Int] = [:]
        var enqueues: [Enqueue] = []
        /// The rows counted, unsummed, when the store writes counters a row at a time (the
        /// bench's known regression).
        var counted: [(kind: Kind, push: PushStatus, recipient: Int, at: Int64, delta: Int)] = []

        var isEmpty: Bool { events.isEmpty && rows.isEmpty && changedRows.isEmpty && suppressions.isEmpty }
    }

    struct NewRow {
        var values: [SQLBindable]
        var id: Int
        var recipient: Int
        var change: BatchChange?
    }

    struct StatsRowKey: Hashable { var hour: Int64, kind: String, category: String, push: String }
    struct LoadKey: Hashable { var at: Int64, user: Int, category: String }
    struct WithheldKey: Hashable { var hour: Int64, kind: String, reason: String }
    struct Enqueue { var row: Int, recipient: Int, kind: Kind, silent: Bool, at: Int64, step: Int?, rowAt: Int64?, quiet: QuietHours? }

    // MARK: The run

    /// Applies `run` (every event one this type takes), in order: each line's outcome, or the
    /// reason the rules refused it. Throws only for a failure of the store.
    ///
    /// What it decides is written by the next `apply` (after that run's gather, so the server
    /// writes this run while the next is decided) or by `finish`, which the caller owes before
    /// anything else reads or writes the store.
    func apply(_ run: [(Int, Event)]) throws -> [(Int, Result<EventOutcome, Ingestor.Refusal>)] {
        try gather(run.map(\.1))
        try write()
        try db.pushAhead()
        var results: [(Int, Result<EventOutcome, Ingestor.Refusal>)] = []
        results.reserveCapacity(run.count)
        for (line, event) in run {
            do {
                results.append((line, .success(try decide(event))))
            } catch let error as EventError {
                results.append((line, .failure(Ingestor.Refusal(reason: error.description))))
            }
        }
        return results
    }

    /// Whether the set holds nothing: no fact gathered, nothing pending.
    var isIdle: Bool { !keysReady && pending.isEmpty && pending.interactions.isEmpty }

    /// Writes what is still pending and forgets every fact: the store holds it all now, and an
    /// event of another kind may change any of it before the next run.
    func finish() throws {
        try write()
        applied = []
        steps = [:]
        users = [:]
        usersByKey = [:]
        usersByName = [:]
        comments = [:]
        blocks = []
        follows = [:]
        interactions = []
        inboxes = [:]
        batches = [:]
        batchRows = []
        members = []
        withDevices = []
        keysReady = false
    }

    // MARK: Gather

    private func gather(_ events: [Event]) throws {
        var exts: [String] = [], stepIds: [String] = [], actorIds: [String] = [], commentIds: [String] = [], names: [String] = []
        var mentionsUpperBound = 0
        for event in events {
            exts.append(event.id)
            switch event.body {
            case let .interaction(_, actor, step):
                stepIds.append(step)
                actorIds.append(actor)
            case let .comment(actor, step, id, text, parent):
                stepIds.append(step)
                actorIds.append(actor)
                commentIds.append(id)
                if let parent { commentIds.append(parent) }
                let mentioned = CommentRecipients.mentions(in: text)
                names += mentioned.map { $0.lowercased() }
                mentionsUpperBound += mentioned.count
            default: break
            }
        }
        // What the runs before this one (since the last `finish`) decided is not all written yet:
        // a fact the set already holds is kept as it stands, over what the store says.
        applied.formUnion(try db.keyed("SELECT ext FROM events WHERE ext IN (%)", exts) { $0.string(0) })
        for step in try db.keyed("SELECT \(StepRecord.columns) FROM steps WHERE ext IN (%)", stepIds, StepRecord.init) {
            steps[step.id] = step
        }
        for comment in try db.keyed("SELECT \(CommentRecord.columns) FROM comments WHERE ext IN (%)", commentIds, CommentRecord.init)
            where comments[comment.id] == nil {
            comments[comment.id] = comment
        }
        for user in try db.keyed("SELECT \(UserRecord.columns) FROM users WHERE ext IN (%)", actorIds, UserRecord.init) { remember(user) }
        // The owners of this run's steps and the authors of the comments it replies to.
        var keys = Set(stepIds.compactMap { steps[$0]?.ownerKey }).union(commentIds.compactMap { comments[$0]?.authorKey })
        keys.subtract(usersByKey.keys)
        for user in try db.keyed("SELECT \(UserRecord.columns) FROM users WHERE id IN (%)", Array(keys), UserRecord.init) { remember(user) }
        for user in try db.keyed("SELECT \(UserRecord.columns) FROM users WHERE username IN (%)", names, UserRecord.init) { remember(user) }

        // Blocks between the pairs the run's decisions ask about, either way: each actor and
        // each recipient, and each step's owner and each person mentioned on it.
        // The recipients: every step's owner, every parent's author, everyone mentioned.
        var pairs = Set<Pair>(), triples = Set<InteractionKey>(), owned = Set<Pair>(), recipientKeys = Set<Int>()
        var authors: [String: Int] = [:]  // the comments this run posts, a reply may answer
        for event in events {
            guard let names = named(event), let step = steps[names.step], let actor = users[names.actor] else { continue }
            pairs.insert(Pair(a: actor.key, b: step.ownerKey))
            recipientKeys.insert(step.ownerKey)
            switch event.body {
            case .interaction(let interaction, _, _):
                triples.insert(InteractionKey(step: step.key, type: interaction.rawValue, actor: actor.key))
                owned.insert(Pair(a: step.ownerKey, b: step.key))
            case let .comment(_, _, id, text, parent):
                if comments[id] == nil { authors[id] = actor.key }
                if let parent, let author = comments[parent]?.authorKey ?? authors[parent] {
                    pairs.insert(Pair(a: actor.key, b: author))
                    recipientKeys.insert(author)
                }
                for name in CommentRecipients.mentions(in: text) {
                    guard let mentioned = usersByName[name.lowercased()] else { continue }
                    recipientKeys.insert(mentioned.key)
                    pairs.insert(Pair(a: actor.key, b: mentioned.key))
                    pairs.insert(Pair(a: step.ownerKey, b: mentioned.key))
                }
            default: break
            }
        }
        let pairValues = pairs.map { [$0.a, $0.b] as [SQLBindable] }
        for sql in ["SELECT b.blocker, b.blocked FROM k JOIN blocks AS b ON b.blocker = k.a AND b.blocked = k.b",
                    "SELECT b.blocker, b.blocked FROM k JOIN blocks AS b ON b.blocker = k.b AND b.blocked = k.a"] {
            for pair in try db.matching("k(a, b)", ["BIGINT", "BIGINT"], pairValues, sql, { Pair(a: $0.int(0), b: $0.int(1)) }) {
                blocks.insert(pair)
            }
        }
        for key in try db.matching("k(s, t, a)", ["BIGINT", "TEXT", "BIGINT"], triples.map { [$0.step, $0.type, $0.actor] },
                                "SELECT i.step, i.type, i.actor FROM k JOIN interactions AS i ON i.step = k.s AND i.type = k.t AND i.actor = k.a",
                                { InteractionKey(step: $0.int(0), type: $0.string(1), actor: $0.int(2)) }) {
            interactions.insert(key)
        }

        // The recipients' inbox rows are locked in key order on PostgreSQL, so writers meet on
        // a shared recipient only, and always in the same order.
        let recipients = recipientKeys.sorted()
        for (user, counters) in try db.keyed("""
            SELECT user, total, push_day, pushes_0, pushes_1, pushes_2 FROM inboxes WHERE user IN (%) ORDER BY user\(db.dialect.lockingRead)
            """, recipients, spelled: true, { ($0.int(0), InboxCounters(total: $0.int(1), pushDay: $0.int64(2), pushes: [$0.int(3), $0.int(4), $0.int(5)])) }) {
            if inboxes[user] == nil { inboxes[user] = counters }
        }
        withDevices.formUnion(try db.keyed("SELECT DISTINCT user FROM devices WHERE user IN (%) AND disabled_at IS NULL", recipients) { $0.int(0) })

        // The batches the run's hearts and shares may join: of each step's owner on the step,
        // opened inside the window of some event of the run; and which of the run's actors
        // each already counts.
        let times = events.map(\.at)
        if let earliest = times.min(), let latest = times.max(), !owned.isEmpty {
            let sql = """
                SELECT b.recipient, b.step, b.action, b.opened_at, b.row, coalesce(n.members, 1), n.push, n.facepile, n.face, e.ext,
                       n.created_at, n.image, n.thread
                FROM k JOIN batches AS b ON b.recipient = k.r AND b.step = k.s AND b.opened_at > k.lo AND b.opened_at <= k.hi
                     JOIN notifications AS n ON n.id = b.row AND n.recipient = b.recipient JOIN events AS e ON e.id = n.event
                ORDER BY b.opened_at\(db.dialect.lockingRead(of: "n"))
                """
            // The run's window travels with the keys, not in the text: a text of its own for
            // every run was a statement prepared and kept for every run (120 bytes an event of
            // a long ingest's memory).
            let (lo, hi) = (earliest - Batching.window, latest)
            for (key, openedAt, open) in try db.matching("k(r, s, lo, hi)", ["BIGINT", "BIGINT", "BIGINT", "BIGINT"],
                                                         owned.map { [$0.a, $0.b, lo, hi] }, sql, { r in
                (BatchKey(recipient: r.int(0), step: r.int(1), action: r.string(2)), r.int64(3), OpenBatch(
                    row: r.int(4), members: r.int(5), push: try r.decoded(6, table: "notifications", column: "push", PushStatus.init),
                    faces: r.optionalString(7).map { $0.split(separator: "\n").map(String.init) } ?? (r.optionalString(8).map { [$0] } ?? []),
                    event: r.string(9), createdAt: r.int64(10), image: r.optionalString(11), thread: r.string(12)))
            }) where batchRows.insert(open.row).inserted {
                batches[key, default: []].append(BatchState(open: open, openedAt: openedAt, recipientKey: key.recipient, isNew: false))
            }
            var rowsOfStep: [Int: [Int]] = [:]
            for pair in owned {
                for kind in EventSet.batchingKinds {
                    rowsOfStep[pair.b, default: []] += (batches[BatchKey(recipient: pair.a, step: pair.b, action: kind.rawValue)] ?? []).map(\.open.row)
                }
            }
            var candidates = Set<Pair>()
            for t in triples {
                for row in rowsOfStep[t.step] ?? [] { candidates.insert(Pair(a: row, b: t.actor)) }
            }
            for pair in try db.matching("k(r, p)", ["BIGINT", "BIGINT"], candidates.map { [$0.a, $0.b] },
                                     "SELECT m.row, m.person FROM k JOIN batch_members AS m ON m.row = k.r AND m.person = k.p",
                                     { Pair(a: $0.int(0), b: $0.int(1)) }) {
                members.insert(pair)
            }
        }

        // Keys for what the run may write.
        let newEvents = Set(exts).subtracting(applied).count
        let commentEvents = events.filter { if case .comment = $0.body { return true } else { return false } }.count
        let rowsAtMost = events.count + commentEvents + mentionsUpperBound
        if db.dialect.writersSideBySide {
            if !keysReady { (eventKeys, rowKeys, commentKeys) = (KeyPool(counting: false), KeyPool(counting: false), KeyPool(counting: false)) }
            eventKeys.taken += try db.query("SELECT stepo_version() FROM generate_series(1, CAST(? AS INTEGER))", [newEvents]) { $0.int(0) }
            rowKeys.taken += try db.query("SELECT nextval('notifications_id_seq') FROM generate_series(1, CAST(? AS INTEGER))", [rowsAtMost]) { $0.int(0) }
            commentKeys.taken += try db.query("SELECT nextval('comments_id_seq') FROM generate_series(1, CAST(? AS INTEGER))", [commentEvents]) { $0.int(0) }
        } else if !keysReady {
            // The only writer: the next keys follow the largest, and the set counts on from there.
            eventKeys = KeyPool(next: try db.scalar("SELECT coalesce(max(id), 0) FROM events") ?? 0)
            rowKeys = KeyPool(next: try db.scalar("SELECT coalesce(max(id), 0) FROM notifications") ?? 0)
            commentKeys = KeyPool(next: try db.scalar("SELECT coalesce(max(id), 0) FROM comments") ?? 0)
        }
        keysReady = true
    }

    /// The step and actor an event names (hearts, shares and comments).
    private func named(_ event: Event) -> (step: String, actor: String)? {
        switch event.body {
        case let .interaction(_, actor, step): return (step, actor)
        case let .comment(actor, step, _, _, _): return (step, actor)
        default: return nil
        }
    }

    static let batchingKinds = Kind.allCases.filter(\.batches)

    private func remember(_ user: UserRecord) {
        users[user.id] = user
        usersByKey[user.key] = user
        usersByName[user.username.lowercased()] = user
    }

    // MARK: Decide

    private func decide(_ event: Event) throws -> EventOutcome {
        guard applied.insert(event.id).inserted else {
            var outcome = EventOutcome(eventId: event.id)
            outcome.repeated = true
            return outcome
        }
        do {
            return try decideNew(event)
        } catch {
            applied.remove(event.id)
            throw error
        }
    }

    private func decideNew(_ event: Event) throws -> EventOutcome {
        let (actorId, stepId): (String, String)
        switch event.body {
        case let .interaction(_, actor, step): (actorId, stepId) = (actor, step)
        case let .comment(actor, step, _, _, _): (actorId, stepId) = (actor, step)
        default: throw EventError("not an interaction")
        }
        // The same refusals, in the same order, as `Store.requirePublishedStep`.
        guard let step = steps[stepId], let owner = usersByKey[step.ownerKey] else {
            if users[actorId] == nil { throw EventError("unknown user \(actorId)") }
            throw EventError("unknown step \(stepId)")
        }
        guard let actor = users[actorId] else { throw EventError("unknown user \(actorId)") }
        guard step.deletedAt == nil else { throw EventError("step \(stepId) was deleted") }
        guard let published = step.publishedAt else {
            throw EventError("step \(stepId) is not published yet (its media is still processing)")
        }
        guard event.at >= published else {
            throw EventError("step \(stepId) was published at \(Timestamp.format(published)), after this event's time \(Timestamp.format(event.at))")
        }
        let inside = StepWindow.contains(event.at, publishedAt: published)
        var decision = Decided(event: event)

        switch event.body {
        case .interaction(let interaction, _, _):
            let key = InteractionKey(step: step.key, type: interaction.rawValue, actor: actor.key)
            let repeated = !interactions.insert(key).inserted
            try begin(&decision)
            pending.interactions.append([step.key, interaction.rawValue, actor.key, event.at, decision.key])
            if !repeated {
                var tally = pending.tallies[step.key] ?? (0, 0)
                if interaction == .heart { tally.hearts += 1 } else { tally.shares += 1 }
                pending.tallies[step.key] = tally
            }
            let kind: Kind
            switch interaction {
            case .heart: kind = inside ? .steppedWithHeart : .heart
            case .share: kind = inside ? .steppedWithShare : .share
            }
            let n = Notification(kind: kind, actor: actor.person, subject: Subject(stepId: step.id, caption: step.caption, photoUrl: step.photoUrl))
            try deliver(n, to: owner, actor: actor, refs: RowRefs(step: step.key, journey: step.journeyKey, subject: RowSubject(step: step.id)),
                        duplicate: repeated, visible: true, &decision)

        case let .comment(_, _, id, text, parent):
            var parentRecord: CommentRecord?
            if let parent {
                guard let record = comments[parent] else { throw EventError("unknown comment \(parent)") }
                guard record.stepKey == step.key else { throw EventError("comment \(parent) is on another step") }
                parentRecord = record
            }
            guard comments[id] == nil else { throw EventError("comment \(id) already exists") }
            try begin(&decision)
            let commentKey = try commentKeys.take()
            comments[id] = CommentRecord(key: commentKey, id: id, stepKey: step.key, authorKey: actor.key, text: text,
                                         parentKey: parentRecord?.key, deletedAt: nil, createdAt: event.at)
            pending.comments.append([commentKey, id, step.key, actor.key, text, parentRecord?.key, event.at, decision.key])
            var people: [String: UserRecord] = [owner.id: owner]
            var parentAuthor: String?
            if let parentRecord, let author = usersByKey[parentRecord.authorKey] {
                people[author.id] = author
                parentAuthor = author.id
            }
            var mentioned: [String] = []
            for username in CommentRecipients.mentions(in: text) {
                if let user = usersByName[username.lowercased()] {
                    people[user.id] = user
                    mentioned.append(user.id)
                }
            }
            var subject = Subject(stepId: step.id, caption: step.caption, photoUrl: step.photoUrl)
            subject.commentId = id
            subject.commentText = text
            let refs = RowRefs(step: step.key, comment: commentKey, journey: step.journeyKey, subject: RowSubject(step: step.id, comment: id))
            for (recipientId, kind) in CommentRecipients.resolve(owner: owner.id, parentAuthor: parentAuthor, mentioned: mentioned,
                                                                 insideWindow: inside) {
                guard let recipient = people[recipientId] else { continue }
                let visible = kind == .mention ? try canSeeContent(of: owner, viewer: recipient) : true
                let n = Notification(kind: kind, actor: actor.person, subject: subject)
                try deliver(n, to: recipient, actor: actor, refs: refs, duplicate: false, visible: visible, &decision)
            }
        default: break
        }
        let o = decision.outcome
        if writes == decision.writes {
            pending.events[decision.index] = [decision.key, event.id, event.type, event.at, o.firstRow, o.lastRow, o.note]
        } else if o.firstRow != nil || o.note != nil {
            // Its row was written before it was decided whole (the exact ceiling test wrote what
            // was pending): what it made is noted now, as the one-event path notes it.
            try db.run("UPDATE events SET first_row = ?, last_row = ?, note = ? WHERE id = ?", o.firstRow, o.lastRow, o.note, decision.key)
        }
        var outcome = decision.outcome
        outcome.eventKey = decision.key
        return outcome
    }

    /// Gives the event its key and its row among the pending writes (its row range and note
    /// filled in once it is decided), before anything of it that names the key is written.
    private func begin(_ d: inout Decided) throws {
        d.key = try eventKeys.take()
        d.index = pending.events.count
        d.writes = writes
        pending.events.append([d.key, d.event.id, d.event.type, d.event.at, nil as Int?, nil as Int?, nil as String?])
    }

    /// How many times the pending writes were written.
    private var writes = 0

    /// `Visibility.canSeeContent`, over the gathered people and blocks.
    private func canSeeContent(of owner: UserRecord, viewer: UserRecord) throws -> Bool {
        if owner.key == viewer.key { return true }
        guard owner.isActive, !blockedBetween(owner.key, viewer.key) else { return false }
        if !owner.isPrivate { return true }
        let pair = Pair(a: viewer.key, b: owner.key)
        if let known = follows[pair] { return known }
        let following = try store.follows(viewer.key, owner.key)  // a table no event of the run writes
        follows[pair] = following
        return following
    }

    private func blockedBetween(_ a: Int, _ b: Int) -> Bool {
        blocks.contains(Pair(a: a, b: b)) || blocks.contains(Pair(a: b, b: a))
    }

    /// One event being decided: its key and what it produced.
    struct Decided {
        let event: Event
        var key = 0
        /// Its row among the pending events, while `writes` is still the count it began with.
        var index = 0
        var writes = 0
        var outcome: EventOutcome

        init(event: Event) {
            self.event = event
            outcome = EventOutcome(eventId: event.id)
        }

        mutating func noteRows(_ row: Int) {
            outcome.firstRow = min(outcome.firstRow ?? row, row)
            outcome.lastRow = max(outcome.lastRow ?? row, row)
            outcome.rowCount += 1
        }
    }

    /// `Delivery.deliver`, over the gathered facts.
    private func deliver(_ n: Notification, to recipient: UserRecord, actor: UserRecord, refs: RowRefs, duplicate: Bool, visible: Bool,
                         _ d: inout Decided) throws {
        let at = d.event.at
        let decision = try Delivery.decide(
            n.kind, to: recipient, actor: actor, visible: visible, duplicate: duplicate,
            blocked: actor.key != recipient.key && blockedBetween(actor.key, recipient.key),
            ceiling: { try ceilingReached(recipient.key, at: at) })
        switch decision {
        case .noRow(let reason):
            pending.suppressions.append([d.key, recipient.key, n.kind.rawValue, reason.rawValue])
            pending.withheld[WithheldKey(hour: StatsCounters.hour(of: at), kind: n.kind.rawValue, reason: reason.rawValue), default: 0] += 1
        case .row(let push):
            let batchable = n.kind.batches && refs.step != nil
            if batchable, let step = refs.step, let open = openBatch(recipient: recipient.key, step: step, action: n.kind, at: at) {
                try join(open, n, actor: actor, recipient: recipient, stepKey: step, push: push, &d)
                return
            }
            let id = try rowKeys.take()
            var inbox = try counters(of: recipient.key)
            inbox.total += 1
            inbox.changed = true
            if push == .sent { inbox.countPush(at: at) }
            inboxes[recipient.key] = inbox
            let version = d.key
            pending.rowIndex[id] = pending.rows.count
            pending.rows.append(NewRow(
                values: [id, d.key, recipient.key, inbox.total] + Delivery.columns(n, actor: actor.key, refs: refs, push: push, at: at, version: version),
                id: id, recipient: recipient.key))
            d.noteRows(id)
            countRow(kind: n.kind, push: push, recipient: recipient.key, at: at)
            if push == .sent { enqueue(Enqueue(row: id, recipient: recipient.key, kind: n.kind, silent: false, at: at, step: refs.step, rowAt: nil,
                                                quiet: recipient.preferences.quietHours)) }
            if batchable, let step = refs.step {
                pending.batches.append([id, recipient.key, step, n.kind.rawValue, at])
                pending.members.append([id, actor.key, at, n.media.face])
                members.insert(Pair(a: id, b: actor.key))
                let state = BatchState(open: OpenBatch(row: id, members: 1, push: push, faces: n.media.face.map { [$0] } ?? [],
                                                       event: d.event.id, createdAt: at, image: n.media.image, thread: n.thread),
                                       openedAt: at, recipientKey: recipient.key, isNew: true)
                batches[BatchKey(recipient: recipient.key, step: step, action: n.kind.rawValue), default: []].append(state)
                batchRows.insert(id)
            }
            d.outcome.writtenRows.append(ActivityRow(
                single: n, id: id, event: d.event.id, recipient: recipient.id, actor: actor.id, push: push, subject: refs.subject,
                at: at, version: version))
        }
    }

    /// `Store.openBatch`: the newest batch of (recipient, step, action) opened in the half hour up to `at`.
    private func openBatch(recipient: Int, step: Int, action: Kind, at: Int64) -> BatchState? {
        batches[BatchKey(recipient: recipient, step: step, action: action.rawValue)]?
            .filter { $0.openedAt > at - Batching.window && $0.openedAt <= at }
            .max { $0.openedAt < $1.openedAt }
    }

    /// `Delivery.join`, on the batch's state as the run left it.
    private func join(_ batch: BatchState, _ n: Notification, actor: UserRecord, recipient: UserRecord, stepKey: Int, push: PushStatus,
                      _ d: inout Decided) throws {
        let current = batch.open
        let row = current.row
        guard members.insert(Pair(a: row, b: actor.key)).inserted else {
            d.outcome.note = "already counted in batch \(row)"
            return
        }
        pending.members.append([row, actor.key, d.event.at, n.media.face])
        let joined = try BatchJoin(current, n, push: push, ceilingAtRow: { try ceilingReached(recipient.key, at: current.createdAt) })
        let (members, faces, stored) = (joined.members, joined.faces, joined.stored)
        let change = BatchChange(action: n.kind, members: members, faces: faces, actor: actor.key, title: joined.title, body: joined.body,
                                 pushImage: n.pushImage, tap: joined.tap, push: stored, version: d.key)
        if let index = pending.rowIndex[row] {
            pending.rows[index].change = change
        } else {
            pending.changedRows[row] = (recipient.key, change)
        }
        d.noteRows(row)
        if stored != current.push {
            var inbox = try counters(of: recipient.key)
            inbox.countPush(at: current.createdAt)
            inboxes[recipient.key] = inbox
            countRow(kind: n.kind, push: current.push, recipient: recipient.key, at: current.createdAt, delta: -1)
            countRow(kind: n.kind, push: stored, recipient: recipient.key, at: current.createdAt)
        }
        if joined.line.reachesDevice {
            enqueue(Enqueue(row: row, recipient: recipient.key, kind: n.kind, silent: joined.line == .updated, at: d.event.at, step: stepKey,
                            rowAt: current.createdAt, quiet: recipient.preferences.quietHours))
        }
        batch.open.members = members
        batch.open.faces = faces
        batch.open.push = stored
        d.outcome.note = "joined batch \(row) (now \(members) people)"
        d.outcome.writtenRows.append(joined.row(current, n, event: d.event.id, recipient: recipient.id, actor: actor.id, version: d.key))
    }

    /// `Store.ceilingReachedLocking`, with the push days as the run left them. When they cannot
    /// settle it, what the run decided so far is written and the store's exact test is asked.
    private func ceilingReached(_ recipient: Int, at: Int64) throws -> Bool {
        if let span = store.ceilingSpans[recipient], span.from <= at, at < span.until { return true }
        let inbox = Optional(try counters(of: recipient))
        let bound = inbox.flatMap { $0.stored || $0.changed ? PushDays.bound(at: at, newest: $0.pushDay, counts: $0.pushes) : nil }
        if store.ceilingFromCounters, let bound, bound < QuietRules.dailyCeiling { return false }
        try write()
        return try store.ceilingReached(recipient, at: at)
    }

    /// A recipient's counters as the set left them; one the gather did not lock (it should
    /// have: this is a guard) is read from the store, which holds all of it.
    private func counters(of user: Int) throws -> InboxCounters {
        if let known = inboxes[user] { return known }
        let found = try db.first("""
            SELECT total, push_day, pushes_0, pushes_1, pushes_2 FROM inboxes WHERE user = ?\(db.dialect.lockingRead)
            """, [user]) { InboxCounters(total: $0.int(0), pushDay: $0.int64(1), pushes: [$0.int(2), $0.int(3), $0.int(4)]) }
        let counters = found ?? InboxCounters(stored: false)
        inboxes[user] = counters
        return counters
    }

    private func countRow(kind: Kind, push: PushStatus, recipient: Int, at: Int64, delta: Int = 1) {
        if store.countersPerRow { return pending.counted.append((kind, push, recipient, at, delta)) }
        let hour = StatsCounters.hour(of: at)
        let category = kind.category.rawValue
        pending.statsRows[StatsRowKey(hour: hour, kind: kind.rawValue, category: category, push: push.description), default: 0] += delta
        if let load = StatsCounters.loads(push) {
            let key = LoadKey(at: hour, user: recipient, category: category)
            let hourly = pending.loads[key] ?? (0, 0)
            pending.loads[key] = (hourly.sent + load.sent * delta, hourly.held + load.held * delta)
            let day = LoadKey(at: hour / 24, user: recipient, category: category)
            let daily = pending.daily[day] ?? (0, 0)
            pending.daily[day] = (daily.sent + load.sent * delta, daily.held + load.held * delta)
        }
    }

    private func enqueue(_ entry: Enqueue) {
        if withDevices.contains(entry.recipient) { pending.enqueues.append(entry) }
    }

    // MARK: Write

    /// Writes everything decided since the last write, table by table: multi-row statements
    /// (`writeRows`), counters summed per key.
    private func write() throws {
        guard !pending.isEmpty || !pending.interactions.isEmpty else { return }
        let p = pending
        pending = Pending()
        writes += 1
        try writeRows(p.events, "INSERT INTO events(id, nonce, ext, type, at, first_row, last_row, note) VALUES",
                      "(?, \(db.dialect.randomInteger), ?, ?, ?, ?, ?, ?)")
        try writeRows(p.comments, "INSERT INTO comments(id, ext, step, author, text, parent, created_at, event) VALUES", tuple(8))
        try writeRows(p.interactions, "INSERT INTO interactions(step, type, actor, at, event) VALUES", tuple(5), "ON CONFLICT DO NOTHING")
        try writeRows(p.tallies.sorted { $0.key < $1.key }.map { [$0.key, $0.value.hearts, $0.value.shares] },
                      "WITH v(id, hearts, shares) AS (VALUES", typed(3),
                      ") UPDATE steps SET hearts = steps.hearts + v.hearts, shares = steps.shares + v.shares FROM v WHERE steps.id = v.id")
        try writeRows(p.rows.map(\.values), """
            INSERT INTO notifications(id, event, recipient, ord, kind, actor, title, body, push_body, push_image, face, image,
                                      step, comment, journey, tier, tap, thread, push, created_at, version) VALUES
            """, tuple(21))
        for row in p.rows { if let change = row.change { try update(row.id, recipient: row.recipient, change) } }
        for (row, (recipient, change)) in p.changedRows.sorted(by: { $0.key < $1.key }) {
            try update(row, recipient: recipient, change)
        }
        try writeRows(p.batches, "INSERT INTO batches(row, recipient, step, action, opened_at) VALUES", tuple(5))
        try writeRows(p.members, "INSERT INTO batch_members(row, person, at, face) VALUES", tuple(4))
        var updated: [[SQLBindable]] = [], created: [[SQLBindable]] = []
        for (user, inbox) in inboxes.sorted(by: { $0.key < $1.key }) where inbox.changed {
            let values: [SQLBindable] = [user, inbox.total, inbox.pushDay, inbox.pushes[0], inbox.pushes[1], inbox.pushes[2]]
            if inbox.stored { updated.append(values) } else { created.append(values) }
            inboxes[user]?.stored = true
            inboxes[user]?.changed = false
        }
        // One statement a person: PostgreSQL planned a set update of the (hash-partitioned)
        // inboxes as a scan of every partition, 3.2 ms for 64 people against 0.01 ms for one.
        if db.dialect.writersSideBySide && !updated.isEmpty {
            let columns: [SQLBindable] = (0..<6).map { c in KeySets.array(updated.map { $0[c].sqlValue }) }
            try db.run("""
                UPDATE inboxes AS i SET total = v.total, push_day = v.d, pushes_0 = v.p0, pushes_1 = v.p1, pushes_2 = v.p2
                FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]),
                            CAST(? AS BIGINT[])) AS v(u, total, d, p0, p1, p2)
                WHERE i.user = v.u
                """, binding: columns)
        } else {
            for values in updated {
                try db.run("UPDATE inboxes SET total = ?2, push_day = ?3, pushes_0 = ?4, pushes_1 = ?5, pushes_2 = ?6 WHERE user = ?1",
                           binding: values)
            }
        }
        try writeRows(created, "INSERT INTO inboxes(user, total, push_day, pushes_0, pushes_1, pushes_2) VALUES", tuple(6))
        try writeRows(p.suppressions, "INSERT INTO suppressions(event, recipient, kind, reason) VALUES", tuple(4))
        let slot = store.slot
        try writeRows(p.statsRows.sorted { ($0.key.hour, $0.key.kind, $0.key.push) < ($1.key.hour, $1.key.kind, $1.key.push) }
                        .map { [$0.key.hour, $0.key.kind, $0.key.category, $0.key.push, slot, $0.value] },
                      "INSERT INTO stats_rows(hour, kind, category, push, slot, n) VALUES", tuple(6), StatsCounters.upsertRows)
        try writeRows(p.loads.sorted { ($0.key.user, $0.key.at, $0.key.category) < ($1.key.user, $1.key.at, $1.key.category) }
                        .map { [$0.key.at, $0.key.user, $0.key.category, $0.value.sent, $0.value.held] },
                      "INSERT INTO push_load(hour, user, category, sent, held) VALUES", tuple(5), StatsCounters.upsertLoad)
        try writeRows(p.daily.sorted { ($0.key.user, $0.key.at, $0.key.category) < ($1.key.user, $1.key.at, $1.key.category) }
                        .map { [$0.key.at, $0.key.user, $0.key.category, $0.value.sent, $0.value.held] },
                      "INSERT INTO push_daily(day, user, category, sent, held) VALUES", tuple(5), StatsCounters.upsertDaily)
        try writeRows(p.withheld.sorted { ($0.key.hour, $0.key.kind, $0.key.reason) < ($1.key.hour, $1.key.kind, $1.key.reason) }
                        .map { [$0.key.hour, $0.key.kind, $0.key.reason, slot, $0.value] },
                      "INSERT INTO stats_withheld(hour, kind, reason, slot, n) VALUES", tuple(5), StatsCounters.upsertWithheld)
        for c in p.counted { try store.countRow(kind: c.kind, push: c.push, recipient: c.recipient, at: c.at, delta: c.delta) }
        for e in p.enqueues {
            try store.enqueuePushes(row: e.row, recipient: e.recipient, kind: e.kind, silent: e.silent, at: e.at, step: e.step, rowAt: e.rowAt,
                                   quiet: e.quiet)
        }
    }

    /// Writes `rows` as `head tuple, tuple, … tail`, 64 rows a statement and then the powers of
    /// two below: seven statement texts a table, prepared once each.
    private func writeRows(_ rows: [[SQLBindable]], _ head: String, _ tuple: String, _ tail: String = "") throws {
        var start = 0, size = EventSet.rowsPerStatement
        while start < rows.count {
            while size > rows.count - start { size /= 2 }
            let sql = head + " " + Array(repeating: tuple, count: size).joined(separator: ", ") + " " + tail
            try db.run(sql, binding: Array(rows[start..<start + size].joined()))
            start += size
        }
    }

    static let rowsPerStatement = 64

    private func tuple(_ count: Int) -> String { "(" + Array(repeating: "?", count: count).joined(separator: ", ") + ")" }

    /// A tuple of a `VALUES` list that no table types: integers, cast so PostgreSQL knows them.
    private func typed(_ count: Int) -> String { "(" + Array(repeating: "CAST(? AS BIGINT)", count: count).joined(separator: ", ") + ")" }


    /// A batch row as its joins in this run left it: every column a join changes.
    private func update(_ row: Int, recipient: Int, _ c: BatchChange) throws {
        try db.run("""
            UPDATE notifications SET kind = 'batch', action = ?, members = ?, facepile = ?, actor = ?, title = ?, body = ?,
                push_body = NULL, push_image = ?, face = NULL, tap = ?, push = ?, version = ? WHERE id = ? AND recipient = ?
            """, c.action.rawValue, c.members, c.faces.joined(separator: "\n"), c.actor, c.title, c.body, c.pushImage, c.tap.jsonText,
            c.push.description, c.version, row, recipient)
    }
}
