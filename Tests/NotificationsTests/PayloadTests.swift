import Testing
@testable import Notifications

@Suite("Push payloads")
struct PayloadTests {
    func content(kind: Kind = .steppedWithHeart, body: String = "Stepped with you by heart: Trail run",
                 image: String? = "https://cdn/s1.jpg", badge: Int = 3) -> PushContent {
        PushContent(rowId: 57, kind: kind, title: "Maya Okonkwo", body: body, image: image, face: "https://cdn/maya.jpg",
                    thread: "step:s1", deepLink: "stepo://step/s1", badge: badge)
    }

    @Test("APNs: alert, absolute badge, thread, mutable content with an image, active for immediate")
    func apns() throws {
        let json = Payload.apns(content())
        let aps = try #require(json["payload"]?["aps"])
        #expect(aps["alert"]?["title"] == "Maya Okonkwo")
        #expect(aps["badge"] == 3)
        #expect(aps["thread-id"] == "step:s1")
        #expect(aps["mutable-content"] == 1)
        #expect(aps["interruption-level"] == "active")
        #expect(json["headers"]?["apns-priority"] == "10")
        #expect(json["payload"]?["contentImageUrl"] == "https://cdn/s1.jpg")
        #expect(json["payload"]?["deepLink"] == "stepo://step/s1")
    }

    @Test("APNs: a normal push without an image is passive, priority 5, no mutable content")
    func apnsPassive() {
        let json = Payload.apns(content(kind: .comment, image: nil))
        #expect(json["payload"]?["aps"]?["interruption-level"] == "passive")
        #expect(json["payload"]?["aps"]?["mutable-content"] == nil)
        #expect(json["headers"]?["apns-priority"] == "5")
    }

    @Test("FCM: notification, android priority, tag and count, and string-only data with the large icon")
    func fcm() throws {
        let message = try #require(Payload.fcm(content())["message"])
        #expect(message["notification"]?["image"] == "https://cdn/s1.jpg")
        #expect(message["android"]?["priority"] == "HIGH")
        #expect(message["android"]?["notification"]?["tag"] == "step:s1")
        #expect(message["android"]?["notification"]?["notification_count"] == 3)
        let data = try #require(message["data"])
        #expect(data["largeIconUrl"] == "https://cdn/maya.jpg")
        #expect(data["kind"] == "steppedWithHeart")
        guard case .object(let members) = data else { Issue.record("data is not an object"); return }
        #expect(members.allSatisfy { $0.1.string != nil })
    }

    @Test("an oversized payload is shortened in its preview, never in its structure")
    func sizeLimit() throws {
        let huge = String(repeating: "ünïcödé word ", count: 600)
        for json in [Payload.apns(content(body: huge)), Payload.fcm(content(body: huge))] {
            let measured = json["payload"] ?? json
            #expect(measured.serialized.utf8.count <= Payload.maximumBytes)
            let body = json["payload"]?["aps"]?["alert"]?["body"]?.string ?? json["message"]?["notification"]?["body"]?.string
            let text = try #require(body)
            #expect(text.hasSuffix("…"))
            #expect(text.count > 100)
            #expect(json["payload"]?["aps"]?["badge"] == 3 || json["message"]?["android"]?["notification"]?["notification_count"] == 3)
        }
    }

    @Test("a payload that fits is left exactly as it is")
    func fitsUntouched() {
        let json = Payload.apns(content())
        #expect(json["payload"]?["aps"]?["alert"]?["body"] == "Stepped with you by heart: Trail run")
    }
}

@Suite("Event contract parsing")
struct EventParsingTests {
    func parse(_ text: String) throws -> Event { try Event(json: try JSON.parse(text)) }

    @Test("a heart parses with its actor and step")
    func heart() throws {
        let event = try parse(#"{"id":"e1","type":"heart","at":"2026-11-29T10:00:00Z","actor":"maya","step":"s1"}"#)
        guard case let .interaction(type, actor, step) = event.body else { Issue.record("not an interaction"); return }
        #expect(type == .heart && actor == "maya" && step == "s1")
    }

    @Test("missing fields, unknown types and bad times are named in the error", arguments: [
        (#"{"id":"e1","type":"heart","at":"2026-11-29T10:00:00Z","step":"s1"}"#, "missing field 'actor'"),
        (#"{"id":"e1","type":"wave","at":"2026-11-29T10:00:00Z"}"#, "unknown event type \"wave\""),
        (#"{"id":"e1","type":"heart","at":"noon","actor":"a","step":"s"}"#, "field 'at' is not an RFC 3339 time: \"noon\""),
        (#"{"type":"heart","at":"2026-11-29T10:00:00Z"}"#, "missing field 'id'"),
        (#"{"id":"e1","type":"comment","at":"2026-11-29T10:00:00Z","actor":"a","step":"s","comment":{"id":"c"}}"#,
         "missing field 'comment.text'"),
        (#"{"id":"e1","type":"privacy","at":"2026-11-29T10:00:00Z","user":"a","private":"yes"}"#,
         "field 'private' must be true or false"),
        (#"[1,2]"#, "an event must be a JSON object"),
    ])
    func errors(line: String, message: String) {
        #expect(throws: EventError(message)) { try parse(line) }
    }
}
