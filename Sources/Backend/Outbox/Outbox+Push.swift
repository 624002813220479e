import Notifications
import Wire
import Storage

/// Why a row has no push to render.
public enum PushUnavailable: Error, CustomStringConvertible {
    case noSuchRow(Int)
    /// The rules, judged now, forbid the push: a block, an inactive account, a deletion, a
    /// switch turned off, a mention its reader may no longer see.
    case withheld(Int, Reason)
    /// The entry's device is no longer its recipient's: removed (they signed out), or
    /// registered since by someone else (another person signed in on that phone).
    case notRecipientsDevice(row: Int)

    /// What an outbox entry's drop records as its reason when its device changed hands.
    public static let deviceChangedReason = "deviceChanged"

    public var description: String {
        switch self {
        case .noSuchRow(let id): return "no notification row \(id)"
        case .notRecipientsDevice(let id):
            return "row \(id)'s push is withheld from this device: \(PushUnavailable.deviceChangedReason) — the device no longer belongs to its recipient"
        case .withheld(let id, .deleted):
            return "row \(id) is suppressed:deleted — its content was deleted, so no push goes out"
        case .withheld(let id, let reason):
            return "row \(id)'s push is withheld now: \(reason.rawValue) — \(PushUnavailable.explain(reason))"
        }
    }

    /// The same for a reader of the row (the inbox's push preview): no ids, no codes.
    public var sentence: String {
        switch self {
        case .noSuchRow: return "There is no such row."
        case .notRecipientsDevice: return "That device is no longer its recipient's, so no push goes out to it."
        case .withheld(_, .deleted): return "Its content was deleted, so no push goes out for it."
        case .withheld(_, let reason): return "No push goes out for it now: \(PushUnavailable.explain(reason))."
        }
    }

    /// The quiet rule that withheld a push, when one did.
    public var reason: Reason? {
        if case .withheld(_, let reason) = self { return reason }
        return nil
    }

    /// Why an outbox entry is dropped unsent, as its attempt records it: the quiet rule's name,
    /// or `deviceChanged`; nil when there is nothing to drop for (the row is gone).
    public var dropReason: String? {
        switch self {
        case .withheld(_, let reason): return reason.rawValue
        case .notRecipientsDevice: return PushUnavailable.deviceChangedReason
        case .noSuchRow: return nil
        }
    }

    static func explain(_ reason: Reason) -> String {
        switch reason {
        case .blocked: return "a block stands between its actor and its recipient"
        case .actorInactive: return "its actor's account is banned or deactivated"
        case .recipientInactive: return "its recipient's account is banned or deactivated"
        case .notVisible: return "its recipient may no longer see the comment"
        case .deleted: return "its content was deleted"
        case .preferences: return "its recipient turned this kind of push off"
        case .self, .duplicate, .ladder, .dailyCeiling: return "the quiet rules forbid it"
        }
    }
}

extension Outbox {
    /// The push of `entry` as it goes out now to its device: the row's push as every surface
    /// draws it (`pushContent(row:)`), and only while the device is still registered to the
    /// row's recipient. A token removed, or registered since by another person, carries
    /// nothing that was queued for the one before (docs/delivery.md). Throws
    /// `PushUnavailable.notRecipientsDevice` when it is not.
    public func pushContent(for entry: OutboxEntry) throws -> PushContent {
        let content = try pushContent(row: entry.row)
        if let holder = store.recordMemo?.devices[entry.token], let stored = store.recordMemo?.pushes[entry.row] ?? nil {
            guard holder == stored.recipient else { throw PushUnavailable.notRecipientsDevice(row: entry.row) }
            return content
        }
        let owned = try db.cached("""
            SELECT EXISTS (SELECT 1 FROM devices AS d JOIN notifications AS n ON n.recipient = d.user
                           WHERE d.token = ? AND n.id = ?)
            """).bind([entry.token, entry.row]).first { $0.bool(0) } ?? false
        guard owned else { throw PushUnavailable.notRecipientsDevice(row: entry.row) }
        return content
    }

    /// The push of row `id` as it goes out now — the one answer for every surface that draws a
    /// push (`stepo push`, `GET /v1/rows/{id}/push`, the inbox's preview, the delivery worker):
    /// the quiet rules judged again at this moment (`QuietRules.atSend`), a masked copy when the
    /// actor is private now or the content is out of the recipient's sight, and the recipient's
    /// fresh unseen count as the absolute badge. Throws `PushUnavailable.withheld` when the
    /// rules now forbid it.
    public func pushContent(row id: Int) throws -> PushContent {
        let memo = store.recordMemo?.pushes[id]
        guard let stored = try memo ?? db.first(Outbox.pushSQL + " WHERE n.id = ?", [id], StoredPush.init) else {
            throw PushUnavailable.noSuchRow(id)
        }
        guard let recipient = try store.user(key: stored.recipient) else { throw PushUnavailable.noSuchRow(id) }
        let actor = try stored.actor.flatMap { try store.user(key: $0) }
        let facts = try sendFacts(stored, recipient: recipient, actor: actor)
        var body = stored.body
        var image = stored.image
        switch QuietRules.atSend(stored.action ?? stored.kind, facts) {
        case .drop(let reason): throw PushUnavailable.withheld(id, reason)
        case .full: break
        case .masked:
            // A batch's body is its verb already; every other kind loses its preview.
            if stored.kind != .batch, let actor {
                body = Copy.maskedBody(stored.kind, username: actor.username, Subject(tier: stored.tier))
            }
            image = nil
        }
        let tap = (try? JSON.parse(stored.tap)).flatMap(Tap.init(json:)) ?? .link(Tap.feedLink)
        var content = PushContent(rowId: id, kind: stored.kind, title: stored.title, body: body, image: image,
                                  face: stored.face, thread: stored.thread, deepLink: tap.deepLink,
                                  badge: try store.inboxes.counts(for: stored.recipient).unseen, action: stored.action)
        content.facepile = stored.kind == .batch ? stored.facepile : nil
        return content
    }

    /// What the send-time rules ask about a stored push, as the store stands now.
    private func sendFacts(_ stored: StoredPush, recipient: UserRecord, actor: UserRecord?) throws -> SendFacts {
        var facts = SendFacts()
        facts.recipientActive = recipient.isActive
        facts.preferences = recipient.preferences
        facts.contentDeleted = stored.deleted
        let visibility = Visibility(store: store, viewer: recipient)
        if let actor, actor.key != recipient.key {
            facts.blocked = try store.blocked(actor.key, recipient.key)
            facts.actorActive = actor.isActive
            facts.actorPrivate = actor.isPrivate
            visibility.assume(actor, blocked: facts.blocked)
        }
        let kind = stored.action ?? stored.kind
        if kind.isJourneyUpdate, stored.recipientAlerts > 0 {
            facts.alert = try store.alert(for: recipient.key, person: stored.actor, journey: stored.journey)?.mode ?? .default
        }
        if stored.kind == .mention, !stored.deleted, let comment = stored.comment {
            facts.mentionNotVisible = !(try visibility.canSeeComment(comment))
        }
        facts.contentVisible = try visibility.canQuote(kind: stored.kind, deleted: stored.deleted, actor: stored.actor,
                                                       step: stored.step, journey: stored.journey, comment: stored.comment)
        return facts
    }

    /// The pushes of `entries` as they go out now, in their order: each the content
    /// `pushContent(for:)` gives, or the error it throws. Everything the send-time rules ask
    /// of the whole batch — the rows, their recipients, actors and what they quote, the blocks
    /// and follows between those, the badges, who holds each device — is read first, in a few
    /// set statements (`gather`); the rules then judge each entry over what was read, as the
    /// one-entry path judges it over what it reads one query at a time.
    public func pushContents(for entries: [OutboxEntry]) throws -> [Result<PushContent, Error>] {
        try store.withRecordMemo {
            try gather(entries)
            return entries.map { entry in Result { try pushContent(for: entry) } }
        }
    }

    /// The push reader for a set of rows, each answer led by its row's id.
    static let gatherPushSQL = Outbox.pushSQL.replacingOccurrences(of: "SELECT n.kind", with: "SELECT n.id, n.kind") + " WHERE n.id IN (%)"

    /// Reads into the record memo what judging `entries` will ask.
    func gather(_ entries: [OutboxEntry]) throws {
        guard let memo = store.recordMemo else { return }
        let rows = Array(Set(entries.map(\.row)))
        for key in rows { memo.pushes[key] = .some(nil) }
        for (key, stored) in try db.keyed(Outbox.gatherPushSQL, rows, { ($0.int(0), try StoredPush(row: $0, from: 1)) }) {
            memo.pushes[key] = stored
        }
        let pushes = memo.pushes.values.compactMap { $0 }
        // What each row quotes, and through it whose it is.
        memo.comments.merge(try records(Set(pushes.compactMap(\.comment)), "comments", CommentRecord.columns, CommentRecord.init, \.key)) { $1 }
        let steps = Set(pushes.compactMap(\.step)).union(memo.comments.values.compactMap { $0?.stepKey })
        memo.steps.merge(try records(steps, "steps", StepRecord.columns, StepRecord.init, \.key)) { $1 }
        memo.journeys.merge(try records(Set(pushes.compactMap(\.journey)), "journeys", JourneyRecord.columns, JourneyRecord.init, \.key)) { $1 }
        // Each recipient and the people their row names: blocks between them, and whether the
        // recipient follows those whose content it quotes.
        var people = Set<Int>()
        var blockPairs = Set<RecordMemo.Pair>()
        var followPairs = Set<RecordMemo.Pair>()
        for push in pushes {
            var named: [Int] = []
            if let actor = push.actor { named.append(actor) }
            var owners: [Int] = []
            if let step = push.step, let record = memo.steps[step] ?? nil { owners.append(record.ownerKey) }
            if let journey = push.journey, let record = memo.journeys[journey] ?? nil { owners.append(record.ownerKey) }
            if let comment = push.comment, let record = memo.comments[comment] ?? nil {
                named.append(record.authorKey)
                if let step = memo.steps[record.stepKey] ?? nil { owners.append(step.ownerKey) }
            }
            people.insert(push.recipient)
            for person in named + owners where person != push.recipient {
                people.insert(person)
                blockPairs.insert(RecordMemo.Pair(min(person, push.recipient), max(person, push.recipient)))
            }
            for owner in owners where owner != push.recipient { followPairs.insert(RecordMemo.Pair(push.recipient, owner)) }
        }
        memo.users.merge(try records(people, "users", UserRecord.columns, UserRecord.init, \.key)) { $1 }
        let pairs = blockPairs.map { [$0.a, $0.b] as [SQLBindable] }
        for pair in blockPairs { memo.blocks[pair] = false }
        for sql in ["SELECT k.a, k.b FROM k JOIN blocks AS b ON b.blocker = k.a AND b.blocked = k.b",
                    "SELECT k.a, k.b FROM k JOIN blocks AS b ON b.blocker = k.b AND b.blocked = k.a"] {
            for pair in try db.matching("k(a, b)", ["BIGINT", "BIGINT"], pairs, sql, { RecordMemo.Pair($0.int(0), $0.int(1)) }) {
                memo.blocks[pair] = true
            }
        }
        // Whether a reader follows an owner is asked only of a private owner.
        followPairs = followPairs.filter { (memo.users[$0.b] ?? nil)?.isPrivate == true }
        for pair in followPairs { memo.follows[pair] = false }
        for pair in try db.matching("k(a, b)", ["BIGINT", "BIGINT"], followPairs.map { [$0.a, $0.b] as [SQLBindable] },
                                    "SELECT k.a, k.b FROM k JOIN follows AS f ON f.follower = k.a AND f.followee = k.b",
                                    { RecordMemo.Pair($0.int(0), $0.int(1)) }) {
            memo.follows[pair] = true
        }
        for (user, counters) in try store.counters(ofEach: Array(Set(pushes.map(\.recipient)))) { memo.counters[user] = counters }
        let tokens = Array(Set(entries.map(\.token)))
        for token in tokens { memo.devices[token] = .some(nil) }
        for (token, user) in try db.keyed("SELECT token, user FROM devices WHERE token IN (%)", tokens, { ($0.string(0), $0.int(1)) }) {
            memo.devices[token] = user
        }
    }

    /// The records of `table` with these keys, in one statement: each key's record, or nil
    /// when there is none (remembered too, so it is not asked again).
    private func records<R>(_ keys: Set<Int>, _ table: String, _ columns: String, _ read: (Row) throws -> R,
                            _ key: (R) -> Int) throws -> [Int: R?] {
        var found: [Int: R?] = [:]
        for key in keys { found[key] = .some(nil) }
        for record in try db.keyed("SELECT \(columns) FROM \(table) WHERE id IN (%)", Array(keys), read) { found[key(record)] = record }
        return found
    }

    /// A row's push as stored: the copy decided when the row was made, and what it points at.
    struct StoredPush {
        var kind: Kind
        var title: String
        var body: String
        var image: String?
        var face: String?
        var thread: String
        var tap: String
        var recipient: Int
        var deleted: Bool
        var action: Kind?
        var actor: Int?
        var step: Int?
        var comment: Int?
        var journey: Int?
        var tier: String?
        /// How many custom follow alerts the recipient has set (none: nothing to look up).
        var recipientAlerts: Int
        /// A batch's faces, newest first.
        var facepile: [String]?
        /// When the row was made (Unix ms).
        var createdAt: Int64

        init(row: Row) throws { try self.init(row: row, from: 0) }

        /// Read from `pushSQL`'s columns, the first at `first`.
        init(row: Row, from first: Int) throws {
            func at(_ i: Int) -> Int { first + i }
            kind = try row.decoded(at(0), table: "notifications", column: "kind", Kind.init(rawValue:))
            title = row.string(at(1))
            body = row.string(at(2))
            image = row.optionalString(at(3))
            face = row.optionalString(at(4))
            thread = row.string(at(5))
            tap = row.string(at(6))
            recipient = row.int(at(7))
            deleted = row.bool(at(8))
            action = row.optionalString(at(9)).flatMap(Kind.init(rawValue:))
            actor = row.optionalInt(at(10))
            step = row.optionalInt(at(11))
            comment = row.optionalInt(at(12))
            journey = row.optionalInt(at(13))
            tier = row.optionalString(at(14))
            recipientAlerts = row.int(at(15))
            facepile = row.optionalString(at(16)).map { $0.split(separator: "\n").map(String.init) }
            createdAt = row.int64(at(17))
        }
    }

    private static let pushSQL = """
        SELECT n.kind, \(RowReader.content("title")),
               CASE WHEN n.title IS NULL THEN coalesce(e.push_body, e.body) ELSE coalesce(n.push_body, n.body) END,
               \(RowReader.content("push_image")), \(RowReader.content("face")), \(RowReader.content("thread")),
               \(RowReader.content("tap")), n.recipient, n.deleted, n.action, n.actor, n.step, n.comment, n.journey, n.tier,
               r.alerts, n.facepile, n.created_at
        FROM notifications AS n JOIN events AS e ON e.id = n.event JOIN users AS r ON r.id = n.recipient
        """
}

extension Outbox {
    /// The daily ceiling judged as `entries` leave at `now` (`SendCeiling`): the entries it
    /// withholds. `launching`: every entry the caller holds for this moment, `entries` among them
    /// (its others are not in flight: they are being dropped or superseded).
    ///
    /// A push counts when its row's first entry was sent (its provider's answer), and a push in
    /// flight — an entry another launch has claimed and not yet settled — counts as sent now:
    /// never fewer than went, so two workers at once cannot pass the ceiling together. Nothing
    /// is written: what was sent is already in the outbox and its attempts.
    ///
    /// Most people are nowhere near the ceiling, and one statement for all the recipients shows
    /// it: a push sent in the last 24 hours was decided at most three days ago (an entry is due
    /// within a day of its row, quiet hours at the latest, and expires a day after it is due),
    /// so a person with fewer than 100 pushes decided in three days can be sent them all. Only
    /// the others' rows of those three days are read with their entries' send times.
    public func ceilingAtSend(_ entries: [OutboxEntry], launching: [OutboxEntry], now: Int64) throws -> Set<Int> {
        guard !entries.isEmpty else { return [] }
        let recipientOf = Dictionary(try db.keyed("SELECT id, recipient FROM notifications WHERE id IN (%)", entries.map(\.row)) {
            ($0.int(0), $0.int(1))
        }, uniquingKeysWith: { a, _ in a })
        let since = now - Outbox.ceilingLookBack
        let recipients = Array(Set(recipientOf.values)).sorted()
        let near = try db.matching("k(r, since)", ["BIGINT", "BIGINT"], recipients.map { [$0, since] },
                                   "SELECT k.r FROM k WHERE (SELECT count(*) FROM notifications AS n WHERE n.recipient = k.r AND n.push = 'sent' AND n.created_at > k.since) >= \(QuietRules.dailyCeiling)",
                                   { $0.int(0) })
        guard !near.isEmpty else { return [] }
        let mine = Set(launching.map(\.id))
        var sentInLastDay: [Int: Int] = [:]
        var counted = Set<Int>()
        for recipient in near {
            // One statement, one snapshot: an entry another worker settles meanwhile is seen
            // either in flight or sent, never neither (two reads let it slip between them).
            let rows = try db.keyed("""
                WITH p AS (SELECT CAST(? AS BIGINT) AS r, CAST(? AS BIGINT) AS s)
                SELECT n.id, (SELECT min(a.at) FROM outbox AS o JOIN delivery_attempts AS a ON a.entry = o.id
                              WHERE o.row = n.id AND o.state = 'sent' AND a.status >= 200 AND a.status < 300),
                       EXISTS (SELECT 1 FROM outbox AS f WHERE f.row = n.id AND f.state = 'claimed' AND f.id NOT IN (%))
                FROM notifications AS n CROSS JOIN p WHERE n.recipient = p.r AND n.push = 'sent' AND n.created_at > p.s
                """, Array(mine), leading: [recipient, since]) { (row: $0.int(0), sentAt: $0.optionalInt64(1), inFlight: $0.bool(2)) }
            var sent = 0
            for row in rows {
                if let at = row.sentAt {
                    counted.insert(row.row)
                    if at > now - QuietRules.ceilingWindow { sent += 1 }
                } else if row.inFlight {
                    counted.insert(row.row)
                    sent += 1
                }
            }
            sentInLastDay[recipient] = sent
        }
        let hot = Set(near)
        return SendCeiling.weigh(entries.compactMap { entry in
            recipientOf[entry.row].flatMap { hot.contains($0) ? SendCeiling.Candidate(entry: entry.id, row: entry.row, recipient: $0) : nil }
        }, sentInLastDay: sentInLastDay, alreadyCounted: counted).over
    }

    /// How far back a push sent in the last 24 hours may have been decided: due at most a day
    /// after its row (the end of quiet hours), gone at most a day after it was due (its expiry),
    /// and an hour to spare (a batch's later states are due up to half an hour after its row).
    static let ceilingLookBack = 3 * Timestamp.day + Timestamp.hour
}
