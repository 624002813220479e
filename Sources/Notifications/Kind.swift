/// The kinds of notification: the board's 15 live types, the two recognition types, and the
/// deferred batch. The raw value is the stable machine name used in JSON, the database and tests.
public enum Kind: String, CaseIterable, Sendable {
    case steppedWithHeart, steppedWithComment, steppedWithShare
    case heart, comment, share
    case reply, mention
    case newFollower, followRequest, followRequestAccepted
    case firstStep, achievement, newStep
    case recognitionReceived, recognitionEarned
    case announcement
    /// V2: schema designed, never produced yet.
    case batch

    /// The 17 kinds the engine produces today (everything but the deferred batch).
    public static let live: [Kind] = allCases.filter { $0 != .batch }

    public var category: Category {
        switch self {
        case .steppedWithHeart, .steppedWithComment, .steppedWithShare: return .stepWith
        case .heart, .comment, .share, .reply: return .engagement
        case .mention, .newFollower, .followRequest, .followRequestAccepted: return .social
        case .firstStep, .achievement, .newStep, .recognitionReceived, .recognitionEarned: return .journeys
        case .announcement: return .announcement
        case .batch: return .stepWith
        }
    }

    public var priority: Priority {
        switch self {
        case .steppedWithHeart, .steppedWithComment, .steppedWithShare,
             .newFollower, .followRequest, .followRequestAccepted: return .immediate
        case .reply, .mention, .recognitionReceived, .recognitionEarned: return .high
        case .heart, .comment, .share, .firstStep, .achievement, .newStep, .announcement, .batch: return .normal
        }
    }

    /// Whether the push carries the step photo (comment-family and people kinds are text and face only).
    public var carriesPhoto: Bool {
        switch self {
        case .steppedWithHeart, .steppedWithComment, .steppedWithShare, .heart, .share,
             .firstStep, .achievement, .newStep, .batch: return true
        case .comment, .reply, .mention, .newFollower, .followRequest, .followRequestAccepted,
             .recognitionReceived, .recognitionEarned, .announcement: return false
        }
    }

    /// Whether the push carries the actor's face (everything but Stepo's own voice).
    public var carriesFace: Bool { self != .announcement }

    /// Kinds a step interaction (heart, comment, share) can produce, and the journey kinds of the ladder.
    public var isStepInteraction: Bool {
        switch self {
        case .steppedWithHeart, .steppedWithComment, .steppedWithShare, .heart, .comment, .share, .reply, .mention:
            return true
        case .newFollower, .followRequest, .followRequestAccepted, .firstStep, .achievement, .newStep,
             .recognitionReceived, .recognitionEarned, .announcement, .batch: return false
        }
    }

    /// Whether rows of this kind gather into a batch when several people do it to one step:
    /// hearts and shares, inside the window and after it. Comment kinds keep their words.
    public var batches: Bool {
        switch self {
        case .steppedWithHeart, .steppedWithShare, .heart, .share: return true
        case .steppedWithComment, .comment, .reply, .mention, .newFollower, .followRequest, .followRequestAccepted,
             .firstStep, .achievement, .newStep, .recognitionReceived, .recognitionEarned, .announcement, .batch: return false
        }
    }

    /// A step's publish: the kinds custom follow alerts govern.
    public var isJourneyUpdate: Bool { self == .firstStep || self == .achievement || self == .newStep }

    public var isPeople: Bool {
        self == .newFollower || self == .followRequest || self == .followRequestAccepted
    }
}

/// The preference categories of the settings screen, plus Stepo's own voice.
public enum Category: String, CaseIterable, Sendable {
    case stepWith, social, engagement, journeys
    /// V2: per-person and per-journey overrides; stored, not yet consulted.
    case customFollow
    /// Announcements obey only the master switch.
    case announcement
}

public enum Priority: String, Sendable {
    case immediate, high, normal

    /// APNs `interruption-level`: active for immediate and high, passive for normal.
    public var interruptionLevel: String { self == .normal ? "passive" : "active" }
    /// APNs `apns-priority` header.
    public var apnsPriority: Int { self == .normal ? 5 : 10 }
    /// FCM `android.priority`.
    public var fcmPriority: String { self == .normal ? "NORMAL" : "HIGH" }
}
