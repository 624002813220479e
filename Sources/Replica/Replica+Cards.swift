import Foundation
import Notifications
import SQLite
import Wire

/// One card of the Activity list: every row about one step stacked (what arrived since the
/// last visit apart from the rest), or a row alone.
public struct ListCard: Equatable, Sendable {
    /// The card's place in the list (`CardPart`'s key): a step's card, or one side of it.
    public var key: String
    public var newest: ActivityRow
    public var rows: Int
    /// People among the card's rows (a batch counts its members).
    public var people: Int
    /// The names of up to four of them, newest first: the facepile. The first names the card.
    public var faces: [String]
    /// The step's caption, for a step's card.
    public var caption: String?
    /// Rows that arrived after `newAbove` (counted up to `ListCard.newRowsCounted`).
    public var newRows: Int
    public var allDeleted: Bool
    /// Rows not read yet (counted up to `ListCard.unreadCounted`): the card stands unread
    /// while it holds one, collapsed or not.
    public var unreadRows: Int
    /// Whether one of the unread rows arrived after `newAbove`: the card carries the dot.
    public var newUnread: Bool

    public var isThread: Bool { rows > 1 }

    public init(key: String, newest: ActivityRow, rows: Int, people: Int, faces: [String], caption: String?, newRows: Int,
                allDeleted: Bool, unreadRows: Int? = nil, newUnread: Bool? = nil) {
        self.unreadRows = unreadRows ?? (newest.readAt == nil ? 1 : 0)
        self.newUnread = newUnread ?? (newest.readAt == nil && newRows > 0)
        self.key = key
        self.newest = newest
        self.rows = rows
        self.people = people
        self.faces = faces
        self.caption = caption
        self.newRows = newRows
        self.allDeleted = allDeleted
    }

    /// A row of a filtered list, standing alone.
    public init(single row: ActivityRow, newAbove: Int) {
        self.init(key: "row:\(row.id)", newest: row, rows: 1, people: 1, faces: [row.title], caption: nil,
                  newRows: row.id > newAbove ? 1 : 0, allDeleted: row.deleted)
    }

    /// New rows counted at most, per card: "999+ new" is as telling as an exact count.
    public static let newRowsCounted = 999

    /// Rows one Enter on a card reads at most, newest first: a card of ten thousand unread
    /// hearts is read a bounded step at a time (each read is a stamp the server keeps).
    public static let readAtOnce = 200

    /// Unread rows counted at most, per card: enough to know whether one Enter reads them all.
    public static let unreadCounted = readAtOnce + 1
}

/// Which rows of a stored card a list card holds: all of them, those that arrived after the
/// last visit (the New section's card), or those before it (the card in the section of its
/// newest). Its key is the stored card's, with the side after a space (ids hold no spaces).
public struct CardPart: Equatable, Sendable {
    public var card: String
    /// Rows with an id above this.
    public var above: Int?
    /// Rows with an id up to this.
    public var through: Int?

    public init(card: String, above: Int? = nil, through: Int? = nil) {
        self.card = card
        self.above = above
        self.through = through
    }

    public init(key: String) {
        let parts = key.split(separator: " ", maxSplits: 1).map(String.init)
        card = parts[0]
        if parts.count == 2, parts[1].hasPrefix(">"), let n = Int(parts[1].dropFirst()) {
            above = n
        } else if parts.count == 2, parts[1].hasPrefix("<="), let n = Int(parts[1].dropFirst(2)) {
            through = n
        }
    }

    public var key: String {
        if let above { return card + " >\(above)" }
        if let through { return card + " <=\(through)" }
        return card
    }

    /// The part as SQL over `rows` of the card: a condition and its values.
    var condition: (String, [SQLBindable]) {
        ("card = ? AND id > ? AND id <= ?", [card, above ?? Int.min, through ?? Int.max])
    }
}

/// The list's cards, a page at a time: a step's card splits at the last visit (`newAbove`)
/// into what arrived since (in New) and the rest (in the section of its own newest row), so a
/// step has one card in each section. A page is a range of positions — a card's newest row
/// — however the rows group.
extension Replica {
    /// A stored card as the list reads it.
    struct StoredCard {
        var key: String
        var newest: Int
        var oldest: Int
        var rows: Int
        var people: Int
        var batchPeople: Int
    }

    private static let cardColumns = "key, newest, oldest, rows, people, batch_people"

    private static func storedCard(_ r: Row) -> StoredCard {
        StoredCard(key: r.string(0), newest: r.int(1), oldest: r.int(2), rows: r.int(3), people: r.int(4), batchPeople: r.int(5))
    }

    /// A card placed in the list: the part shown, at the position of its newest row.
    struct Placed {
        var stored: StoredCard
        var part: CardPart
        var position: Int
    }

    /// The cards the last visit splits: more than one row, some after it and some before,
    /// each with the newest row before it (the position of its older part).
    private func splitCards(newAbove: Int) throws -> [Placed] {
        let split = try db.query("""
            SELECT \(Replica.cardColumns) FROM cards INDEXED BY cards_threads
            WHERE rows > 1 AND newest > ? AND oldest <= ?
            """, [newAbove, newAbove], Replica.storedCard)
        return try split.compactMap { card in
            guard let settled = try db.scalar("SELECT max(id) FROM rows WHERE card = ? AND id <= ?", card.key, newAbove) else { return nil }
            return Placed(stored: card, part: CardPart(card: card.key, through: newAbove), position: settled)
        }
    }

    /// A stored card placed by its newest row: whole, or its newer part when the visit splits it.
    private static func placed(_ card: StoredCard, newAbove: Int) -> Placed {
        let splits = card.rows > 1 && card.newest > newAbove && card.oldest <= newAbove
        return Placed(stored: card, part: CardPart(card: card.key, above: splits ? newAbove : nil), position: card.newest)
    }

    /// Cards older than `before` (a position; the newest when nil), newest first.
    public func cards(before: Int? = nil, limit: Int, newAbove: Int) throws -> [ListCard] {
        try locked {
            let bound = before ?? Int.max
            var found = try db.query("SELECT \(Replica.cardColumns) FROM cards WHERE newest < ? ORDER BY newest DESC LIMIT ?",
                                     [bound, limit], Replica.storedCard).map { Replica.placed($0, newAbove: newAbove) }
            found += try splitCards(newAbove: newAbove).filter { $0.position < bound }
            return try found.sorted { $0.position > $1.position }.prefix(limit).compactMap { try card($0, newAbove: newAbove) }
        }
    }

    /// Cards newer than `after` (a position), oldest first: the cards just above a page.
    public func cards(after: Int, limit: Int, newAbove: Int) throws -> [ListCard] {
        try locked {
            var found = try db.query("SELECT \(Replica.cardColumns) FROM cards WHERE newest > ? ORDER BY newest LIMIT ?",
                                     [after, limit], Replica.storedCard).map { Replica.placed($0, newAbove: newAbove) }
            found += try splitCards(newAbove: newAbove).filter { $0.position > after }
            return try found.sorted { $0.position < $1.position }.prefix(limit).compactMap { try card($0, newAbove: newAbove) }
        }
    }

    /// The list card holding a row: its key and its position.
    public func card(holding row: Int, newAbove: Int) throws -> (key: String, position: Int)? {
        try locked {
            guard let stored = try db.first("SELECT \(Replica.cardColumns) FROM cards WHERE key = (SELECT card FROM rows WHERE id = ?)",
                                            [row], Replica.storedCard) else { return nil }
            let whole = Replica.placed(stored, newAbove: newAbove)
            guard whole.part.above != nil, row <= newAbove else { return (whole.part.key, whole.position) }
            guard let settled = try db.scalar("SELECT max(id) FROM rows WHERE card = ? AND id <= ?", stored.key, newAbove) else {
                return nil
            }
            return (CardPart(card: stored.key, through: newAbove).key, settled)
        }
    }

    /// How many cards stand above `position` (counted up to `limit`).
    public func cardsAbove(_ position: Int, newAbove: Int, limit: Int) throws -> Int {
        try locked {
            let whole = try db.scalar("SELECT count(*) FROM (SELECT 1 FROM cards WHERE newest > ? LIMIT ?)", position, limit) ?? 0
            return min(limit, whole + (try splitCards(newAbove: newAbove).filter { $0.position > position }.count))
        }
    }

    /// How many cards the list has: a count of an index (and the cards the visit splits), for
    /// the position shown beside the list.
    public func cardCount(newAbove: Int) throws -> Int {
        try locked { (try db.scalar("SELECT count(*) FROM cards") ?? 0) + (try splitCards(newAbove: newAbove).count) }
    }

    /// How many rows a list card holds.
    public func rowCount(inCard key: String) throws -> Int {
        try locked {
            let part = CardPart(key: key)
            if part.above == nil, part.through == nil { return try db.scalar("SELECT rows FROM cards WHERE key = ?", key) ?? 0 }
            let (condition, values) = part.condition
            return try db.first("SELECT count(*) FROM rows WHERE \(condition)", values) { $0.int(0) } ?? 0
        }
    }

    /// The rows of a list card, newest first (at most `limit`).
    public func rows(inCard key: String, limit: Int = 500) throws -> [ActivityRow] {
        try locked {
            let (condition, values) = CardPart(key: key).condition
            return try query("SELECT \(Replica.rowColumns) FROM rows WHERE \(condition) ORDER BY id DESC LIMIT ?", values + [limit])
        }
    }

    /// Rows read to count a part's people, at most: past it, the whole card's count stands.
    private static let peopleScanned = 2000

    private func card(_ placed: Placed, newAbove: Int) throws -> ListCard? {
        let stored = placed.stored, part = placed.part
        guard let newest = try query("SELECT \(Replica.rowColumns) FROM rows WHERE id = ?", [placed.position]).first else { return nil }
        let (condition, values) = part.condition
        let whole = part.above == nil && part.through == nil
        // How many rows the part holds: the stored count, less the other side's.
        var rows = stored.rows
        var newer = 0
        if !whole {
            newer = try db.first("SELECT count(*) FROM rows WHERE card = ? AND id > ?", [stored.key, newAbove]) { $0.int(0) } ?? 0
            rows = part.above != nil ? newer : stored.rows - newer
        }
        guard rows > 1 else {
            // A row alone (or a part of one row): as it stands.
            var card = ListCard(key: part.key, newest: newest, rows: 1, people: 1, faces: [try personName(newest)], caption: nil,
                                newRows: newest.id > newAbove ? 1 : 0, allDeleted: newest.deleted)
            card.unreadRows = newest.readAt == nil ? 1 : 0
            card.newUnread = card.unreadRows > 0 && card.newRows > 0
            return card
        }
        // The newest distinct people, from the newest rows (a person may have many): read
        // until four are found, so a card of a million rows costs what a card of ten does.
        var faces: [String] = []
        try db.cached("""
            SELECT title, kind, (SELECT name FROM users WHERE id = rows.actor) FROM rows WHERE \(condition) ORDER BY id DESC LIMIT 200
            """).bind(values).forEach { r in
            let name = r.string(1) == Kind.batch.rawValue ? (r.optionalString(2) ?? Replica.firstPerson(r.string(0))) : r.string(0)
            if !faces.contains(name) { faces.append(name) }
            return faces.count < 4
        }
        var caption: String?
        if let step = newest.subject.step ?? newest.tap.stepId {
            caption = try db.first("SELECT caption FROM steps WHERE id = ?", [step]) { $0.string(0) }
        }
        let people = whole ? stored.people + stored.batchPeople : try partPeople(stored, part, newAbove: newAbove, newer: newer)
        // New: all of it (its newer side, or a whole card that came since), or none (a card the
        // visit would cross is split, never whole).
        let newRows = part.above != nil || (part.through == nil && stored.oldest > newAbove) ? min(rows, ListCard.newRowsCounted) : 0
        let allDeleted = try db.first("SELECT NOT EXISTS (SELECT 1 FROM rows WHERE \(condition) AND deleted = 0)", values) { $0.bool(0) } ?? false
        // Unread: no stamp of its own and past every read mark.
        let readThrough = try markIndex().readThrough
        let unreadRows = try db.first("""
            SELECT count(*) FROM (SELECT 1 FROM rows INDEXED BY rows_unread WHERE \(condition) AND id > ? AND read_at IS NULL LIMIT ?)
            """, values + [readThrough, ListCard.unreadCounted]) { $0.int(0) } ?? 0
        var newUnread = false
        if unreadRows > 0, newest.id > newAbove {
            newUnread = try db.first("""
                SELECT EXISTS (SELECT 1 FROM rows INDEXED BY rows_unread WHERE \(condition) AND id > ? AND read_at IS NULL)
                """, values + [max(readThrough, newAbove)]) { $0.bool(0) } ?? false
        }
        return ListCard(key: part.key, newest: newest, rows: rows, people: max(people, faces.count), faces: faces,
                        caption: caption, newRows: newRows, allDeleted: allDeleted, unreadRows: unreadRows, newUnread: newUnread)
    }

    /// The people of one side of a split card: the newer side's counted from its rows (up to
    /// `peopleScanned`); the older side's, the whole card's less those only on the newer side.
    private func partPeople(_ stored: StoredCard, _ part: CardPart, newAbove: Int, newer: Int) throws -> Int {
        guard newer <= Replica.peopleScanned else { return stored.people + stored.batchPeople }
        let persons = try db.query("""
            SELECT DISTINCT coalesce(actor, title) FROM rows WHERE card = ? AND id > ? AND kind <> 'batch'
            """, [stored.key, newAbove]) { $0.string(0) }
        let newerBatchPeople = try db.first("""
            SELECT coalesce(sum(max(coalesce(members, 1), 1)), 0) FROM rows WHERE card = ? AND id > ? AND kind = 'batch'
            """, [stored.key, newAbove]) { $0.int(0) } ?? 0
        if part.above != nil { return persons.count + newerBatchPeople }
        var onlyNewer = 0
        for person in persons {
            let before = try db.first("""
                SELECT EXISTS (SELECT 1 FROM rows WHERE card = ? AND id <= ? AND kind <> 'batch' AND coalesce(actor, title) = ?)
                """, [stored.key, newAbove, person]) { $0.bool(0) } ?? false
            if !before { onlyNewer += 1 }
        }
        return max(1, stored.people - onlyNewer + stored.batchPeople - newerBatchPeople)
    }

    /// The name of a row's person: a batch's newest member (its title counts the others).
    private func personName(_ row: ActivityRow) throws -> String {
        guard row.kind == .batch, let actor = row.actor else { return row.title }
        return try db.first("SELECT name FROM users WHERE id = ?", [actor]) { $0.string(0) } ?? Replica.firstPerson(row.title)
    }

    /// "Jules and 6 others" → "Jules": a batch's title names its newest member first.
    static func firstPerson(_ title: String) -> String {
        guard let range = title.range(of: #" and \d+ others?$"#, options: .regularExpression) else { return title }
        return String(title[..<range.lowerBound])
    }
}
