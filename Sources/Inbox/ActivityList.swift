import Notifications
import Replica

/// The Activity tab's sections, in order.
public enum Section: String, CaseIterable, Sendable {
    case new = "New", today = "Today", thisWeek = "This week", earlier = "Earlier"

    /// The section of a row created at `at`, seen now `now`, that was `isNew` when the tab opened.
    static func of(_ at: Int64, now: Int64, isNew: Bool) -> Section {
        if isNew { return .new }
        let age = now - at
        if age < Timestamp.day { return .today }
        if age < 7 * Timestamp.day { return .thisWeek }
        return .earlier
    }
}

/// One line of the list: a section header, a card (a row, or a thread of rows on one step),
/// or a row shown inside an expanded thread.
public enum ListLine: Equatable, Sendable {
    case header(Section)
    case card(Card)
    case member(rowId: Int, threadKey: String)

    public var isSelectable: Bool { if case .header = self { return false }; return true }
}

/// A card of the list: one row, or the rows of one step stacked together.
public struct Card: Equatable, Sendable {
    public var key: String
    public var rowIds: [Int]
    public var section: Section

    public var isThread: Bool { rowIds.count > 1 }
}

/// Builds the list: rows newest first, grouped into sections, rows of one step in one card
/// (per section). People rows and announcements always stand alone.
public enum ActivityList {
    public static func lines(rows: [ReplicaRow], newIds: Set<Int>, expanded: Set<String>, now: Int64) -> [ListLine] {
        var cards: [Card] = []
        var index: [String: Int] = [:]
        for row in rows {
            let section = Section.of(row.createdAt, now: now, isNew: newIds.contains(row.id))
            let thread = row.json["thread"]?.string ?? ""
            if thread.hasPrefix("step:") {
                let key = "\(section.rawValue)|\(thread)"
                if let at = index[key] { cards[at].rowIds.append(row.id); continue }
                index[key] = cards.count
                cards.append(Card(key: key, rowIds: [row.id], section: section))
            } else {
                cards.append(Card(key: "row:\(row.id)", rowIds: [row.id], section: section))
            }
        }
        var lines: [ListLine] = []
        for section in Section.allCases {
            let inSection = cards.filter { $0.section == section }
            guard !inSection.isEmpty else { continue }
            lines.append(.header(section))
            for card in inSection {
                lines.append(.card(card))
                if card.isThread && expanded.contains(card.key) {
                    lines += card.rowIds.map { .member(rowId: $0, threadKey: card.key) }
                }
            }
        }
        return lines
    }
}
