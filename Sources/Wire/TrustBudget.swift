import Notifications

/// The trust budget over a span of event time: what each kind and category of notification
/// made, pushed and withheld, how often its rows were seen and opened, and how often a push
/// was followed by its recipient turning that category (or every push) off — a *mute*.
///
/// `stepo stats --json`, `GET /v1/stats` and the inbox's Stats screen all carry this one
/// document. docs/stats.md defines every figure.
public enum StatsSpan {
    /// The longest span a report covers: a year and a day.
    public static let longestDays = 366
    public static let longest = Int64(longestDays) * 86_400_000
}

public struct TrustBudget: Equatable, Sendable {
    /// Figures shared by a kind and a category.
    public struct Figures: Equatable, Sendable {
        /// Rows made in the span (by their event's time).
        public var rows = 0
        /// Rows whose push went to the lock screen (`sent`).
        public var sent = 0
        /// Withheld pushes by reason: rows kept without a push, and candidates given no row.
        public var suppressed: [Reason: Int] = [:]
        /// Rows seen (by their own stamp or a mark) and read (opened), at any time since.
        public var seen = 0
        public var read = 0
        /// Median time from a row's making to its seen and read stamps, in milliseconds: the
        /// upper edge of the duration bucket that holds the median (docs/stats.md).
        public var medianToSeen: Int64?
        public var medianToRead: Int64?

        public init() {}

        public var seenRate: Double { rows == 0 ? 0 : Double(seen) / Double(rows) }
        public var readRate: Double { rows == 0 ? 0 : Double(read) / Double(rows) }
    }

    /// One category's figures, with its mutes.
    public struct CategoryFigures: Equatable, Sendable {
        public var figures = Figures()
        /// Distinct people with at least one sent push of the category in the span.
        public var recipients = 0
        /// Preference changes in the span that turned the category (or every push) off, by a
        /// person who got a sent push of it in the 24 hours before: one per person and change.
        public var mutes = 0
        /// For each kind, how many mutes had a sent push of it in their 24 hours.
        public var mutedAfter: [Kind: Int] = [:]
        /// Per UTC day of the span, oldest first.
        public var days: [Day] = []

        public init() {}

        public var muteRate: Double { recipients == 0 ? 0 : Double(mutes) / Double(recipients) }
    }

    /// One UTC day: pushes sent, their distinct recipients and the mutes made that day.
    public struct Day: Equatable, Sendable {
        /// The day's first instant (UTC midnight), in milliseconds.
        public var start: Int64
        public var rows = 0
        public var sent = 0
        public var recipients = 0
        public var mutes = 0

        public init(start: Int64) { self.start = start }

        public var muteRate: Double { recipients == 0 ? 0 : Double(mutes) / Double(recipients) }
        /// `YYYY-MM-DD`.
        public var date: String { String(Timestamp.format(start).prefix(10)) }
    }

    /// Sent pushes per recipient per UTC day, over the recipient-days with at least one.
    public struct Load: Equatable, Sendable {
        public var recipientDays = 0
        /// Sent pushes over those person-days (so the mean is `total` ÷ `recipientDays`).
        public var total = 0
        public var median = 0
        public var p99 = 0
        public var max = 0
        /// Recipient-days on which the daily ceiling withheld at least one push.
        public var atCeiling = 0

        public init() {}
    }

    /// What the delivery workers did with the pushes of rows made in the span.
    public struct DeliveryFigures: Equatable, Sendable {
        /// Outbox entries (one per device and push).
        public var entries = 0
        public var sent = 0
        /// Dropped at send time, by the rule that dropped them.
        public var dropped: [String: Int] = [:]
        /// Given up: the provider refused the token, or the attempts ran out.
        public var failed = 0
        /// Replaced by a newer push under the same collapse id before going out.
        public var superseded = 0
        /// Still waiting (due or claimed).
        public var pending = 0
        /// Entries that needed more than one attempt.
        public var retried = 0
        /// From the entry's queuing to the provider's answer that took it, in milliseconds.
        public var medianToAnswer: Int64?
        public var p99ToAnswer: Int64?
        /// Sent after waiting for their recipient's quiet hours to end, and the median wait
        /// (from the row to the end of the hours), in milliseconds.
        public var heldByQuietHours = 0
        public var medianHeld: Int64?

        public init() {}
    }

    public var since: Int64
    public var until: Int64
    public var categories: [Category: CategoryFigures] = [:]
    public var kinds: [Kind: Figures] = [:]
    /// Every category together, per UTC day (recipients and mutes counted once per person and day).
    public var days: [Day] = []
    /// Over every category: distinct people pushed to, and preference changes that were mutes.
    public var recipients = 0
    public var mutes = 0
    public var load = Load()
    public var delivery = DeliveryFigures()

    public init(since: Int64, until: Int64) {
        self.since = since
        self.until = until
    }

    public var muteRate: Double { recipients == 0 ? 0 : Double(mutes) / Double(recipients) }

    /// The kinds rows are counted under: every kind but `batch` (a batch row counts as its
    /// members' kind).
    public static let kindOrder = Kind.allCases.filter { $0 != .batch }

    /// The categories a row can have, in the board's order.
    public static let categoryOrder: [Category] = [.stepWith, .social, .engagement, .journeys, .announcement]

    public var json: JSON {
        func figures(_ f: Figures) -> [(String, JSON?)] {
            [("rows", .int(f.rows)), ("sent", .int(f.sent)),
             ("suppressed", .object(Reason.allCases.compactMap { r in f.suppressed[r].map { (r.rawValue, .int($0)) } })),
             ("seen", .int(f.seen)), ("read", .int(f.read)),
             ("seenRate", .double(f.seenRate)), ("readRate", .double(f.readRate)),
             ("medianSecondsToSeen", f.medianToSeen.map { .double(Double($0) / 1000) } ?? .null),
             ("medianSecondsToRead", f.medianToRead.map { .double(Double($0) / 1000) } ?? .null)]
        }
        func day(_ d: Day) -> JSON {
            .object([("day", .string(d.date)), ("rows", .int(d.rows)), ("sent", .int(d.sent)),
                     ("recipients", .int(d.recipients)), ("mutes", .int(d.mutes)), ("muteRate", .double(d.muteRate))])
        }
        let categoryMembers = TrustBudget.categoryOrder.map { category -> (String, JSON) in
            let c = categories[category] ?? CategoryFigures()
            return (category.rawValue, JSON.members(figures(c.figures) + [
                ("recipients", .int(c.recipients)), ("mutes", .int(c.mutes)), ("muteRate", .double(c.muteRate)),
                ("mutedAfter", .object(Kind.allCases.compactMap { k in c.mutedAfter[k].map { (k.rawValue, .int($0)) } })),
                ("days", .array(c.days.map(day))),
            ]))
        }
        let kindMembers = TrustBudget.kindOrder.map { kind -> (String, JSON) in
            (kind.rawValue, JSON.members(figures(kinds[kind] ?? Figures())))
        }
        let d = delivery
        return JSON.members([
            ("since", .string(Timestamp.format(since))), ("until", .string(Timestamp.format(until))),
            ("categories", .object(categoryMembers)),
            ("kinds", .object(kindMembers)),
            ("recipients", .int(recipients)), ("mutes", .int(mutes)), ("muteRate", .double(muteRate)),
            ("days", .array(days.map(day))),
            ("pushesPerRecipientDay", .object([("recipientDays", .int(load.recipientDays)), ("total", .int(load.total)),
                                               ("mean", .double(load.recipientDays == 0 ? 0 : Double(load.total) / Double(load.recipientDays))),
                                               ("median", .int(load.median)),
                                               ("p99", .int(load.p99)), ("max", .int(load.max)), ("atCeiling", .int(load.atCeiling))])),
            ("delivery", JSON.members([
                ("entries", .int(d.entries)), ("sent", .int(d.sent)),
                ("dropped", .object(d.dropped.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
                ("failed", .int(d.failed)), ("superseded", .int(d.superseded)), ("pending", .int(d.pending)),
                ("retried", .int(d.retried)),
                ("medianSecondsToAnswer", d.medianToAnswer.map { .double(Double($0) / 1000) } ?? .null),
                ("p99SecondsToAnswer", d.p99ToAnswer.map { .double(Double($0) / 1000) } ?? .null),
                ("heldByQuietHours", .int(d.heldByQuietHours)),
                ("medianSecondsHeld", d.medianHeld.map { .double(Double($0) / 1000) } ?? .null),
            ])),
        ])
    }

    /// Reads the document `json` writes (as `GET /v1/stats` answers it).
    public init(json: JSON) throws {
        let m = try Members(json, "stats")
        guard let since = Timestamp.parse(try m.string("since")), let until = Timestamp.parse(try m.string("until")) else {
            throw WireError("stats.since and stats.until must be RFC 3339 times")
        }
        self.init(since: since, until: until)
        func count(_ json: JSON?, _ key: String) -> Int { json?[key]?.int ?? 0 }
        func millis(_ json: JSON?, _ key: String) -> Int64? { json?[key]?.number.map { Int64(($0 * 1000).rounded()) } }
        func figures(_ j: JSON?) -> Figures {
            var f = Figures()
            f.rows = count(j, "rows")
            f.sent = count(j, "sent")
            for reason in Reason.allCases { if let n = j?["suppressed"]?[reason.rawValue]?.int { f.suppressed[reason] = n } }
            f.seen = count(j, "seen")
            f.read = count(j, "read")
            f.medianToSeen = millis(j, "medianSecondsToSeen")
            f.medianToRead = millis(j, "medianSecondsToRead")
            return f
        }
        func day(_ j: JSON) -> Day? {
            guard let date = j["day"]?.string, let start = Timestamp.parse(date + "T00:00:00Z") else { return nil }
            var d = Day(start: start)
            d.rows = count(j, "rows")
            d.sent = count(j, "sent")
            d.recipients = count(j, "recipients")
            d.mutes = count(j, "mutes")
            return d
        }
        for category in TrustBudget.categoryOrder {
            let j = json["categories"]?[category.rawValue]
            var c = CategoryFigures()
            c.figures = figures(j)
            c.recipients = count(j, "recipients")
            c.mutes = count(j, "mutes")
            for kind in Kind.allCases { if let n = j?["mutedAfter"]?[kind.rawValue]?.int { c.mutedAfter[kind] = n } }
            c.days = (j?["days"]?.array ?? []).compactMap(day)
            categories[category] = c
        }
        for kind in TrustBudget.kindOrder { kinds[kind] = figures(json["kinds"]?[kind.rawValue]) }
        recipients = count(json, "recipients")
        mutes = count(json, "mutes")
        days = (json["days"]?.array ?? []).compactMap(day)
        let l = json["pushesPerRecipientDay"]
        load.recipientDays = count(l, "recipientDays")
        load.total = count(l, "total")
        load.median = count(l, "median")
        load.p99 = count(l, "p99")
        load.max = count(l, "max")
        load.atCeiling = count(l, "atCeiling")
        let d = json["delivery"]
        delivery.entries = count(d, "entries")
        delivery.sent = count(d, "sent")
        if case .object(let members)? = d?["dropped"] { for (key, value) in members { delivery.dropped[key] = value.int ?? 0 } }
        delivery.failed = count(d, "failed")
        delivery.superseded = count(d, "superseded")
        delivery.pending = count(d, "pending")
        delivery.retried = count(d, "retried")
        delivery.medianToAnswer = millis(d, "medianSecondsToAnswer")
        delivery.p99ToAnswer = millis(d, "p99SecondsToAnswer")
        delivery.heldByQuietHours = count(d, "heldByQuietHours")
        delivery.medianHeld = millis(d, "medianSecondsHeld")
    }
}
