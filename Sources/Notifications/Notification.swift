/// A person as a notification shows them.
public struct Person: Equatable, Sendable {
    public var id: String
    public var username: String
    public var name: String
    public var avatarUrl: String?
    public var isPrivate: Bool

    public init(id: String, username: String, name: String, avatarUrl: String? = nil, isPrivate: Bool = false) {
        self.id = id
        self.username = username
        self.name = name
        self.avatarUrl = avatarUrl
        self.isPrivate = isPrivate
    }
}

/// What a notification is about, beyond its actor: the pieces its copy and tap need.
public struct Subject: Sendable {
    public var stepId: String?
    public var caption: String?
    public var photoUrl: String?
    public var commentId: String?
    public var commentText: String?
    public var journeyId: String?
    public var journeyTitle: String?
    public var tier: String?
    public var text: String?
    public var link: String?

    public init(stepId: String? = nil, caption: String? = nil, photoUrl: String? = nil,
                commentId: String? = nil, commentText: String? = nil,
                journeyId: String? = nil, journeyTitle: String? = nil,
                tier: String? = nil, text: String? = nil, link: String? = nil) {
        self.stepId = stepId
        self.caption = caption
        self.photoUrl = photoUrl
        self.commentId = commentId
        self.commentText = commentText
        self.journeyId = journeyId
        self.journeyTitle = journeyTitle
        self.tier = tier
        self.text = text
        self.link = link
    }
}

/// The media keys of a row: `face`, `image`, `facepile`, each absent when not carried.
public struct Media: Equatable, Sendable {
    public var face: String?
    public var image: String?
    public var facepile: [String]?

    public init(face: String? = nil, image: String? = nil, facepile: [String]? = nil) {
        self.face = face
        self.image = image
        self.facepile = facepile
    }

    public var json: JSON {
        .members([("face", face.map(JSON.string)), ("image", image.map(JSON.string)),
                  ("facepile", facepile.map { .array($0.map(JSON.string)) })])
    }
}

/// The content of one notification: what the row shows and what its push says.
///
/// The in-app row keeps the full copy; the push of a private actor is masked (no preview,
/// no photo), because the lock screen is seen by more eyes than its owner's.
public struct Notification: Equatable, Sendable {
    public var kind: Kind
    public var actorId: String?
    public var title: String
    public var body: String
    public var media: Media
    public var tap: Tap
    public var thread: String
    /// The push's body: the row's body, or the masked copy for a private actor.
    public var pushBody: String
    /// The push's image: the row's photo, or nothing for a private actor.
    public var pushImage: String?

    /// Builds the notification of `kind` from `actor` (nil for Stepo) about `subject`.
    public init(kind: Kind, actor: Person?, subject: Subject) {
        self.kind = kind
        self.actorId = actor?.id
        self.title = actor.map { Preview.clean($0.name) } ?? "Stepo"
        if self.title.isEmpty { self.title = actor.map { "@" + $0.username } ?? "Stepo" }
        self.body = Copy.body(kind, subject)
        let image = kind.carriesPhoto ? subject.photoUrl : nil
        self.media = Media(face: kind.carriesFace ? actor?.avatarUrl : nil, image: image)
        self.tap = Copy.tap(kind, actor: actor, subject)
        self.thread = Copy.thread(kind, actor: actor, subject)
        if let actor, actor.isPrivate {
            self.pushBody = Copy.maskedBody(kind, username: actor.username, subject)
            self.pushImage = nil
        } else {
            self.pushBody = body
            self.pushImage = image
        }
    }
}

/// Batches: many people doing the same thing to one step, in one row.
public enum Batching {
    /// A batch stays open this long after its first member; the next member after it opens a new one.
    public static let window: Int64 = 30 * 60_000
    /// Faces a batch carries, newest first.
    public static let faces = 4

    /// "Jules and 6 others": the newest member's name and how many more people.
    public static func title(latest: String, people: Int) -> String {
        let others = people - 1
        return others <= 0 ? latest : "\(latest) and \(others) \(others == 1 ? "other" : "others")"
    }

    /// The action's verb without a preview: "Stepped with you by heart".
    public static func body(_ action: Kind) -> String { Copy.withheld(action, tier: nil) }
}

/// The board's voice: verbatim copy for every kind.
public enum Copy {
    public static func body(_ kind: Kind, _ s: Subject) -> String {
        // Only the previews a kind shows are computed: cleaning text is the costly part of ingest.
        var caption: String { Preview.of(s.caption ?? "") }
        var comment: String { Preview.of(s.commentText ?? "") }
        var journey: String { Preview.of(s.journeyTitle ?? "") }
        var tier: String { Preview.of(s.tier ?? "") }
        switch kind {
        case .steppedWithHeart: return "Stepped with you by heart: \(caption)"
        case .steppedWithComment: return "Stepped with you: \(comment)"
        case .steppedWithShare: return "Stepped with you by share: \(caption)"
        case .heart: return "Hearted your step: \(caption)"
        case .comment: return "Commented: \(comment)"
        case .share: return "Shared your step: \(caption)"
        case .reply: return "Replied to you: \(comment)"
        case .mention: return "Mentioned you: \(comment)"
        case .newFollower: return "Started following you"
        case .followRequest: return "Requested to follow you"
        case .followRequestAccepted: return "Accepted your follow request"
        case .firstStep: return "Started a journey: \(journey) — day one is on air"
        case .achievement: return "Finished \(journey) — the finale is on air"
        case .newStep: return "New step in \(journey): \(caption)"
        case .recognitionReceived: return "Became a \(tier) of your \(journey)"
        case .recognitionEarned: return "You're now a \(tier) on \(journey)"
        case .announcement: return Preview.of(s.text ?? "")
        case .batch: return "Stepped with you by heart"
        }
    }

    /// The copy when what a row quotes is no longer there for its reader — the content was
    /// deleted, or a block, a private account or an inactive one now stands between them: the
    /// verb alone, without caption, comment or journey title. The row stays; nothing of the
    /// content rides with it any more.
    public static func withheld(_ kind: Kind, tier: String?) -> String {
        switch kind {
        case .steppedWithHeart: return "Stepped with you by heart"
        case .steppedWithComment: return "Stepped with you"
        case .steppedWithShare: return "Stepped with you by share"
        case .heart: return "Hearted your step"
        case .comment: return "Commented"
        case .share: return "Shared your step"
        case .reply: return "Replied to you"
        case .mention: return "Mentioned you"
        case .firstStep: return "Started a journey"
        case .achievement: return "Finished a journey"
        case .newStep: return "Posted a new step"
        case .recognitionReceived: return "Became a \(Preview.of(tier ?? "")) of your journey"
        case .recognitionEarned: return "You're now a \(Preview.of(tier ?? "")) on their journey"
        case .newFollower, .followRequest, .followRequestAccepted, .announcement, .batch:
            return body(kind, Subject(tier: tier))
        }
    }

    /// Whether a row of `kind` quotes content (a caption, a comment, a journey title) that a
    /// change of visibility can take away.
    public static func quotesContent(_ kind: Kind) -> Bool {
        switch kind {
        case .newFollower, .followRequest, .followRequestAccepted, .announcement: return false
        case .steppedWithHeart, .steppedWithComment, .steppedWithShare, .heart, .comment, .share, .reply, .mention,
             .firstStep, .achievement, .newStep, .recognitionReceived, .recognitionEarned, .batch: return true
        }
    }

    /// The push copy when the actor's account is private: no title, caption or comment.
    public static func maskedBody(_ kind: Kind, username: String, _ s: Subject) -> String {
        switch kind {
        case .firstStep: return "Started a journey"
        case .achievement: return "Finished a journey"
        case .newStep: return "Posted a new step"
        case .recognitionReceived: return "Became a \(Preview.of(s.tier ?? "")) of your journey"
        case .recognitionEarned: return "You're now a \(Preview.of(s.tier ?? "")) on their journey"
        case .newFollower, .followRequest, .followRequestAccepted, .announcement, .batch: return body(kind, s)
        case .steppedWithHeart, .steppedWithComment, .steppedWithShare, .heart, .comment, .share, .reply, .mention:
            return "@\(username) interacted with your content"
        }
    }

    public static func tap(_ kind: Kind, actor: Person?, _ s: Subject) -> Tap {
        let step = s.stepId ?? ""
        switch kind {
        case .steppedWithHeart, .steppedWithShare, .heart, .share, .firstStep, .newStep:
            return .step(step, comments: .closed, comment: nil)
        case .steppedWithComment, .comment:
            return .step(step, comments: .open, comment: nil)
        case .reply, .mention:
            return .step(step, comments: .highlight, comment: s.commentId)
        case .newFollower: return .profile(actor?.id ?? "", action: .followBack)
        case .followRequest: return .profile(actor?.id ?? "", action: .acceptDecline)
        case .followRequestAccepted: return .profile(actor?.id ?? "", action: .none)
        case .achievement, .recognitionEarned: return .journey(s.journeyId ?? "", panel: .none)
        case .recognitionReceived: return .journey(s.journeyId ?? "", panel: .people)
        case .announcement: return .link(s.link ?? Tap.feedLink)
        case .batch: return .interactions(step)
        }
    }

    /// The thread key: one card per step, per person for people kinds, one for Stepo.
    public static func thread(_ kind: Kind, actor: Person?, _ s: Subject) -> String {
        if kind == .announcement { return "stepo" }
        if let step = s.stepId { return "step:\(step)" }
        if let journey = s.journeyId { return "journey:\(journey)" }
        return "user:\(actor?.id ?? "")"
    }
}
