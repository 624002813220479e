import Testing
@testable import Notifications

/// The rules these tests hold the engine to are written out in docs/board.md ("One step, one
/// push", "Who receives each kind").
@Suite("The window, the ladder and comment precedence")
struct RulesTests {
    let published: Int64 = 1_000_000_000

    @Test("an interaction one millisecond before 24 hours is inside the window")
    func insideWindow() {
        #expect(StepWindow.contains(published + Timestamp.day - 1, publishedAt: published))
        #expect(StepWindow.contains(published, publishedAt: published))
    }

    @Test("an interaction at exactly 24 hours is after the window")
    func windowClosesAt24Hours() {
        #expect(!StepWindow.contains(published + Timestamp.day, publishedAt: published))
    }

    @Test("a final step is an achievement, even when it is the journey's only step")
    func finalWins() {
        #expect(Ladder.rung(isFinal: true, isFirstPublished: true) == .achievement)
        #expect(Ladder.rung(isFinal: true, isFirstPublished: false) == .achievement)
    }

    @Test("the first step beats a new step; otherwise a new step")
    func firstBeatsNew() {
        #expect(Ladder.rung(isFinal: false, isFirstPublished: true) == .firstStep)
        #expect(Ladder.rung(isFinal: false, isFirstPublished: false) == .newStep)
    }

    @Test("a first step goes to the owner's followers only; the others reach journey followers too")
    func audiences() {
        #expect(Ladder.audience(of: .firstStep) == .init(ownerFollowers: true, journeyFollowers: false))
        #expect(Ladder.audience(of: .newStep) == .init(ownerFollowers: true, journeyFollowers: true))
        #expect(Ladder.audience(of: .achievement) == .init(ownerFollowers: true, journeyFollowers: true))
    }

    @Test("inside the window the owner gets stepped-with, even when replied to or mentioned")
    func steppedWithWins() {
        let result = CommentRecipients.resolve(owner: "o", parentAuthor: "o", mentioned: ["o", "m"], insideWindow: true)
        #expect(result.map(\.recipient) == ["o", "m"])
        #expect(result.map(\.kind) == [.steppedWithComment, .mention])
    }

    @Test("after the window a reply beats a mention, and a mention beats a plain comment")
    func replyThenMention() {
        let replied = CommentRecipients.resolve(owner: "o", parentAuthor: "o", mentioned: ["o"], insideWindow: false)
        #expect(replied.map(\.kind) == [.reply])
        let mentioned = CommentRecipients.resolve(owner: "o", parentAuthor: "p", mentioned: ["o", "p"], insideWindow: false)
        #expect(mentioned.map(\.recipient) == ["p", "o"])
        #expect(mentioned.map(\.kind) == [.reply, .mention])
        let plain = CommentRecipients.resolve(owner: "o", parentAuthor: nil, mentioned: [], insideWindow: false)
        #expect(plain.map(\.kind) == [.comment])
    }

    @Test("mentions are @usernames, each once, not e-mail addresses")
    func mentions() {
        #expect(CommentRecipients.mentions(in: "@chaucao you have to try this route") == ["chaucao"])
        #expect(CommentRecipients.mentions(in: "hi @Maya.Okonkwo. and @maya.okonkwo again") == ["maya.okonkwo"])
        #expect(CommentRecipients.mentions(in: "mail me at a@b.com") == [])
        #expect(CommentRecipients.mentions(in: "@ alone") == [])
    }
}

@Suite("Quiet rules and preferences")
struct QuietRulesTests {
    func decide(_ kind: Kind = .heart, _ change: (inout Candidate) -> Void) -> Decision {
        var candidate = Candidate()
        change(&candidate)
        return QuietRules.decide(kind, for: candidate)
    }

    @Test("a plain candidate gets a row and a push")
    func sent() { #expect(decide { _ in } == .row(.sent)) }

    @Test("each row-less rule, in order, suppresses the row")
    func rowLess() {
        #expect(decide { $0.isSelf = true; $0.blocked = true } == .noRow(.self))
        #expect(decide { $0.blocked = true; $0.actorActive = false } == .noRow(.blocked))
        #expect(decide { $0.actorActive = false; $0.recipientActive = false } == .noRow(.actorInactive))
        #expect(decide { $0.recipientActive = false } == .noRow(.recipientInactive))
        #expect(decide { $0.visible = false; $0.duplicate = true } == .noRow(.notVisible))
        #expect(decide { $0.duplicate = true } == .noRow(.duplicate))
        #expect(decide { $0.coveredByHigherRung = true } == .noRow(.ladder))
    }

    @Test("deleted content, preferences and the ceiling keep the row and withhold the push")
    func rowKept() {
        #expect(decide { $0.contentDeleted = true; $0.preferences.all = false } == .row(.suppressed(.deleted)))
        #expect(decide { $0.preferences.engagement = false } == .row(.suppressed(.preferences)))
        #expect(decide { $0.ceilingReached = true } == .row(.suppressed(.dailyCeiling)))
    }

    @Test("the 100th push in 24 hours goes out; the 101st does not")
    func ceiling() {
        #expect(!QuietRules.reachesCeiling(99))
        #expect(QuietRules.reachesCeiling(100))
        #expect(decide { $0.ceilingReached = QuietRules.reachesCeiling(99) } == .row(.sent))
    }

    @Test("each category switch governs its own kinds only")
    func categories() {
        let pairs: [(WritableKeyPath<Preferences, Bool>, Kind, Kind)] = [
            (\.stepWith, .steppedWithHeart, .heart), (\.social, .mention, .reply),
            (\.engagement, .reply, .mention), (\.journeys, .newStep, .steppedWithShare),
        ]
        for (path, governed, other) in pairs {
            var preferences = Preferences()
            preferences[keyPath: path] = false
            #expect(!preferences.allows(governed))
            #expect(preferences.allows(other))
        }
    }

    @Test("the master switch silences every kind; announcements obey only the master")
    func master() {
        let off = Preferences(all: false)
        #expect(Kind.live.allSatisfy { !off.allows($0) })
        let categoriesOff = Preferences(all: true, stepWith: false, social: false, engagement: false, journeys: false)
        #expect(categoriesOff.allows(.announcement))
    }

    @Test("push status reads and writes as sent / suppressed:<reason>")
    func pushStatus() {
        #expect(PushStatus.suppressed(.dailyCeiling).description == "suppressed:dailyCeiling")
        #expect(PushStatus("suppressed:preferences") == .suppressed(.preferences))
        #expect(PushStatus("sent") == .sent)
        #expect(PushStatus("bogus") == nil)
    }
}

@Suite("The daily ceiling at send time")
struct SendCeilingRuleTests {
    typealias C = SendCeiling.Candidate

    @Test("a push counts once, when its row first goes: its other devices and later states are free")
    func countsRows() {
        // Person 1 has had 99 in the last day: row 10 goes (to both phones), row 11 does not.
        let outcome = SendCeiling.weigh([C(entry: 1, row: 10, recipient: 1), C(entry: 2, row: 10, recipient: 1),
                                         C(entry: 3, row: 11, recipient: 1), C(entry: 4, row: 11, recipient: 1)],
                                        sentInLastDay: [1: 99], alreadyCounted: [])
        #expect(outcome.over == [3, 4])
        #expect(outcome.counted == [10: 1])
        // A row that already went (a batch's later, silent state) goes whatever the count.
        let again = SendCeiling.weigh([C(entry: 5, row: 10, recipient: 1)], sentInLastDay: [1: 100], alreadyCounted: [10])
        #expect(again.over.isEmpty && again.counted.isEmpty)
    }

    @Test("weighed oldest entry first, each person on their own count")
    func order() {
        let outcome = SendCeiling.weigh([C(entry: 9, row: 19, recipient: 1), C(entry: 7, row: 17, recipient: 1),
                                         C(entry: 8, row: 18, recipient: 2)],
                                        sentInLastDay: [1: QuietRules.dailyCeiling - 1, 2: 0], alreadyCounted: [])
        #expect(outcome.over == [9])
        #expect(outcome.counted == [17: 1, 18: 2])
    }
}
