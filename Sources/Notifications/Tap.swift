/// Where a tap on the row or its push lands. The row and the push land on the same screen.
public enum Tap: Hashable, Sendable {
    public enum Comments: String, Sendable { case closed, open, highlight }
    public enum ProfileAction: String, Sendable { case followBack, acceptDecline, none }
    public enum JourneyPanel: String, Sendable { case people, none }

    case step(String, comments: Comments, comment: String?)
    case profile(String, action: ProfileAction)
    case journey(String, panel: JourneyPanel)
    case link(String)
    case interactions(String)

    /// The step a tap lands on, when it lands on one.
    public var stepId: String? {
        switch self {
        case let .step(id, _, _), let .interactions(id): return id
        case .profile, .journey, .link: return nil
        }
    }

    /// Stepo's home feed: where a tap falls back when nothing better remains.
    public static let feedLink = "stepo://feed"

    public var screen: String {
        switch self {
        case .step: return "step"
        case .profile: return "profile"
        case .journey: return "journey"
        case .link: return "link"
        case .interactions: return "interactions"
        }
    }

    /// The contract shape: `{"screen": …, …}` as `stepo ingest` prints it.
    public var json: JSON { .fragment(jsonText) }

    /// The contract JSON as text, written directly (it is stored with every row).
    public var jsonText: String {
        var writer = JSONWriter(capacity: 96)
        write(to: &writer)
        return writer.text
    }

    /// Writes the contract shape: `{"screen": …, …}`.
    public func write(to w: inout JSONWriter) {
        w.beginObject()
        w.key("screen"); w.string(screen)
        switch self {
        case let .step(id, comments, comment):
            w.key("step"); w.string(id)
            w.key("comments"); w.string(comments.rawValue)
            if let comment { w.key("comment"); w.string(comment) }
        case let .profile(user, action):
            w.key("user"); w.string(user)
            w.key("action"); w.string(action.rawValue)
        case let .journey(id, panel):
            w.key("journey"); w.string(id)
            w.key("panel"); w.string(panel.rawValue)
        case let .link(url):
            w.key("url"); w.string(url)
        case let .interactions(step):
            w.key("step"); w.string(step)
        }
        w.endObject()
    }

    public init?(json: JSON) {
        switch json["screen"]?.string {
        case "step":
            guard let id = json["step"]?.string,
                  let comments = Comments(rawValue: json["comments"]?.string ?? "closed") else { return nil }
            self = .step(id, comments: comments, comment: json["comment"]?.string)
        case "profile":
            guard let user = json["user"]?.string,
                  let action = ProfileAction(rawValue: json["action"]?.string ?? "none") else { return nil }
            self = .profile(user, action: action)
        case "journey":
            guard let id = json["journey"]?.string,
                  let panel = JourneyPanel(rawValue: json["panel"]?.string ?? "none") else { return nil }
            self = .journey(id, panel: panel)
        case "link":
            guard let url = json["url"]?.string else { return nil }
            self = .link(url)
        case "interactions":
            guard let step = json["step"]?.string else { return nil }
            self = .interactions(step)
        default: return nil
        }
    }

    /// The deep link a push carries to open this destination in the app.
    public var deepLink: String {
        func escaped(_ id: String) -> String {
            id.addingPercentEncodingForPath()
        }
        switch self {
        case let .step(id, comments, comment):
            var link = "stepo://step/\(escaped(id))"
            if let comment { link += "?comment=\(escaped(comment))" }
            else if comments == .open { link += "?comments=open" }
            return link
        case let .profile(user, action):
            return "stepo://user/\(escaped(user))" + (action == .none ? "" : "?action=\(action.rawValue)")
        case let .journey(id, panel):
            return "stepo://journey/\(escaped(id))" + (panel == .people ? "?panel=people" : "")
        case let .link(url): return url
        case let .interactions(step): return "stepo://step/\(escaped(step))/interactions"
        }
    }
}

extension String {
    /// Percent-encodes everything but unreserved URL characters (RFC 3986).
    func addingPercentEncodingForPath() -> String {
        var out = ""
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}
