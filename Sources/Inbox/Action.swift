import Notifications
import Replica
import Wire

/// A key, as the terminal reports it.
public enum Key: Hashable, Sendable {
    case up, down, pageUp, pageDown, home, end, enter, space, left, right, escape, backspace, tab, backTab
    case character(Character)
    /// The mouse, where the terminal reports it: the wheel, and a click on a screen row.
    case wheelUp, wheelDown
    case click(row: Int)
    case doubleClick(row: Int)
}

/// What happened: the inbox's actions are named after events, not commands. Everything that
/// changes the inbox's state is one of these, through `Inbox.reduce`.
public enum Action: Equatable, Sendable {
    case keyPressed(Key)
    /// Asked to land on one row (`stepo inbox --open ROW`): it opens, as Enter on it would.
    case openRow(ActivityRow)
    case resized(width: Int, height: Int)
    /// The tab opened on the replica: rows above `seenThrough` were unseen (the New section).
    case opened(seenThrough: Int)
    /// Cards of the list, for the place they were asked for.
    case listLoaded(ListPage)
    /// The rows of an expanded card (the newest `rows.count`, and how many more there are).
    case membersLoaded(card: String, rows: [ActivityRow], more: Int)
    /// A sync changed the replica; `unseenAbove` tells whether rows arrived past the marks.
    case replicaChanged(unseenArrived: Bool)
    case syncChanged(SyncLine)
    /// The clock moved (relative times, sections).
    case ticked(now: Int64)
    /// The destination built for `request` (nil: for the screen on top). An answer for a
    /// screen since closed is dropped: it never lands on the one opened after it.
    case destinationLoaded(Destination, for: DestinationRequest? = nil)
    /// A live copy of the open destination, from the server (or its word that it is gone).
    case destinationRefreshed(Destination, for: DestinationRequest? = nil)
    /// The replica could not be read for `request`: its screen, still loading, closes and the
    /// reader is told why (a read failure is never shown as content gone).
    case destinationFailed(String, for: DestinationRequest)
    case settingsLoaded(Preferences, alerts: [AlertItem] = [])
    /// The Stats screen's figures, or why the server gave none.
    case statsLoaded(StatsContent)
    /// The theme drawn now (at start, and after `t`).
    case themeChanged(String, announce: Bool = true)
    /// The server refused something this inbox asked for: the reader is told.
    case refused(String)
    /// Something the background could not do (offline, a failure): shown in the footer.
    case failed(String)
    /// How many cards the whole list has (for the position beside it).
    case cardsCounted(Int)
    /// How many unread rows a filtered list holds, for the question a bulk read asks.
    case unreadCounted(Int, filter: RowFilter)
}

/// Work for the outside world, run after the reducer: the reducer itself does no I/O.
public enum Effect: Equatable, Sendable {
    /// Read cards (or, with a filter, rows) of the list from the replica: `listLoaded`.
    case loadList(ListRequest, newAbove: Int, filter: RowFilter?)
    case loadMembers(card: String)
    /// Opening Activity, or rows arriving while it is drawn: one seen mark.
    case markAllSeen
    case markRead(Int)
    /// Every row held read (and seen): one mark.
    case markAllRead
    /// Every unread row of a card read: opening a card from its header.
    case markCardRead(String)
    /// Every unread row the filter lets through read: a bulk read under a filter.
    case markMatchingRead(RowFilter)
    /// Count the unread rows the filter lets through (`unreadCounted`).
    case countUnread(RowFilter)
    /// Build the destination from the replica (`destinationLoaded`), then ask the server for
    /// a live copy when it can answer (`destinationRefreshed`).
    case loadDestination(DestinationRequest)
    /// Queue an act on a person for the server (accept, decline, follow back).
    case act(Mutation.Action)
    case loadSettings
    /// Ask the server for the trust budget: `statsLoaded`.
    case loadStats
    case setPreference(Mutation.PreferenceChange)
    /// Quiet hours set, or turned off.
    case setQuietHours(QuietHoursChange)
    /// Set (or, with `default`, remove) a custom follow alert.
    case setAlert(AlertTarget, AlertMode)
    case nextTheme
    case syncNow
    /// Put `text` on the terminal's clipboard (OSC 52: it reaches the local one over SSH too).
    case copy(String)
    /// Open `url` in the reader's browser (`$BROWSER`), when they have one.
    case openLink(String)
    case quit
}

/// Which part of the list to read.
public enum ListRequest: Equatable, Sendable {
    /// The newest cards.
    case top
    /// The oldest cards (G).
    case bottom
    /// Cards older than the card whose newest row is `before`.
    case older(before: Int)
    /// Cards newer than the card whose newest row is `after`.
    case newer(after: Int)
    /// The cards around row `row`, with its line selected (`stepo inbox --open ROW`, then q).
    case around(row: Int)
}

/// Cards read from the replica, for where they go in the list.
public struct ListPage: Equatable, Sendable {
    public var request: ListRequest
    /// In list order (newest first).
    public var cards: [ListCard]
    /// Whether the replica has no cards beyond these in the direction asked.
    public var reachedEnd: Bool
    /// The cards' people whose request is answered, or who are followed back already.
    public var answered: Set<String> = []
    /// The line to select once the cards are drawn (`ListLine.identity`), when asked around a row.
    public var select: String?
    /// Unread rows per category (read with the list's top).
    public var unreadByCategory: [Category: Int]?
    /// How many cards come before these in the whole list (asked around a row).
    public var offset: Int?
    /// How many cards the whole list has (read with its top and its bottom).
    public var total: Int?

    public init(request: ListRequest, cards: [ListCard], reachedEnd: Bool) {
        self.request = request
        self.cards = cards
        self.reachedEnd = reachedEnd
    }
}

/// What a destination was opened for.
public enum DestinationRequest: Equatable, Sendable {
    /// Where a row's tap lands.
    case tap(ActivityRow)
    /// Who hearted and shared a step.
    case interactions(step: String)
    /// The row's push as the lock screen shows it.
    case push(ActivityRow)
}

/// The header's sync words and counts.
public struct SyncLine: Equatable, Sendable {
    public var status: String
    public var counts: ServerCounts
    /// A first sync under way: rows received, rows in all.
    public var progress: (received: Int, total: Int)?
    /// Why the server cannot be reached, while it cannot.
    public var unreachable: String?

    public init(status: String, counts: ServerCounts, progress: (received: Int, total: Int)? = nil, unreachable: String? = nil) {
        self.status = status
        self.counts = counts
        self.progress = progress
        self.unreachable = unreachable
    }

    public static func == (a: SyncLine, b: SyncLine) -> Bool {
        a.status == b.status && a.counts == b.counts && a.progress?.received == b.progress?.received
            && a.progress?.total == b.progress?.total && a.unreachable == b.unreachable
    }
}
