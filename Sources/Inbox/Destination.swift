import Notifications
import Replica
import Wire

/// A tap destination, loaded: what the screen shows, as values. The view turns it into lines
/// every frame; nothing here is drawn text.
public enum Destination: Equatable, Sendable {
    case step(StepPage)
    case profile(ProfilePage)
    case journey(JourneyPage)
    case interactions(InteractionsPage)
    case link(LinkPage)
    case push(PushPage)
    /// The content is gone (deleted, or no longer visible): the board's words and a fallback.
    case gone(GonePage)

    /// The screen's name, for the header and for QA.
    public var title: String {
        switch self {
        case .step: return "Step"
        case .profile: return "Profile"
        case .journey: return "Journey"
        case .interactions: return "Interactions"
        case .link: return "Stepo"
        case .push: return "Push preview"
        case .gone: return "Not available"
        }
    }
}

/// A comment as a step shows it: the comment and its author's name.
public struct ShownComment: Equatable, Sendable {
    public var comment: CommentEntity
    public var authorName: String
}

public struct StepPage: Equatable, Sendable {
    public var step: StepEntity
    public var ownerName: String
    public var comments: [ShownComment]
    public var commentsMode: Tap.Comments
    /// The comment the tap highlights, and the one it answers (shown with it).
    public var highlight: String?
    /// Whether this was built offline, from the replica (a live copy may follow).
    public var offline: Bool
}

public struct ProfilePage: Equatable, Sendable {
    public var id: String
    /// Nil when the replica does not hold the person yet.
    public var person: PersonEntity?
    /// What the tap that opened it offers (Follow back, Accept / Decline).
    public var offered: Tap.ProfileAction
    /// The reader's custom follow alert for this person (`b` cycles it).
    public var alert: AlertMode = .default

    /// The action still open: a done action is not offered again.
    public var openAction: Tap.ProfileAction {
        guard let person else { return .none }
        switch offered {
        case .followBack where !person.relationship.following && !person.relationship.requested: return .followBack
        case .acceptDecline where person.relationship.requestedYou: return .acceptDecline
        default: return .none
        }
    }
}

public struct JourneyPage: Equatable, Sendable {
    public var journey: JourneyEntity
    public var ownerName: String
    public var panel: Tap.JourneyPanel
    public var supporters: [(name: String, tier: String)]
    /// The reader's own tier on this journey, when they crossed one (the tier chip).
    public var readerTier: String?
    /// The reader's custom follow alert for this journey (`b` cycles it).
    public var alert: AlertMode = .default
    /// The journey is the reader's own: no alerts (nobody is alerted of their own steps).
    public var isOwn = false

    public static func == (a: JourneyPage, b: JourneyPage) -> Bool {
        a.journey == b.journey && a.ownerName == b.ownerName && a.panel == b.panel && a.readerTier == b.readerTier
            && a.alert == b.alert && a.isOwn == b.isOwn
            && a.supporters.map(\.name) == b.supporters.map(\.name) && a.supporters.map(\.tier) == b.supporters.map(\.tier)
    }
}

public struct InteractionsPage: Equatable, Sendable {
    public var step: StepEntity
    /// Who, newest first: their name, how, when.
    public var people: [InteractionEntry]
}

/// One heart or share on a step: who (a name, or a batch's "Jules and 6 others" while offline),
/// which, and when.
public struct InteractionEntry: Equatable, Sendable {
    public var name: String
    public var share: Bool
    public var at: Int64

    public init(name: String, share: Bool, at: Int64) {
        self.name = name
        self.share = share
        self.at = at
    }
}

public struct LinkPage: Equatable, Sendable {
    public var text: String
    public var url: String
}

/// A row's push as the lock screen would show it, from the payloads the server builds.
public struct PushPage: Equatable, Sendable {
    /// The push as it goes to each platform (nil when there is none to show).
    public var apns: PushPreview?
    public var fcm: PushPreview?
    /// The other pushed rows of the thread, newest first, each as its own APNs payload says.
    public var stacked: [PushPreview]
    /// Why there is no push to show: the server's word that the rules withhold it now (a
    /// block, a deletion, a switch turned off), or that it cannot be asked (offline).
    public var unavailable: String?

    public init(apns: PushPreview, fcm: PushPreview, stacked: [PushPreview]) {
        self.apns = apns
        self.fcm = fcm
        self.stacked = stacked
    }

    /// No push to show, and why.
    public static func unavailable(_ reason: String) -> PushPage {
        var page = PushPage(apns: nil, fcm: nil)
        page.unavailable = reason
        return page
    }

    private init(apns: PushPreview?, fcm: PushPreview?) {
        self.apns = apns
        self.fcm = fcm
        self.stacked = []
    }
}

public struct GonePage: Equatable, Sendable {
    public enum Fallback: Equatable, Sendable {
        case profile(ProfilePage)
        case feed
    }

    public var fallback: Fallback
}
