import Notifications
import SQLite

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
        pref_all, pref_stepWith, pref_social, pref_engagement, pref_journeys
        """

    init(_ row: Row) {
        key = row.int(0)
        id = row.string(1)
        username = row.string(2)
        name = row.string(3)
        avatarUrl = row.optionalString(4)
        isPrivate = row.bool(5)
        signedIn = row.bool(6)
        state = Event.AccountState(rawValue: row.string(7)) ?? .active
        preferences = Preferences(all: row.bool(8), stepWith: row.bool(9), social: row.bool(10),
                                  engagement: row.bool(11), journeys: row.bool(12))
    }
}

public struct JourneyRecord: Sendable {
    public var key: Int
    public var id: String
    public var ownerKey: Int
    public var title: String

    static let columns = "id, ext, owner, title"

    init(_ row: Row) {
        key = row.int(0)
        id = row.string(1)
        ownerKey = row.int(2)
        title = row.string(3)
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

    init(_ row: Row) {
        key = row.int(0)
        id = row.string(1)
        journeyKey = row.int(2)
        ownerKey = row.int(3)
        caption = row.string(4)
        photoUrl = row.optionalString(5)
        isFinal = row.bool(6)
        publishedAt = row.optionalInt64(7)
        deletedAt = row.optionalInt64(8)
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

    static let columns = "id, ext, step, author, text, parent, deleted_at"

    init(_ row: Row) {
        key = row.int(0)
        id = row.string(1)
        stepKey = row.int(2)
        authorKey = row.int(3)
        text = row.string(4)
        parentKey = row.optionalInt(5)
        deletedAt = row.optionalInt64(6)
    }
}
