import Notifications
import SQLite

/// The entities tap destinations show — people, steps, comments, journeys — as JSON, from
/// a viewer's point of view (follow state), with the visibility rules of the board.
extension Store {
    /// Whether `viewer` may see `owner`'s content: their own, a public account's, or a private
    /// one they follow — and never across a block.
    public func canView(contentOf owner: UserRecord, viewer: UserRecord) throws -> Bool {
        if owner.key == viewer.key { return true }
        if try blocked(owner.key, viewer.key) { return false }
        return try !owner.isPrivate || follows(viewer.key, owner.key)
    }

    public func userJSON(_ user: UserRecord, viewer: UserRecord) throws -> JSON {
        .members([
            ("id", .string(user.id)), ("username", .string(user.username)), ("name", .string(user.name)),
            ("avatarUrl", user.avatarUrl.map(JSON.string)), ("private", .bool(user.isPrivate)),
            ("state", .string(user.state.rawValue)),
            ("following", .bool(try follows(viewer.key, user.key))),
            ("followsYou", .bool(try follows(user.key, viewer.key))),
            ("requested", .bool(try hasPendingRequest(from: viewer.key, to: user.key))),
            ("requestedYou", .bool(try hasPendingRequest(from: user.key, to: viewer.key))),
        ])
    }

    public func stepJSON(_ step: StepRecord) throws -> JSON {
        let journey = try journey(key: step.journeyKey)
        let owner = try user(key: step.ownerKey)
        let hearts = try db.scalar("SELECT count(*) FROM interactions WHERE step = ? AND type = 'heart'", step.key) ?? 0
        let shares = try db.scalar("SELECT count(*) FROM interactions WHERE step = ? AND type = 'share'", step.key) ?? 0
        return .members([
            ("id", .string(step.id)), ("journey", journey.map { .string($0.id) }), ("journeyTitle", journey.map { .string($0.title) }),
            ("owner", owner.map { .string($0.id) }), ("caption", .string(step.caption)), ("photoUrl", step.photoUrl.map(JSON.string)),
            ("final", .bool(step.isFinal)), ("publishedAt", step.publishedAt.map { .string(Timestamp.format($0)) }),
            ("deleted", .bool(step.deletedAt != nil)), ("hearts", .int(hearts)), ("shares", .int(shares)),
        ])
    }

    /// A step's comments, oldest first, with their authors' ids (at most `limit`).
    public func commentsJSON(ofStep step: StepRecord, limit: Int = 200) throws -> [JSON] {
        try db.query("""
            SELECT c.ext, u.ext, c.text, p.ext, c.created_at, c.deleted_at IS NOT NULL
            FROM comments AS c JOIN users AS u ON u.id = c.author LEFT JOIN comments AS p ON p.id = c.parent
            WHERE c.step = ? ORDER BY c.created_at, c.id LIMIT ?
            """, [step.key, limit]) { row in
            let deleted = row.bool(5)
            return JSON.members([
                ("id", .string(row.string(0))), ("step", .string(step.id)), ("author", .string(row.string(1))),
                ("text", deleted ? nil : .string(row.string(2))), ("parent", row.optionalString(3).map(JSON.string)),
                ("at", .string(Timestamp.format(row.int64(4)))), ("deleted", .bool(deleted)),
            ])
        }
    }

    /// Who hearted and shared a step, newest first.
    public func interactionsJSON(ofStep step: StepRecord) throws -> [JSON] {
        try db.query("""
            SELECT i.type, u.ext, i.at FROM interactions AS i JOIN users AS u ON u.id = i.actor
            WHERE i.step = ? ORDER BY i.at DESC LIMIT 500
            """, [step.key]) { row in
            JSON.object([("type", .string(row.string(0))), ("user", .string(row.string(1))), ("at", .string(Timestamp.format(row.int64(2))))])
        }
    }

    /// A journey with its published steps and, when asked, its people panel (companion tiers).
    public func journeyJSON(_ journey: JourneyRecord, people: Bool = true) throws -> JSON {
        let owner = try user(key: journey.ownerKey)
        let steps = try db.query("""
            SELECT ext, caption, photo_url, final, published_at FROM steps
            WHERE journey = ? AND published_at IS NOT NULL AND deleted_at IS NULL ORDER BY published_at
            """, [journey.key]) { row in
            JSON.members([("id", .string(row.string(0))), ("caption", .string(row.string(1))),
                          ("photoUrl", row.optionalString(2).map(JSON.string)), ("final", .bool(row.bool(3))),
                          ("publishedAt", .string(Timestamp.format(row.int64(4))))])
        }
        let panel = people ? try db.query("""
            SELECT u.ext, t.tier, t.at FROM tiers AS t JOIN users AS u ON u.id = t.supporter
            WHERE t.journey = ? ORDER BY t.at DESC
            """, [journey.key]) { row in
            JSON.object([("user", .string(row.string(0))), ("tier", .string(row.string(1))), ("at", .string(Timestamp.format(row.int64(2))))])
        } : []
        return .members([("id", .string(journey.id)), ("title", .string(journey.title)), ("owner", owner.map { .string($0.id) }),
                         ("steps", .array(steps)), ("people", people ? .array(panel) : nil)])
    }

    /// The entities a page of rows points at, for the replica to open destinations offline.
    public func entitiesJSON(for rows: [ActivityRow], viewer: UserRecord) throws -> JSON {
        var userIds: [String] = [], stepIds: [String] = [], journeyIds: [String] = []
        func add(_ id: String?, to list: inout [String]) { if let id, !list.contains(id) { list.append(id) } }
        for row in rows {
            add(row.actor, to: &userIds)
            switch row.tap {
            case let .step(id, _, _), let .interactions(id): add(id, to: &stepIds)
            case let .journey(id, _): add(id, to: &journeyIds)
            case let .profile(id, _): add(id, to: &userIds)
            case .link: break
            }
        }
        var users: [JSON] = [], steps: [JSON] = [], comments: [JSON] = [], journeys: [JSON] = []
        for id in stepIds {
            guard let step = try step(id) else { continue }
            steps.append(try stepJSON(step))
            comments += try commentsJSON(ofStep: step)
            if let owner = try user(key: step.ownerKey) { add(owner.id, to: &userIds) }
            if let journey = try journey(key: step.journeyKey) { add(journey.id, to: &journeyIds) }
        }
        for comment in comments { add(comment["author"]?.string, to: &userIds) }
        for id in journeyIds { if let journey = try journey(id) { journeys.append(try journeyJSON(journey)) } }
        for id in userIds { if let user = try user(id) { users.append(try userJSON(user, viewer: viewer)) } }
        return .object([("users", .array(users)), ("steps", .array(steps)), ("comments", .array(comments)),
                        ("journeys", .array(journeys))])
    }
}
