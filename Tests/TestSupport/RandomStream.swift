import Foundation

/// A seeded stream of events of every type, as NDJSON lines: people who follow, block, go
/// private, get banned and come back; journeys and steps published, hearted, shared, commented
/// on with replies and @mentions, deleted; tiers, announcements, preferences and custom
/// alerts. Times mostly move forward, but a tenth of the events come late (up to a day and a
/// half) and some ids repeat with other content. Most events are valid; some refer to what
/// does not exist, or act on what is deleted, and are refused. One person, `p0`, is popular:
/// many of the stream's interactions are with them, so their daily ceiling is pressed.
public struct RandomStream {
    public private(set) var lines: [String] = []
    private var random: SplitMix
    private var clock: Int64
    private var counter = 0
    private var people: [String] = []
    private var journeys: [(id: String, owner: String)] = []
    private var steps: [(id: String, journey: String, owner: String, published: Bool)] = []
    private var comments: [(id: String, step: String)] = []
    private var recentIds: [String] = []

    public init(seed: UInt64, events: Int, people count: Int = 24, start: String = "2026-11-02T08:00:00Z") {
        random = SplitMix(seed: seed)
        clock = RandomStream.parse(start)
        for i in 0..<count { person("p\(i)", name: "Person \(i)") }
        while lines.count < events { next() }
    }

    public var text: String { lines.joined(separator: "\n") + "\n" }

    static func parse(_ text: String) -> Int64 {
        let formatter = ISO8601DateFormatter()
        return Int64((formatter.date(from: text) ?? Date()).timeIntervalSince1970 * 1000)
    }

    static func format(_ ms: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    // MARK: Picks

    private mutating func chance(_ percent: Int) -> Bool { random.below(100) < percent }

    /// Someone: the popular person a third of the time.
    private mutating func someone() -> String {
        if chance(30) { return "p0" }
        return chance(3) ? "ghost\(random.below(5))" : random.pick(people)
    }

    private mutating func someStep() -> (id: String, journey: String, owner: String, published: Bool)? {
        guard !steps.isEmpty else { return nil }
        // Steps of the popular person are picked more often.
        let popular = steps.filter { $0.owner == "p0" }
        if !popular.isEmpty && chance(40) { return random.pick(popular) }
        return random.pick(steps)
    }

    /// The next time: a few seconds to a minute and a half on, or (a tenth of the time) up to 36 hours back.
    private mutating func time() -> String {
        clock += Int64(2 + random.below(90)) * 1000
        if chance(10) { return RandomStream.format(clock - Int64(random.below(36 * 60)) * 60_000) }
        return RandomStream.format(clock)
    }

    /// A new event id, or (rarely) one already used, with other content this time.
    private mutating func eventId() -> String {
        if chance(1), !recentIds.isEmpty { return random.pick(recentIds) }
        counter += 1
        let id = "e\(counter)"
        recentIds.append(id)
        if recentIds.count > 50 { recentIds.removeFirst() }
        return id
    }

    private mutating func emit(_ type: String, _ fields: String) {
        lines.append(#"{"id":"\#(eventId())","type":"\#(type)","at":"\#(time())",\#(fields)}"#)
    }

    private mutating func person(_ id: String, name: String, isPrivate: Bool = false) {
        people.append(id)
        emit("user", #""user":{"id":"\#(id)","username":"\#(id)","name":"\#(name)","avatarUrl":"https://cdn/\#(id).jpg","private":\#(isPrivate)}"#)
    }

    // MARK: The stream

    private mutating func next() {
        switch random.below(100) {
        case 0..<2:
            // A rename (or a new person).
            let id = chance(50) ? random.pick(people) : "n\(counter)"
            if people.contains(id) {
                emit("user", #""user":{"id":"\#(id)","username":"\#(id)","name":"Renamed \#(counter)"}"#)
            } else {
                person(id, name: "New \(counter)")
            }
        case 2..<4:
            emit("privacy", #""user":"\#(someone())","private":\#(chance(50))"#)
        case 4..<6:
            let state = ["active", "banned", "deactivated", "active"][random.below(4)]
            emit("account", #""user":"\#(random.pick(people.dropFirst().map { $0 }))","state":"\#(state)""#)
        case 6..<16:
            emit("follow", #""actor":"\#(someone())","target":"\#(someone())""#)
        case 16..<18:
            emit("unfollow", #""actor":"\#(someone())","target":"\#(someone())""#)
        case 18..<21:
            let type = chance(60) ? "followRequestAccepted" : "followRequestDeclined"
            emit(type, #""actor":"\#(someone())","target":"\#(someone())""#)
        case 21..<24:
            emit(chance(70) ? "block" : "unblock", #""actor":"\#(someone())","target":"\#(someone())""#)
        case 24..<25:
            emit(chance(70) ? "mute" : "unmute", #""actor":"\#(someone())","target":"\#(someone())""#)
        case 25..<28:
            let owner = chance(40) ? "p0" : random.pick(people)
            let id = "j\(journeys.count)"
            journeys.append((id, owner))
            emit("journey", #""journey":{"id":"\#(id)","owner":"\#(owner)","title":"Journey \#(id) of \#(owner)"}"#)
        case 28..<31:
            guard let journey = journeys.isEmpty ? nil : random.pick(journeys) else { return next() }
            emit("journeyFollow", #""actor":"\#(someone())","journey":"\#(journey.id)""#)
        case 31..<37:
            guard let journey = journeys.isEmpty ? nil : random.pick(journeys) else { return next() }
            let id = "s\(steps.count)"
            steps.append((id, journey.id, journey.owner, false))
            emit("step", #""step":{"id":"\#(id)","journey":"\#(journey.id)","caption":"Step \#(id) caption","photoUrl":"https://cdn/\#(id).jpg","final":\#(chance(8))}"#)
            if chance(80) {
                steps[steps.count - 1].published = true
                emit("mediaReady", #""step":"\#(id)""#)
            }
        case 37..<39:
            guard let index = steps.indices.randomElement(using: &random) else { return next() }
            steps[index].published = true
            emit("mediaReady", #""step":"\#(steps[index].id)""#)
        case 39..<62:
            guard let step = someStep() else { return next() }
            emit(chance(70) ? "heart" : "share", #""actor":"\#(someone())","step":"\#(step.id)""#)
        case 62..<76:
            guard let step = someStep() else { return next() }
            let id = "c\(counter)"
            let parent = comments.filter { $0.step == step.id }.randomElement(using: &random).map { #","parent":"\#($0.id)""# } ?? ""
            let mention = chance(40) ? "@\(someone()) " : ""
            comments.append((id, step.id))
            emit("comment", #""actor":"\#(someone())","step":"\#(step.id)","comment":{"id":"\#(id)","text":"\#(mention)words \#(counter)"\#(chance(50) ? parent : "")}"#)
        case 76..<78:
            if chance(50), let step = someStep() {
                emit("delete", #""step":"\#(step.id)""#)
            } else if let comment = comments.randomElement(using: &random) {
                emit("delete", #""comment":"\#(comment.id)""#)
            } else { return next() }
        case 78..<82:
            guard let journey = journeys.isEmpty ? nil : random.pick(journeys) else { return next() }
            let tier = ["Die-Hard Fan", "Celebrator", "Companion"][random.below(3)]
            emit("tierCrossed", #""actor":"\#(someone())","journey":"\#(journey.id)","tier":"\#(tier)""#)
        case 82..<84:
            emit("announcement", #""text":"News \#(counter)","audience":"\#(chance(50) ? "everyone" : "signedIn")""#)
        case 84..<90:
            let key = ["all", "stepWith", "social", "engagement", "journeys"][random.below(5)]
            let user = someone()
            // The popular person keeps their master switch and step-with alerts on: their
            // ceiling is what the stream presses.
            let on = user == "p0" && (key == "all" || key == "stepWith") ? true : chance(60)
            emit("preferences", #""user":"\#(user)","\#(key)":\#(on)"#)
        case 93..<95:
            // A burst: forty comments on the popular person's steps within minutes — their
            // daily ceiling is met.
            let popular = steps.filter { $0.owner == "p0" && $0.published }
            guard !popular.isEmpty else { return next() }
            for _ in 0..<40 {
                let step = random.pick(popular)
                let id = "c\(counter)"
                comments.append((id, step.id))
                emit("comment", #""actor":"\#(random.pick(people))","step":"\#(step.id)","comment":{"id":"\#(id)","text":"burst \#(counter)"}"#)
            }
        case 90..<93:
            let mode = ["all", "default", "off"][random.below(3)]
            if chance(50), let journey = journeys.isEmpty ? nil : random.pick(journeys) {
                emit("alert", #""user":"\#(someone())","journey":"\#(journey.id)","mode":"\#(mode)""#)
            } else {
                emit("alert", #""user":"\#(someone())","person":"\#(someone())","mode":"\#(mode)""#)
            }
        default:
            // A line that is not an event at all, now and then.
            if chance(30) { lines.append(#"{"id":"bad\#(counter)","type":"nonsense","at":"\#(time())"}"#) } else { return next() }
        }
    }
}
