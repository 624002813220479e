import Notifications
import Storage
import Wire

/// The trust budget (`stepo stats`, `GET /v1/stats`): figures over a span of event time, read
/// from the rows, the withheld candidates, the preference changes and the outbox, on one
/// snapshot. docs/stats.md defines each figure.
extension Store {
    /// The time of the newest producer event (nil in a store that has none).
    public func newestEventTime() throws -> Int64? {
        try db.first("SELECT max(at) FROM events WHERE ext IS NOT NULL") { $0.optionalInt64(0) } ?? nil
    }

    /// The figures of rows, pushes and mutes with event times in [`since`, `until`] (both ends
    /// included, milliseconds).
    public func trustBudget(since: Int64, until: Int64) throws -> TrustBudget {
        try snapshot {
            var tally = Tally(since: since, until: until)
            try tallyRows(&tally)
            try tallyWithheld(&tally)
            try tallyMutes(&tally)
            try tallyDelivery(&tally)
            return tally.finish()
        }
    }

    /// Every row made in the span: its kind, push, recipient and when it was seen and read
    /// (its own stamps, or the first mark of its recipient that covers it).
    private func tallyRows(_ t: inout Tally) throws {
        try db.cached("""
            SELECT n.kind, n.action, n.push, n.recipient, n.created_at, n.seen_at, n.read_at,
                   (SELECT min(m.at) FROM marks AS m WHERE m.user = n.recipient AND m.through_ord >= n.ord),
                   (SELECT min(m.at) FROM marks AS m WHERE m.user = n.recipient AND m.kind = 'read' AND m.through_ord >= n.ord)
            FROM notifications AS n WHERE n.created_at >= ? AND n.created_at <= ?
            """).bind([t.since, t.until]).forEach { r in
            guard let kind = Kind(rawValue: r.string(0)) else { return }
            let read = earliestOf(r.optionalInt64(6), r.optionalInt64(8))
            let seen = earliestOf(earliestOf(r.optionalInt64(5), r.optionalInt64(7)), read)
            t.row(kind: kind, action: r.optionalString(1).flatMap(Kind.init(rawValue:)), push: PushStatus(r.string(2)),
                  recipient: r.int(3), at: r.int64(4), seen: seen, read: read)
        }
    }

    /// Candidates given no row, by the rule that withheld it (rows kept without a push are
    /// counted with the rows).
    private func tallyWithheld(_ t: inout Tally) throws {
        try db.cached("""
            SELECT s.kind, s.reason, count(*) FROM suppressions AS s JOIN events AS e ON e.id = s.event
            WHERE e.at >= ? AND e.at <= ? GROUP BY s.kind, s.reason
            """).bind([t.since, t.until]).forEach { r in
            guard let kind = Kind(rawValue: r.string(0)), let reason = Reason(rawValue: r.string(1)) else { return }
            t.withheld(kind: kind, reason: reason, count: r.int(2))
        }
    }

    /// Switches turned off in the span, each weighed against the sent pushes its person got in
    /// the 24 hours before it.
    private func tallyMutes(_ t: inout Tally) throws {
        struct Change { var person: Int; var at: Int64; var switches: Set<String> }
        var changes: [Int: Change] = [:]
        try db.cached("""
            SELECT event, user, switch, at FROM preference_changes
            WHERE was_on = 1 AND now_on = 0 AND at >= ? AND at <= ?
            """).bind([t.since, t.until]).forEach { r in
            changes[r.int(0), default: Change(person: r.int(1), at: r.int64(3), switches: [])].switches.insert(r.string(2))
        }
        for (_, change) in changes.sorted(by: { $0.key < $1.key }) {
            var before: [(kind: Kind, category: Category)] = []
            try db.cached("""
                SELECT kind, action FROM notifications
                WHERE recipient = ? AND push = 'sent' AND created_at >= ? AND created_at <= ?
                """).bind([change.person, change.at - Timestamp.day, change.at]).forEach { r in
                guard let kind = Kind(rawValue: r.string(0)) else { return }
                before.append((kind, Tally.category(of: kind, action: r.optionalString(1).flatMap(Kind.init(rawValue:)))))
            }
            var muted: [Category: Set<Kind>] = [:]
            for push in before where change.switches.contains("all") || change.switches.contains(push.category.rawValue) {
                muted[push.category, default: []].insert(push.kind)
            }
            t.mute(person: change.person, at: change.at, categories: muted)
        }
    }

    /// The outbox entries of the span's rows: how each ended, and how long the sent ones took
    /// from their row to the provider's answer.
    private func tallyDelivery(_ t: inout Tally) throws {
        try db.cached("""
            SELECT o.state, o.attempts, n.created_at,
                   (SELECT a.reason FROM delivery_attempts AS a WHERE a.entry = o.id ORDER BY a.at DESC LIMIT 1),
                   (SELECT a.at + coalesce(a.latency_ms, 0) FROM delivery_attempts AS a WHERE a.entry = o.id
                    ORDER BY a.at DESC LIMIT 1)
            FROM outbox AS o JOIN notifications AS n ON n.id = o.row
            WHERE n.created_at >= ? AND n.created_at <= ?
            """).bind([t.since, t.until]).forEach { r in
            t.entry(state: r.string(0), attempts: r.int(1), rowAt: r.int64(2), reason: r.optionalString(3), answeredAt: r.optionalInt64(4))
        }
    }

    private func earliestOf(_ a: Int64?, _ b: Int64?) -> Int64? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }
}

/// The running sums behind a `TrustBudget`.
struct Tally {
    let since: Int64
    let until: Int64
    private var budget: TrustBudget
    private var toSeen: [Kind: [Int64]] = [:]
    private var toRead: [Kind: [Int64]] = [:]
    private var categoryToSeen: [Category: [Int64]] = [:]
    private var categoryToRead: [Category: [Int64]] = [:]
    /// Sent pushes per (recipient, day index).
    private var sentPerDay: [RecipientDay: Int] = [:]
    private var ceilingDays: Set<RecipientDay> = []
    private var recipients: [Category: Set<Int>] = [:]
    private var allRecipients: Set<Int> = []
    private var dayRecipients: [Category: [Int: Set<Int>]] = [:]
    private var allDayRecipients: [Int: Set<Int>] = [:]
    private var toAnswer: [Int64] = []

    struct RecipientDay: Hashable { var recipient: Int; var day: Int }

    init(since: Int64, until: Int64) {
        self.since = since
        self.until = until
        budget = TrustBudget(since: since, until: until)
        let first = Int(Tally.floorDiv(since, Timestamp.day)), last = Int(Tally.floorDiv(until, Timestamp.day))
        let days = (first...max(first, last)).map { TrustBudget.Day(start: Int64($0) * Timestamp.day) }
        budget.days = days
        for category in TrustBudget.categoryOrder {
            var figures = TrustBudget.CategoryFigures()
            figures.days = days
            budget.categories[category] = figures
        }
    }

    /// A row's category: its kind's, or for a batch, its members'.
    static func category(of kind: Kind, action: Kind?) -> Category {
        kind == .batch ? (action ?? .steppedWithHeart).category : kind.category
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

    private func dayIndex(_ at: Int64) -> Int {
        Int(Tally.floorDiv(at, Timestamp.day) - Tally.floorDiv(since, Timestamp.day))
    }

    mutating func row(kind: Kind, action: Kind?, push: PushStatus?, recipient: Int, at: Int64, seen: Int64?, read: Int64?) {
        let category = Tally.category(of: kind, action: action)
        let day = dayIndex(at)
        func add(_ f: inout TrustBudget.Figures) {
            f.rows += 1
            switch push {
            case .sent?: f.sent += 1
            case .updated?: f.updated += 1
            case .suppressed(let reason)?: f.suppressed[reason, default: 0] += 1
            case nil: break
            }
            if seen != nil { f.seen += 1 }
            if read != nil { f.read += 1 }
        }
        add(&budget.kinds[kind, default: TrustBudget.Figures()])
        add(&budget.categories[category, default: TrustBudget.CategoryFigures()].figures)
        budget.days[day].rows += 1
        budget.categories[category]!.days[day].rows += 1
        if let seen {
            toSeen[kind, default: []].append(max(0, seen - at))
            categoryToSeen[category, default: []].append(max(0, seen - at))
        }
        if let read {
            toRead[kind, default: []].append(max(0, read - at))
            categoryToRead[category, default: []].append(max(0, read - at))
        }
        switch push {
        case .sent?:
            sentPerDay[RecipientDay(recipient: recipient, day: day), default: 0] += 1
            recipients[category, default: []].insert(recipient)
            allRecipients.insert(recipient)
            dayRecipients[category, default: [:]][day, default: []].insert(recipient)
            allDayRecipients[day, default: []].insert(recipient)
            budget.days[day].sent += 1
            budget.categories[category]!.days[day].sent += 1
        case .suppressed(.dailyCeiling)?:
            ceilingDays.insert(RecipientDay(recipient: recipient, day: day))
        default:
            break
        }
    }

    mutating func withheld(kind: Kind, reason: Reason, count: Int) {
        budget.kinds[kind, default: TrustBudget.Figures()].suppressed[reason, default: 0] += count
        budget.categories[Tally.category(of: kind, action: nil), default: TrustBudget.CategoryFigures()]
            .figures.suppressed[reason, default: 0] += count
    }

    /// One preference change that turned switches off: a mute of each category in `categories`
    /// (with the kinds pushed to the person in the 24 hours before it).
    mutating func mute(person: Int, at: Int64, categories: [Category: Set<Kind>]) {
        guard !categories.isEmpty else { return }
        let day = dayIndex(at)
        budget.mutes += 1
        budget.days[day].mutes += 1
        for (category, kinds) in categories {
            budget.categories[category, default: TrustBudget.CategoryFigures()].mutes += 1
            budget.categories[category]!.days[day].mutes += 1
            for kind in kinds { budget.categories[category]!.mutedAfter[kind, default: 0] += 1 }
        }
    }

    mutating func entry(state: String, attempts: Int, rowAt: Int64, reason: String?, answeredAt: Int64?) {
        budget.delivery.entries += 1
        if attempts > 1 { budget.delivery.retried += 1 }
        switch state {
        case "sent":
            budget.delivery.sent += 1
            if let answeredAt { toAnswer.append(max(0, answeredAt - rowAt)) }
        case "dropped": budget.delivery.dropped[reason ?? "unknown", default: 0] += 1
        case "dead": budget.delivery.failed += 1
        case "superseded": budget.delivery.superseded += 1
        default: budget.delivery.pending += 1
        }
    }

    /// The value at rank ⌈p·n⌉ of the sorted values (nearest rank); nil when there are none.
    static func percentile<T: Comparable>(_ values: [T], _ p: Double) -> T? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((p * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    func finish() -> TrustBudget {
        var b = budget
        for (kind, values) in toSeen { b.kinds[kind]?.medianToSeen = Tally.percentile(values, 0.5) }
        for (kind, values) in toRead { b.kinds[kind]?.medianToRead = Tally.percentile(values, 0.5) }
        for (category, values) in categoryToSeen { b.categories[category]?.figures.medianToSeen = Tally.percentile(values, 0.5) }
        for (category, values) in categoryToRead { b.categories[category]?.figures.medianToRead = Tally.percentile(values, 0.5) }
        for (category, people) in recipients { b.categories[category]?.recipients = people.count }
        for (category, days) in dayRecipients {
            for (day, people) in days { b.categories[category]?.days[day].recipients = people.count }
        }
        for (day, people) in allDayRecipients { b.days[day].recipients = people.count }
        b.recipients = allRecipients.count
        let loads = Array(sentPerDay.values)
        b.load.recipientDays = loads.count
        b.load.median = Tally.percentile(loads, 0.5) ?? 0
        b.load.p99 = Tally.percentile(loads, 0.99) ?? 0
        b.load.max = loads.max() ?? 0
        b.load.atCeiling = ceilingDays.count
        b.delivery.medianToAnswer = Tally.percentile(toAnswer, 0.5)
        b.delivery.p99ToAnswer = Tally.percentile(toAnswer, 0.99)
        return b
    }
}
