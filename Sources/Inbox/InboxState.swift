import Foundation
import Notifications
import Replica
import Wire

/// The Activity tab's sections, in order.
public enum Section: String, CaseIterable, Comparable, Sendable {
    case new = "New", today = "Today", thisWeek = "This week", earlier = "Earlier"

    public static func < (a: Section, b: Section) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// The section of a card: New when it holds a row that arrived after the last visit
    /// (`newAbove`), else by the local calendar day of its newest row: Today is today's date
    /// where the reader is, This week the six days before it.
    static func of(_ card: ListCard, newAbove: Int, now: Int64, zone: TimeZone) -> Section {
        if card.newest.id > newAbove { return .new }
        let days = localDay(now, zone) - localDay(card.newest.createdAt, zone)
        if days <= 0 { return .today }
        if days < 7 { return .thisWeek }
        return .earlier
    }

    /// The number of the local calendar day `at` falls on (days since 1970-01-01 there).
    static func localDay(_ at: Int64, _ zone: TimeZone) -> Int64 {
        let offset = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(at) / 1000))) * 1000
        let local = at + offset
        return local >= 0 ? local / Timestamp.day : (local - Timestamp.day + 1) / Timestamp.day
    }
}

/// One line of the list: a section header, a card (a row, or a step's rows stacked), a row
/// shown inside an expanded card, or the count of an expanded card's rows not shown.
public enum ListLine: Equatable, Sendable {
    case header(Section)
    case card(ListCard, section: Section)
    case member(ActivityRow, card: String)
    case more(card: String, count: Int)

    public var isSelectable: Bool {
        switch self {
        case .card, .member: return true
        case .header, .more: return false
        }
    }

    /// What the line stands for, kept across reloads: the selection follows it.
    var identity: String? {
        switch self {
        case .card(let card, _): return "card:" + card.key
        case .member(let row, _): return "row:\(row.id)"
        case .header, .more: return nil
        }
    }

    /// The row Enter opens: a card's newest, or the member itself.
    public var row: ActivityRow? {
        switch self {
        case .card(let card, _): return card.newest
        case .member(let row, _): return row
        case .header, .more: return nil
        }
    }
}

/// The part of the list held in memory: a run of cards, never the whole list. Paging by
/// cards keeps the first screen full however rows group, and memory flat at any size.
public struct ListWindow: Equatable, Sendable {
    public var cards: [ListCard] = []
    /// Whether `cards` starts at the list's newest card.
    public var atTop = true
    /// Whether `cards` ends at the list's oldest card.
    public var atEnd = true
    /// How many cards of the whole list come before `cards` (nil: not known).
    public var offset: Int? = 0
    /// How many cards the whole (unnarrowed) list has, as last counted.
    public var total: Int?
    /// Whether the first cards have arrived.
    public var loaded = false
    /// The lines drawn from the cards, their open threads and sections (see `Inbox.relist`).
    public internal(set) var lines: [ListLine] = []
    /// Index into `lines` of the selected line (a selectable one when any exists).
    public var selection = 0
    /// Index into `lines` of the first line on screen.
    public var top = 0

    /// Cards read at a time, and held at most.
    public static let page = 60
    public static let held = 240

    public var selectedLine: ListLine? { selection < lines.count ? lines[selection] : nil }
}

/// An expanded card's rows, as loaded.
public struct Members: Equatable, Sendable {
    public var rows: [ActivityRow]
    public var more: Int
}

/// The `/` filter: what was typed, and whether keys still type into it.
public struct FilterState: Equatable, Sendable {
    public var text: String
    public var typing: Bool

    /// What was typed, read (nil: nothing was); or why it cannot be.
    public var parsed: Result<RowFilter?, FilterError> { Result { () throws(FilterError) in try RowFilter.parse(text) } }

    /// The longest filter, in characters: a paste of pages is not a filter.
    public static let longest = 200

    /// Whether the filter narrows the list (or cannot be read, which shows nothing).
    public var narrows: Bool {
        if case .success(nil) = parsed { return false }
        return true
    }
}

/// A screen over the list.
public enum Screen: Equatable, Sendable {
    case destination(DestinationScreen)
    case help(top: Int)
    case settings(selection: Int)
    /// The trust budget (an admin's session): `InboxState.stats` holds what loaded.
    case stats(top: Int)
}

/// The Stats screen's content: loading, the figures, or why there are none.
public enum StatsContent: Equatable, Sendable {
    case loading
    case budget(TrustBudget)
    case unavailable(String)
}

/// A destination opened: what was asked, what loaded (nil while loading), the scroll.
public struct DestinationScreen: Equatable, Sendable {
    public var request: DestinationRequest
    public var destination: Destination?
    public var top: Int

    public init(request: DestinationRequest, destination: Destination? = nil, top: Int = 0) {
        self.request = request
        self.destination = destination
        self.top = top
    }
}

extension Confirmation {
    /// The question, as the footer asks it.
    public var words: String {
        switch self {
        case .decline(_, let name): return "Decline \(name)'s request? y / n"
        case let .markRead(count, filter):
            return filter == nil ? "Mark all \(Plural.count(count, "unread row")) read? y / n"
                : "Mark the \(Plural.count(count, "unread row")) this list shows read (the rest stay as they are)? y / n"
        }
    }
}

/// A yes/no question asked before an act that cannot be undone.
public enum Confirmation: Equatable, Sendable {
    /// Declining a person's follow request.
    case decline(user: String, name: String)
    /// Marking read the `count` unread rows the filter shows (every unread row, without one).
    case markRead(count: Int, filter: RowFilter?)
}

/// Everything the inbox shows, as a value.
public struct InboxState: Equatable, Sendable {
    public var width = 80
    public var height = 24
    public var now: Int64
    /// Where the reader is: what Today and This week mean.
    public var zone = TimeZone.current
    /// Rows above this id were unseen when the tab opened: the New section. Nil until opened.
    public var newAbove: Int?
    public var list = ListWindow()
    public var expanded: Set<String> = []
    public var members: [String: Members] = [:]
    public var filter: FilterState?
    /// The category tab (`1`–`5`; nil: all, `0`).
    public var tab: Category?
    /// Unread rows per category, as the replica last counted them (up to `unreadCounted`).
    public var unreadByCategory: [Category: Int] = [:]
    /// The screens over the list, innermost last; empty when the list is showing. q goes
    /// back exactly one.
    public var screens: [Screen] = []
    /// The theme drawn, by name.
    public var theme = ""
    public var sync = SyncLine(status: "", counts: ServerCounts(unseen: 0, unread: 0, stale: true))
    public var notice: String?
    public var confirming: Confirmation?
    /// What the Stats screen shows (`S`).
    public var stats: StatsContent = .loading
    /// The switches of the settings screen (nil until loaded).
    public var settings: Preferences?
    /// The reader's custom follow alerts, as the settings screen lists them.
    public var alerts: [AlertItem] = []
    /// Quiet hours as they are being typed on the settings screen (nil: not editing).
    public var quietDraft: String?
    /// Rows arrived while a screen covered the list: shown when it is back.
    public var listStale = false
    /// The help screen's lines for the reader's own key bindings (from their config).
    public var ownHelp: [String] = []
    /// A default key the reader bound to other work → the keys that do its work now ("": none),
    /// for the footer and the help (`InboxConfig.labels`).
    public var keyLabels: [String: String] = [:]
    /// Whether `o` can open a link here (`$BROWSER` is set); else it shows it.
    public var browser = false
    /// People whose request was answered, or who were followed back, in this session: their
    /// rows offer the act no more.
    public var answered: Set<String> = []
    /// What this session did to a person, in the words their row shows ("accepted").
    public var outcomes: [String: String] = [:]
    /// Rows arrived that were not drawn yet (the list filtered, scrolled away, or covered):
    /// stamped seen once the newest rows are on screen, and hinted at meanwhile.
    public var arrivedUnseen = false
    /// Where the selection should land when the next cards arrive (g and G far away).
    public var jump: ListRequest?
    /// The row opened before the tab (`--open ROW`): the list opens around it.
    public var landedOn: Int?

    public init(now: Int64) { self.now = now }

    /// Whether the list itself is on screen.
    public var showsList: Bool { screens.isEmpty }

    /// What the list shows: the filter typed, within the tab. Nil: every card.
    public var listFilter: RowFilter? {
        let typed = (try? filter?.parsed.get()) ?? nil
        guard let tab else { return typed }
        return typed?.within(tab) ?? RowFilter.category(tab)
    }

    /// Whether the list is narrowed (a filter or a tab): rows then stand alone.
    public var narrowed: Bool { filter?.narrows == true || tab != nil }

    /// Unread rows per category counted at most: "99+" says as much as an exact count.
    public static let unreadCounted = 99

    /// The category tabs, by key: `1`–`5`, and `0` for all.
    public static let tabs: [(key: Character, name: String, category: Category)] = [
        ("1", "Step-with", .stepWith), ("2", "Social", .social), ("3", "Engagement", .engagement),
        ("4", "Journeys", .journeys), ("5", "Stepo", .announcement),
    ]

    /// The rows of the list area (the screen less the header and footer).
    public var listHeight: Int { max(1, height - 3) }

    /// The settings screen's lines: the master switch, the four categories, and the custom
    /// follow alerts (set on a profile or a journey, listed beneath).
    public static let settingItems: [(item: SettingItem, name: String, about: String)] = [
        (.toggle(.all), "All notifications", "The master switch — off means off."),
        (.toggle(.stepWith), "Step-with alerts", "Hearts, comments and shares inside your 24-hour windows."),
        (.toggle(.social), "Social activity", "Follows, follow requests, acceptances, mentions."),
        (.toggle(.engagement), "Step engagement", "Hearts, comments and shares after the window, and replies to your comments."),
        (.toggle(.journeys), "Journey updates", "First steps, achievements, and new steps in journeys you follow."),
        (.quietHours, "Quiet hours", "Pushes wait until they end, one per thread; rows still arrive. Enter sets, x turns off."),
        (.customFollow, "Custom follow alerts", "Per person and per journey: b on a profile or a journey; x here removes one."),
    ]

    /// The zone quiet hours start from when the reader first sets them: the machine's, when it
    /// has an IANA name.
    public static let localZone: String = {
        let name = TimeZone.current.identifier
        return (try? QuietHours(from: "22:00", to: "07:00", zone: name)) != nil ? name : "UTC"
    }()

    /// The help screen: every key, one line each.
    public static let helpLines = [
        "j/k ↑/↓  move", "PgUp/PgDn  page", "g/G  first/last", "n Tab / N ⇧Tab  next / previous unread row",
        "Space →/←  expand/collapse a thread",
        "Enter  open the row", "i  on a step: who hearted and shared it", "a / d  accept / decline a follow request",
        "f  follow back a new follower", "b  on a profile or a journey: its alerts (all, default, off)", "/  filter: words, kind:A,B, from:NAME, category:NAME, is:unread, -TERM",
        "1–5 / 0  a category's rows (step-with, social, engagement, journeys, Stepo) / all",
        "A  mark read what the list shows (asks first)", "p  preview the row's push",
        "y / o  copy the row's link (OSC 52) / open it ($BROWSER) or show it",
        "r  sync now", "s  notification settings", "S  the trust budget: mute rate, pushes per kind (admin)", "t  next theme",
        "mouse  wheel scrolls, click selects, double click opens", "q Esc ←  back one screen / quit", "?  this help",
    ]
}

/// A line of the settings screen: a switch, or the custom follow alerts' heading.
public enum SettingItem: Equatable, Sendable {
    case toggle(Preferences.Switch)
    /// When pushes wait: set by typing `FROM-TO ZONE`.
    case quietHours
    case customFollow
}

/// One custom follow alert as the settings screen lists it.
public struct AlertItem: Equatable, Sendable {
    public var target: AlertTarget
    public var mode: AlertMode
    /// Who or what it is about, as the reader knows them.
    public var name: String

    public init(target: AlertTarget, mode: AlertMode, name: String) {
        self.target = target
        self.mode = mode
        self.name = name
    }
}
