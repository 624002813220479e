import Notifications
import Storage
import Wire

/// The trust budget (`stepo stats`, `GET /v1/stats`): figures over a span of event time, read
/// from the rows, the withheld candidates, the preference changes and the outbox, on one
/// snapshot. docs/stats.md defines each figure.
extension Store {
    /// The trust budget's figures, and the counters they are read from.
    public var stats: Stats { Stats(store: self) }
}

/// The trust budget (docs/trust-budget.md): what the board measures, read from counters kept
/// as rows are made and stamped, or recounted from the rows themselves.
public struct Stats {
    let store: Store
    var db: Connection { store.db }
}

extension Stats {
    /// The time of the newest producer event (nil in a store that has none).
    public func newestEventTime() throws -> Int64? {
        try db.first("SELECT max(at) FROM events WHERE ext IS NOT NULL") { $0.optionalInt64(0) } ?? nil
    }

    /// The figures of rows, pushes and mutes with event times in [`since`, `until`] (both ends
    /// included, milliseconds). The whole hours inside the span are read from the counters
    /// (`StatsCounters`); the rows of its partial first and last hours, through their events.
    ///
    /// The marks and fan-outs not yet counted are counted first (`catchUpStamps`).
    public func trustBudget(since: Int64, until: Int64) throws -> TrustBudget {
        try catchUpStamps()
        return try trustBudget(since: since, until: until, fromRows: false)
    }

    /// The figures as they stand (the caller has counted what was pending, or reads rows):
    /// `fromRows` reads every row of the span instead of the counters (their reference).
    public func trustBudget(since: Int64, until: Int64, fromRows: Bool) throws -> TrustBudget {
        try store.snapshot {
            var tally = Tally(since: since, until: until)
            let hour = StatsCounters.hour
            var first = StatsCounters.hour(of: since + hour - 1), last = StatsCounters.hour(of: until + 1) - 1
            // An edge hour with no event on its far side of the span is a whole hour as far as
            // the store holds (the span's end at the newest event, most often): its counters
            // say it all, and its rows need not be read one by one.
            if !fromRows {
                if until >= (last + 1) * hour, try !eventsBetween(until + 1, (last + 2) * hour - 1) { last += 1 }
                if since < first * hour, try !eventsBetween((first - 1) * hour, since - 1) { first -= 1 }
            }
            var edges: [ClosedRange<Int64>] = []
            if first <= last && !fromRows {
                try tallyCounters(&tally, hours: first...last)
                if since < first * hour { edges.append(since...(first * hour - 1)) }
                if until >= (last + 1) * hour { edges.append(((last + 1) * hour)...until) }
            } else {
                edges = [since...until]
            }
            for edge in edges { try tallyRows(&tally, from: edge.lowerBound, to: edge.upperBound) }
            try tallyMutes(&tally)
            try tallyDelivery(&tally, hours: first <= last && !fromRows ? first...last : nil, edges: edges)
            return tally.finish()
        }
    }

    /// Whether any event's time lies in [`from`, `to`] (one seek in the index by time).
    private func eventsBetween(_ from: Int64, _ to: Int64) throws -> Bool {
        try db.cached("SELECT EXISTS (SELECT 1 FROM events WHERE at >= ? AND at <= ?)").bind([from, to]).first { $0.bool(0) } ?? false
    }

    /// The counters of whole hours.
    private func tallyCounters(_ t: inout Tally, hours: ClosedRange<Int64>) throws {
        let h = StatsCounters.hour
        try db.cached("SELECT hour, kind, push, sum(n) FROM stats_rows WHERE hour >= ? AND hour <= ? GROUP BY hour, kind, push HAVING sum(n) <> 0")
            .bind([hours.lowerBound, hours.upperBound]).forEach { (r: Row) -> Void in
                let kind = try r.decoded(1, table: "stats_rows", column: "kind", Kind.init(rawValue:))
                let push = try r.decoded(2, table: "stats_rows", column: "push", PushStatus.init)
                t.rows(kind: kind, push: push, at: r.int64(0) * h, count: r.int(3))
            }
        try db.cached("SELECT kind, reason, sum(n) FROM stats_withheld WHERE hour >= ? AND hour <= ? GROUP BY kind, reason")
            .bind([hours.lowerBound, hours.upperBound]).forEach { (r: Row) -> Void in
                let kind = try r.decoded(0, table: "stats_withheld", column: "kind", Kind.init(rawValue:))
                let reason = try r.decoded(1, table: "stats_withheld", column: "reason", Reason.init(rawValue:))
                t.withheld(kind: kind, reason: reason, count: r.int(2))
            }
        try db.cached("""
            SELECT kind, stamp, bucket, sum(n) FROM stats_stamps WHERE hour >= ? AND hour <= ? GROUP BY kind, stamp, bucket
            """).bind([hours.lowerBound, hours.upperBound]).forEach { (r: Row) -> Void in
                let kind = try r.decoded(0, table: "stats_stamps", column: "kind", Kind.init(rawValue:))
                t.stamps(kind: kind, read: r.string(1) == "read", bucket: r.int(2), count: r.int(3))
            }
        // Whole days from the daily entries. A partial day (its whole hours inside the span)
        // from whichever is shorter: its hours inside the span, or its daily entry less its
        // hours outside the span — never more than twelve hours of entries per partial day.
        let firstDay = StatsCounters.floorDiv(hours.lowerBound, 24), lastDay = StatsCounters.floorDiv(hours.upperBound, 24)
        func daily(_ days: ClosedRange<Int64>, _ each: (Int, Category, Int64, Int, Int) -> Void) throws {
            try db.cached("SELECT day, user, category, sent, held FROM push_daily WHERE day >= ? AND day <= ? AND (sent <> 0 OR held <> 0)")
                .bind([days.lowerBound, days.upperBound]).forEach { (r: Row) -> Void in
                    let category = try r.decoded(2, table: "push_daily", column: "category", Category.init(rawValue:))
                    each(r.int(1), category, r.int64(0), r.int(3), r.int(4))
                }
        }
        func hourly(_ range: ClosedRange<Int64>, _ each: (Int, Category, Int, Int) -> Void) throws {
            try db.cached("SELECT user, category, sent, held FROM push_load WHERE hour >= ? AND hour <= ? AND (sent <> 0 OR held <> 0)")
                .bind([range.lowerBound, range.upperBound]).forEach { (r: Row) -> Void in
                    let category = try r.decoded(1, table: "push_load", column: "category", Category.init(rawValue:))
                    each(r.int(0), category, r.int(2), r.int(3))
                }
        }
        for day in firstDay...lastDay {
            let dayHours = (day * 24)...(day * 24 + 23)
            let inside = max(hours.lowerBound, dayHours.lowerBound)...min(hours.upperBound, dayHours.upperBound)
            let at = day * Timestamp.day
            if inside == dayHours { continue }  // whole: read below, with the other whole days
            if inside.count <= 12 {
                try hourly(inside) { t.load(person: $0, category: $1, at: at, sent: $2, held: $3) }
                continue
            }
            struct Key: Hashable { var person: Int; var category: Category }
            var sums: [Key: (sent: Int, held: Int)] = [:]
            try daily(day...day) { person, category, _, sent, held in sums[Key(person: person, category: category)] = (sent, held) }
            var outside: [ClosedRange<Int64>] = []
            if inside.lowerBound > dayHours.lowerBound { outside.append(dayHours.lowerBound...(inside.lowerBound - 1)) }
            if inside.upperBound < dayHours.upperBound { outside.append((inside.upperBound + 1)...dayHours.upperBound) }
            for range in outside {
                try hourly(range) { person, category, sent, held in
                    let key = Key(person: person, category: category)
                    if let sum = sums[key] { sums[key] = (sum.sent - sent, sum.held - held) }
                }
            }
            for (key, sum) in sums where sum.sent > 0 || sum.held > 0 {
                t.load(person: key.person, category: key.category, at: at, sent: sum.sent, held: sum.held)
            }
        }
        let wholeFirst = hours.lowerBound == firstDay * 24 ? firstDay : firstDay + 1
        let wholeLast = hours.upperBound == lastDay * 24 + 23 ? lastDay : lastDay - 1
        if wholeFirst <= wholeLast {
            try daily(wholeFirst...wholeLast) { t.load(person: $0, category: $1, at: $2 * Timestamp.day, sent: $3, held: $4) }
        }
    }

    /// The rows and withheld candidates of the events with times in [`from`, `to`], one by one
    /// (events first, through their index by time: SQLite takes a CROSS JOIN's order as written,
    /// and the unary + keeps it from building an index on every row's event to find them):
    /// their kind, push, recipient and when they were seen and read (their own stamps, or the
    /// first mark of their recipient that covers them).
    private func tallyRows(_ t: inout Tally, from: Int64, to: Int64) throws {
        try db.cached("""
            SELECT n.kind, n.action, n.push, n.recipient, n.created_at, n.seen_at, n.read_at,
                   \(StatsCounters.firstMarkSQL(read: false)), \(StatsCounters.firstMarkSQL(read: true))
            FROM events AS e CROSS JOIN notifications AS n
            WHERE e.at >= ? AND e.at <= ? AND n.id >= e.first_row AND n.id <= e.last_row AND +n.event = e.id
            """).bind([from, to]).forEach { (r: Row) -> Void in
            let stored = try r.decoded(0, table: "notifications", column: "kind", Kind.init(rawValue:))
            let push = try r.decoded(2, table: "notifications", column: "push", PushStatus.init)
            let kind = StatsCounters.countedKind(stored, action: r.optionalString(1))
            let at = r.int64(4)
            let read = earliestOf(r.optionalInt64(6), r.optionalInt64(8))
            let seen = earliestOf(earliestOf(r.optionalInt64(5), r.optionalInt64(7)), read)
            t.rows(kind: kind, push: push, at: at, count: 1)
            if let load = StatsCounters.loads(push) {
                t.load(person: r.int(3), category: kind.category, at: at, sent: load.sent, held: load.held)
            }
            if let seen { t.stamps(kind: kind, read: false, bucket: StampBuckets.bucket(seen - at), count: 1) }
            if let read { t.stamps(kind: kind, read: true, bucket: StampBuckets.bucket(read - at), count: 1) }
        }
        try db.cached("""
            SELECT s.kind, s.reason, count(*) FROM events AS e CROSS JOIN suppressions AS s
            WHERE e.at >= ? AND e.at <= ? AND s.event = e.id GROUP BY s.kind, s.reason
            """).bind([from, to]).forEach { (r: Row) -> Void in
            let kind = try r.decoded(0, table: "suppressions", column: "kind", Kind.init(rawValue:))
            let reason = try r.decoded(1, table: "suppressions", column: "reason", Reason.init(rawValue:))
            t.withheld(kind: kind, reason: reason, count: r.int(2))
        }
    }

    /// A preference change that turned switches off, as the trust budget weighs it.
    struct MuteChange {
        var event: Int
        var person: Int
        var at: Int64
        var switches: Set<String>
    }

    /// The changes that turned switches off with times in [`from`, `to`] (`before`: only those
    /// older than it), oldest event first.
    func muteChanges(from: Int64, to: Int64) throws -> [MuteChange] {
        var changes: [Int: MuteChange] = [:]
        try db.cached("""
            SELECT event, user, switch, at FROM preference_changes
            WHERE was_on = 1 AND now_on = 0 AND at >= ? AND at <= ?
            """).bind([from, to]).forEach { (r: Row) -> Void in
            changes[r.int(0), default: MuteChange(event: r.int(0), person: r.int(1), at: r.int64(3), switches: [])].switches.insert(r.string(2))
        }
        return changes.values.sorted { $0.event < $1.event }
    }

    /// What `change` muted: each category it turned off, with the kinds pushed to its person in
    /// the 24 hours before it.
    func muted(by change: MuteChange) throws -> [Category: Set<Kind>] {
        var muted: [Category: Set<Kind>] = [:]
        try db.cached("""
            SELECT kind, action FROM notifications
            WHERE recipient = ? AND push = 'sent' AND created_at >= ? AND created_at <= ?
            """).bind([change.person, change.at - Timestamp.day, change.at]).forEach { (r: Row) -> Void in
            let stored = try r.decoded(0, table: "notifications", column: "kind", Kind.init(rawValue:))
            let kind = StatsCounters.countedKind(stored, action: r.optionalString(1))
            if change.switches.contains("all") || change.switches.contains(kind.category.rawValue) {
                muted[kind.category, default: []].insert(kind)
            }
        }
        return muted
    }

    /// Switches turned off in the span, each weighed against the sent pushes its person got in
    /// the 24 hours before it: from the rows, or, for a change whose rows a prune was about to
    /// remove, as it was weighed then (`stats_mutes`, see `freezeMutes`).
    private func tallyMutes(_ t: inout Tally) throws {
        var frozen = Set<Int>()
        let kept = try db.cached("SELECT event, person, at, muted FROM stats_mutes WHERE at >= ? AND at <= ?").bind([t.since, t.until]).map {
            (event: $0.int(0), person: $0.int(1), at: $0.int64(2), muted: $0.string(3))
        }
        for mute in kept {
            frozen.insert(mute.event)
            t.mute(person: mute.person, at: mute.at, categories: Stats.decodeMuted(mute.muted))
        }
        for change in try muteChanges(from: t.since, to: t.until) where !frozen.contains(change.event) {
            t.mute(person: change.person, at: change.at, categories: try muted(by: change))
        }
    }

    /// Weighs now, while their rows are still there, every change that turned switches off
    /// before `before` and is not weighed yet, and keeps what each muted (`stats_mutes`): a
    /// prune that removes the rows before a change, or the change itself, leaves its mute
    /// counted as it was. A few hundred changes a transaction.
    func freezeMutes(before: Int64) throws {
        let changes = try muteChanges(from: Int64.min, to: before - 1)
        guard !changes.isEmpty else { return }
        let known = Set(try db.keyed("SELECT event FROM stats_mutes WHERE event IN (%)", changes.map(\.event)) { $0.int(0) })
        let open = changes.filter { !known.contains($0.event) }
        for start in stride(from: 0, to: open.count, by: 200) {
            try db.transaction {
                for change in open[start..<min(start + 200, open.count)] {
                    try db.run("INSERT INTO stats_mutes(event, person, at, muted) VALUES (?, ?, ?, ?) ON CONFLICT (event) DO NOTHING",
                               change.event, change.person, change.at, Stats.encodeMuted(try muted(by: change)))
                }
            }
        }
    }

    /// `category:kind,kind;category:kind`, in a fixed order.
    static func encodeMuted(_ muted: [Category: Set<Kind>]) -> String {
        muted.sorted { $0.key.rawValue < $1.key.rawValue }
            .map { "\($0.key.rawValue):" + $0.value.map(\.rawValue).sorted().joined(separator: ",") }.joined(separator: ";")
    }

    static func decodeMuted(_ text: String) -> [Category: Set<Kind>] {
        var muted: [Category: Set<Kind>] = [:]
        for part in text.split(separator: ";") {
            let halves = part.split(separator: ":", maxSplits: 1)
            guard halves.count == 2, let category = Category(rawValue: String(halves[0])) else { continue }
            muted[category] = Set(halves[1].split(separator: ",").compactMap { Kind(rawValue: String($0)) })
        }
        return muted
    }

    /// The outbox entries of the span's rows: how each ended, and how long the sent ones took
    /// from their row to the provider's answer. Whole hours from the counters; the entries of
    /// the rows of partial hours, one by one.
    private func tallyDelivery(_ t: inout Tally, hours: ClosedRange<Int64>?, edges: [ClosedRange<Int64>]) throws {
        if let hours {
            try db.cached("SELECT outcome, reason, sum(n) FROM stats_delivery WHERE hour >= ? AND hour <= ? GROUP BY outcome, reason")
                .bind([hours.lowerBound, hours.upperBound]).forEach { (r: Row) -> Void in
                    t.delivery(outcome: r.string(0), reason: r.string(1), count: r.int(2))
                }
        }
        for edge in edges {
            try db.cached("""
                SELECT o.state, o.attempts,
                       \(StatsCounters.lastReasonSQL), \(StatsCounters.lastAnswerSQL) - n.created_at,
                       CASE WHEN o.held = 1 THEN o.due_at - n.created_at END
                FROM events AS e CROSS JOIN notifications AS n CROSS JOIN outbox AS o
                WHERE e.at >= ? AND e.at <= ? AND n.id >= e.first_row AND n.id <= e.last_row AND +n.event = e.id AND o.row = n.id
                """).bind([edge.lowerBound, edge.upperBound]).forEach { (r: Row) -> Void in
                t.entry(state: r.string(0), attempts: r.int(1), reason: r.optionalString(2), toAnswer: r.optionalInt64(3),
                        held: r.optionalInt64(4))
            }
        }
    }

    private func earliestOf(_ a: Int64?, _ b: Int64?) -> Int64? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }
}

/// The running sums behind a `TrustBudget`: counters of whole hours and rows of partial
/// ones are added the same way.
struct Tally {
    let since: Int64
    let until: Int64
    private var budget: TrustBudget
    /// Per kind and stamp (seen, read), rows per `StampBuckets` bucket.
    private var seenBuckets: [Kind: [Int: Int]] = [:]
    private var readBuckets: [Kind: [Int: Int]] = [:]
    /// Sent pushes per (person, day index), and the person-days the ceiling held a push on.
    private var sentPerDay: [PersonDay: Int] = [:]
    private var ceilingDays: Set<PersonDay> = []
    private var recipients: [Category: Set<Int>] = [:]
    private var allRecipients: Set<Int> = []
    private var dayRecipients: [Category: [Int: Set<Int>]] = [:]
    private var allDayRecipients: [Int: Set<Int>] = [:]
    private var answerBuckets: [Int: Int] = [:]
    /// Pushes quiet hours held, per bucket of how long they waited.
    private var heldBuckets: [Int: Int] = [:]

    struct PersonDay: Hashable { var person: Int; var day: Int }

    init(since: Int64, until: Int64) {
        self.since = since
        self.until = until
        budget = TrustBudget(since: since, until: until)
        let first = Int(StatsCounters.floorDiv(since, Timestamp.day)), last = Int(StatsCounters.floorDiv(until, Timestamp.day))
        let days = (first...max(first, last)).map { TrustBudget.Day(start: Int64($0) * Timestamp.day) }
        budget.days = days
        for category in TrustBudget.categoryOrder {
            var figures = TrustBudget.CategoryFigures()
            figures.days = days
            budget.categories[category] = figures
        }
    }

    private func dayIndex(_ at: Int64) -> Int {
        Int(StatsCounters.floorDiv(at, Timestamp.day) - StatsCounters.floorDiv(since, Timestamp.day))
    }

    /// `count` rows of `kind` (never `batch`: a batch counts as its members' kind) made at `at`.
    mutating func rows(kind: Kind, push: PushStatus, at: Int64, count: Int) {
        let category = kind.category
        let day = dayIndex(at)
        func add(_ f: inout TrustBudget.Figures) {
            f.rows += count
            switch push {
            case .sent: f.sent += count
            case .updated: break
            case .suppressed(let reason): f.suppressed[reason, default: 0] += count
            }
        }
        add(&budget.kinds[kind, default: TrustBudget.Figures()])
        add(&budget.categories[category, default: TrustBudget.CategoryFigures()].figures)
        budget.days[day].rows += count
        budget.categories[category]!.days[day].rows += count
        if push == .sent {
            budget.days[day].sent += count
            budget.categories[category]!.days[day].sent += count
        }
    }

    mutating func stamps(kind: Kind, read: Bool, bucket: Int, count: Int) {
        if read {
            budget.kinds[kind, default: TrustBudget.Figures()].read += count
            budget.categories[kind.category]!.figures.read += count
            readBuckets[kind, default: [:]][bucket, default: 0] += count
        } else {
            budget.kinds[kind, default: TrustBudget.Figures()].seen += count
            budget.categories[kind.category]!.figures.seen += count
            seenBuckets[kind, default: [:]][bucket, default: 0] += count
        }
    }

    /// `sent` pushes and `held` ceiling holds to `person` in `category` at `at`.
    mutating func load(person: Int, category: Category, at: Int64, sent: Int, held: Int) {
        let day = dayIndex(at)
        if held > 0 { ceilingDays.insert(PersonDay(person: person, day: day)) }
        guard sent > 0 else { return }
        sentPerDay[PersonDay(person: person, day: day), default: 0] += sent
        recipients[category, default: []].insert(person)
        allRecipients.insert(person)
        dayRecipients[category, default: [:]][day, default: []].insert(person)
        allDayRecipients[day, default: []].insert(person)
    }

    mutating func withheld(kind: Kind, reason: Reason, count: Int) {
        budget.kinds[kind, default: TrustBudget.Figures()].suppressed[reason, default: 0] += count
        budget.categories[kind.category, default: TrustBudget.CategoryFigures()]
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

    /// One outbox entry read by itself: counted as the counters count it.
    /// `held`: for an entry quiet hours held, how long from its row to their end.
    mutating func entry(state: String, attempts: Int, reason: String?, toAnswer: Int64?, held: Int64? = nil) {
        delivery(outcome: "entries", reason: "", count: 1)
        let final = ["sent", "dead", "dropped"].contains(state)
        switch state {
        case "sent", "dead", "superseded": delivery(outcome: state, reason: "", count: 1)
        case "dropped": delivery(outcome: "dropped", reason: reason ?? "unknown", count: 1)
        default: break
        }
        if final && attempts > 1 { delivery(outcome: "retried", reason: "", count: 1) }
        if state == "sent", let toAnswer { delivery(outcome: "answered", reason: String(StampBuckets.bucket(max(0, toAnswer))), count: 1) }
        if state == "sent", let held { delivery(outcome: "quietHeld", reason: String(StampBuckets.bucket(max(0, held))), count: 1) }
    }

    /// `count` entries of one delivery counter.
    mutating func delivery(outcome: String, reason: String, count: Int) {
        switch outcome {
        case "entries": budget.delivery.entries += count
        case "sent": budget.delivery.sent += count
        case "dead": budget.delivery.failed += count
        case "superseded": budget.delivery.superseded += count
        case "dropped": budget.delivery.dropped[reason, default: 0] += count
        case "retried": budget.delivery.retried += count
        case "answered": if let bucket = Int(reason) { answerBuckets[bucket, default: 0] += count }
        case "quietHeld":
            budget.delivery.heldByQuietHours += count
            if let bucket = Int(reason) { heldBuckets[bucket, default: 0] += count }
        default: break
        }
    }

    /// The value at rank ⌈p·n⌉ of the sorted values (nearest rank); nil when there are none.
    static func percentile<T: Comparable>(_ values: [T], _ p: Double) -> T? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((p * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    /// The median (or the `p` quantile) of a histogram, nearest rank, as its bucket's upper edge.
    static func median(_ buckets: [Int: Int], p: Double = 0.5) -> Int64? {
        let total = buckets.values.reduce(0, +)
        guard total > 0 else { return nil }
        let rank = max(1, Int((p * Double(total)).rounded(.up)))
        var seen = 0
        for bucket in buckets.keys.sorted() {
            seen += buckets[bucket]!
            if seen >= rank { return StampBuckets.upper(bucket) }
        }
        return nil
    }

    func finish() -> TrustBudget {
        var b = budget
        var categorySeen: [Category: [Int: Int]] = [:], categoryRead: [Category: [Int: Int]] = [:]
        for (kind, buckets) in seenBuckets {
            b.kinds[kind]?.medianToSeen = Tally.median(buckets)
            categorySeen[kind.category, default: [:]].merge(buckets, uniquingKeysWith: +)
        }
        for (kind, buckets) in readBuckets {
            b.kinds[kind]?.medianToRead = Tally.median(buckets)
            categoryRead[kind.category, default: [:]].merge(buckets, uniquingKeysWith: +)
        }
        for (category, buckets) in categorySeen { b.categories[category]?.figures.medianToSeen = Tally.median(buckets) }
        for (category, buckets) in categoryRead { b.categories[category]?.figures.medianToRead = Tally.median(buckets) }
        for (category, people) in recipients { b.categories[category]?.recipients = people.count }
        for (category, days) in dayRecipients {
            for (day, people) in days { b.categories[category]?.days[day].recipients = people.count }
        }
        for (day, people) in allDayRecipients { b.days[day].recipients = people.count }
        b.recipients = allRecipients.count
        let loads = Array(sentPerDay.values)
        b.load.recipientDays = loads.count
        b.load.total = loads.reduce(0, +)
        b.load.median = Tally.percentile(loads, 0.5) ?? 0
        b.load.p99 = Tally.percentile(loads, 0.99) ?? 0
        b.load.max = loads.max() ?? 0
        b.load.atCeiling = ceilingDays.count
        let d = b.delivery
        b.delivery.pending = d.entries - d.sent - d.failed - d.superseded - d.dropped.values.reduce(0, +)
        b.delivery.medianToAnswer = Tally.median(answerBuckets)
        b.delivery.p99ToAnswer = Tally.median(answerBuckets, p: 0.99)
        b.delivery.medianHeld = Tally.median(heldBuckets)
        return b
    }
}
