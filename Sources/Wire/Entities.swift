import Notifications

/// How the viewer and a person stand with each other.
public struct Relationship: Equatable, Sendable {
    public var following: Bool
    public var followsYou: Bool
    /// The viewer asked to follow them (a private account), not yet answered.
    public var requested: Bool
    /// They asked to follow the viewer, not yet answered.
    public var requestedYou: Bool

    public init(following: Bool = false, followsYou: Bool = false, requested: Bool = false, requestedYou: Bool = false) {
        self.following = following
        self.followsYou = followsYou
        self.requested = requested
        self.requestedYou = requestedYou
    }
}

/// A person as a viewer sees them: their profile and how the two stand.
public struct PersonEntity: Equatable, Sendable {
    public var id: String
    public var username: String
    public var name: String
    public var avatarUrl: String?
    public var isPrivate: Bool
    public var state: Event.AccountState
    public var relationship: Relationship

    public init(id: String, username: String, name: String, avatarUrl: String?, isPrivate: Bool,
                state: Event.AccountState, relationship: Relationship) {
        self.id = id
        self.username = username
        self.name = name
        self.avatarUrl = avatarUrl
        self.isPrivate = isPrivate
        self.state = state
        self.relationship = relationship
    }

    public var json: JSON {
        .members([
            ("id", .string(id)), ("username", .string(username)), ("name", .string(name)),
            ("avatarUrl", avatarUrl.map(JSON.string)), ("private", .bool(isPrivate)), ("state", .string(state.rawValue)),
            ("following", .bool(relationship.following)), ("followsYou", .bool(relationship.followsYou)),
            ("requested", .bool(relationship.requested)), ("requestedYou", .bool(relationship.requestedYou)),
        ])
    }

    public init(json: JSON) throws {
        let m = try Members(json, "user")
        let stateName = try m.optionalString("state") ?? "active"
        guard let state = Event.AccountState(rawValue: stateName) else { throw WireError("user.state \(stateName) is unknown") }
        self.init(id: try m.string("id"), username: try m.string("username"), name: try m.string("name"),
                  avatarUrl: try m.optionalString("avatarUrl"), isPrivate: try m.bool("private", default: false), state: state,
                  relationship: Relationship(following: try m.bool("following", default: false),
                                             followsYou: try m.bool("followsYou", default: false),
                                             requested: try m.bool("requested", default: false),
                                             requestedYou: try m.bool("requestedYou", default: false)))
    }
}

/// A step: its caption and photo, where it belongs, and how it was received.
public struct StepEntity: Equatable, Sendable {
    public var id: String
    public var journey: String
    public var journeyTitle: String
    public var owner: String
    public var caption: String
    public var photoUrl: String?
    public var isFinal: Bool
    public var publishedAt: Int64?
    public var deleted: Bool
    public var hearts: Int
    public var shares: Int

    public init(id: String, journey: String, journeyTitle: String, owner: String, caption: String, photoUrl: String?,
                isFinal: Bool, publishedAt: Int64?, deleted: Bool, hearts: Int, shares: Int) {
        self.id = id
        self.journey = journey
        self.journeyTitle = journeyTitle
        self.owner = owner
        self.caption = caption
        self.photoUrl = photoUrl
        self.isFinal = isFinal
        self.publishedAt = publishedAt
        self.deleted = deleted
        self.hearts = hearts
        self.shares = shares
    }

    public var json: JSON {
        .members([
            ("id", .string(id)), ("journey", .string(journey)), ("journeyTitle", .string(journeyTitle)),
            ("owner", .string(owner)), ("caption", .string(caption)), ("photoUrl", photoUrl.map(JSON.string)),
            ("final", .bool(isFinal)), ("publishedAt", publishedAt.map { .string(Timestamp.format($0)) }),
            ("deleted", .bool(deleted)), ("hearts", .int(hearts)), ("shares", .int(shares)),
        ])
    }

    public init(json: JSON) throws {
        let m = try Members(json, "step")
        self.init(id: try m.string("id"), journey: try m.string("journey"), journeyTitle: try m.string("journeyTitle"),
                  owner: try m.string("owner"), caption: try m.string("caption"), photoUrl: try m.optionalString("photoUrl"),
                  isFinal: try m.bool("final", default: false), publishedAt: try m.optionalTime("publishedAt"),
                  deleted: try m.bool("deleted", default: false), hearts: try m.optionalInt("hearts") ?? 0,
                  shares: try m.optionalInt("shares") ?? 0)
    }
}

/// A comment on a step; a deleted one keeps its place without its words.
public struct CommentEntity: Equatable, Sendable {
    public var id: String
    public var step: String
    public var author: String
    /// Nil once deleted.
    public var text: String?
    public var parent: String?
    public var at: Int64
    public var deleted: Bool

    public init(id: String, step: String, author: String, text: String?, parent: String?, at: Int64, deleted: Bool) {
        self.id = id
        self.step = step
        self.author = author
        self.text = deleted ? nil : text
        self.parent = parent
        self.at = at
        self.deleted = deleted
    }

    public var json: JSON {
        .members([
            ("id", .string(id)), ("step", .string(step)), ("author", .string(author)), ("text", text.map(JSON.string)),
            ("parent", parent.map(JSON.string)), ("at", .string(Timestamp.format(at))), ("deleted", .bool(deleted)),
        ])
    }

    public init(json: JSON) throws {
        let m = try Members(json, "comment")
        self.init(id: try m.string("id"), step: try m.string("step"), author: try m.string("author"),
                  text: try m.optionalString("text"), parent: try m.optionalString("parent"), at: try m.time("at"),
                  deleted: try m.bool("deleted", default: false))
    }
}

/// A journey: its title, its published steps in order, and its people panel.
///
/// In a sync, a journey's steps carry no captions: a caption travels only inside the step it
/// belongs to, so what a replica may have to give up is always in one place.
public struct JourneyEntity: Equatable, Sendable {
    public struct Step: Equatable, Sendable {
        public var id: String
        public var isFinal: Bool
        public var publishedAt: Int64?
        /// Only when the journey is fetched to be shown now, never in a sync.
        public var caption: String?
        public var photoUrl: String?

        public init(id: String, isFinal: Bool, publishedAt: Int64?, caption: String? = nil, photoUrl: String? = nil) {
            self.id = id
            self.isFinal = isFinal
            self.publishedAt = publishedAt
            self.caption = caption
            self.photoUrl = photoUrl
        }
    }

    /// A supporter who crossed a companion tier.
    public struct Supporter: Equatable, Sendable {
        public var user: String
        public var tier: String
        public var at: Int64

        public init(user: String, tier: String, at: Int64) {
            self.user = user
            self.tier = tier
            self.at = at
        }
    }

    public var id: String
    public var title: String
    public var owner: String
    public var steps: [Step]
    public var people: [Supporter]?

    public init(id: String, title: String, owner: String, steps: [Step], people: [Supporter]?) {
        self.id = id
        self.title = title
        self.owner = owner
        self.steps = steps
        self.people = people
    }

    public var json: JSON {
        .members([
            ("id", .string(id)), ("title", .string(title)), ("owner", .string(owner)),
            ("steps", .array(steps.map { step in
                .members([("id", .string(step.id)), ("final", .bool(step.isFinal)),
                          ("publishedAt", step.publishedAt.map { .string(Timestamp.format($0)) }),
                          ("caption", step.caption.map(JSON.string)), ("photoUrl", step.photoUrl.map(JSON.string))])
            })),
            ("people", people.map { .array($0.map { .object([("user", .string($0.user)), ("tier", .string($0.tier)),
                                                              ("at", .string(Timestamp.format($0.at)))]) }) }),
        ])
    }

    public init(json: JSON) throws {
        let m = try Members(json, "journey")
        let steps = try m.array("steps", optional: true).map { item -> Step in
            let s = try Members(item, "journey.steps[]")
            return Step(id: try s.string("id"), isFinal: try s.bool("final", default: false),
                        publishedAt: try s.optionalTime("publishedAt"), caption: try s.optionalString("caption"),
                        photoUrl: try s.optionalString("photoUrl"))
        }
        let people = try m.present("people").map { _ in
            try m.array("people").map { item -> Supporter in
                let p = try Members(item, "journey.people[]")
                return Supporter(user: try p.string("user"), tier: try p.string("tier"), at: try p.time("at"))
            }
        }
        self.init(id: try m.string("id"), title: try m.string("title"), owner: try m.string("owner"), steps: steps, people: people)
    }
}

/// The entities a page of rows points at, so a replica opens their destinations offline.
public struct Entities: Equatable, Sendable {
    public var users: [PersonEntity]
    public var steps: [StepEntity]
    public var comments: [CommentEntity]
    public var journeys: [JourneyEntity]

    public init(users: [PersonEntity] = [], steps: [StepEntity] = [], comments: [CommentEntity] = [],
                journeys: [JourneyEntity] = []) {
        self.users = users
        self.steps = steps
        self.comments = comments
        self.journeys = journeys
    }

    public var json: JSON {
        .object([("users", .array(users.map(\.json))), ("steps", .array(steps.map(\.json))),
                 ("comments", .array(comments.map(\.json))), ("journeys", .array(journeys.map(\.json)))])
    }

    public init(json: JSON?) throws {
        guard let json, !json.isNull else { self.init(); return }
        let m = try Members(json, "entities")
        self.init(users: try m.array("users", optional: true).map(PersonEntity.init(json:)),
                  steps: try m.array("steps", optional: true).map(StepEntity.init(json:)),
                  comments: try m.array("comments", optional: true).map(CommentEntity.init(json:)),
                  journeys: try m.array("journeys", optional: true).map(JourneyEntity.init(json:)))
    }
}
