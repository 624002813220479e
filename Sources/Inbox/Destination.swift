import Notifications
import Replica

/// A tap destination as text lines, built from the replica's entities (so it opens offline).
public struct Destination: Equatable, Sendable {
    public var title: String
    public var lines: [(text: String, role: Role)]
    /// The line to scroll to first (the comments, or the highlighted comment).
    public var focus: Int

    public static func == (a: Destination, b: Destination) -> Bool {
        a.title == b.title && a.focus == b.focus && a.lines.map(\.text) == b.lines.map(\.text)
            && a.lines.map(\.role) == b.lines.map(\.role)
    }

    /// What a tap on `row` opens, as its row JSON's `tap` says.
    public static func build(for row: ReplicaRow, replica: Replica, now: Int64) -> Destination {
        let tap = row.json["tap"] ?? .null
        switch tap["screen"]?.string {
        case "step": return step(tap, row: row, replica: replica, now: now)
        case "profile": return profile(tap["user"]?.string ?? "", action: tap["action"]?.string ?? "none", replica: replica)
        case "journey": return journey(tap["journey"]?.string ?? "", people: tap["panel"]?.string == "people", replica: replica)
        case "link":
            return Destination(title: "Stepo", lines: [(row.body, .body), ("", .normal), ("Link: " + (tap["url"]?.string ?? ""), .actor)], focus: 0)
        case "interactions":
            return interactions(tap["step"]?.string ?? "", replica: replica, now: now)
        default:
            return gone(actor: row.json["actor"]?.string, replica: replica)
        }
    }

    /// Deleted content: the board's words, then where it falls back — the actor's profile,
    /// shown beneath (or the feed, when there is no actor).
    static func gone(actor: String?, replica: Replica) -> Destination {
        var lines: [(text: String, role: Role)] = [("This content is no longer available", .body), ("", .normal)]
        if let actor {
            lines.append(("Falling back to their profile:", .dim))
            lines.append(("", .normal))
            lines += profile(actor, action: "none", replica: replica).lines
        } else {
            lines.append(("Falling back to the feed", .dim))
        }
        return Destination(title: "Not available", lines: lines, focus: 0)
    }

    static func step(_ tap: JSON, row: ReplicaRow, replica: Replica, now: Int64) -> Destination {
        let id = tap["step"]?.string ?? ""
        guard !row.deleted, let step = try? replica.entity("steps", id), step["deleted"]?.bool != true else { return gone(actor: row.json["actor"]?.string, replica: replica) }
        var lines: [(String, Role)] = []
        let journeyTitle = step["journeyTitle"]?.string ?? ""
        let owner = (step["owner"]?.string).flatMap { try? replica.entity("users", $0) }
        lines.append((step["caption"]?.string ?? "", .body))
        lines.append(("in \(journeyTitle) · by \(owner?["name"]?.string ?? step["owner"]?.string ?? "?")", .dim))
        lines.append(("", .normal))
        if let photo = step["photoUrl"]?.string {
            lines.append(("┌────────────────────┐", .dim))
            lines.append(("│      [ photo ]     │", .dim))
            lines.append(("└────────────────────┘", .dim))
            lines.append((photo, .dim))
            lines.append(("", .normal))
        }
        lines.append(("♥ \(step["hearts"]?.int ?? 0) hearts · ↗ \(step["shares"]?.int ?? 0) shares", .actor))
        lines.append(("", .normal))
        let comments = (try? replica.comments(ofStep: id)) ?? []
        let commentsStart = lines.count
        lines.append(("Comments (\(comments.count))", .section))
        var focus = 0
        let highlight = tap["comment"]?.string
        for comment in comments {
            let author = (comment["author"]?.string).flatMap { try? replica.entity("users", $0) }?["name"]?.string
                ?? comment["author"]?.string ?? "?"
            let when = (comment["at"]?.string).flatMap(Timestamp.parse).map { RelativeTime.text($0, now: now) } ?? ""
            let text = comment["deleted"]?.bool == true ? "(comment removed)" : (comment["text"]?.string ?? "")
            if comment["id"]?.string == highlight { focus = lines.count }
            lines.append(("\(author) · \(when)", comment["id"]?.string == highlight ? .selected : .actor))
            lines.append(("  " + text, comment["id"]?.string == highlight ? .selected : .body))
        }
        if tap["comments"]?.string == "open" && focus == 0 { focus = commentsStart }
        return Destination(title: "Step", lines: lines, focus: focus)
    }

    /// Who hearted and shared a step, newest first, as the rows that reached this user say.
    public static func interactions(_ stepId: String, replica: Replica, now: Int64) -> Destination {
        guard let step = try? replica.entity("steps", stepId), step["deleted"]?.bool != true else {
            return gone(actor: nil, replica: replica)
        }
        var lines: [(String, Role)] = [(step["caption"]?.string ?? "", .body)]
        lines.append(("♥ \(step["hearts"]?.int ?? 0) hearts · ↗ \(step["shares"]?.int ?? 0) shares", .dim))
        lines.append(("", .normal))
        let rows = (try? replica.interactions(onStep: stepId)) ?? []
        if rows.isEmpty { lines.append(("No hearts or shares have reached you on this step yet.", .dim)) }
        for row in rows {
            let mark = row.kind.lowercased().hasSuffix("share") ? "↗" : "♥"
            let how = row.kind.hasPrefix("steppedWith") ? "stepped with you" : (mark == "↗" ? "shared" : "hearted")
            lines.append(("\(mark) \(row.title) · \(how) · \(RelativeTime.text(row.createdAt, now: now))", .actor))
        }
        return Destination(title: "Interactions", lines: lines, focus: 0)
    }

    static func profile(_ id: String, action: String, replica: Replica) -> Destination {
        guard let user = try? replica.entity("users", id) else {
            return Destination(title: "Profile", lines: [("@\(id)", .actor), ("(not synced yet)", .dim)], focus: 0)
        }
        var lines: [(String, Role)] = [
            (user["name"]?.string ?? id, .title), ("@\(user["username"]?.string ?? id)", .dim),
            (user["private"]?.bool == true ? "Private account" : "Public account", .body), ("", .normal),
        ]
        let following = user["following"]?.bool == true, followsYou = user["followsYou"]?.bool == true
        lines.append((following ? "You follow them" : (user["requested"]?.bool == true ? "You asked to follow them" : "You don't follow them"), .body))
        if followsYou { lines.append(("They follow you", .body)) }
        if user["requestedYou"]?.bool == true { lines.append(("They asked to follow you", .body)) }
        lines.append(("", .normal))
        switch action {
        case "followBack" where !following: lines.append(("[ f  Follow back ]", .badge))
        case "acceptDecline" where user["requestedYou"]?.bool == true: lines.append(("[ a  Accept ]   [ d  Decline ]", .badge))
        default: break
        }
        return Destination(title: "Profile", lines: lines, focus: 0)
    }

    static func journey(_ id: String, people: Bool, replica: Replica) -> Destination {
        guard let journey = try? replica.entity("journeys", id) else {
            return Destination(title: "Journey", lines: [("(not synced yet)", .dim)], focus: 0)
        }
        var lines: [(String, Role)] = [(journey["title"]?.string ?? id, .title)]
        let owner = (journey["owner"]?.string).flatMap { try? replica.entity("users", $0) }
        lines.append(("by \(owner?["name"]?.string ?? journey["owner"]?.string ?? "?")", .dim))
        lines.append(("", .normal))
        for step in journey["steps"]?.array ?? [] {
            lines.append(((step["final"]?.bool == true ? "★ " : "· ") + (step["caption"]?.string ?? ""), .body))
        }
        var focus = 0
        if people {
            lines.append(("", .normal))
            focus = lines.count
            lines.append(("People", .section))
            for person in journey["people"]?.array ?? [] {
                let name = (person["user"]?.string).flatMap { try? replica.entity("users", $0) }?["name"]?.string ?? person["user"]?.string ?? "?"
                lines.append(("\(name) — \(person["tier"]?.string ?? "")", .actor))
            }
        }
        return Destination(title: "Journey", lines: lines, focus: focus)
    }
}
