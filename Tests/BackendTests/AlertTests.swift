import Foundation
import Notifications
import Wire
import Testing
@testable import Backend

/// Custom follow alerts (docs/board.md, "Controls"): a person or a journey set to all,
/// default or off, deciding a journey update's push before the Journey updates category.
@Suite("Custom follow alerts")
struct AlertTests {
    /// Owner `o` with journey `j` (and `k`); `f` follows `o` and the journey.
    func world() throws -> World {
        let w = try World()
        try w.users("o", "f", "g")
        try w.journey("j", owner: "o")
        try w.journey("k", owner: "o")
        try w.follow("f", "o")
        try w.follow("g", "o")
        try w.followJourney("f", "j")
        try w.step("j1", journey: "j")  // the first steps: what follows is new steps
        try w.step("k1", journey: "k")
        return w
    }

    func alert(_ w: World, _ user: String, _ field: String, _ id: String, _ mode: String) throws {
        try w.event("alert", [("user", .string(user)), (field, .string(id)), ("mode", .string(mode))])
    }

    @Test("precedence: master off, then the journey's alert, then the person's, then the category")
    func precedence() throws {
        let w = try world()
        try w.event("preferences", [("user", "f"), ("journeys", false)])
        #expect(try w.explain(try w.step("j2", journey: "j"))["f"] == "newStep suppressed:preferences")
        try alert(w, "f", "person", "o", "all")     // all pushes though the category is off
        #expect(try w.explain(try w.step("j3", journey: "j"))["f"] == "newStep sent")
        try alert(w, "f", "journey", "j", "off")    // the journey's override wins over the person's
        #expect(try w.explain(try w.step("j4", journey: "j"))["f"] == "newStep suppressed:preferences")
        #expect(try w.explain(try w.step("k2", journey: "k"))["f"] == "newStep sent")  // another journey: the person's
        try w.event("preferences", [("user", "f"), ("all", false)])  // the master switch decides first
        #expect(try w.explain(try w.step("k3", journey: "k"))["f"] == "newStep suppressed:preferences")
        // Off keeps the row (two first steps, five new steps); g, with no alert, is untouched.
        #expect(try w.activity("f").count == 7)
        #expect(try w.explain(try w.step("k4", journey: "k"))["g"] == "newStep sent")
    }

    @Test("default removes an alert; explain names the alert that decided; the quiet rules and the ladder still stand")
    func defaultAndExplain() throws {
        let w = try world()
        try alert(w, "f", "person", "o", "off")
        let muted = try w.step("j2", journey: "j")
        let report = try #require(try w.store.explanations.event(muted.eventId))
        #expect(report.candidates.first { $0.recipient == "f" }?.alert == "person:o off")
        #expect(report.candidates.first { $0.recipient == "g" }?.alert == nil)
        try alert(w, "f", "person", "o", "default")
        #expect(try w.explain(try w.step("j3", journey: "j"))["f"] == "newStep sent")
        #expect(try w.store.alerts(of: try w.record("f")).isEmpty)
        // All does not cross a block (which ends the follow: no candidate at all), and a first
        // step still goes to the owner's followers only.
        try alert(w, "g", "journey", "k", "all")
        try w.followJourney("g", "k")
        try w.relation("block", "o", "g")
        #expect(try w.explain(try w.step("k2", journey: "k"))["g"] == "no row: blocked")
        let first = try w.explain(try { try w.journey("m", owner: "o"); return try w.step("m1", journey: "m") }())
        #expect(first["f"] == "firstStep sent")
    }

    @Test("an alert arrives as an event or a mutation; bad ones are refused naming the field")
    func input() throws {
        let w = try world()
        for bad in [
            #"{"id":"a1","type":"alert","at":"2026-11-20T10:00:00Z","user":"f","mode":"all"}"#,
            #"{"id":"a2","type":"alert","at":"2026-11-20T10:00:00Z","user":"f","person":"o","journey":"j","mode":"all"}"#,
            #"{"id":"a3","type":"alert","at":"2026-11-20T10:00:00Z","user":"f","person":"o","mode":"loud"}"#,
            #"{"id":"a4","type":"alert","at":"2026-11-20T10:00:00Z","user":"f","person":"f","mode":"all"}"#,
            #"{"id":"a5","type":"alert","at":"2026-11-20T10:00:00Z","user":"f","journey":"nope","mode":"off"}"#,
        ] {
            #expect(throws: EventError.self) { try Ingestor(store: w.store).apply(Data(bad.utf8)) }
        }
        let f = try w.record("f")
        let receipt = try w.store.sync.apply([Mutation(seq: 1, action: .alert(.journey("j"), .off)),
                                              Mutation(seq: 2, action: .alert(.person("o"), .all))], client: "c1", for: f, at: w.clock)
        #expect(receipt.refused.isEmpty)
        #expect(try w.store.alerts(of: f).map { "\($0.target.key) \($0.mode.rawValue)" } == ["person:o all", "journey:j off"])
        #expect(throws: WireError.self) { try Mutation(json: try JSON.parse(Data(#"{"seq":3,"type":"alert","person":"o","mode":"x"}"#.utf8))) }
        let json = Mutation(seq: 4, action: .alert(.person("o"), .off)).json
        #expect(try Mutation(json: json).action == .alert(.person("o"), .off))
    }
}
