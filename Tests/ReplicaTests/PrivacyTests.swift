import Foundation
import TestSupport
import Notifications
import SQLite
import Testing
import Wire
@testable import API
@testable import Backend
@testable import Replica
import Inbox

/// What a replica may hold once its reader may no longer see something: nothing of it, in any
/// byte of the file or its write-ahead log, after the next sync.
@Suite("A replica holds nothing its reader may no longer see")
struct PrivacyTests {
    /// The ways a reader loses sight of content.
    enum Loss: String, CaseIterable, CustomStringConvertible {
        case ownerBlocksReader, readerBlocksOwner, ownerGoesPrivate, readerUnfollowsPrivateOwner, ownerDeactivated
        case stepDeleted, commentDeleted
        var description: String { rawValue }
    }

    /// Words that only the content that goes out of sight carries.
    static let secrets = [
        "journey": "Quietly training for the ultra",
        "step": "The secret trailhead behind the quarry",
        "comment": "meet me at the quarry gate at six",
        "mention": "only you know the way @fan",
        "username": "pat.secretive",
        "avatar": "https://cdn/secret-avatar-of-pat.jpg",
        "after-step": "posted after the loss: a new route",
        "after-comment": "posted after the loss: see you there",
    ]

    final class Scene {
        let folder = NSTemporaryDirectory() + "stepo-privacy-" + UUID().uuidString
        let store: Store
        let replica: Replica
        let engine: SyncEngine
        var n = 0
        var clock = Timestamp.parse("2026-11-20T08:00:00Z")!

        init(privateOwner: Bool) throws {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            store = try Store(location: try TestEngine.location(folder, "server.db"))
            replica = try Replica(path: folder + "/fan.db")
            let path = try TestEngine.location(folder, "server.db")
            engine = SyncEngine(replica: replica, transport: InProcessTransport(user: "fan") { Router(store: try Store(location: path)) })
            try event("user", [("user", .object([("id", "pat"), ("username", "pat.secretive"), ("name", "Pat"),
                                                ("avatarUrl", .string(PrivacyTests.secrets["avatar"]!)),
                                                ("private", .bool(privateOwner))]))])
            try event("user", [("user", .object([("id", "fan"), ("username", "fan"), ("name", "Fan")]))])
            try event("follow", [("actor", "fan"), ("target", "pat")])
            if privateOwner { try event("followRequestAccepted", [("actor", "pat"), ("target", "fan")]) }
            try event("journey", [("journey", .object([("id", "ultra"), ("owner", "pat"), ("title", .string(PrivacyTests.secrets["journey"]!))]))])
            try post("s0", "Warm-up lap")
            try post("s1", PrivacyTests.secrets["step"]!)
            // The fan comments; pat answers (a reply row) and mentions the fan (a mention row).
            try event("comment", [("actor", "fan"), ("step", "s1"), ("comment", .object([("id", "f1"), ("text", "where is it?")]))])
            try comment("c1", on: "s1", PrivacyTests.secrets["comment"]!, parent: "f1")
            try comment("c2", on: "s1", PrivacyTests.secrets["mention"]!)
            // The fan hearts the step: the fan's own row about pat's step (and a thread of it).
            try event("heart", [("actor", "fan"), ("step", "s1")])
        }

        deinit { try? FileManager.default.removeItem(atPath: folder) }

        func event(_ type: String, _ fields: [(String, JSON)]) throws {
            n += 1
            clock += 60_000
            let json = JSON.object([("id", .string("p\(n)")), ("type", .string(type)), ("at", .string(Timestamp.format(clock)))] + fields)
            _ = try Ingestor(store: store).apply(Data(json.serialized.utf8))
        }

        func post(_ id: String, _ caption: String) throws {
            try event("step", [("step", .object([("id", .string(id)), ("journey", "ultra"), ("caption", .string(caption)),
                                                 ("photoUrl", .string("https://cdn/\(id).jpg"))]))])
            try event("mediaReady", [("step", .string(id))])
        }

        func comment(_ id: String, on step: String, _ text: String, parent: String? = nil) throws {
            try event("comment", [("actor", "pat"), ("step", .string(step)),
                                  ("comment", .members([("id", .string(id)), ("text", .string(text)), ("parent", parent.map(JSON.string))]))])
        }

        /// Every byte of the replica's files.
        func bytes() -> Data {
            var all = Data()
            for suffix in ["", "-wal", "-shm", "-journal"] {
                if let data = FileManager.default.contents(atPath: folder + "/fan.db" + suffix) { all.append(data) }
            }
            return all
        }

        func holds(_ secret: String) -> Bool {
            bytes().range(of: Data(secret.utf8)) != nil
        }
    }

    @Test("after the next sync, no byte of the replica holds what went out of sight", arguments: Loss.allCases)
    func nothingLeft(loss: Loss) throws {
        let scene = try Scene(privateOwner: loss != .ownerGoesPrivate)
        try scene.engine.sync()
        // The fan could see it all: it is all in the file (the test can fail).
        for key in ["journey", "step", "comment", "mention"] {
            #expect(scene.holds(PrivacyTests.secrets[key]!), "\(key) should be held before the loss")
        }
        // Seen, read: the fan used the replica, as a person would.
        try scene.replica.markAllSeen(at: 1)
        try scene.engine.sync()

        var gone = ["journey", "step", "comment", "mention", "after-step", "after-comment"]
        switch loss {
        case .ownerBlocksReader: try scene.event("block", [("actor", "pat"), ("target", "fan")]); gone += ["username", "avatar"]
        case .readerBlocksOwner: try scene.event("block", [("actor", "fan"), ("target", "pat")]); gone += ["username", "avatar"]
        case .ownerGoesPrivate:
            try scene.event("unfollow", [("actor", "fan"), ("target", "pat")])
            try scene.event("privacy", [("user", "pat"), ("private", true)])
        case .readerUnfollowsPrivateOwner: try scene.event("unfollow", [("actor", "fan"), ("target", "pat")])
        case .ownerDeactivated:
            try scene.event("account", [("user", "pat"), ("state", "deactivated")]); gone += ["username", "avatar"]
        case .stepDeleted:
            try scene.event("delete", [("step", "s1")])
            gone = ["step", "comment", "mention"]
        case .commentDeleted:
            try scene.event("delete", [("comment", "c1")])
            gone = ["comment"]
        }
        // Content posted after the loss never reaches the fan either.
        try scene.post("s2", PrivacyTests.secrets["after-step"]!)
        try scene.comment("c3", on: "s0", PrivacyTests.secrets["after-comment"]!)
        try scene.engine.sync()

        for key in gone {
            #expect(!scene.holds(PrivacyTests.secrets[key]!), "\(loss): \(key) is still in the replica's bytes")
        }
        // What the reader may still see stays (a deleted comment takes only itself).
        if loss == .commentDeleted { #expect(scene.holds(PrivacyTests.secrets["step"]!)) }
        // The rows themselves stay, their copy withheld; the counts stay the server's.
        let rows = try scene.replica.rows()
        #expect(!rows.isEmpty)
        let fan = try #require(try scene.store.user("fan"))
        #expect(try scene.replica.counts == ServerCounts(unseen: try scene.store.inboxes.counts(for: fan.key).unseen,
                                                      unread: try scene.store.inboxes.counts(for: fan.key).unread, stale: false))
    }

    @Test("the destination endpoints and the sync answer alike: what a sync withholds, a step endpoint refuses")
    func endpointsAgree() throws {
        let scene = try Scene(privateOwner: true)
        try scene.event("block", [("actor", "pat"), ("target", "fan")])
        let router = Router(store: try Store(location: try TestEngine.location(scene.folder, "server.db")))
        var request = HTTPRequest(method: "GET", path: "/v1/steps/s1")
        request.trustedUser = "fan"
        #expect(router.respond(to: request).status == 410)
        request.path = "/v1/journeys/ultra"
        #expect(router.respond(to: request).status == 410)
        request = HTTPRequest(method: "GET", path: "/v1/activity", query: ["after": "0"])
        request.trustedUser = "fan"
        let page = try ActivityPage(json: try JSON.parse(router.respond(to: request).body))
        #expect(page.entities.steps.isEmpty && page.entities.journeys.isEmpty && page.entities.comments.isEmpty)
        #expect(page.rows.allSatisfy { !Copy.quotesContent($0.kind) || $0.withheld })
        #expect(!page.json.serialized.contains(PrivacyTests.secrets["step"]!))
    }

    @Test("a tap on a row whose content is gone falls back to its actor's profile, or to the feed once the actor is gone too")
    func goneFallsBack() throws {
        let scene = try Scene(privateOwner: false)
        try scene.event("delete", [("comment", "c1")])
        try scene.engine.sync()
        let reply = try #require(try scene.replica.rows().first { $0.kind == .reply })
        #expect(reply.deleted)
        guard case .gone(let page) = try DestinationLoader.tap(reply, replica: scene.replica), case .profile(let profile) = page.fallback else {
            Issue.record("a deleted reply by an active actor should fall back to their profile"); return
        }
        #expect(profile.id == "pat")

        try scene.event("account", [("user", "pat"), ("state", "deactivated")])
        try scene.engine.sync()
        let again = try #require(try scene.replica.row(reply.id))
        guard case .gone(let gone) = try DestinationLoader.tap(again, replica: scene.replica) else { Issue.record("not gone"); return }
        #expect(gone.fallback == .feed)
    }
}
