/// Why a candidate got no row, or a row got no push. Each is shown by `stepo explain`.
/// Declared in the order `QuietRules.decide` checks them.
public enum Reason: String, CaseIterable, Sendable {
    case `self`
    case blocked
    case actorInactive
    case recipientInactive
    case notVisible
    case duplicate
    case ladder
    case deleted
    case preferences
    case dailyCeiling

    /// Whether the rule keeps the Activity row (and only withholds the push).
    public var keepsRow: Bool {
        switch self {
        case .preferences, .dailyCeiling, .deleted: return true
        case .`self`, .blocked, .actorInactive, .recipientInactive, .notVisible, .duplicate, .ladder: return false
        }
    }
}

/// A row's push: sent, a silent replacement of a batch's card (`updated`), or withheld by a
/// quiet rule. Written as `sent` / `updated` / `suppressed:<reason>`.
public enum PushStatus: Equatable, Sendable, CustomStringConvertible {
    case sent
    /// A batch grew: its lock-screen card is replaced under the same collapse id, without sound.
    case updated
    case suppressed(Reason)

    public var description: String {
        switch self {
        case .sent: return "sent"
        case .updated: return "updated"
        case .suppressed(let reason): return "suppressed:\(reason.rawValue)"
        }
    }

    /// Whether a push went (or goes) to the lock screen: audible or a silent replacement.
    public var reachesDevice: Bool { self == .sent || self == .updated }

    public init?(_ text: String) {
        if text == "sent" { self = .sent; return }
        if text == "updated" { self = .updated; return }
        guard text.hasPrefix("suppressed:"), let reason = Reason(rawValue: String(text.dropFirst(11))) else { return nil }
        self = .suppressed(reason)
    }
}

/// A custom follow alert's setting for one person or one journey.
public enum AlertMode: String, Sendable, CaseIterable {
    /// Push their journey updates even when the Journey updates category is off.
    case all
    /// No override: the category decides.
    case `default`
    /// Keep the rows, push nothing.
    case off

    /// The next mode in the cycle a key steps through: default → all → off → default.
    public var next: AlertMode {
        switch self {
        case .default: return .all
        case .all: return .off
        case .off: return .default
        }
    }
}

/// What a custom follow alert is about: a person or a journey.
public enum AlertTarget: Hashable, Sendable {
    case person(String)
    case journey(String)

    /// `person:ID` or `journey:ID`.
    public var key: String {
        switch self {
        case .person(let id): return "person:\(id)"
        case .journey(let id): return "journey:\(id)"
        }
    }
}

/// A recipient's switches: the master and four categories.
public struct Preferences: Equatable, Sendable {
    public var all = true
    public var stepWith = true
    public var social = true
    public var engagement = true
    public var journeys = true
    /// When pushes wait (nil: never). Not a switch: it decides when a push goes, not whether.
    public var quietHours: QuietHours?

    public init(all: Bool = true, stepWith: Bool = true, social: Bool = true, engagement: Bool = true, journeys: Bool = true,
                quietHours: QuietHours? = nil) {
        self.all = all
        self.stepWith = stepWith
        self.social = social
        self.engagement = engagement
        self.journeys = journeys
        self.quietHours = quietHours
    }

    /// One of the switches, named as events, the API and the settings screen spell them: the
    /// master switch first, then the four categories.
    public enum Switch: String, CaseIterable, Sendable {
        case all, stepWith, social, engagement, journeys

        /// The category it turns off (nil: the master switch).
        public var category: Category? { Category(rawValue: rawValue) }
    }

    /// The switches by name, master first.
    public static let switchNames = Switch.allCases.map(\.rawValue)

    public subscript(name: Switch) -> Bool {
        get {
            switch name {
            case .all: return all
            case .stepWith: return stepWith
            case .social: return social
            case .engagement: return engagement
            case .journeys: return journeys
            }
        }
        set {
            switch name {
            case .all: all = newValue
            case .stepWith: stepWith = newValue
            case .social: social = newValue
            case .engagement: engagement = newValue
            case .journeys: journeys = newValue
            }
        }
    }

    /// Whether a push of `kind` may go out. Announcements obey only the master switch. For a
    /// journey update (a step's publish: first step, achievement, new step), `alert` is the
    /// override that applies, the journey's before the person's: `all` pushes even when the
    /// category is off, `off` never; the master switch still decides first.
    public func allows(_ kind: Kind, alert: AlertMode = .default) -> Bool {
        guard all else { return false }
        if kind.isJourneyUpdate {
            switch alert {
            case .all: return true
            case .off: return false
            case .default: break
            }
        }
        switch kind.category {
        case .stepWith: return stepWith
        case .social: return social
        case .engagement: return engagement
        case .journeys: return journeys
        case .customFollow, .announcement: return true
        }
    }
}

/// What the store knows about one candidate recipient of one event, for the quiet rules.
public struct Candidate: Sendable {
    public var isSelf = false
    public var blocked = false
    public var actorActive = true
    public var recipientActive = true
    public var visible = true
    public var duplicate = false
    public var coveredByHigherRung = false
    public var contentDeleted = false
    public var preferences = Preferences()
    /// The custom follow alert that applies to this candidate's journey update, if any.
    public var alert = AlertMode.default
    /// Whether the recipient has already had `QuietRules.dailyCeiling` pushes in the 24
    /// hours up to the event (see `QuietRules.reachesCeiling`).
    public var ceilingReached = false

    public init() {}
}

/// The outcome for one candidate: no row (and why), or a row with its push status.
public enum Decision: Equatable, Sendable {
    case noRow(Reason)
    case row(PushStatus)
}

/// The quiet rules, in the order they are checked: the first that applies decides.
public enum QuietRules {
    /// The rolling ceiling: at most this many pushes per recipient in any 24 hours.
    public static let dailyCeiling = 100
    public static let ceilingWindow = Timestamp.day

    /// Whether `pushes` sent in the last 24 hours leave no room for another: the 100th push
    /// goes out, the 101st does not.
    public static func reachesCeiling(_ pushes: Int) -> Bool { pushes >= dailyCeiling }

    public static func decide(_ kind: Kind, for candidate: Candidate) -> Decision {
        if candidate.isSelf { return .noRow(.self) }
        if candidate.blocked { return .noRow(.blocked) }
        if !candidate.actorActive { return .noRow(.actorInactive) }
        if !candidate.recipientActive { return .noRow(.recipientInactive) }
        if !candidate.visible { return .noRow(.notVisible) }
        if candidate.duplicate { return .noRow(.duplicate) }
        if candidate.coveredByHigherRung { return .noRow(.ladder) }
        if candidate.contentDeleted { return .row(.suppressed(.deleted)) }
        if !candidate.preferences.allows(kind, alert: candidate.alert) { return .row(.suppressed(.preferences)) }
        if candidate.ceilingReached { return .row(.suppressed(.dailyCeiling)) }
        return .row(.sent)
    }
}

/// What the store knows, at the moment a push is drawn or sent, about the row it comes from:
/// the send-time facts the quiet rules are judged on again (see `QuietRules.atSend`).
public struct SendFacts: Sendable, Equatable {
    public var blocked = false
    public var actorActive = true
    public var recipientActive = true
    /// The row's content was deleted (the row is struck through).
    public var contentDeleted = false
    /// A mention whose recipient may no longer see the comment.
    public var mentionNotVisible = false
    /// The recipient's switches now, and the custom follow alert that applies now.
    public var preferences = Preferences()
    public var alert = AlertMode.default
    /// The actor's account is private now.
    public var actorPrivate = false
    /// The recipient may still see everything the row quotes (its step, comment, journey).
    public var contentVisible = true

    public init() {}
}

/// How a push may be drawn now: in full, masked (no preview, no photo), or not at all.
public enum SendDecision: Equatable, Sendable {
    case full
    case masked
    case drop(Reason)
}

extension QuietRules {
    /// The rules again, at the moment a push is sent or drawn: a block, an inactive account, a
    /// deletion or a switch turned off since the row was decided drops the push; an actor gone
    /// private since, or content the recipient may no longer see, masks it. Every surface that
    /// draws a push (`stepo push`, the push endpoint, the inbox's preview, the delivery worker)
    /// asks this one function. `kind` is the kind whose category decides (a batch's action).
    public static func atSend(_ kind: Kind, _ facts: SendFacts) -> SendDecision {
        if facts.blocked { return .drop(.blocked) }
        if !facts.actorActive { return .drop(.actorInactive) }
        if !facts.recipientActive { return .drop(.recipientInactive) }
        if facts.mentionNotVisible { return .drop(.notVisible) }
        if facts.contentDeleted { return .drop(.deleted) }
        if !facts.preferences.allows(kind, alert: facts.alert) { return .drop(.preferences) }
        if facts.actorPrivate || !facts.contentVisible { return .masked }
        return .full
    }
}

/// The daily ceiling again, when pushes leave: at most `QuietRules.dailyCeiling` pushes reach
/// one person in any 24 hours of send times.
///
/// At decide time the ceiling counts rows by their events' times, and pushes usually leave at
/// those times, so the two counts agree. They part when pushes wait: a window of quiet hours
/// moved earlier, a worker that was down for a day and sends its backlog. Then pushes decided
/// more than 24 hours apart can leave within one day, and this second count is what holds the
/// lock screen to the board's number.
///
/// A push counts once, when its row first goes to any device: its other devices, its retries
/// and a batch's later silent states are the same push.
public enum SendCeiling {
    public struct Candidate: Equatable, Sendable {
        /// The outbox entry: candidates are weighed in entry order, oldest first.
        public var entry: Int
        public var row: Int
        public var recipient: Int

        public init(entry: Int, row: Int, recipient: Int) {
            self.entry = entry
            self.row = row
            self.recipient = recipient
        }
    }

    public struct Outcome: Equatable, Sendable {
        /// Entries the ceiling withholds now (dropped with `dailyCeiling`).
        public var over: Set<Int> = []
        /// Rows whose push goes for the first time, each with its recipient: they count from now.
        public var counted: [Int: Int] = [:]
    }

    /// Weighs `candidates` (entries the other send-time rules let go) against `sentInLastDay`
    /// (rows that went to each recipient in the 24 hours up to now) and `alreadyCounted` (rows
    /// whose push already went at some time).
    public static func weigh(_ candidates: [Candidate], sentInLastDay: [Int: Int], alreadyCounted: Set<Int>) -> Outcome {
        var outcome = Outcome()
        var sent = sentInLastDay
        for candidate in candidates.sorted(by: { $0.entry < $1.entry }) {
            if alreadyCounted.contains(candidate.row) || outcome.counted[candidate.row] != nil { continue }
            if QuietRules.reachesCeiling(sent[candidate.recipient, default: 0]) {
                outcome.over.insert(candidate.entry)
                continue
            }
            sent[candidate.recipient, default: 0] += 1
            outcome.counted[candidate.row] = candidate.recipient
        }
        return outcome
    }
}
