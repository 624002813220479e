import Notifications
import Storage

/// A user as the store holds them. `key` is the internal integer id; `id` the producer's.
public struct UserRecord: Sendable {
    public var key: Int
    public var id: String
    public var username: String
    public var name: String
    public var avatarUrl: String?
    public var isPrivate: Bool
    public var signedIn: Bool
    public var state: Event.AccountState
    public var preferences: Preferences

    public var isActive: Bool { state == .active }

    public var person: Person {
        Person(id: id, username: username, name: name, avatarUrl: avatarUrl, isPrivate: isPrivate)
    }

    static let columns = """
        id, ext, username, name, avatar_url, private, signed_in, state,
        pref_all, pref_stepWith, pref_social, pref_engagement, pref_journeys, quiet_hours
        """

    init(_ row: Row) throws { try self.init(row, at: 0) }

    /// Reads the record from the row's columns starting at `o`.
    init(_ row: Row, at o: Int) throws {
        key = row.int(o + 0)
        id = row.string(o + 1)
        username = row.string(o + 2)
        name = row.string(o + 3)
        avatarUrl = row.optionalString(o + 4)
        isPrivate = row.bool(o + 5)
        signedIn = row.bool(o + 6)
        state = try row.decoded(o + 7, table: "users", column: "state", Event.AccountState.init(rawValue:))
        preferences = Preferences(all: row.bool(o + 8), stepWith: row.bool(o + 9), social: row.bool(o + 10),
                                  engagement: row.bool(o + 11), journeys: row.bool(o + 12),
                                  quietHours: row.optionalString(o + 13).flatMap(QuietHours.init(stored:)))
    }
}

public struct JourneyRecord: Sendable {
    public var key: Int
    public var id: String
    public var ownerKey: Int
    public var title: String

    static let columns = "id, ext, owner, title"

    init(_ row: Row) { self.init(row, at: 0) }

    /// Reads the record from the row's columns starting at `o`.
    init(_ row: Row, at o: Int) {
        key = row.int(o + 0)
        id = row.string(o + 1)
        ownerKey = row.int(o + 2)
        title = row.string(o + 3)
    }
}

public struct StepRecord: Sendable {
    public var key: Int
    public var id: String
    public var journeyKey: Int
    public var ownerKey: Int
    public var caption: String
    public var photoUrl: String?
    public var isFinal: Bool
    public var publishedAt: Int64?
    public var deletedAt: Int64?

    static let columns = "id, ext, journey, owner, caption, photo_url, final, published_at, deleted_at"

    init(_ row: Row) { self.init(row, at: 0) }

    /// Reads the record from the row's columns starting at `o`.
    init(_ row: Row, at o: Int) {
        key = row.int(o + 0)
        id = row.string(o + 1)
        journeyKey = row.int(o + 2)
        ownerKey = row.int(o + 3)
        caption = row.string(o + 4)
        photoUrl = row.optionalString(o + 5)
        isFinal = row.bool(o + 6)
        publishedAt = row.optionalInt64(o + 7)
        deletedAt = row.optionalInt64(o + 8)
    }
}

public struct CommentRecord: Sendable {
    public var key: Int
    public var id: String
    public var stepKey: Int
    public var authorKey: Int
    public var text: String
    public var parentKey: Int?
    public var deletedAt: Int64?
    public var createdAt: Int64

    static let columns = "id, ext, step, author, text, parent, deleted_at, created_at"

    init(key: Int, id: String, stepKey: Int, authorKey: Int, text: String, parentKey: Int?, deletedAt: Int64?, createdAt: Int64) {
        (self.key, self.id, self.stepKey, self.authorKey, self.text) = (key, id, stepKey, authorKey, text)
        (self.parentKey, self.deletedAt, self.createdAt) = (parentKey, deletedAt, createdAt)
    }

    init(_ row: Row) { self.init(row, at: 0) }

    /// Reads the record from the row's columns starting at `o`.
    init(_ row: Row, at o: Int) {
        key = row.int(o + 0)
        id = row.string(o + 1)
        stepKey = row.int(o + 2)
        authorKey = row.int(o + 3)
        text = row.string(o + 4)
        parentKey = row.optionalInt(o + 5)
        deletedAt = row.optionalInt64(o + 6)
        createdAt = row.int64(o + 7)
    }
}

/// A step with its owner and the acting user, read in one query: what every interaction
/// needs (its journey only by key, which the step holds).
public struct StepContext: Sendable {
    public var step: StepRecord
    public var owner: UserRecord
    /// The interacting user, or nil when the id is unknown.
    public var actor: UserRecord?
    /// Whether a block stands between the actor and the owner, either way, when read with the
    /// rest (nil: not read, ask).
    public var ownerBlocked: Bool?

    /// The step `?1`, its owner, and the actor `?2`, and whether a block stands between them:
    /// one read for all an interaction needs to decide its owner's row.
    static let select = """
        SELECT s.id, s.ext, s.journey, s.owner, s.caption, s.photo_url, s.final, s.published_at, s.deleted_at,
               u.id, u.ext, u.username, u.name, u.avatar_url, u.private, u.signed_in, u.state,
               u.pref_all, u.pref_stepWith, u.pref_social, u.pref_engagement, u.pref_journeys, u.quiet_hours,
               a.id, a.ext, a.username, a.name, a.avatar_url, a.private, a.signed_in, a.state,
               a.pref_all, a.pref_stepWith, a.pref_social, a.pref_engagement, a.pref_journeys, a.quiet_hours,
               EXISTS (SELECT 1 FROM blocks WHERE blocker = a.id AND blocked = u.id)
               OR EXISTS (SELECT 1 FROM blocks WHERE blocker = u.id AND blocked = a.id)
        FROM steps AS s JOIN users AS u ON u.id = s.owner LEFT JOIN users AS a ON a.ext = ?2
        WHERE s.ext = ?1
        """

    init(step: StepRecord, owner: UserRecord, actor: UserRecord?) {
        self.step = step
        self.owner = owner
        self.actor = actor
    }

    init(_ row: Row) throws {
        step = StepRecord(row, at: 0)
        owner = try UserRecord(row, at: 9)
        actor = row.isNull(23) ? nil : try UserRecord(row, at: 23)
        ownerBlocked = actor == nil ? nil : row.bool(37)
    }
}
