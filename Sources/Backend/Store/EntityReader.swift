import Notifications
import Storage
import Wire

extension Store {
    /// The entities tap destinations show.
    public var entities: EntityReader { EntityReader(store: self) }
}

/// The entities tap destinations show — people, steps, comments, journeys — as typed values,
/// from a reader's point of view. Whether the reader may see each is `Visibility`'s to say.
public struct EntityReader {
    let store: Store
    var db: Connection { store.db }

    /// The comments a step shows at most: the newest.
    public static let commentsShown = 200
    /// The people of a journey's panel shown at most: the newest tiers crossed.
    public static let supportersShown = 50

    public func person(_ user: UserRecord, seenBy viewer: UserRecord) throws -> PersonEntity {
        PersonEntity(id: user.id, username: user.username, name: user.name, avatarUrl: user.avatarUrl,
                     isPrivate: user.isPrivate, state: user.state,
                     relationship: try relationship(of: viewer.key, to: user.key))
    }

    /// Both follows and both pending requests between `viewer` and `other`, in one statement.
    func relationship(of viewer: Int, to other: Int) throws -> Relationship {
        try db.cached("""
            SELECT CASE WHEN EXISTS (SELECT 1 FROM follows WHERE followee = ?1 AND follower = ?2) THEN 1 ELSE 0 END,
                   CASE WHEN EXISTS (SELECT 1 FROM follows WHERE followee = ?2 AND follower = ?1) THEN 1 ELSE 0 END,
                   CASE WHEN EXISTS (SELECT 1 FROM follow_requests WHERE target = ?1 AND requester = ?2) THEN 1 ELSE 0 END,
                   CASE WHEN EXISTS (SELECT 1 FROM follow_requests WHERE target = ?2 AND requester = ?1) THEN 1 ELSE 0 END
            """).bind([other, viewer]).first {
                Relationship(following: $0.int(0) == 1, followsYou: $0.int(1) == 1, requested: $0.int(2) == 1, requestedYou: $0.int(3) == 1)
            } ?? Relationship()
    }

    public func step(_ step: StepRecord) throws -> StepEntity {
        let journey = try store.journey(key: step.journeyKey)
        let owner = try store.user(key: step.ownerKey)
        let counts = try db.first("SELECT hearts, shares FROM steps WHERE id = ?", [step.key]) { ($0.int(0), $0.int(1)) } ?? (0, 0)
        return StepEntity(id: step.id, journey: journey?.id ?? "", journeyTitle: journey?.title ?? "", owner: owner?.id ?? "",
                          caption: step.caption, photoUrl: step.photoUrl, isFinal: step.isFinal,
                          publishedAt: step.publishedAt, deleted: step.deletedAt != nil, hearts: counts.0, shares: counts.1)
    }

    /// A step as its reader may count it now: the hearts and shares of people they may not see
    /// (inactive accounts, a block either way) left out. It reads every interaction of the step,
    /// so it serves one step opened live, never a page of them.
    public func step(_ step: StepRecord, countedBy visibility: Visibility) throws -> StepEntity {
        var entity = try self.step(step)
        let viewer = visibility.viewer.key
        try db.query("""
            SELECT i.type, count(*) FROM interactions AS i JOIN users AS u ON u.id = i.actor
            WHERE i.step = ? AND i.actor <> ? AND (u.state <> 'active'
                  OR EXISTS (SELECT 1 FROM blocks WHERE blocker = i.actor AND blocked = ?)
                  OR EXISTS (SELECT 1 FROM blocks WHERE blocker = ? AND blocked = i.actor))
            GROUP BY i.type
            """, [step.key, viewer, viewer, viewer]) { ($0.string(0), $0.int(1)) }.forEach { type, hidden in
            if type == Event.Interaction.heart.rawValue { entity.hearts = max(0, entity.hearts - hidden) }
            if type == Event.Interaction.share.rawValue { entity.shares = max(0, entity.shares - hidden) }
        }
        return entity
    }

    /// A comment as sent; `visibility`'s records, when given, spare a look-up of its author and
    /// parent for every comment of a page.
    func commentEntity(_ comment: CommentRecord, on step: StepRecord, visibility: Visibility? = nil) throws -> CommentEntity {
        let author = try visibility.map { try $0.person(comment.authorKey) } ?? store.user(key: comment.authorKey)
        let parent = try comment.parentKey.flatMap { key in try visibility.map { try $0.comment(key) } ?? store.comment(key: key) }
        return CommentEntity(id: comment.id, step: step.id, author: author?.id ?? "", text: comment.text, parent: parent?.id,
                             at: comment.createdAt, deleted: comment.deletedAt != nil)
    }

    /// The newest comments of a step the reader may see (deleted ones keep their place without
    /// words), oldest first.
    public func comments(ofStep step: StepRecord, visibility: Visibility) throws -> [CommentEntity] {
        let records = try db.query("""
            SELECT \(CommentRecord.columns) FROM comments WHERE step = ? ORDER BY created_at DESC, id DESC LIMIT ?
            """, [step.key, EntityReader.commentsShown], CommentRecord.init)
        var shown: [CommentEntity] = []
        for record in records.reversed() {
            guard let author = try visibility.person(record.authorKey), try visibility.canSee(person: author) else { continue }
            shown.append(try commentEntity(record, on: step))
        }
        return shown
    }

    /// Who hearted and shared a step, newest first, among the people the reader may see.
    public func interactions(onStep step: StepRecord, visibility: Visibility, limit: Int = 500)
        throws -> [(interaction: Event.Interaction, user: String, name: String, at: Int64)] {
        let found = try db.query("""
            SELECT type, actor, at FROM interactions WHERE step = ? ORDER BY at DESC LIMIT ?
            """, [step.key, limit]) { (try $0.decoded(0, table: "interactions", column: "type", Event.Interaction.init(rawValue:)), $0.int(1), $0.int64(2)) }
        return try found.compactMap { interaction, actorKey, at in
            guard let actor = try visibility.person(actorKey), try visibility.canSee(person: actor) else { return nil }
            return (interaction, actor.id, actor.name, at)
        }
    }

    /// A journey with its published steps in order (captions only when `captions`: a journey
    /// fetched to be shown now, never one sent to a replica) and its people panel.
    public func journey(_ journey: JourneyRecord, people: Bool, captions: Bool, visibility: Visibility) throws -> JourneyEntity {
        let owner = try store.user(key: journey.ownerKey)
        let steps = try db.query("""
            SELECT ext, final, published_at, caption, photo_url FROM steps
            WHERE journey = ? AND published_at IS NOT NULL AND deleted_at IS NULL ORDER BY published_at
            """, [journey.key]) { row in
            JourneyEntity.Step(id: row.string(0), isFinal: row.bool(1), publishedAt: row.int64(2),
                               caption: captions ? row.string(3) : nil, photoUrl: captions ? row.optionalString(4) : nil)
        }
        var supporters: [JourneyEntity.Supporter]?
        if people {
            let found = try db.query("""
                SELECT supporter, tier, at FROM tiers WHERE journey = ? ORDER BY at DESC LIMIT ?
                """, [journey.key, EntityReader.supportersShown]) { ($0.int(0), $0.string(1), $0.int64(2)) }
            supporters = try found.compactMap { key, tier, at in
                guard let supporter = try visibility.person(key), try visibility.canSee(person: supporter) else { return nil }
                return JourneyEntity.Supporter(user: supporter.id, tier: tier, at: at)
            }
        }
        return JourneyEntity(id: journey.id, title: journey.title, owner: owner?.id ?? "", steps: steps, people: supporters)
    }
}
