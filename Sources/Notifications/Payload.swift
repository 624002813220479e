/// What a push needs from a stored row, at send time.
public struct PushContent: Sendable {
    public var rowId: Int
    public var kind: Kind
    public var title: String
    public var body: String
    public var image: String?
    public var face: String?
    /// A batch's faces (up to four, newest first): the app draws them stacked.
    public var facepile: [String]?
    public var thread: String
    public var deepLink: String
    /// The recipient's unseen count at send time: an absolute badge, never a +1.
    public var badge: Int
    /// A silent replacement of this row's card (a batch that grew): no sound, low priority,
    /// the same collapse id.
    public var silent: Bool
    /// A batch's kind of action: its category and priority are the action's.
    public var action: Kind?
    /// When the push stops being worth delivering (Unix milliseconds): APNs `apns-expiration`.
    public var expiresAt: Int64?
    /// How long the provider may hold it (seconds): FCM `android.ttl`.
    public var ttlSeconds: Int?

    public init(rowId: Int, kind: Kind, title: String, body: String, image: String?, face: String?,
                thread: String, deepLink: String, badge: Int, silent: Bool = false, action: Kind? = nil) {
        self.rowId = rowId
        self.kind = kind
        self.title = title
        self.body = body
        self.image = image
        self.face = face
        self.thread = thread
        self.deepLink = deepLink
        self.badge = badge
        self.silent = silent
        self.action = action
    }

    /// The priority the push goes with: the action's for a batch, and the lowest when silent.
    public var priority: Priority { silent ? .normal : (action ?? kind).priority }
}

/// Push payloads for APNs and FCM HTTP v1, each within the providers' 4096-byte limit.
public enum Payload {
    public static let maximumBytes = 4096
    public static let apnsTopic = "app.stepo.ios"
    /// The Android channel the app creates without sound or vibration, for silent replacements.
    public static let quietChannel = "stepo_quiet_updates"

    /// The APNs request: headers and the JSON payload. `deviceToken` goes in the request path.
    public static func apns(_ push: PushContent, deviceToken: String = "DEVICE_TOKEN") -> JSON {
        fitted(push) { content in
            var aps: [(String, JSON?)] = [
                ("alert", .object([("title", .string(content.title)), ("body", .string(content.body))])),
                ("badge", .int(content.badge)),
                ("sound", content.silent ? nil : "default"),
                ("thread-id", .string(content.thread)),
                ("interruption-level", .string(content.priority.interruptionLevel)),
            ]
            if content.image != nil { aps.append(("mutable-content", 1)) }
            let payload = JSON.members([
                ("aps", .members(aps)),
                ("contentImageUrl", content.image.map(JSON.string)),
                ("facepile", content.facepile.map { .array($0.map(JSON.string)) }),
                ("deepLink", .string(content.deepLink)),
                ("kind", .string(content.kind.rawValue)),
                ("rowId", .int(content.rowId)),
            ])
            let headers = JSON.members([
                (":path", .string("/3/device/\(deviceToken)")),
                ("apns-push-type", "alert"),
                ("apns-priority", .string(String(content.priority.apnsPriority))),
                ("apns-topic", .string(apnsTopic)),
                ("apns-collapse-id", .string("row-\(content.rowId)")),
                ("apns-expiration", content.expiresAt.map { .string(String(max(0, $0 / 1000))) }),
            ])
            return (JSON.object([("headers", headers), ("payload", payload)]), payload)
        }
    }

    /// The FCM HTTP v1 message. `data` carries strings only; the app sets the large icon from it.
    public static func fcm(_ push: PushContent, deviceToken: String = "DEVICE_TOKEN") -> JSON {
        fitted(push) { content in
            let data = JSON.members([
                ("kind", .string(content.kind.rawValue)),
                ("deepLink", .string(content.deepLink)),
                ("threadId", .string(content.thread)),
                ("largeIconUrl", content.face.map(JSON.string)),
                // Data values are strings: the faces as a JSON array in one.
                ("facepileUrls", content.facepile.map { .string(JSON.array($0.map(JSON.string)).serialized) }),
                ("rowId", .string(String(content.rowId))),
                ("badge", .string(String(content.badge))),
            ])
            let message = JSON.object([("message", .members([
                ("token", .string(deviceToken)),
                ("notification", .members([("title", .string(content.title)), ("body", .string(content.body)),
                                           ("image", content.image.map(JSON.string))])),
                ("android", .members([
                    ("priority", .string(content.priority.fcmPriority)),
                    ("ttl", content.ttlSeconds.map { .string("\(max(0, $0))s") }),
                    ("notification", .members([
                        ("tag", .string(content.thread)),
                        ("notification_count", .int(content.badge)),
                        ("image", content.image.map(JSON.string)),
                        // A silent replacement: no sound, no vibration, on the app's quiet channel.
                        ("channel_id", content.silent ? .string(Payload.quietChannel) : nil),
                        ("default_sound", content.silent ? .bool(false) : nil),
                        ("default_vibrate_timings", content.silent ? .bool(false) : nil),
                        ("notification_priority", content.silent ? "PRIORITY_LOW" : nil),
                    ])),
                ])),
                ("data", data),
            ]))])
            return (message, message)
        }
    }

    /// The characters each of title and body keeps while the other still has more to give:
    /// a push always says who and what, however long the other part is.
    static let readableTitle = 30
    static let readableBody = 40

    /// Renders with `build` (which returns the whole document and the part the provider
    /// measures), shortening at a word with `…` until the measured part fits in
    /// `maximumBytes`: the longer of title and body (in bytes) gives first, and neither goes
    /// below its readable length while the other can still give. The JSON's structure is
    /// never cut.
    static func fitted(_ push: PushContent, _ build: (PushContent) -> (JSON, JSON)) -> JSON {
        var content = push
        var (document, measured) = build(content)
        var overflow = measured.serialized.utf8.count - maximumBytes
        while overflow > 0 {
            let bodyCanGive = content.body.count > readableBody
            let titleCanGive = content.title.count > readableTitle
            let preferBody = content.body.utf8.count >= content.title.utf8.count
            if bodyCanGive && (preferBody || !titleCanGive) {
                content.body = shortened(content.body, by: overflow, keeping: readableBody)
            } else if titleCanGive {
                content.title = shortened(content.title, by: overflow, keeping: readableTitle)
            } else if content.body.count > 1 {
                content.body = shortened(content.body, by: overflow, keeping: 1)
            } else if content.title.count > 1 {
                content.title = shortened(content.title, by: overflow, keeping: 1)
            } else {
                break
            }
            (document, measured) = build(content)
            overflow = measured.serialized.utf8.count - maximumBytes
        }
        return document
    }

    /// `text` cut at a word with `…`, at least `bytes` UTF-8 bytes (as JSON) shorter.
    /// `text` cut at a word with `…`, at least `bytes` UTF-8 bytes (as JSON) shorter, or down
    /// to `keeping` characters when that is not enough.
    static func shortened(_ text: String, by bytes: Int, keeping: Int = 1) -> String {
        let floor = max(1, keeping)
        var limit = max(floor, text.count - 1)
        var result = cut(text, to: limit)
        let original = escapedLength(text)
        while limit > floor && original - escapedLength(result) < bytes {
            limit = max(floor, limit - max(1, (bytes - (original - escapedLength(result))) / 4))
            result = cut(text, to: limit)
        }
        return result
    }

    /// `text` to `limit` characters at a word, unless a word so long would go that less than
    /// half the room is left: then inside it, so the push still says something.
    private static func cut(_ text: String, to limit: Int) -> String {
        let atWord = Preview.shorten(text, to: limit)
        guard atWord.count * 2 < limit, text.count > limit else { return atWord }
        return String(text.prefix(limit - 1)) + String(Preview.ellipsis)
    }

    private static func escapedLength(_ text: String) -> Int {
        var out = ""
        JSON.writeString(text, to: &out)
        return out.utf8.count
    }
}
