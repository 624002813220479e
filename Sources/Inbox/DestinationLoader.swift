import Foundation
import Notifications
import Replica
import Wire

/// Builds destinations: offline from the replica, or live from the server's answers.
public enum DestinationLoader {
    /// What `request` opens, from the replica alone (so it opens offline).
    public static func load(_ request: DestinationRequest, replica: Replica) throws -> Destination {
        switch request {
        case .tap(let row): return try tap(row, replica: replica)
        case .interactions(let step): return try interactions(step, replica: replica)
        case .push:
            // A push preview needs the server: the runner asks it (see `push(apns:fcm:stacked:)`).
            return .link(LinkPage(text: "The push preview needs the server.", url: ""))
        }
    }

    /// Where a row's tap lands, as the replica knows it.
    /// A replica that cannot be read throws: its failure is not taken for content gone.
    public static func tap(_ row: ActivityRow, replica: Replica) throws -> Destination {
        if row.deleted { return try gone(actor: row.actor, replica: replica) }
        /// A step as the replica holds it, or gone when it is not there any more.
        func step(_ id: String, mode: Tap.Comments, highlight: String?) throws -> Destination {
            guard let step = try replica.step(id), !step.deleted else { return try gone(actor: row.actor, replica: replica) }
            return .step(stepPage(step, comments: try replica.comments(ofStep: id), mode: mode,
                                  highlight: highlight, offline: true, replica: replica))
        }
        switch row.tap {
        case let .step(id, comments, comment):
            return try step(id, mode: comments, highlight: comment)
        case let .profile(user, action):
            return .profile(try profile(user, offered: action, replica: replica))
        case let .journey(id, panel):
            guard let journey = try replica.journey(id) else { return try gone(actor: row.actor, replica: replica) }
            return .journey(try journeyPage(journey, panel: panel, replica: replica))
        case let .link(url):
            return .link(LinkPage(text: row.body, url: url))
        case let .interactions(id):
            // A batch lands on the list of who did it, newest first (the board's tap column).
            guard let step = try replica.step(id), !step.deleted else { return try gone(actor: row.actor, replica: replica) }
            return try interactions(id, replica: replica)
        }
    }

    static func name(_ id: String, replica: Replica) -> String {
        (try? replica.person(id))?.name ?? id
    }

    static func stepPage(_ step: StepEntity, comments: [CommentEntity], mode: Tap.Comments, highlight: String?,
                         offline: Bool, replica: Replica) -> StepPage {
        StepPage(step: step, ownerName: name(step.owner, replica: replica),
                 comments: comments.map { ShownComment(comment: $0, authorName: name($0.author, replica: replica)) },
                 commentsMode: mode, highlight: highlight, offline: offline)
    }

    public static func profile(_ id: String, offered: Tap.ProfileAction, replica: Replica) throws -> ProfilePage {
        ProfilePage(id: id, person: try replica.person(id), offered: offered, alert: try replica.alert(for: .person(id)))
    }

    static func journeyPage(_ journey: JourneyEntity, panel: Tap.JourneyPanel, replica: Replica) throws -> JourneyPage {
        let reader = try replica.user
        return JourneyPage(journey: journey, ownerName: name(journey.owner, replica: replica), panel: panel,
                           supporters: (journey.people ?? []).map { (name($0.user, replica: replica), $0.tier) },
                           readerTier: journey.people?.first { $0.user == reader }?.tier,
                           alert: try replica.alert(for: .journey(journey.id)), isOwn: journey.owner == reader)
    }

    /// Who hearted and shared a step, as the rows that reached the reader say.
    public static func interactions(_ stepId: String, replica: Replica) throws -> Destination {
        guard let step = try replica.step(stepId), !step.deleted else { return try gone(actor: nil, replica: replica) }
        let rows = try replica.interactions(onStep: stepId)
        return .interactions(InteractionsPage(step: step, people: rows.map { row in
            let action = row.action ?? row.kind
            return InteractionEntry(name: row.title, share: action == .share || action == .steppedWithShare, at: row.createdAt)
        }))
    }

    /// Deleted or withheld content: the board's words, then where it falls back — the actor's
    /// profile while the reader may still see them, else the feed.
    static func gone(actor: String?, replica: Replica) throws -> Destination {
        guard let actor, let person = try replica.person(actor), person.state == .active else {
            return .gone(GonePage(fallback: .feed))
        }
        return .gone(GonePage(fallback: .profile(ProfilePage(id: actor, person: person, offered: .none))))
    }

    // MARK: Live copies, from the server's answers

    /// A step as the server shows it now (all its comments, not only those the replica holds).
    public static func liveStep(_ detail: StepDetail, like page: StepPage, replica: Replica) -> Destination {
        .step(stepPage(detail.step, comments: detail.comments, mode: page.commentsMode, highlight: page.highlight,
                       offline: false, replica: replica))
    }

    /// Who hearted and shared a step, as the server lists them now: every person by name,
    /// where the replica holds a batch as one row; the counts as the server makes them for
    /// this reader (people out of sight left out).
    public static func liveInteractions(_ list: InteractionList, like page: InteractionsPage) -> Destination {
        var step = page.step
        step.hearts = list.hearts
        step.shares = list.shares
        return .interactions(InteractionsPage(step: step, people: list.items.map {
            InteractionEntry(name: $0.name, share: $0.kind == .share, at: $0.at)
        }))
    }

    /// A journey as the server shows it now (every step's caption).
    public static func liveJourney(_ detail: JourneyDetail, like page: JourneyPage, replica: Replica) throws -> Destination {
        .journey(try journeyPage(detail.journey, panel: page.panel, replica: replica))
    }
}
