import Notifications
import Replica
import Wire

/// One drawn line of a text screen: its words and how they are drawn.
public struct TextLine: Equatable, Sendable {
    public var text: String
    public var role: Role
    /// Where the line leads, drawn as a terminal hyperlink (OSC 8) where the terminal has them.
    public var link: String?
    /// What of the model the line begins, for a screen to open at it (not found by its words).
    public var anchor: Anchor?

    /// A place in a destination a tap can land on.
    public enum Anchor: Equatable, Sendable {
        case comments
        case comment(String)
        case people
    }

    public init(_ text: String, _ role: Role, link: String? = nil, anchor: Anchor? = nil) {
        self.text = text
        self.role = role
        self.link = link
        self.anchor = anchor
    }

    static let blank = TextLine("", .normal)
}

/// Turns a loaded destination into lines, every frame: the models hold no drawn text.
public enum DestinationView {
    public static func lines(_ destination: Destination, width: Int, now: Int64 = 0) -> [TextLine] {
        switch destination {
        case .step(let page): return step(page, now: now)
        case .profile(let page): return profile(page)
        case .journey(let page): return journey(page)
        case .interactions(let page): return interactions(page, now: now)
        case .link(let page): return [TextLine(page.text, .body), .blank, TextLine("Link: " + page.url, .actor, link: page.url.isEmpty ? nil : page.url)]
        case .push(let page): return PushPreviewView.lines(page, width: width)
        case .gone(let page):
            var lines = [TextLine("This content is no longer available", .body), .blank]
            switch page.fallback {
            case .profile(let profile):
                lines += [TextLine("Falling back to their profile:", .dim), .blank] + self.profile(profile, offersAlerts: false)
            case .feed:
                lines.append(TextLine("Falling back to the feed", .dim))
            }
            return lines
        }
    }

    /// Where a destination opens: at its comments, its highlighted comment (with the comment it
    /// answers in sight), or its people panel; at the top when the whole page fits.
    public static func initialTop(_ destination: Destination, height: Int, width: Int) -> Int {
        let all = lines(destination, width: width)
        guard all.count > height else { return 0 }
        func line(_ anchor: TextLine.Anchor) -> Int? { all.firstIndex { $0.anchor == anchor } }
        let focus: Int
        switch destination {
        case .step(let page):
            if let highlight = page.highlight, let index = line(.comment(highlight)) {
                let parent = page.comments.first { $0.comment.id == highlight }?.comment.parent
                focus = parent.flatMap { line(.comment($0)) } ?? index
            } else if page.commentsMode == .open {
                focus = line(.comments) ?? 0
            } else {
                focus = 0
            }
        case .journey(let page) where page.panel == .people:
            focus = line(.people) ?? 0
        case .journey, .profile, .interactions, .link, .push, .gone:
            focus = 0
        }
        return max(0, min(focus - 1, all.count - height))
    }

    static func step(_ page: StepPage, now: Int64) -> [TextLine] {
        let step = page.step
        var lines = [TextLine(step.caption, .body), TextLine("in \(step.journeyTitle) · by \(page.ownerName)", .dim), .blank]
        if let photo = step.photoUrl {
            lines += [TextLine("┌────────────────────┐", .dim), TextLine("│      [ photo ]     │", .dim),
                      TextLine("└────────────────────┘", .dim), TextLine(photo, .dim, link: photo), .blank]
        }
        lines += [TextLine(DestinationView.counts(step), .actor), .blank]
        lines.append(TextLine("Comments (\(page.comments.count))", .section, anchor: .comments))
        for shown in page.comments {
            let lit = shown.comment.id == page.highlight
            let when = now > 0 ? " · " + RelativeTime.text(shown.comment.at, now: now) : ""
            lines.append(TextLine("\(shown.authorName)\(when)", lit ? .selected : .actor, anchor: .comment(shown.comment.id)))
            lines.append(TextLine("  " + (shown.comment.text ?? "(comment removed)"), lit ? .selected : .body))
        }
        return lines
    }

    /// A profile's lines; `offersAlerts` false where `b` cannot change them (a fallback).
    static func profile(_ page: ProfilePage, offersAlerts: Bool = true) -> [TextLine] {
        guard let person = page.person else { return [TextLine("@\(page.id)", .actor), TextLine("(not synced yet)", .dim)] }
        let r = person.relationship
        var lines = [TextLine(person.name, .title), TextLine("@\(person.username)", .dim),
                     TextLine(person.isPrivate ? "Private account" : "Public account", .body), .blank]
        lines.append(TextLine(r.following ? "You follow them" : (r.requested ? "You asked to follow them" : "You don't follow them"), .body))
        if r.followsYou { lines.append(TextLine("They follow you", .body)) }
        if r.requestedYou { lines.append(TextLine("They asked to follow you", .body)) }
        lines.append(.blank)
        switch page.openAction {
        case .followBack: lines.append(TextLine("[ f  Follow back ]", .badge))
        case .acceptDecline: lines.append(TextLine("[ a  Accept ]   [ d  Decline ]", .badge))
        case .none: break
        }
        lines += [.blank, alertLine(page.alert, whose: "their", offered: offersAlerts)]
        return lines
    }

    static func journey(_ page: JourneyPage) -> [TextLine] {
        var lines = [TextLine(page.journey.title, .title), TextLine("by \(page.ownerName)", .dim)]
        if let tier = page.readerTier { lines.append(TextLine("[ You're a \(tier) ]", .badge)) }
        lines.append(.blank)
        for step in page.journey.steps {
            lines.append(TextLine((step.isFinal ? "★ " : "· ") + (step.caption ?? "a step (shown when online)"), .body))
        }
        if !page.isOwn { lines += [.blank, alertLine(page.alert, whose: "this journey's")] }
        if page.panel == .people {
            lines += [.blank, TextLine("People", .section, anchor: .people)]
            for supporter in page.supporters { lines.append(TextLine("\(supporter.name) — [\(supporter.tier)]", .actor)) }
        }
        return lines
    }

    /// The custom follow alert of a profile or a journey, with its bell.
    static func alertLine(_ mode: AlertMode, whose: String, offered: Bool = true) -> TextLine {
        let meaning: String
        switch mode {
        case .default: meaning = "default: \(whose) new steps push as your Journey updates setting says"
        case .all: meaning = "all: \(whose) new steps always push"
        case .off: meaning = "off: \(whose) new steps stay in Activity, without a push"
        }
        return TextLine("\(DestinationView.bell) Alerts \(meaning)" + (offered ? "  (b changes)" : ""), mode == .default ? .dim : .badge)
    }

    /// "♥ 1 heart · ↗ 3 shares".
    static func counts(_ step: StepEntity) -> String {
        "♥ \(Plural.count(step.hearts, "heart")) · ↗ \(Plural.count(step.shares, "share"))"
    }

    /// The bell of custom follow alerts (`!` where the terminal has no UTF-8).
    public static let bell = "⚑"

    static func interactions(_ page: InteractionsPage, now: Int64) -> [TextLine] {
        var lines = [TextLine(page.step.caption, .body), TextLine(DestinationView.counts(page.step), .dim), .blank]
        if page.people.isEmpty { lines.append(TextLine("No hearts or shares have reached you on this step yet.", .dim)) }
        for entry in page.people {
            let inside = page.step.publishedAt.map { StepWindow.contains(entry.at, publishedAt: $0) } ?? false
            let how = inside ? "stepped with you" : (entry.share ? "shared" : "hearted")
            lines.append(TextLine("\(entry.share ? "↗" : "♥") \(entry.name) · \(how) · \(RelativeTime.text(entry.at, now: now))", .actor))
        }
        return lines
    }
}
