import Notifications
import SQLite

extension Store {
    /// Applies one event atomically: the world changes, the rows it creates, its record in
    /// `events`. A repeated event id does nothing. An event that refers to something unknown
    /// (or acts on an unpublished or deleted step) throws `EventError` and changes nothing.
    @discardableResult
    public func apply(_ event: Event, payload: String) throws -> EventOutcome {
        try db.transaction {
            if try db.scalar("SELECT 1 FROM events WHERE ext = ?", event.id) != nil {
                var outcome = EventOutcome(eventId: event.id)
                outcome.repeated = true
                return outcome
            }
            let delivery = Delivery(store: self, event: event)
            try applyBody(event, delivery)
            let o = delivery.outcome
            try db.run("INSERT INTO events(ext, type, at, payload, first_row, last_row, note) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       event.id, event.type, event.at, payload, o.firstRow, o.lastRow, o.note)
            return o
        }
    }

    private func applyBody(_ event: Event, _ d: Delivery) throws {
        switch event.body {
        case .user(let info): try applyUser(info, at: event.at)
        case let .account(user, state):
            try db.run("UPDATE users SET state = ? WHERE id = ?", state.rawValue, try requireUser(user).key)
        case let .privacy(user, isPrivate):
            try db.run("UPDATE users SET private = ? WHERE id = ?", isPrivate, try requireUser(user).key)
        case let .relation(type, actor, target):
            try applyRelation(type, actor: try requireUser(actor), target: try requireUser(target), d)
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
            try db.run("INSERT OR IGNORE INTO journey_follows(journey, follower, created_at) VALUES (?, ?, ?)",
                       j.key, try requireUser(actor).key, event.at)
        case let .step(id, journey, caption, photoUrl, isFinal):
            let j = try requireJourney(journey)
            guard try step(id) == nil else { throw EventError("step \(id) already exists") }
            try db.run("INSERT INTO steps(ext, journey, owner, caption, photo_url, final, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       id, j.key, j.ownerKey, caption, photoUrl, isFinal, event.at)
        case .mediaReady(let id):
            try publish(try requireStep(id), d)
        case let .interaction(type, actor, step):
            try applyInteraction(type, actor: try requireUser(actor), step: try requirePublishedStep(step), d)
        case let .comment(actor, step, id, text, parent):
            try applyComment(actor: try requireUser(actor), step: try requirePublishedStep(step), id: id, text: text,
                             parent: parent, d)
        case .deleteStep(let id):
            let s = try requireStep(id)
            guard s.deletedAt == nil else { d.outcome.note = "step \(id) was already deleted"; return }
            try db.run("UPDATE steps SET deleted_at = ? WHERE id = ?", event.at, s.key)
            try markRowsDeleted(step: s.key, comment: nil, d)
        case .deleteComment(let id):
            guard let c = try comment(id) else { throw EventError("unknown comment \(id)") }
            guard c.deletedAt == nil else { d.outcome.note = "comment \(id) was already deleted"; return }
            try db.run("UPDATE comments SET deleted_at = ? WHERE id = ?", event.at, c.key)
            try markRowsDeleted(step: c.stepKey, comment: c.key, d)
        case let .tierCrossed(actor, journey, tier):
            try applyTier(supporter: try requireUser(actor), journey: try requireJourney(journey), tier: tier, d)
        case let .announcement(text, audience, link):
            try announce(text: text, audience: audience, link: link, d)
        case let .preferences(user, changes):
            let key = try requireUser(user).key
            for (category, value) in changes {
                let column = category.map { "pref_\($0.rawValue)" } ?? "pref_all"
                try db.run("UPDATE users SET \(column) = ? WHERE id = ?", value, key)
            }
        }
    }

    // MARK: Requirements: unknown ids are bad input

    func requireUser(_ id: String) throws -> UserRecord {
        guard let user = try user(id) else { throw EventError("unknown user \(id)") }
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

    /// A step that may be interacted with (published, not deleted), with its owner and journey.
    func requirePublishedStep(_ id: String) throws -> StepContext {
        guard let context = try stepContext(id) else { throw EventError("unknown step \(id)") }
        guard context.step.deletedAt == nil else { throw EventError("step \(id) was deleted") }
        guard context.step.publishedAt != nil else { throw EventError("step \(id) is not published yet (its media is still processing)") }
        return context
    }

    // MARK: World

    private func applyUser(_ info: Event.UserInfo, at: Int64) throws {
        if let holder = try user(username: info.username), holder.id != info.id {
            throw EventError("username \(info.username) already belongs to user \(holder.id)")
        }
        if let existing = try user(info.id) {
            try db.run("""
                UPDATE users SET username = ?, name = ?, avatar_url = coalesce(?, avatar_url),
                    private = coalesce(?, private), signed_in = coalesce(?, signed_in) WHERE id = ?
                """, info.username, info.name, info.avatarUrl, info.isPrivate, info.signedIn, existing.key)
        } else {
            try db.run("INSERT INTO users(ext, username, name, avatar_url, private, signed_in, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       info.id, info.username, info.name, info.avatarUrl, info.isPrivate ?? false, info.signedIn ?? true, at)
        }
    }

    /// Strikes through the rows about a deleted step (every row on it) or comment (its rows only).
    private func markRowsDeleted(step: Int, comment: Int?, _ d: Delivery) throws {
        let match = "step = :step AND (:comment IS NULL OR comment = :comment) AND deleted = 0"
        let values: [String: SQLBindable] = [":step": step, ":comment": comment]
        guard try db.cached("SELECT EXISTS (SELECT 1 FROM notifications WHERE \(match))").bind(named: values)
            .first({ $0.bool(0) }) == true else { return }
        var update = values
        update[":version"] = try d.changeVersion()
        try db.cached("UPDATE notifications SET deleted = 1, version = :version WHERE \(match)").bind(named: update).run()
        d.outcome.note = "\(db.changes) rows marked deleted"
    }
}
