import Notifications
import Storage
import Wire

/// The events that produce notifications: relations, publishes, interactions, comments,
/// tier crossings and announcements.
extension Store {
    func applyRelation(_ relation: Event.Relation, actor: UserRecord, target: UserRecord, _ d: Delivery) throws {
        if actor.key == target.key { throw EventError("a user cannot \(relation.rawValue) themselves (\(actor.id))") }
        let at = d.event.at
        switch relation {
        case .follow:
            if try blocked(actor.key, target.key) {
                throw EventError("\(actor.id) cannot follow \(target.id): a block stands between them")
            }
            if target.isPrivate {
                let already = try follows(actor.key, target.key) || hasPendingRequest(from: actor.key, to: target.key)
                if !already {
                    try db.run("INSERT INTO follow_requests(target, requester, created_at) VALUES (?, ?, ?)", target.key, actor.key, at)
                }
                // Request, withdraw, request again (or again after a decline): one person, one
                // request ping. The request stands; the row that asked the first time answers it.
                let n = Notification(kind: .followRequest, actor: actor.person, subject: Subject())
                try d.deliver(n, to: target, actor: actor, refs: RowRefs(),
                              duplicate: already || pinged(target, by: actor, .followRequest), blocked: false)
            } else {
                let already = try follows(actor.key, target.key)
                try db.run("INSERT INTO follows(followee, follower, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", target.key, actor.key, at)
                // Follow, unfollow, follow again: the second follow is a re-ping and stays silent.
                let n = Notification(kind: .newFollower, actor: actor.person, subject: Subject())
                try d.deliver(n, to: target, actor: actor, refs: RowRefs(),
                              duplicate: already || pinged(target, by: actor, .newFollower), blocked: false)
            }
        case .unfollow:
            let wasFollowing = try follows(actor.key, target.key)
            try db.run("DELETE FROM follows WHERE followee = ? AND follower = ?", target.key, actor.key)
            try db.run("DELETE FROM follow_requests WHERE target = ? AND requester = ?", target.key, actor.key)
            // No longer following a private account: its content leaves the actor's replica.
            if wasFollowing && target.isPrivate { try revoke(.unfollow, viewer: actor.key, owner: target.key, d) }
        case .followRequestAccepted, .followRequestDeclined:
            // The actor is the private user; the target is the one who asked.
            guard try hasPendingRequest(from: target.key, to: actor.key) else {
                throw EventError("no pending follow request from \(target.id) to \(actor.id)")
            }
            try db.run("DELETE FROM follow_requests WHERE target = ? AND requester = ?", actor.key, target.key)
            if relation == .followRequestAccepted {
                try db.run("INSERT INTO follows(followee, follower, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", actor.key, target.key, at)
                // Accepted once already (then unfollowed, asked again): that was the ping.
                let n = Notification(kind: .followRequestAccepted, actor: actor.person, subject: Subject())
                try d.deliver(n, to: target, actor: actor, refs: RowRefs(),
                              duplicate: try pinged(target, by: actor, .followRequestAccepted))
            }
        case .block:
            try db.run("INSERT INTO blocks(blocker, blocked) VALUES (?, ?) ON CONFLICT DO NOTHING", actor.key, target.key)
            try db.run("DELETE FROM follows WHERE (followee = ? AND follower = ?) OR (followee = ? AND follower = ?)",
                       actor.key, target.key, target.key, actor.key)
            try db.run("DELETE FROM follow_requests WHERE (target = ? AND requester = ?) OR (target = ? AND requester = ?)",
                       actor.key, target.key, target.key, actor.key)
            // Silent both ways: each gives up what they hold of the other, and leaves the
            // other's batches.
            try revoke(.block, viewer: actor.key, owner: target.key, d)
            try revoke(.block, viewer: target.key, owner: actor.key, d)
            try leaveBatches(person: target.key, recipient: actor.key, d)
            try leaveBatches(person: actor.key, recipient: target.key, d)
        case .unblock:
            try db.run("DELETE FROM blocks WHERE blocker = ? AND blocked = ?", actor.key, target.key)
        case .mute:
            try db.run("INSERT INTO mutes(muter, muted) VALUES (?, ?) ON CONFLICT DO NOTHING", actor.key, target.key)
        case .unmute:
            try db.run("DELETE FROM mutes WHERE muter = ? AND muted = ?", actor.key, target.key)
        }
    }

    /// Whether `recipient` has had a row of `kind` from `actor` before: the relationship kinds
    /// ping once per pair, whatever the cycles of follow and unfollow (each kind has a partial
    /// index on its pairs).
    func pinged(_ recipient: UserRecord, by actor: UserRecord, _ kind: Kind) throws -> Bool {
        try db.scalar("SELECT EXISTS (SELECT 1 FROM notifications WHERE kind = '\(kind.rawValue)' AND recipient = ? AND actor = ?)",
                      recipient.key, actor.key) == 1
            // A ping whose row was pruned (see `Store.prune`) still counts.
            || db.scalar("SELECT EXISTS (SELECT 1 FROM pings WHERE recipient = ? AND actor = ? AND kind = '\(kind.rawValue)')",
                         recipient.key, actor.key) == 1
    }

    /// Media is ready: the step is published and the ladder picks its one rung.
    func publish(_ step: StepRecord, _ d: Delivery) throws {
        if step.deletedAt != nil {
            d.outcome.note = "step \(step.id) was deleted before its media was ready: nothing is announced"
            return
        }
        if step.publishedAt != nil {
            d.outcome.note = "step \(step.id) was already published: one step, one push"
            return
        }
        try db.run("UPDATE steps SET published_at = ?, publish_event = ? WHERE id = ?", d.event.at, d.key, step.key)
        guard let journey = try journey(key: step.journeyKey), let owner = try user(key: step.ownerKey) else {
            throw EventError("step \(step.id) lost its journey or owner")
        }
        let earlier = try db.scalar("""
            SELECT EXISTS (SELECT 1 FROM steps WHERE journey = ? AND id <> ? AND published_at IS NOT NULL)
            """, journey.key, step.key) == 1
        let rung = Ladder.rung(isFinal: step.isFinal, isFirstPublished: !earlier)
        let n = Notification(kind: rung, actor: owner.person, subject: Subject(
            stepId: step.id, caption: step.caption, photoUrl: step.photoUrl,
            journeyId: journey.id, journeyTitle: journey.title))
        let refs = RowRefs(step: step.key, journey: journey.key, subject: RowSubject(step: step.id, journey: journey.id))
        let arguments: [String: SQLBindable] = [":owner": owner.key, ":journeyKey": journey.key]
        let audience = Ladder.audience(of: rung)
        let followers = "SELECT follower AS u FROM follows WHERE followee = :owner"
        // Journey followers who do not also follow the owner (so the union needs no dedupe).
        let onlyJourneyFollowers = """
            SELECT follower AS u FROM journey_follows
            WHERE journey = :journeyKey AND follower NOT IN (SELECT follower FROM follows WHERE followee = :owner)
            """
        if audience.journeyFollowers {
            try Fanout(candidates: "\(followers) UNION ALL \(onlyJourneyFollowers)", arguments: arguments,
                       notification: n, actor: owner, refs: refs).run(in: d)
        } else {
            try Fanout(candidates: followers, arguments: arguments, notification: n, actor: owner, refs: refs).run(in: d)
            // Journey followers who do not follow the owner are outside this rung's audience.
            try Fanout(candidates: onlyJourneyFollowers, arguments: arguments,
                       notification: n, actor: owner, refs: refs, onlySuppress: .ladder).run(in: d)
        }
    }

    func applyInteraction(_ interaction: Event.Interaction, actor: UserRecord, step context: StepContext, _ d: Delivery) throws {
        let (step, owner) = (context.step, context.owner)
        try db.run("INSERT INTO interactions(step, type, actor, at, event) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                   step.key, interaction.rawValue, actor.key, d.event.at, d.key)
        let repeated = db.changes == 0
        if !repeated {
            try db.run(interaction == .heart ? "UPDATE steps SET hearts = hearts + 1 WHERE id = ?"
                                             : "UPDATE steps SET shares = shares + 1 WHERE id = ?", step.key)
        }
        let inside = StepWindow.contains(d.event.at, publishedAt: step.publishedAt ?? d.event.at)
        let kind: Kind
        switch interaction {
        case .heart: kind = inside ? .steppedWithHeart : .heart
        case .share: kind = inside ? .steppedWithShare : .share
        }
        let n = Notification(kind: kind, actor: actor.person, subject: subject(of: step))
        try d.deliver(n, to: owner, actor: actor, refs: RowRefs(step: step.key, journey: step.journeyKey,
                                                                subject: RowSubject(step: step.id)),
                      duplicate: repeated, blocked: context.ownerBlocked)
    }

    func applyComment(actor: UserRecord, step context: StepContext, id: String, text: String, parent: String?, _ d: Delivery) throws {
        let (step, owner) = (context.step, context.owner)
        var parentRecord: CommentRecord?
        if let parent {
            guard let record = try comment(parent) else { throw EventError("unknown comment \(parent)") }
            guard record.stepKey == step.key else { throw EventError("comment \(parent) is on another step") }
            parentRecord = record
        }
        // The unique id tells a reused comment id, without a lookup first.
        let commentKey = try db.first("""
            INSERT INTO comments(ext, step, author, text, parent, created_at, event) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (ext) DO NOTHING RETURNING id
            """, [id, step.key, actor.key, text, parentRecord?.key, d.event.at, d.key]) { $0.int(0) }
        guard let commentKey else { throw EventError("comment \(id) already exists") }
        var people: [String: UserRecord] = [owner.id: owner]
        var parentAuthor: String?
        if let parentRecord, let author = try user(key: parentRecord.authorKey) {
            people[author.id] = author
            parentAuthor = author.id
        }
        var mentioned: [String] = []
        for username in CommentRecipients.mentions(in: text) {
            if let user = try user(username: username) {
                people[user.id] = user
                mentioned.append(user.id)
            }
        }
        let inside = StepWindow.contains(d.event.at, publishedAt: step.publishedAt ?? d.event.at)
        var subject = subject(of: step)
        subject.commentId = id
        subject.commentText = text
        let refs = RowRefs(step: step.key, comment: commentKey, journey: step.journeyKey,
                           subject: RowSubject(step: step.id, comment: id))
        for (recipientId, kind) in CommentRecipients.resolve(owner: owner.id, parentAuthor: parentAuthor,
                                                             mentioned: mentioned, insideWindow: inside) {
            guard let recipient = people[recipientId] else { continue }
            let visible = kind == .mention ? try Visibility(store: self, viewer: recipient).canSeeContent(of: owner) : true
            let n = Notification(kind: kind, actor: actor.person, subject: subject)
            try d.deliver(n, to: recipient, actor: actor, refs: refs, visible: visible,
                          blocked: recipient.key == owner.key ? context.ownerBlocked : nil)
        }
    }

    func applyTier(supporter: UserRecord, journey: JourneyRecord, tier: String, _ d: Delivery) throws {
        try db.run("INSERT INTO tiers(journey, supporter, tier, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                   journey.key, supporter.key, tier, d.event.at)
        let repeated = db.changes == 0
        guard let owner = try user(key: journey.ownerKey) else { throw EventError("journey \(journey.id) lost its owner") }
        let subject = Subject(journeyId: journey.id, journeyTitle: journey.title, tier: tier)
        let refs = RowRefs(journey: journey.key, tier: tier, subject: RowSubject(journey: journey.id, tier: tier))
        try d.deliver(Notification(kind: .recognitionReceived, actor: supporter.person, subject: subject),
                      to: owner, actor: supporter, refs: refs, duplicate: repeated)
        try d.deliver(Notification(kind: .recognitionEarned, actor: owner.person, subject: subject),
                      to: supporter, actor: owner, refs: refs, duplicate: repeated)
    }

    func announce(text: String, audience: Event.Audience, link: String?, _ d: Delivery) throws {
        let n = Notification(kind: .announcement, actor: nil, subject: Subject(text: text, link: link))
        let candidates = audience == .everyone ? "SELECT id AS u FROM users" : "SELECT id AS u FROM users WHERE signed_in = 1"
        try Fanout(candidates: candidates, arguments: [:], notification: n, actor: nil, refs: RowRefs()).run(in: d)
    }

    /// `person` leaves the batches they are counted in (of `recipient`, or everyone's when nil):
    /// a block, or an account gone inactive. Each row is counted again from its members, its
    /// title and faces are the newest remaining, and it takes this event's version; where its
    /// push reached a device, the card is replaced silently, so a lock screen stops naming
    /// someone it may not. A batch left with one person names that person alone.
    func leaveBatches(person: Int, recipient: Int?, _ d: Delivery) throws {
        let rows = try db.query("""
            SELECT m.row FROM batch_members AS m JOIN batches AS b ON b.row = m.row
            WHERE m.person = ? AND (? IS NULL OR b.recipient = ?)
            """, [person, recipient, recipient]) { $0.int(0) }
        for row in rows {
            try db.run("DELETE FROM batch_members WHERE row = ? AND person = ?", row, person)
            guard let state = try db.first("SELECT kind, push, coalesce(members, 1) FROM notifications WHERE id = ?", [row], {
                (kind: $0.string(0), push: try $0.decoded(1, table: "notifications", column: "push", PushStatus.init), members: $0.int(2))
            }), state.kind == Kind.batch.rawValue else { continue }  // a single row: the visibility rules mask it
            let remaining = try db.query("""
                SELECT m.person, m.face, u.name, u.username FROM batch_members AS m JOIN users AS u ON u.id = m.person
                WHERE m.row = ? ORDER BY m.at DESC LIMIT \(Batching.faces)
                """, [row]) { (key: $0.int(0), face: $0.optionalString(1), name: $0.string(2), username: $0.string(3)) }
            guard let newest = remaining.first else { continue }
            let members = state.members - 1
            let name = Preview.clean(newest.name)
            try db.run("""
                UPDATE notifications SET members = ?, facepile = ?, actor = ?, title = ?, version = ? WHERE id = ?
                """, members, remaining.compactMap(\.face).joined(separator: "\n"), newest.key,
                Batching.title(latest: name.isEmpty ? "@" + newest.username : name, people: members), d.changeVersion(), row)
            // One read of the row as it is now: the line to print, and where its pushes go.
            guard let stored = try storedRow(row) else { continue }
            if state.push.reachesDevice {
                try enqueuePushes(row: row, recipient: stored.recipientKey, kind: stored.row.action ?? .heart, silent: true,
                                  at: d.event.at, step: stored.stepKey, rowAt: stored.row.createdAt,
                                  quiet: try user(key: stored.recipientKey)?.preferences.quietHours)
            }
            var written = stored.row
            written.event = d.event.id  // the change's line names the event that made it
            written.push = state.push.reachesDevice ? .updated : state.push
            d.outcome.writtenRows.append(written)
        }
    }

    // MARK: Custom follow alerts

    /// Sets `user`'s alert for a person or a journey; `default` removes it.
    func setAlert(user: UserRecord, target: AlertTarget, mode: AlertMode) throws {
        let (table, column, key): (String, String, Int)
        switch target {
        case .person(let id):
            let person = try requireUser(id)
            if person.key == user.key { throw EventError("a user cannot set an alert on themselves (\(id))") }
            (table, column, key) = ("person_alerts", "person", person.key)
        case .journey(let id):
            (table, column, key) = ("journey_alerts", "journey", try requireJourney(id).key)
        }
        try db.run("DELETE FROM \(table) WHERE user = ? AND \(column) = ?", user.key, key)
        let removed = db.changes
        if mode != .default {
            try db.run("INSERT INTO \(table)(user, \(column), mode) VALUES (?, ?, ?)", user.key, key, mode.rawValue)
        }
        let delta = (mode == .default ? 0 : 1) - removed
        if delta != 0 { try db.run("UPDATE users SET alerts = alerts + ? WHERE id = ?", delta, user.key) }
    }

    /// The override that decides `user`'s push of a journey update by `person` in `journey`:
    /// the journey's, else the person's; with where it came from, for `explain`.
    func alert(for user: Int, person: Int?, journey: Int?) throws -> (mode: AlertMode, from: AlertTarget?)? {
        if let journey, let mode = try db.cached("SELECT mode FROM journey_alerts WHERE user = ? AND journey = ?")
            .bind([user, journey]).first({ try $0.decoded(0, table: "journey_alerts", column: "mode", AlertMode.init(rawValue:)) }) {
            let id = try db.first("SELECT ext FROM journeys WHERE id = ?", [journey]) { $0.string(0) } ?? ""
            return (mode, .journey(id))
        }
        if let person, let mode = try db.cached("SELECT mode FROM person_alerts WHERE user = ? AND person = ?")
            .bind([user, person]).first({ try $0.decoded(0, table: "person_alerts", column: "mode", AlertMode.init(rawValue:)) }) {
            return (mode, .person(try self.user(key: person)?.id ?? ""))
        }
        return nil
    }

    /// A user's overrides, people then journeys, by id.
    public func alerts(of user: UserRecord) throws -> [(target: AlertTarget, mode: AlertMode)] {
        let people = try db.query("""
            SELECT u.ext, a.mode FROM person_alerts AS a JOIN users AS u ON u.id = a.person WHERE a.user = ? ORDER BY u.ext
            """, [user.key]) { (AlertTarget.person($0.string(0)), try $0.decoded(1, table: "person_alerts", column: "mode", AlertMode.init(rawValue:))) }
        let journeys = try db.query("""
            SELECT j.ext, a.mode FROM journey_alerts AS a JOIN journeys AS j ON j.id = a.journey WHERE a.user = ? ORDER BY j.ext
            """, [user.key]) { (AlertTarget.journey($0.string(0)), try $0.decoded(1, table: "journey_alerts", column: "mode", AlertMode.init(rawValue:))) }
        return people + journeys
    }

    /// What an interaction's copy needs of its step (the journey is not part of it).
    private func subject(of step: StepRecord) -> Subject {
        Subject(stepId: step.id, caption: step.caption, photoUrl: step.photoUrl)
    }
}
