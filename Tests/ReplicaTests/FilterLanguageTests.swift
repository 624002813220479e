import API
import Backend
import Foundation
import Notifications
import Replica
import Testing
import TestSupport
import Wire

/// The `/` filter's language and the bulk reads, on a real replica of the sample world.
@Suite("The filter language and bulk reads")
struct FilterLanguageTests {
    /// The sample world ingested into a store, and chaucao's replica synced from it.
    static func sampleReplica() throws -> (folder: String, replica: Replica) {
        let folder = NSTemporaryDirectory() + "stepo-filterlang-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = try TestEngine.location(folder, "server.db")
        let store = try Store(location: path)
        let ingestor = Ingestor(store: store)
        for line in try String(contentsOfFile: Stepo.sampleEvents, encoding: .utf8).split(separator: "\n") {
            _ = try ingestor.apply(Data(line.utf8))
        }
        let replica = try Replica(path: folder + "/chaucao.db")
        let engine = SyncEngine(replica: replica, transport: InProcessTransport(user: "chaucao") { Router(store: try Store(location: path)) })
        try engine.sync()
        return (folder, replica)
    }

    func rows(_ replica: Replica, _ typed: String) throws -> [ActivityRow] {
        try replica.rows(matching: try #require(try RowFilter.parse(typed)), limit: 1000)
    }

    @Test("words are ANDed in any order, a phrase is kept whole, -TERM excludes, and keys combine")
    func language() throws {
        let (folder, replica) = try Self.sampleReplica()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let all = try replica.rows(limit: 1000)
        let finale = try rows(replica, "marco finished")
        #expect(finale.map(\.title) == ["Marco Ferri"] && finale[0].body.hasPrefix("Finished Learn to play guitar"))
        #expect(try rows(replica, "guitar marco").contains { $0.id == finale[0].id })
        #expect(try rows(replica, "\"marco finished\"").isEmpty)          // not side by side in the row
        #expect(try rows(replica, "\"ferri finished\"").map(\.id) == finale.map(\.id))
        // Two kind: keys widen, as kind:A,B does: a row has one kind.
        let heartsOrShares = try rows(replica, "kind:heart kind:share")
        #expect(!heartsOrShares.isEmpty)
        #expect(try rows(replica, "kind:heart,share").map(\.id) == heartsOrShares.map(\.id))
        #expect(heartsOrShares.allSatisfy { [.heart, .share].contains($0.kind) || ($0.kind == .batch && [.heart, .share].contains($0.action)) })
        // from: is the person, not the words.
        let marco = try rows(replica, "from:marco")
        #expect(!marco.isEmpty && marco.allSatisfy { $0.title == "Marco Ferri" })
        #expect(try rows(replica, "from:ferri").map(\.id) == marco.map(\.id))
        #expect(try rows(replica, "from:marco").map(\.id) == rows(replica, "from:marco from:nobody-here").map(\.id))
        // Excluding: everything but Marco's rows.
        let notMarco = try rows(replica, "-from:marco")
        #expect(notMarco.count == all.count - marco.count)
        #expect(try rows(replica, "guitar -marco").allSatisfy { !$0.title.contains("Marco") })
        // Categories by the words a reader types.
        let social = try rows(replica, "category:social")
        #expect(!social.isEmpty && social.allSatisfy { $0.kind.category == .social })
        #expect(try rows(replica, "cat:step-with").allSatisfy { $0.kind.category == .stepWith || $0.kind == .batch })
        #expect(try rows(replica, "category:stepo").allSatisfy { $0.kind == .announcement })
        // is:
        #expect(try rows(replica, "is:unread").count + rows(replica, "is:read").count == all.count)
        // What it cannot read is an error that says what it takes.
        for (typed, says) in [("kind:nosuch", "No kind begins with “nosuch”"), ("category:nope", "No category begins with “nope”"),
                              ("is:maybe", "is: takes unread or read"), ("from:", "from: takes a person")] {
            #expect(throws: FilterError.self, "\(typed)") { try RowFilter.parse(typed) }
            do { _ = try RowFilter.parse(typed) } catch { #expect(error.description.hasPrefix(says), "\(typed): \(error)") }
        }
        // A phrase excluded: every row but the one that holds it; a "-" alone is nothing.
        let phrase = try rows(replica, "\"ferri finished\"")
        #expect(try rows(replica, "-\"ferri finished\"").count == all.count - phrase.count)
        #expect(try RowFilter.parse("-") == nil && RowFilter.parse("\"\"") == nil && RowFilter.parse("\"") == nil)
        // A colon that is not a key is text: a time, a link.
        #expect(try RowFilter.parse("12:30") == RowFilter(required: [.text("12:30")]))
        #expect(try RowFilter.parse("   ") == nil)
    }

    @Test("a bulk read under a filter reads only what the filter lets through, one queued read each; the rest stay unread")
    func bulkReadUnderAFilter() throws {
        let (folder, replica) = try Self.sampleReplica()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let followers = try #require(try RowFilter.parse("kind:newFollower"))
        let unreadBefore = try replica.unreadCount(matching: try #require(try RowFilter.parse("is:unread")))
        let toRead = try replica.unreadCount(matching: followers)
        #expect(toRead > 0 && toRead < unreadBefore)
        let pendingBefore = try replica.pendingCount()
        #expect(try replica.markRead(matching: followers, at: 1) == toRead)
        #expect(try replica.unreadCount(matching: followers) == 0)
        #expect(try replica.rows(matching: followers, limit: 1000).allSatisfy { $0.readAt != nil })
        #expect(try replica.unreadCount(matching: try #require(try RowFilter.parse("is:unread"))) == unreadBefore - toRead)
        #expect(try replica.rows(matching: try #require(try RowFilter.parse("-kind:newFollower")), limit: 1000)
            .filter { $0.readAt != nil }.isEmpty)
        #expect(try replica.pendingCount() == pendingBefore + toRead)
        // Again: nothing left to read, nothing queued.
        #expect(try replica.markRead(matching: followers, at: 2) == 0)
        #expect(try replica.pendingCount() == pendingBefore + toRead)
    }

    @Test("a card stands unread while any row of it is, its newest read or not; reading the card reads every row of it")
    func cardUnread() throws {
        let (folder, replica) = try Self.sampleReplica()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let seen = try replica.seenThrough
        let thread = try #require(try replica.cards(limit: 200, newAbove: seen).first { $0.isThread })
        #expect(thread.unreadRows == min(thread.rows, ListCard.newRowsCounted))
        try replica.markRead(thread.newest.id, at: 1)
        let after = try #require(try replica.cards(limit: 200, newAbove: seen).first { $0.key == thread.key })
        #expect(after.newest.readAt != nil && after.unreadRows == thread.unreadRows - 1)
        #expect(try replica.markRead(card: thread.key, at: 2) == thread.unreadRows - 1)
        let read = try #require(try replica.cards(limit: 200, newAbove: seen).first { $0.key == thread.key })
        #expect(read.unreadRows == 0 && !read.newUnread)
        #expect(try replica.rows(inCard: thread.key).allSatisfy { $0.readAt != nil })
    }

    @Test("the tabs' counts: unread rows per category, a batch by what its people did, each counted up to a bound")
    func unreadCounts() throws {
        let (folder, replica) = try Self.sampleReplica()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let counts = try replica.unreadCounts(upTo: 1000)
        for (name, category) in RowFilter.categoryNames {
            #expect(counts[category] == (try replica.unreadCount(matching: try #require(try RowFilter.parse("category:\(name) is:unread")))),
                    "\(name)")
        }
        let bounded = try replica.unreadCounts(upTo: 2)
        #expect(bounded.values.allSatisfy { $0 <= 2 })
    }
}
