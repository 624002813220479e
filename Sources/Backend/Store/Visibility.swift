import Notifications
import Storage
import Wire

/// What one reader may see, decided now: the one rule that the destination endpoints, the
/// entities of a sync, the copy of every row sent, and the engine's mention check all ask.
///
/// - A **person** is visible to themselves, and to others while their account is active and
///   no block stands between the two (either way).
/// - A person's **content** (steps, journeys) is visible to themselves; to others while the
///   person is visible and either public or followed by the reader.
/// - A **step** also has to be published (unless it is the reader's) and not deleted.
/// - A **comment** is visible when its step is, it is not deleted, and its author is visible.
/// - A **row** may quote content (a caption, a comment, a journey title) only while all of it
///   is visible and its actor is; otherwise it is sent withheld (`Copy.withheld`).
///
/// Answers are remembered for the life of the value: one request, one snapshot.
public final class Visibility {
    let store: Store
    public let viewer: UserRecord
    private var people: [Int: UserRecord] = [:]
    private var personVisible: [Int: Bool] = [:]
    private var contentVisible: [Int: Bool] = [:]
    private var steps: [Int: StepRecord] = [:]
    private var journeys: [Int: Bool] = [:]
    private var comments: [Int: Bool] = [:]
    private var commentRecords: [Int: CommentRecord] = [:]

    public init(store: Store, viewer: UserRecord) {
        self.store = store
        self.viewer = viewer
        people[viewer.key] = viewer
    }

    func person(_ key: Int) throws -> UserRecord? {
        if let known = people[key] { return known }
        let found = try store.user(key: key)
        if let found { people[key] = found }
        return found
    }

    /// A comment as the store holds it, read once for the life of this value.
    func comment(_ key: Int) throws -> CommentRecord? {
        if let known = commentRecords[key] { return known }
        let found = try store.comment(key: key)
        if let found { commentRecords[key] = found }
        return found
    }

    func step(_ key: Int) throws -> StepRecord? {
        if let known = steps[key] { return known }
        let found = try store.step(key: key)
        if let found { steps[key] = found }
        return found
    }

    /// Tells this value what the caller has just learnt of `person` (active, and whether a
    /// block stands between them and the reader), so it is not asked again.
    func assume(_ person: UserRecord, blocked: Bool) {
        people[person.key] = person
        if person.key != viewer.key { personVisible[person.key] = person.isActive && !blocked }
    }

    /// Whether the reader may see `person` at all: their profile, their name on a row.
    public func canSee(person: UserRecord) throws -> Bool {
        if person.key == viewer.key { return true }
        if let known = personVisible[person.key] { return known }
        let visible = try person.isActive && !store.blocked(person.key, viewer.key)
        personVisible[person.key] = visible
        people[person.key] = person
        return visible
    }

    /// Whether the reader may see what `owner` posts: their own, or a visible person who is
    /// public or whom they follow.
    public func canSeeContent(of owner: UserRecord) throws -> Bool {
        if owner.key == viewer.key { return true }
        if let known = contentVisible[owner.key] { return known }
        let visible = try canSee(person: owner) && (!owner.isPrivate || store.follows(viewer.key, owner.key))
        contentVisible[owner.key] = visible
        return visible
    }

    public func canSee(step: StepRecord) throws -> Bool {
        guard step.deletedAt == nil else { return false }
        guard step.publishedAt != nil || step.ownerKey == viewer.key else { return false }
        guard let owner = try person(step.ownerKey) else { return false }
        return try canSeeContent(of: owner)
    }

    public func canSee(journey: JourneyRecord) throws -> Bool {
        guard let owner = try person(journey.ownerKey) else { return false }
        return try canSeeContent(of: owner)
    }

    public func canSee(comment: CommentRecord) throws -> Bool {
        guard comment.deletedAt == nil, let step = try step(comment.stepKey), try canSee(step: step),
              let author = try person(comment.authorKey) else { return false }
        return try canSee(person: author)
    }

    /// Whether the reader may see `row`'s actor (Stepo's own rows have none).
    func canSeeActor(_ stored: StoredRow) throws -> Bool {
        guard let key = stored.actorKey, key != viewer.key else { return true }
        guard let actor = try person(key) else { return false }
        return try canSee(person: actor)
    }

    /// Whether `row` may quote its content to the reader now.
    func canQuote(_ stored: StoredRow) throws -> Bool {
        try canQuote(kind: stored.row.kind, deleted: stored.row.deleted, actor: stored.actorKey, step: stored.stepKey,
                     journey: stored.journeyKey, comment: stored.commentKey)
    }

    /// Whether a row of `kind` pointing at these keys may quote its content to the reader now.
    func canQuote(kind: Kind, deleted: Bool, actor actorKey: Int?, step stepKey: Int?, journey journeyKey: Int?,
                  comment commentKey: Int?) throws -> Bool {
        guard !deleted else { return false }
        guard Copy.quotesContent(kind) else { return true }
        if let actorKey, actorKey != viewer.key {
            guard let actor = try person(actorKey), try canSee(person: actor) else { return false }
        }
        if let key = stepKey {
            guard let step = try step(key), try canSee(step: step) else { return false }
        }
        if let key = journeyKey {
            guard try journeyVisible(key) else { return false }
        }
        if let key = commentKey {
            guard try commentVisible(key) else { return false }
        }
        return true
    }

    /// Whether the reader may see the comment `key` now (false when it is gone).
    func canSeeComment(_ key: Int) throws -> Bool { try commentVisible(key) }

    private func journeyVisible(_ key: Int) throws -> Bool {
        if let known = journeys[key] { return known }
        let visible = try store.journey(key: key).map(canSee(journey:)) ?? false
        journeys[key] = visible
        return visible
    }

    private func commentVisible(_ key: Int) throws -> Bool {
        if let known = comments[key] { return known }
        let visible = try comment(key).map(canSee(comment:)) ?? false
        comments[key] = visible
        return visible
    }
}
