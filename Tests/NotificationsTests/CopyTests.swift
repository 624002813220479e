import Testing
@testable import Notifications

/// The matrix these tests check is docs/board.md's "Every kind" table (drawn from the engine
/// by BoardDocTests).
@Suite("The matrix: every kind's copy, category, priority, media and tap")
struct CopyTests {
    let maya = Person(id: "maya", username: "maya.okonkwo", name: "Maya Okonkwo", avatarUrl: "https://cdn/maya.jpg")
    let step = Subject(stepId: "s1", caption: "Trail run before work — up the ridge and back.",
                       photoUrl: "https://cdn/s1.jpg", journeyId: "j1", journeyTitle: "Run the ridge")

    func make(_ kind: Kind, _ subject: Subject? = nil, actor: Person? = nil) -> Notification {
        Notification(kind: kind, actor: actor ?? maya, subject: subject ?? step)
    }

    @Test("the board's example bodies, verbatim", arguments: [
        (Kind.steppedWithHeart, Subject(caption: "Trail run before work — up the ridge and back."),
         "Stepped with you by heart: Trail run before work — up the ridge and back."),
        (.steppedWithComment, Subject(commentText: "so proud of this one"), "Stepped with you: so proud of this one"),
        (.steppedWithShare, Subject(caption: "Trail run before work…"), "Stepped with you by share: Trail run before work…"),
        (.heart, Subject(caption: "First open-water session done."), "Hearted your step: First open-water session done."),
        (.comment, Subject(commentText: "this is the kind of consistency I aspire to"),
         "Commented: this is the kind of consistency I aspire to"),
        (.share, Subject(caption: "First open-water session done."), "Shared your step: First open-water session done."),
        (.reply, Subject(commentText: "same happened to me week one"), "Replied to you: same happened to me week one"),
        (.mention, Subject(commentText: "@chaucao you have to try this route"), "Mentioned you: @chaucao you have to try this route"),
        (.newFollower, Subject(), "Started following you"),
        (.followRequest, Subject(), "Requested to follow you"),
        (.followRequestAccepted, Subject(), "Accepted your follow request"),
        (.firstStep, Subject(journeyTitle: "Bake sourdough from scratch"),
         "Started a journey: Bake sourdough from scratch — day one is on air"),
        (.achievement, Subject(journeyTitle: "Learn to play guitar"), "Finished Learn to play guitar — the finale is on air"),
        (.newStep, Subject(caption: "barre chords finally ring clean", journeyTitle: "Learning guitar at forty"),
         "New step in Learning guitar at forty: barre chords finally ring clean"),
        (.recognitionReceived, Subject(journeyTitle: "Learn to freedive", tier: "Die-Hard Fan"),
         "Became a Die-Hard Fan of your Learn to freedive"),
        (.recognitionEarned, Subject(journeyTitle: "Learn to play guitar", tier: "Celebrator"),
         "You're now a Celebrator on Learn to play guitar"),
    ])
    func bodies(kind: Kind, subject: Subject, body: String) {
        #expect(Copy.body(kind, subject) == body)
    }

    @Test("the title is the actor's name; Stepo speaks only for announcements")
    func titles() {
        #expect(make(.heart).title == "Maya Okonkwo")
        let announcement = Notification(kind: .announcement, actor: nil,
                                        subject: Subject(text: "Share your journey with a link — new in Stepo"))
        #expect(announcement.title == "Stepo")
        #expect(announcement.body == "Share your journey with a link — new in Stepo")
        #expect(announcement.tap == .link(Tap.feedLink))
        #expect(announcement.thread == "stepo")
        #expect(announcement.media == Media())
    }

    @Test("categories and priorities follow the table")
    func categoriesAndPriorities() {
        let expected: [Kind: (Category, Priority)] = [
            .steppedWithHeart: (.stepWith, .immediate), .steppedWithComment: (.stepWith, .immediate),
            .steppedWithShare: (.stepWith, .immediate), .heart: (.engagement, .normal), .comment: (.engagement, .normal),
            .share: (.engagement, .normal), .reply: (.engagement, .high), .mention: (.social, .high),
            .newFollower: (.social, .immediate), .followRequest: (.social, .immediate),
            .followRequestAccepted: (.social, .immediate), .firstStep: (.journeys, .normal),
            .achievement: (.journeys, .normal), .newStep: (.journeys, .normal),
            .recognitionReceived: (.journeys, .high), .recognitionEarned: (.journeys, .high),
            .announcement: (.announcement, .normal),
        ]
        #expect(Kind.live.count == 17)
        for kind in Kind.live {
            let pair = expected[kind]!
            #expect(kind.category == pair.0, "\(kind)")
            #expect(kind.priority == pair.1, "\(kind)")
        }
    }

    @Test("step and journey kinds carry the photo; comment-family and people kinds the face only")
    func media() {
        for kind in [Kind.steppedWithHeart, .steppedWithComment, .steppedWithShare, .heart, .share, .firstStep, .achievement, .newStep] {
            #expect(make(kind).media == Media(face: "https://cdn/maya.jpg", image: "https://cdn/s1.jpg"), "\(kind)")
        }
        for kind in [Kind.comment, .reply, .mention, .newFollower, .followRequest, .followRequestAccepted,
                     .recognitionReceived, .recognitionEarned] {
            #expect(make(kind).media == Media(face: "https://cdn/maya.jpg"), "\(kind)")
        }
    }

    @Test("taps land where the table says")
    func taps() {
        var s = step
        s.commentId = "c9"
        #expect(make(.steppedWithHeart, s).tap == .step("s1", comments: .closed, comment: nil))
        #expect(make(.steppedWithComment, s).tap == .step("s1", comments: .open, comment: nil))
        #expect(make(.comment, s).tap == .step("s1", comments: .open, comment: nil))
        #expect(make(.reply, s).tap == .step("s1", comments: .highlight, comment: "c9"))
        #expect(make(.mention, s).tap == .step("s1", comments: .highlight, comment: "c9"))
        #expect(make(.newFollower, s).tap == .profile("maya", action: .followBack))
        #expect(make(.followRequest, s).tap == .profile("maya", action: .acceptDecline))
        #expect(make(.followRequestAccepted, s).tap == .profile("maya", action: .none))
        #expect(make(.firstStep, s).tap == .step("s1", comments: .closed, comment: nil))
        #expect(make(.newStep, s).tap == .step("s1", comments: .closed, comment: nil))
        #expect(make(.achievement, s).tap == .journey("j1", panel: .none))
        #expect(make(.recognitionReceived, s).tap == .journey("j1", panel: .people))
        #expect(make(.recognitionEarned, s).tap == .journey("j1", panel: .none))
    }

    @Test("threads: one per step, per person for people kinds")
    func threads() {
        #expect(make(.heart).thread == "step:s1")
        #expect(make(.newFollower, Subject()).thread == "user:maya")
    }

    @Test("a private actor's push is masked; the in-app row keeps the full copy")
    func privateMasking() {
        var ray = maya
        ray.username = "raydelgado"
        ray.isPrivate = true
        let mention = make(.mention, Subject(stepId: "s1", commentText: "@chaucao you have to try this route"), actor: ray)
        #expect(mention.body == "Mentioned you: @chaucao you have to try this route")
        #expect(mention.pushBody == "@raydelgado interacted with your content")
        let heart = make(.heart, actor: ray)
        #expect(heart.pushBody == "@raydelgado interacted with your content")
        #expect(heart.pushImage == nil)
        #expect(heart.media.image == "https://cdn/s1.jpg")
        #expect(make(.firstStep, actor: ray).pushBody == "Started a journey")
        #expect(make(.achievement, actor: ray).pushBody == "Finished a journey")
        #expect(make(.newStep, actor: ray).pushBody == "Posted a new step")
    }

    @Test("names and previews in copy are cleaned: no emoji, no controls")
    func cleanCopy() {
        let sneaky = Person(id: "x", username: "x", name: "Evil\u{1B}[2J Name 😈")
        let n = Notification(kind: .comment, actor: sneaky, subject: Subject(stepId: "s", commentText: "hi\r\nthere 🔥"))
        #expect(n.title == "Evil[2J Name")
        #expect(n.body == "Commented: hi there")
    }
}
