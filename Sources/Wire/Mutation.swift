import Notifications

/// A client's act, numbered per client: a stamp, or an act on the world. The server applies
/// each at most once, in order of `seq`.
public struct Mutation: Equatable, Sendable {
    public enum Action: Equatable, Sendable {
        /// Every row created at or before version `upTo` is seen: what Activity showed.
        case seen(upTo: Int)
        /// Every row created at or before version `upTo` is read (and so seen).
        case readAll(upTo: Int)
        case read(row: Int)
        case followBack(user: String)
        case acceptRequest(user: String)
        case declineRequest(user: String)
        /// Switches set, and quiet hours set or turned off (nil: left as they are).
        case preferences([PreferenceChange], quietHours: QuietHoursChange? = nil)
        /// A custom follow alert: a person or a journey set to all, default or off.
        case alert(AlertTarget, AlertMode)
    }

    /// One switch of the settings screen set on or off (`category` nil: the master switch).
    public struct PreferenceChange: Equatable, Sendable {
        public var category: Category?
        public var on: Bool

        public init(category: Category?, on: Bool) {
            self.category = category
            self.on = on
        }

        public var name: String { category?.rawValue ?? "all" }
    }

    public var seq: Int
    public var action: Action

    public init(seq: Int, action: Action) {
        self.seq = seq
        self.action = action
    }

    public var type: String {
        switch action {
        case .seen: return "seen"
        case .readAll: return "readAll"
        case .read: return "read"
        case .followBack: return "followBack"
        case .acceptRequest: return "acceptRequest"
        case .declineRequest: return "declineRequest"
        case .preferences: return "preferences"
        case .alert: return "alert"
        }
    }

    public var json: JSON {
        var members: [(String, JSON)] = [("seq", .int(seq)), ("type", .string(type))]
        switch action {
        case .seen(let upTo), .readAll(let upTo): members.append(("upTo", .int(upTo)))
        case .read(let row): members.append(("id", .int(row)))
        case .followBack(let user), .acceptRequest(let user), .declineRequest(let user): members.append(("user", .string(user)))
        case let .preferences(changes, quietHours):
            members += changes.map { ($0.name, .bool($0.on)) }
            if let quietHours { members.append(("quietHours", quietHours.value?.json ?? .null)) }
        case let .alert(target, mode):
            switch target {
            case .person(let id): members.append(("person", .string(id)))
            case .journey(let id): members.append(("journey", .string(id)))
            }
            members.append(("mode", .string(mode.rawValue)))
        }
        return .object(members)
    }

    /// The largest sequence number, version or row id a mutation may carry: beyond it a
    /// number is refused rather than wrapped.
    public static let largestNumber = Int(Int64.max)

    /// Reads one mutation; every failure names the field (`WireError`).
    public init(json: JSON) throws {
        guard case .object = json else { throw WireError("each mutation must be an object") }
        guard let seqValue = json["seq"] else { throw WireError("each mutation needs a seq") }
        guard let seq = seqValue.int, seq > 0 else { throw WireError("seq must be a whole number from 1 to \(Mutation.largestNumber)") }
        func number(_ name: String) throws -> Int {
            guard let value = json[name] else { throw WireError("mutation \(seq) needs \(name)") }
            guard let number = value.int, number >= 0 else {
                throw WireError("mutation \(seq): \(name) must be a whole number from 0 to \(Mutation.largestNumber)")
            }
            return number
        }
        func user() throws -> String {
            guard let value = json["user"] else { throw WireError("mutation \(seq) needs user") }
            guard let id = value.string, !id.isEmpty, id.utf8.count <= Event.Limits.idBytes else {
                throw WireError("mutation \(seq): user must be a user id")
            }
            return id
        }
        let action: Action
        switch json["type"]?.string {
        case "seen": action = .seen(upTo: try number("upTo"))
        case "readAll": action = .readAll(upTo: try number("upTo"))
        case "read": action = .read(row: try number("id"))
        case "followBack": action = .followBack(user: try user())
        case "acceptRequest": action = .acceptRequest(user: try user())
        case "declineRequest": action = .declineRequest(user: try user())
        case "preferences":
            let (changes, quietHours) = try Mutation.preferenceUpdate(json, in: "mutation \(seq)")
            action = .preferences(changes, quietHours: quietHours)
        case "alert":
            do {
                action = .alert(try AlertTarget(json: json), try AlertMode(json: json))
            } catch let error as EventError {
                throw WireError("mutation \(seq): \(error.description)")
            }
        case let other:
            throw WireError("mutation \(seq) has unknown type \(other.map { "\"\(Preview.visible(Preview.shorten($0, to: 40)))\"" } ?? "(none)")")
        }
        self.init(seq: seq, action: action)
    }

    /// The preference switches a JSON object sets (any of `Preferences.switchNames`, as
    /// booleans) and its quiet hours (`quietHours`: an object, or null to turn them off); at
    /// least one of them.
    public static func preferenceUpdate(_ json: JSON, in context: String) throws -> ([PreferenceChange], QuietHoursChange?) {
        var changes: [PreferenceChange] = []
        for key in Preferences.switchNames {
            guard let value = json[key] else { continue }
            guard let flag = value.bool else { throw WireError("\(context): \(key) must be true or false") }
            changes.append(PreferenceChange(category: Category(rawValue: key), on: flag))
        }
        let quietHours: QuietHoursChange?
        do {
            quietHours = try QuietHoursChange(json: json["quietHours"])
        } catch let error as EventError {
            throw WireError("\(context): \(error.description)")
        }
        guard !changes.isEmpty || quietHours != nil else {
            throw WireError("\(context) sets none of \((Preferences.switchNames + ["quietHours"]).joined(separator: ", "))")
        }
        return (changes, quietHours)
    }
}

/// What `POST /v1/mutations` answers: the last sequence applied, and fresh counts.
public struct MutationReceipt: Equatable, Sendable {
    public var applied: Int
    public var counts: Counts
    /// Mutations the server refused, with why: the client shows each as a notice and drops it.
    public var refused: [Refusal]

    public struct Refusal: Equatable, Sendable {
        public var seq: Int
        public var reason: String

        public init(seq: Int, reason: String) {
            self.seq = seq
            self.reason = reason
        }
    }

    public init(applied: Int, counts: Counts, refused: [Refusal] = []) {
        self.applied = applied
        self.counts = counts
        self.refused = refused
    }

    public var json: JSON {
        .members([("applied", .int(applied)), ("counts", counts.json),
                  ("refused", refused.isEmpty ? nil : .array(refused.map {
                      .object([("seq", .int($0.seq)), ("reason", .string($0.reason))])
                  }))])
    }

    public init(json: JSON) throws {
        let m = try Members(json, "receipt")
        let refused = try m.array("refused", optional: true).map { item -> Refusal in
            let r = try Members(item, "refused[]")
            return Refusal(seq: try r.int("seq"), reason: try r.string("reason"))
        }
        self.init(applied: try m.int("applied"), counts: try Counts(json: json["counts"] ?? .null), refused: refused)
    }
}
