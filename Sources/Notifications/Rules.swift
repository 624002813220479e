/// The 24-hour window in which an interaction is *stepping with* someone.
public enum StepWindow {
    public static let length = Timestamp.day

    /// `[publishedAt, publishedAt + 24h)`: exactly 24 hours after publishing is already outside.
    public static func contains(_ at: Int64, publishedAt: Int64) -> Bool {
        at >= publishedAt && at < publishedAt + length
    }
}

/// One step, one push: the single rung a published step takes.
public enum Ladder {
    /// The audiences a rung reaches.
    public struct Audience: Equatable, Sendable {
        public let ownerFollowers: Bool
        public let journeyFollowers: Bool
    }

    /// The kind for a step's publish: the finale beats everything, day one beats step twelve.
    public static func rung(isFinal: Bool, isFirstPublished: Bool) -> Kind {
        if isFinal { return .achievement }
        if isFirstPublished { return .firstStep }
        return .newStep
    }

    public static func audience(of rung: Kind) -> Audience {
        switch rung {
        case .firstStep: return Audience(ownerFollowers: true, journeyFollowers: false)
        case .achievement, .newStep: return Audience(ownerFollowers: true, journeyFollowers: true)
        case .steppedWithHeart, .steppedWithComment, .steppedWithShare, .heart, .comment, .share, .reply, .mention,
             .newFollower, .followRequest, .followRequestAccepted, .recognitionReceived, .recognitionEarned,
             .announcement, .batch:
            preconditionFailure("\(rung) is not a rung of a step's publish")
        }
    }
}

/// Who hears about a comment, one row each, by precedence
/// `steppedWith* > reply > mention > comment`.
public enum CommentRecipients {
    /// - Parameters:
    ///   - owner: the step's owner.
    ///   - parentAuthor: the author of the comment replied to, if any.
    ///   - mentioned: users mentioned in the text, in order of appearance.
    ///   - insideWindow: whether the comment landed inside the step's window.
    /// - Returns: each recipient once, with the kind that won for them.
    public static func resolve(owner: String, parentAuthor: String?, mentioned: [String],
                               insideWindow: Bool) -> [(recipient: String, kind: Kind)] {
        var result: [(String, Kind)] = []
        var seen = Set<String>()
        func add(_ user: String, _ kind: Kind) {
            if seen.insert(user).inserted { result.append((user, kind)) }
        }
        if insideWindow { add(owner, .steppedWithComment) }
        if let parentAuthor { add(parentAuthor, .reply) }
        for user in mentioned { add(user, .mention) }
        add(owner, .comment)
        return result
    }

    /// `@username` mentions in a comment, in order, each once. A username is letters, digits,
    /// `_` and `.`, not ending in a dot; an `@` inside a word (an e-mail address) is no mention.
    public static func mentions(in text: String) -> [String] {
        var names: [String] = []
        let scalars = Array(text.unicodeScalars)
        var i = 0
        func isNameScalar(_ s: Unicode.Scalar) -> Bool {
            s.isASCII && (s.properties.isAlphabetic || ("0"..."9").contains(s) || s == "_" || s == ".")
        }
        while i < scalars.count {
            if scalars[i] == "@", i == 0 || !isNameScalar(scalars[i - 1]) {
                var j = i + 1
                while j < scalars.count, isNameScalar(scalars[j]) { j += 1 }
                var name = String(String.UnicodeScalarView(scalars[(i + 1)..<j]))
                while name.hasSuffix(".") { name.removeLast() }
                if !name.isEmpty && !names.contains(name.lowercased()) { names.append(name.lowercased()) }
                i = j
            } else {
                i += 1
            }
        }
        return names
    }
}
