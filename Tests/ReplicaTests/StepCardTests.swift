import API
import Backend
import Foundation
import Notifications
import Replica
import Testing
import TestSupport
import Wire

/// One card per step: every row about a step, batches included, stacks into one card; the
/// last visit splits it into what arrived since (in New) and the rest.
@Suite("One card per step")
struct StepCardTests {
    /// The sample world in a store, chaucao's replica synced from it, and a way to add events.
    struct World {
        let folder: String
        let store: Store
        let replica: Replica
        let engine: SyncEngine

        init() throws {
            folder = NSTemporaryDirectory() + "stepo-stepcards-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let path = try TestEngine.location(folder, "server.db")
            store = try Store(location: path)
            let ingestor = Ingestor(store: store)
            for line in try String(contentsOfFile: Stepo.sampleEvents, encoding: .utf8).split(separator: "\n") {
                _ = try ingestor.apply(Data(line.utf8))
            }
            replica = try Replica(path: folder + "/chaucao.db")
            engine = SyncEngine(replica: replica, transport: InProcessTransport(user: "chaucao") { Router(store: try Store(location: path)) })
            try engine.sync()
        }

        func add(_ line: String) throws {
            _ = try Ingestor(store: store).apply(Data(line.utf8))
            try engine.sync()
        }

        func allCards(newAbove: Int) throws -> [ListCard] {
            var cards: [ListCard] = []
            var before: Int?
            while true {
                let page = try replica.cards(before: before, limit: 7, newAbove: newAbove)
                cards += page
                guard page.count == 7, let last = page.last else { return cards }
                before = last.newest.id
            }
        }
    }

    @Test("every row about one step is in one card, hearts, shares and batches too; every row is in exactly one card")
    func oneCardPerStep() throws {
        let world = try World()
        defer { try? FileManager.default.removeItem(atPath: world.folder) }
        let cards = try world.allCards(newAbove: Int.max)
        var seen: [String: String] = [:]
        var rows = 0
        for card in cards {
            let members = try world.replica.rows(inCard: card.key, limit: 100_000)
            #expect(members.count == card.rows, "\(card.key)")
            #expect(members.first?.id == card.newest.id)
            rows += members.count
            for row in members where row.thread.hasPrefix("step:") {
                #expect(seen[row.thread] == nil || seen[row.thread] == card.key, "\(row.thread) in two cards")
                seen[row.thread] = card.key
            }
        }
        #expect(rows == (try world.replica.rowCount))
        // The ridge step: Maya's heart, the comments and the batch, one card.
        let ridge = try #require(cards.first { $0.key == "step:ridge-3" })
        let kinds = Set(try world.replica.rows(inCard: ridge.key).map(\.kind))
        #expect(kinds.contains(.steppedWithHeart) && kinds.contains(.steppedWithComment), "\(kinds)")
        // Paged in order: positions strictly fall.
        #expect(zip(cards, cards.dropFirst()).allSatisfy { $0.newest.id > $1.newest.id })
    }

    @Test("after a visit, a step's new row makes a card in New apart from the step's earlier card; both page in place")
    func splitAtTheVisit() throws {
        let world = try World()
        defer { try? FileManager.default.removeItem(atPath: world.folder) }
        let visit = try world.replica.newestRow
        let before = try world.allCards(newAbove: visit)
        let ridge = try #require(before.first { $0.key == "step:ridge-3" })
        try world.add(#"{"id":"late-1","type":"comment","at":"2026-11-30T10:00:00Z","actor":"kofi","step":"ridge-3","comment":{"id":"late-c1","text":"again!"}}"#)
        try world.add(#"{"id":"late-2","type":"comment","at":"2026-11-30T10:05:00Z","actor":"linh","step":"ridge-3","comment":{"id":"late-c2","text":"me too"}}"#)
        let after = try world.allCards(newAbove: visit)
        #expect(after.count == before.count + 1)
        let newer = try #require(after.first)
        #expect(newer.key == "step:ridge-3 >\(visit)" && newer.rows == 2 && newer.newRows == 2 && newer.people == 2)
        #expect(newer.faces == ["Linh Trần", "Kofi Asante"])
        let older = try #require(after.first { $0.key == "step:ridge-3 <=\(visit)" })
        #expect(older.rows == ridge.rows && older.newest.id == ridge.newest.id && older.newRows == 0)
        #expect(older.people == ridge.people, "the older side keeps its people: \(older.people) against \(ridge.people)")
        // Each side's rows are its own.
        #expect(try world.replica.rows(inCard: newer.key).allSatisfy { $0.id > visit })
        #expect(try world.replica.rows(inCard: older.key).allSatisfy { $0.id <= visit })
        #expect(try world.replica.rowCount(inCard: older.key) == ridge.rows)
        // The older side sits where the whole card sat: between the same neighbours.
        let index = try #require(after.firstIndex { $0.key == older.key })
        let was = try #require(before.firstIndex { $0.key == ridge.key })
        #expect(after[index - 1].key == (was == 0 ? newer.key : before[was - 1].key))
        // Reading the newer side reads only it.
        let unreadOlder = older.unreadRows
        #expect(try world.replica.markRead(card: newer.key, at: 1) == 2)
        #expect(try world.replica.cards(limit: 1, newAbove: visit).first?.unreadRows == 0)
        #expect(try world.allCards(newAbove: visit).first { $0.key == older.key }?.unreadRows == unreadOlder)
        // The row's card is found from the row, on either side.
        #expect(try world.replica.card(holding: newer.newest.id, newAbove: visit)?.key == newer.key)
        #expect(try world.replica.card(holding: ridge.newest.id, newAbove: visit)?.key == older.key)
        // At the next visit, the step is one card again.
        let next = try world.allCards(newAbove: try world.replica.newestRow)
        #expect(next.filter { $0.key.hasPrefix("step:ridge-3") }.count == 1)
        #expect(try world.replica.cardCount(newAbove: visit) == after.count)
    }

    @Test("Enter's read of a card of more unread rows than it reads at once takes the newest, and leaves the card unread")
    func boundedRead() throws {
        let world = try World()
        defer { try? FileManager.default.removeItem(atPath: world.folder) }
        let visit = try world.replica.newestRow
        let people = ["kofi", "linh", "maya", "devin", "priya", "jules"]
        for i in 0..<(ListCard.readAtOnce + 20) {
            try world.add(#"{"id":"many-\#(i)","type":"comment","at":"2026-11-30T10:00:00Z","actor":"\#(people[i % people.count])","step":"ridge-3","comment":{"id":"many-c\#(i)","text":"again \#(i)"}}"#)
        }
        let newer = try #require(try world.replica.cards(limit: 1, newAbove: visit).first)
        #expect(newer.rows == ListCard.readAtOnce + 20 && newer.unreadRows == ListCard.unreadCounted)
        #expect(try world.replica.markRead(card: newer.key, at: 1) == ListCard.readAtOnce)
        let rows = try world.replica.rows(inCard: newer.key, limit: 1000)
        #expect(rows.prefix(ListCard.readAtOnce).allSatisfy { $0.readAt != nil })
        #expect(rows.dropFirst(ListCard.readAtOnce).allSatisfy { $0.readAt == nil })
        #expect(try world.replica.cards(limit: 1, newAbove: visit).first?.unreadRows == 20)
        #expect(try world.replica.markRead(card: newer.key, at: 2) == 20)
        #expect(try world.replica.cards(limit: 1, newAbove: visit).first?.unreadRows == 0)
    }

    @Test("a batch in a card counts its members as people, and names its newest member, not its title")
    func batchInACard() throws {
        let world = try World()
        defer { try? FileManager.default.removeItem(atPath: world.folder) }
        let cards = try world.allCards(newAbove: Int.max)
        let batchRow = try #require(try world.replica.rows(limit: 2000).first { $0.kind == .batch })
        let card = try #require(cards.first { $0.key == batchRow.thread })
        #expect(card.people >= (batchRow.members ?? 0), "\(card.people) people for a batch of \(batchRow.members ?? 0)")
        #expect(!card.faces.contains { $0.contains(" others") }, "\(card.faces)")
    }
}
