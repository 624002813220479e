import Foundation
import Notifications
import Wire
import Testing
import TestSupport
@testable import Backend

/// The fan-out writes the quiet rules in SQL; the engine holds them in Swift. In a random
/// world, both must reach the same decision for every candidate.
@Suite("Fan-out agrees with the engine's quiet rules")
struct FanoutParityTests {
    @Test("random worlds: every candidate's SQL outcome equals QuietRules.decide", arguments: [1, 2, 3])
    func parity(seed: Int) throws {
        var rng = SplitMix(seed: UInt64(seed))
        let w = try World()
        let people = (0..<40).map { "u\($0)" }
        for id in people { try w.user(id) }
        try w.journey("j", owner: "u0")
        for id in people.dropFirst() {
            if Bool.random(using: &rng) { try w.follow(id, "u0") }
            if Int.random(in: 0..<3, using: &rng) == 0 { try w.followJourney(id, "j") }
        }
        try w.followJourney("u0", "j")
        for id in people.dropFirst() where Int.random(in: 0..<8, using: &rng) == 0 {
            Bool.random(using: &rng) ? try w.relation("block", id, "u0") : try w.relation("block", "u0", id)
            try w.followJourney(id, "j")
        }
        for id in people.dropFirst() where Int.random(in: 0..<10, using: &rng) == 0 {
            try w.event("account", [("user", .string(id)), ("state", Bool.random(using: &rng) ? "banned" : "deactivated")])
        }
        for id in people.dropFirst() where Int.random(in: 0..<5, using: &rng) == 0 {
            try w.event("preferences", [("user", .string(id)), (Bool.random(using: &rng) ? "all" : "journeys", false)])
        }
        // Custom follow alerts: on the owner, on the journey, or both (the journey's wins).
        for id in people.dropFirst() where Int.random(in: 0..<3, using: &rng) == 0 {
            let mode = ["all", "off", "default"][Int.random(in: 0..<3, using: &rng)]
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: try w.event("alert", [("user", .string(id)), ("person", "u0"), ("mode", .string(mode))])
            case 1: try w.event("alert", [("user", .string(id)), ("journey", "j"), ("mode", .string(mode))])
            default:
                try w.event("alert", [("user", .string(id)), ("person", "u0"), ("mode", "off")])
                try w.event("alert", [("user", .string(id)), ("journey", "j"), ("mode", .string(mode))])
            }
        }
        // A few recipients have already had 100 pushes today.
        let saturated = people.dropFirst().filter { _ in Int.random(in: 0..<6, using: &rng) == 0 }
        for id in saturated { try w.event("preferences", [("user", .string(id)), ("all", true), ("journeys", true)]) }
        for id in people where !saturated.contains(id) { try w.event("user", [("user", .object([
            ("id", .string(id)), ("username", .string(id)), ("name", .string(id)), ("signedIn", false)]))]) }
        for _ in 0..<100 { try w.event("announcement", [("text", "news"), ("audience", "signedIn")]) }

        for (index, final) in [false, false, true].enumerated() {
            let stepId = "s\(index)"
            try w.step(stepId, journey: "j", final: final, publish: false)
            let at = w.clock + 60_000
            let owner = try w.record("u0")
            let journey = try #require(try w.store.journey("j"))
            let followers = Set(try people.filter { try w.store.follows(try w.record($0).key, owner.key) })
            let journeyFollowers = Set(try people.filter { try w.store.followsJourney(try w.record($0).key, journey.key) })
            let rung = Ladder.rung(isFinal: final, isFirstPublished: index == 0)
            var expected: [String: String] = [:]
            for id in followers.union(journeyFollowers) {
                let user = try w.record(id)
                var candidate = Candidate()
                candidate.isSelf = user.key == owner.key
                candidate.blocked = try w.store.blocked(owner.key, user.key)
                candidate.actorActive = owner.isActive
                candidate.recipientActive = user.isActive
                candidate.coveredByHigherRung = !Ladder.audience(of: rung).journeyFollowers && !followers.contains(id)
                candidate.preferences = user.preferences
                candidate.alert = try w.store.alert(for: user.key, person: owner.key, journey: try w.store.journey("j")?.key)?.mode ?? .default
                candidate.ceilingReached = QuietRules.reachesCeiling(try w.store.pushesInLastDay(to: user.key, at: at))
                switch QuietRules.decide(rung, for: candidate) {
                case .noRow(let reason): expected[id] = "no row: \(reason.rawValue)"
                case .row(let push): expected[id] = "\(rung.rawValue) \(push.description)"
                }
            }
            let outcome = try w.mediaReady(stepId)
            #expect(try w.explain(outcome) == expected, "step \(stepId)")
            #expect(Set(expected.values).count > 2, "the world should exercise several rules")
        }
        #expect(try w.referenceViolations().isEmpty)
    }
}
