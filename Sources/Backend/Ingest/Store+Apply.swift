import Notifications
import Storage
import Wire

extension Store {
    /// Applies one event atomically: the world changes, the rows it creates, its record in
    /// `events`. A repeated event id does nothing. An event that refers to something unknown
    /// (or acts on an unpublished or deleted step) throws `EventError` and changes nothing.
    ///
    /// With `atomically: false` the caller provides the atomicity (a savepoint around several
    /// events, rolled back whole if any throws): each event then costs two statements less.
    @discardableResult
    public func apply(_ event: Event, atomically: Bool = true) throws -> EventOutcome {
        do {
            guard atomically else { return try applyUnguarded(event) }
            return try db.transaction {
                try refreshKeptSince()
                if let refusal = prunedRefusal(event) { throw EventError(refusal) }
                return try applyUnguarded(event)
            }
        } catch {
            forgetLookups()  // what was remembered may have been rolled back with it
            throw error
        }
    }

    private func applyUnguarded(_ event: Event) throws -> EventOutcome {
        // Recording the event first both detects a repeat and gives the event its key.
        let key = try db.first("INSERT INTO events(\(versionColumn)ext, type, at) VALUES (\(versionValue)?, ?, ?) ON CONFLICT (ext) DO NOTHING RETURNING id",
                               [event.id, event.type, event.at]) { $0.int(0) }
        guard let key else {
            var outcome = EventOutcome(eventId: event.id)
            outcome.repeated = true
            return outcome
        }
        let delivery = Delivery(store: self, event: event, key: key)
        try applyBody(event, delivery)
        if event.changesCachedRecords {
            // The event changed a user or a step the cache may hold — and looked it up first,
            // so the cache may now remember it as it was before: forget it after the change.
            interactionCache?.clear()
        }
        let o = delivery.outcome
        if o.firstRow != nil || o.note != nil {
            try db.run("UPDATE events SET first_row = ?, last_row = ?, note = ? WHERE id = ?",
                       o.firstRow, o.lastRow, o.note, delivery.key)
        }
        return o
    }

    private func applyBody(_ event: Event, _ d: Delivery) throws {
        switch event.body {
        case .user(let info): try applyUser(info, d)
        case let .account(user, state):
            let record = try requireUser(user)
            try db.run("UPDATE users SET state = ? WHERE id = ?", state.rawValue, record.key)
            // A banned or deactivated account's profile and content leave everyone's replicas.
            if record.isActive && state != .active {
                try revoke(.inactive, viewer: nil, owner: record.key, d)
                try leaveBatches(person: record.key, recipient: nil, d)
            }
        case let .privacy(user, isPrivate):
            let record = try requireUser(user)
            try db.run("UPDATE users SET private = ? WHERE id = ?", isPrivate, record.key)
            // Gone private: whoever does not follow them gives up what they hold of their content.
            if isPrivate && !record.isPrivate { try revoke(.private, viewer: nil, owner: record.key, d) }
        case let .relation(relation, actor, target):
            try applyRelation(relation, actor: try requireUser(actor), target: try requireUser(target), d)
        case let .journey(id, owner, title):
            let ownerKey = try requireUser(owner).key
            if let existing = try journey(id) {
                guard existing.ownerKey == ownerKey else { throw EventError("journey \(id) belongs to another owner") }
                try db.run("UPDATE journeys SET title = ? WHERE id = ?", title, existing.key)
            } else {
                try db.run("INSERT INTO journeys(ext, owner, title, created_at) VALUES (?, ?, ?, ?)", id, ownerKey, title, event.at)
            }
        case let .journeyFollow(actor, journey):
            let j = try requireJourney(journey)
            try db.run("INSERT INTO journey_follows(journey, follower, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                       j.key, try requireUser(actor).key, event.at)
        case let .step(id, journey, caption, photoUrl, isFinal):
            let j = try requireJourney(journey)
            guard try step(id) == nil else { throw EventError("step \(id) already exists") }
            try db.run("INSERT INTO steps(ext, journey, owner, caption, photo_url, final, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       id, j.key, j.ownerKey, caption, photoUrl, isFinal, event.at)
        case .mediaReady(let id):
            try publish(try requireStep(id), d)
        case let .interaction(interaction, actor, step):
            let context = try requirePublishedStep(step, actor: actor, at: event.at)
            try applyInteraction(interaction, actor: context.actor!, step: context, d)
        case let .comment(actor, step, id, text, parent):
            let context = try requirePublishedStep(step, actor: actor, at: event.at)
            try applyComment(actor: context.actor!, step: context, id: id, text: text, parent: parent, d)
        case .deleteStep(let id):
            let s = try requireStep(id)
            guard s.deletedAt == nil else { d.outcome.note = "step \(id) was already deleted"; return }
            try db.run("UPDATE steps SET deleted_at = ? WHERE id = ?", event.at, s.key)
            try markRowsDeleted(madeBy: """
                SELECT publish_event FROM steps WHERE id = :key
                UNION ALL SELECT event FROM interactions WHERE step = :key
                UNION ALL SELECT event FROM comments WHERE step = :key
                """, key: s.key, d)
        case .deleteComment(let id):
            guard let c = try comment(id) else { throw EventError("unknown comment \(id)") }
            guard c.deletedAt == nil else { d.outcome.note = "comment \(id) was already deleted"; return }
            try db.run("UPDATE comments SET deleted_at = ? WHERE id = ?", event.at, c.key)
            try markRowsDeleted(madeBy: "SELECT event FROM comments WHERE id = :key", key: c.key, d)
            // Who holds its words: the rows of its replies (it is their parent), and the step's
            // owner (who holds every comment on their step).
            try touchRows(madeBy: "SELECT event FROM comments WHERE parent = :key", key: c.key, d)
            if let owner = try db.scalar("SELECT owner FROM steps WHERE id = ?", c.stepKey) {
                try revoke(.comment, viewer: owner, comment: c.key, d)
            }
        case let .tierCrossed(actor, journey, tier):
            try applyTier(supporter: try requireUser(actor), journey: try requireJourney(journey), tier: tier, d)
        case let .announcement(text, audience, link):
            try announce(text: text, audience: audience, link: link, d)
        case let .preferences(user, changes, quietHours):
            let record = try requireUser(user)
            if let quietHours {
                try db.run("UPDATE users SET quiet_hours = ? WHERE id = ?", quietHours.value?.stored, record.key)
                // What they hold now waits for the new end (or none): hours turned off at
                // midnight let the night's pushes go then, not at the old 07:00.
                let due = quietHours.value?.heldUntil(event.at) ?? event.at
                try db.run("""
                    UPDATE outbox SET due_at = ? WHERE held = 1 AND state = 'due' AND due_at > ?
                        AND token IN (SELECT token FROM devices WHERE user = ?)
                    """, due, due, record.key)
            }
            var switches = record.preferences
            for (category, value) in changes {
                guard let name = Preferences.Switch(rawValue: category?.rawValue ?? "all") else { continue }
                let was = switches[name]
                switches[name] = value
                try db.run("UPDATE users SET \(Store.preferenceColumn(category)) = ? WHERE id = ?", value, record.key)
                // Kept for the trust budget: a switch turned off soon after a push is a mute.
                if was != value {
                    try db.run("INSERT INTO preference_changes(event, user, switch, was_on, now_on, at) VALUES (?, ?, ?, ?, ?, ?)",
                               d.key, record.key, name.rawValue, was, value, event.at)
                }
            }
        case let .alert(user, target, mode):
            try setAlert(user: try requireUser(user), target: target, mode: mode)
        }
    }

    // MARK: Requirements: unknown ids are bad input

    /// The user `id` (from the ingest's cache when one is open), or bad input.
    func requireUser(_ id: String) throws -> UserRecord {
        if let known = interactionCache?.users[id] { return known }
        guard let user = try user(id) else { throw EventError("unknown user \(id)") }
        interactionCache?.remember(user, as: id)
        return user
    }

    func requireJourney(_ id: String) throws -> JourneyRecord {
        guard let journey = try journey(id) else { throw EventError("unknown journey \(id)") }
        return journey
    }

    func requireStep(_ id: String) throws -> StepRecord {
        guard let step = try step(id) else { throw EventError("unknown step \(id)") }
        return step
    }

    /// A step that may be interacted with at `at` (published by then, not deleted), with its
    /// owner and journey.
    func requirePublishedStep(_ id: String, actor: String, at: Int64) throws -> StepContext {
        guard let context = try stepContext(id, actor: actor) else {
            _ = try requireUser(actor)  // an unknown actor is named first, as it comes first in the event
            throw EventError("unknown step \(id)")
        }
        guard context.actor != nil else { throw EventError("unknown user \(actor)") }
        guard context.step.deletedAt == nil else { throw EventError("step \(id) was deleted") }
        guard let published = context.step.publishedAt else {
            throw EventError("step \(id) is not published yet (its media is still processing)")
        }
        guard at >= published else {
            throw EventError("step \(id) was published at \(Timestamp.format(published)), after this event's time \(Timestamp.format(at))")
        }
        return context
    }

    /// The column of a preference switch (`nil`: the master switch).
    @_spi(Bench) public static func preferenceColumn(_ category: Category?) -> String {
        category.map { "pref_\($0.rawValue)" } ?? "pref_all"
    }

    // MARK: Revocations

    /// Why a reader gives up content they held.
    enum Revocation: String {
        case block, unfollow, `private`, inactive, comment
    }

    /// Records that `viewer` (nil: everyone it concerns) may no longer see `owner`'s content, or
    /// the comment: their next sync tells their replica to give it up.
    func revoke(_ reason: Revocation, viewer: Int?, owner: Int? = nil, comment: Int? = nil, _ d: Delivery) throws {
        try db.run("INSERT INTO revocations(version, viewer, owner, comment, reason) VALUES (?, ?, ?, ?, ?)",
                   d.changeVersion(), viewer ?? 0, owner, comment, reason.rawValue)
    }

    // MARK: World

    private func applyUser(_ info: Event.UserInfo, _ d: Delivery) throws {
        if let holder = try user(username: info.username), holder.id != info.id {
            throw EventError("username \(info.username) already belongs to user \(holder.id)")
        }
        if let existing = try user(info.id) {
            try db.run("""
                UPDATE users SET username = ?, name = ?, avatar_url = coalesce(?, avatar_url),
                    private = coalesce(?, private), signed_in = coalesce(?, signed_in) WHERE id = ?
                """, info.username, info.name, info.avatarUrl, info.isPrivate, info.signedIn, existing.key)
            if info.isPrivate == true && !existing.isPrivate { try revoke(.private, viewer: nil, owner: existing.key, d) }
        } else {
            let key = try db.first("""
                INSERT INTO users(ext, username, name, avatar_url, private, signed_in, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                RETURNING id
                """, [info.id, info.username, info.name, info.avatarUrl, info.isPrivate ?? false, info.signedIn ?? true, d.event.at]) { $0.int(0) }
            try db.run("INSERT INTO inboxes(user) VALUES (?)", key)
        }
    }

    // An event's rows are its id range. On PostgreSQL a fan-out's range may also hold rows
    // another writer made meanwhile: those carry another event. A range of one row is the
    // row the event made or changed (a batch it joined, which carries the batch's first event).

    /// Gives the rows made by the events `eventsSQL` selects (by `:key`) this event's version,
    /// so their recipients' next sync brings them again (and what they point at, as it is now).
    private func touchRows(madeBy eventsSQL: String, key: Int, _ d: Delivery) throws {
        let rows = """
            SELECT n.id FROM events AS e JOIN notifications AS n ON n.id BETWEEN e.first_row AND e.last_row
                AND (n.event = e.id OR e.first_row = e.last_row)
            WHERE e.id IN (\(eventsSQL))
            """
        let values: [String: SQLBindable] = [":key": key, ":version": d.changeVersion()]
        try db.cached("UPDATE notifications SET version = :version WHERE id IN (\(rows))").bind(named: values).run()
    }

    /// Strikes through the rows made by the events `eventsSQL` selects (by `:key`): the rows
    /// about a deleted step or comment.
    private func markRowsDeleted(madeBy eventsSQL: String, key: Int, _ d: Delivery) throws {
        let rows = """
            SELECT n.id FROM events AS e JOIN notifications AS n ON n.id BETWEEN e.first_row AND e.last_row
                AND (n.event = e.id OR e.first_row = e.last_row)
            WHERE e.id IN (\(eventsSQL)) AND n.deleted = 0
            """
        // The version is the event's own id, so there is nothing to allocate: update, then tell.
        let values: [String: SQLBindable] = [":key": key, ":version": d.changeVersion()]
        try db.cached("UPDATE notifications SET deleted = 1, version = :version WHERE id IN (\(rows))").bind(named: values).run()
        if db.changes > 0 { d.outcome.note = "\(db.changes) rows marked deleted" }
    }
}

extension Event {
    /// Whether applying this event changes a user or a step that an ingest's interaction
    /// cache may hold (see `Store.withInteractionCache`). Exhaustive, so a new kind of event
    /// has to say.
    var changesCachedRecords: Bool {
        switch body {
        case .user, .account, .privacy, .preferences, .step, .mediaReady, .deleteStep: return true
        case .relation, .journey, .journeyFollow, .interaction, .comment, .deleteComment, .tierCrossed, .announcement, .alert:
            return false
        }
    }
}
