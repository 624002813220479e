import Notifications
import Replica
import Wire

/// Draws the inbox into a grid: header, the list or the screen over it, footer. Pure: a
/// state in, cells out.
public enum ActivityView {
    public static let minimumWidth = 40
    public static let minimumHeight = 10

    public static func render(_ state: InboxState) -> Grid {
        var grid = Grid(width: state.width, height: state.height)
        guard state.width >= minimumWidth, state.height >= minimumHeight else {
            // Word by word over the lines there are: all of it shows at 20×5.
            var y = 0, line = ""
            for word in "Window too small: need \(minimumWidth)×\(minimumHeight)".split(separator: " ") {
                if !line.isEmpty, TextWidth.cells(line) + 1 + TextWidth.cells(String(word)) > state.width {
                    grid.put(TextWidth.fit(line, width: state.width), x: 0, y: y, role: .status)
                    y += 1
                    line = ""
                }
                line += (line.isEmpty ? "" : " ") + word
            }
            grid.put(TextWidth.fit(line, width: state.width), x: 0, y: y, role: .status)
            return grid
        }
        header(state, &grid)
        switch state.screens.last {
        case nil:
            list(state, &grid)
            tabBar(state, &grid)
            putFooter(listFooter(state), state, &grid)
        case .settings(let selection)?:
            settings(state, selection, &grid)
        case .help(let top)?:
            let keys = InboxState.helpLines.compactMap { relabel($0, state.keyLabels, separator: "  ") }
            text(" Keys", keys.map { TextLine($0, .body) } + state.ownHelp.map { TextLine($0, .actor) }, top: top, state, &grid)
            putFooter(footerLine("j/k scroll  q back", state), state, &grid)
        case .destination(let screen)?:
            destination(screen, state, &grid)
        case .stats(let top)?:
            text(" Trust budget", statsLines(state).map { TextLine($0, .body) }, top: top, state, &grid)
            putFooter(footerLine("j/k scroll  r reload  q back", state), state, &grid)
        }
        return grid
    }

    /// The Stats screen's lines: the report of `stepo stats` fitted to the screen, or what
    /// stands in for it.
    static func statsLines(_ state: InboxState) -> [String] {
        switch state.stats {
        case .loading: return ["Loading…"]
        case .unavailable(let why): return StatsReport.wrap(why, width: state.width - 3)
        case .budget(let budget):
            // The report's own title is the screen's: its first line keeps only the span.
            var lines = StatsReport(budget, width: state.width - 3, unicode: !Terminal.asciiOnly, style: .plain).lines
            if let first = lines.first, first.hasPrefix("Trust budget") {
                lines[0] = String(first.dropFirst("Trust budget".count).drop { $0 == " " })
            }
            return lines
        }
    }

    static func header(_ state: InboxState, _ grid: inout Grid) {
        // The bar's role under every cell, and its tint too: drawn with attributes only (mono,
        // NO_COLOR), the reverse fill then runs unbroken under the title, the badge and the words.
        grid.paint(row: 0, role: .header)
        grid.tint(row: 0, .header)
        var x = grid.put(" Activity", x: 0, y: 0, role: .title) + 1
        x += grid.put(" \(state.sync.counts.unseen) " + (state.sync.counts.stale ? "(stale) " : ""), x: x, y: 0, role: .badge)
        // Beside the badge (unseen), what is still unread, as a mail reader shows it.
        if state.width >= 60 { x += grid.put("  \(state.sync.counts.unread) unread", x: x, y: 0, role: .status) }
        var status = state.sync.status
        if let progress = state.sync.progress, progress.total > 0 {
            status = "syncing \(min(100, progress.received * 100 / progress.total))%"
        }
        // The category shown, when one is: the tab bar above the footer names them all.
        if state.showsList, let tab = state.tab, let name = InboxState.tabs.first(where: { $0.category == tab })?.name,
           state.width - x - TextWidth.cells(status) > TextWidth.cells(name) + 6 {
            x += grid.put("  · \(name)", x: x, y: 0, role: .title)
        }
        let room = state.width - x - 1
        if room > 0 {
            let text = TextWidth.fit(status, width: room)
            grid.put(text, x: state.width - TextWidth.cells(text) - 1, y: 0, role: .status)
        }
    }

    /// The tab bar, on the line between the list and the footer: each category with its key and
    /// its unread count, the one shown lit.
    static func tabBar(_ state: InboxState, _ grid: inout Grid) {
        let y = state.height - 2
        guard y > state.listHeight, let tabs = tabStrip(state, width: state.width - 2) else { return }
        var x = 1
        for (text, active) in tabs {
            x += grid.put(text, x: x, y: y, role: active ? .title : .dim) + 2
        }
    }

    /// The tabs as the bar shows them ("1 Step-with 3"), the one chosen marked; in shorter
    /// words when the full ones do not fit `width`, only the chosen one when neither does.
    static func tabStrip(_ state: InboxState, width: Int) -> [(String, Bool)]? {
        func count(_ category: Category) -> String {
            guard let n = state.unreadByCategory[category], n > 0 else { return "" }
            return n > InboxState.unreadCounted ? " \(InboxState.unreadCounted)+" : " \(n)"
        }
        let short = ["Step-with": "With", "Engagement": "Engage", "Journeys": "Journ"]
        let shorter = ["Step-with": "With", "Social": "Soc", "Engagement": "Eng", "Journeys": "Jrn"]
        for names in [InboxState.tabs.map(\.name), InboxState.tabs.map { short[$0.name] ?? $0.name },
                      InboxState.tabs.map { shorter[$0.name] ?? $0.name }] {
            var tabs = [("0 All", state.tab == nil)]
            tabs += InboxState.tabs.enumerated().map { index, tab in
                ("\(tab.key) \(names[index])\(count(tab.category))", state.tab == tab.category)
            }
            if tabs.map({ TextWidth.cells($0.0) + 2 }).reduce(0, +) <= width { return tabs }
        }
        guard let tab = state.tab, let chosen = InboxState.tabs.first(where: { $0.category == tab }) else { return nil }
        let text = "\(chosen.key) \(chosen.name)\(count(tab))"
        return TextWidth.cells(text) <= width ? [(text, true)] : nil
    }

    static func list(_ state: InboxState, _ grid: inout Grid) {
        let lines = state.list.lines
        guard !lines.isEmpty else {
            for (offset, line) in TextWidth.wrap(emptyWords(state), width: max(10, state.width - 4), lines: max(1, state.listHeight - 2)).enumerated() {
                grid.put("  " + line, x: 0, y: 2 + offset, role: .dim)
            }
            return
        }
        let end = min(lines.count, state.list.top + state.listHeight)
        // Scrolled down, the first line holds the current section's heading, so a page always
        // says which section it is in (the line under it stays out of sight until scrolled to).
        let sticky = Inbox.stickySection(state)
        if let sticky { draw(.header(sticky), state: state, y: 1, &grid) }
        for (offset, index) in (state.list.top..<end).enumerated() where sticky == nil || offset > 0 {
            let y = 1 + offset
            draw(lines[index], state: state, y: y, &grid)
            if index == state.list.selection {
                // The selection shows twice: its bar, and a cursor in the first column that no
                // theme, colour or background can hide.
                grid.tint(row: y, .selected)
                grid.put(ActivityView.cursor, x: 0, y: y, role: .dot)
            }
        }
    }

    /// The selected line's mark in the first column.
    public static let cursor = "›"

    /// What an empty list says: a filter it cannot read, no match, a first sync under way, or
    /// nothing yet.
    static func emptyWords(_ state: InboxState) -> String {
        if let filter = state.filter, !filter.text.isEmpty {
            if case .failure(let error) = filter.parsed { return error.description + "  (Esc clears the filter)" }
            let within = state.tab.map { tab in " in " + (InboxState.tabs.first { $0.category == tab }?.name ?? "") } ?? ""
            return "No rows match /\(filter.text)\(within): every term must hold, names and words are searched, case and accents aside  (Esc clears)"
        }
        if let tab = state.tab, state.list.loaded {
            return "Nothing in \(InboxState.tabs.first { $0.category == tab }?.name ?? "this tab") yet  (0 shows every row)"
        }
        if !state.list.loaded { return "Opening…" }
        if let reason = state.sync.unreachable {
            return "Cannot sync with the server, so nothing is here yet: \(reason). It tries again by itself; r tries now."
        }
        if let progress = state.sync.progress, progress.received < progress.total { return "Syncing your activity…" }
        return "Nothing here yet: when someone steps with you, it shows up here."
    }

    static func draw(_ line: ListLine, state: InboxState, y: Int, _ grid: inout Grid) {
        let newAbove = state.newAbove ?? Int.max
        switch line {
        case .header(let section):
            grid.put(" \(section.rawValue)", x: 0, y: y, role: .section)
        case let .card(card, _):
            let newest = card.newest
            let isNew = card.newRows > 0
            if isNew { grid.tint(row: y, .newRow) }
            let title: String
            let body: String
            var marks = carries(newest)
            if card.isThread {
                // Named by its newest person (a batch's title counts its own others).
                let name = card.faces.first ?? newest.title
                let others = card.people - 1
                title = others > 0 ? "\(name) and \(others) other\(others > 1 ? "s" : "")" : name
                let caption = card.caption ?? newest.body
                let fresh = card.newRows >= ListCard.newRowsCounted ? "\(card.newRows)+ new" : "\(card.newRows) new"
                body = "· \(caption)" + (card.newRows > 0 && card.newRows < card.rows ? "  (\(fresh))" : "")
                    + (state.expanded.contains(card.key) ? "  ▾" : "  ▸")
                marks = facepile(card.faces, people: card.people)
            } else {
                title = newest.title
                body = newest.body
            }
            // A card stands unread while any row in it is (collapsed or not): ● when one of
            // those arrived since the last visit, ○ otherwise; its members show their own.
            let standing: Standing = card.unreadRows == 0 ? .read : (card.newUnread ? .new : .unread)
            row(title: title, body: body + outcome(newest, state), at: newest.createdAt, state: standing,
                deleted: card.allDeleted, carries: marks, y: y, now: state.now, width: state.width, &grid)
        case let .member(member, _):
            let isNew = member.id > newAbove
            if isNew { grid.tint(row: y, .newRow) }
            row(title: "   " + member.title, body: member.body, at: member.createdAt,
                state: Standing(isNew: isNew, read: member.readAt != nil), deleted: member.deleted,
                carries: carries(member), y: y, now: state.now, width: state.width, &grid)
        case let .more(_, count):
            grid.put("      … \(count) more: open the step (i) to see everyone", x: 0, y: y, role: .dim)
        }
    }

    /// What this session did about a request or a follow, after the row's words: the row
    /// changes at once when it is answered.
    static func outcome(_ row: ActivityRow, _ state: InboxState) -> String {
        guard row.kind == .followRequest || row.kind == .newFollower, let actor = row.actor,
              let done = state.outcomes[actor] else { return "" }
        return " · " + done
    }

    /// What a row carries, as small marks: the step photo; a recognition's tier chip.
    static func carries(_ row: ActivityRow) -> String {
        var marks: [String] = []
        // A batch: the newest member's initial and how many more people, as a facepile would.
        if row.kind == .batch, let members = row.members {
            let initial = row.title.first.map(String.init) ?? "?"
            marks.append(members > 1 ? "(\(initial) +\(members - 1))" : "(\(initial))")
        }
        if (row.kind == .recognitionEarned || row.kind == .recognitionReceived), let tier = row.subject.tier {
            marks.append("[\(tier)]")
        }
        if row.media.image != nil { marks.append("▣") }
        return marks.joined(separator: " ")
    }

    /// A thread's facepile: the initials of up to four people, + when there are more.
    static func facepile(_ names: [String], people: Int) -> String {
        let initials = names.prefix(4).map { name in String(name.split(separator: " ").prefix(2).compactMap(\.first)) }
        return "(" + initials.joined(separator: " ") + (people > 4 ? " +" : "") + ")"
    }

    /// How a row stands: arrived since the last visit (New, with the dot), not opened yet, or
    /// read. Reading wins, as in a mail reader: a New row that was opened loses its dot at once,
    /// and keeps the New section's tint until the tab is next opened.
    enum Standing {
        case new, unread, read

        init(isNew: Bool, read: Bool) { self = read ? .read : (isNew ? .new : .unread) }
    }

    /// One list row: the mark (● New, ○ unread, nothing once read), the name (bold until read),
    /// the copy, what it carries, the time.
    static func row(title: String, body: String, at: Int64, state standing: Standing, deleted: Bool, carries: String,
                    y: Int, now: Int64, width: Int, _ grid: inout Grid) {
        let time = (carries.isEmpty ? "" : carries + " ") + RelativeTime.text(at, now: now)
        let timeWidth = TextWidth.cells(time)
        var x = 1
        let mark: (String, Role) = switch standing {
        case .new: ("●", .dot)
        case .unread: ("○", .time)
        case .read: (" ", .normal)
        }
        x += grid.put(mark.0, x: x, y: y, role: mark.1) + 1
        let room = width - x - timeWidth - 2
        let nameRole: Role = deleted ? .deleted : (standing == .read ? .body : .actor)
        let used = grid.put(TextWidth.fit(title, width: max(0, room)), x: x, y: y, role: nameRole)
        x += used + 1
        if room - used - 1 > 0 {
            let text = TextWidth.fit(body, width: room - used - 1)
            // Deleted content is struck through: a combining long stroke over each character; a
            // terminal without UTF-8 cannot draw one, so there it says so in words.
            let shown = !deleted ? text : Terminal.asciiOnly ? TextWidth.fit("[deleted] " + body, width: room - used - 1) : struck(text)
            grid.put(shown, x: x, y: y, role: deleted ? .deleted : (standing == .read ? .dim : .body))
        }
        grid.put(time, x: width - timeWidth - 1, y: y, role: .time)
    }

    /// `text` with U+0336 after each character: struck through in any UTF-8 terminal.
    static func struck(_ text: String) -> String {
        text.map { String($0) + "\u{0336}" }.joined()
    }

    // MARK: Screens over the list

    /// The settings screen's lines, each with the selection index it belongs to (nil: none):
    /// a switch and (when the window is tall enough) what it covers, then the custom alerts.
    static func settingsLines(_ state: InboxState, roomy: Bool) -> [(text: String, role: Role, item: Int?)] {
        var lines: [(String, Role, Int?)] = []
        for (i, item) in InboxState.settingItems.enumerated() {
            let box: String
            var value = ""
            switch item.item {
            case .customFollow: box = "[–]"
            case .toggle(let name): box = state.settings.map { $0[name] ? "[x]" : "[ ]" } ?? "[…]"
            case .quietHours:
                box = "[–]"
                if let draft = state.quietDraft {
                    value = "  › " + Preview.visible(draft) + "▏"
                } else if let settings = state.settings {
                    value = settings.quietHours.map { "  \($0.fromText)–\($0.toText) \($0.zone)" } ?? "  off"
                }
            }
            lines.append(("  \(box) \(item.name)" + value, .actor, i))
            if roomy { lines.append(("      " + item.about, .dim, nil)) }
        }
        if state.alerts.isEmpty { lines.append(("      None yet.", .dim, nil)) }
        for (i, alert) in state.alerts.enumerated() {
            let kind: String
            switch alert.target {
            case .person: kind = "person"
            case .journey: kind = "journey"
            }
            lines.append(("      \(DestinationView.bell) \(alert.mode.rawValue.padding(toLength: 4, withPad: " ", startingAt: 0))  \(alert.name) (\(kind))",
                          .body, InboxState.settingItems.count + i))
        }
        return lines
    }

    /// The settings screen: it scrolls to keep the selection in view, and drops the lines that
    /// explain each switch when the window is too short for them — never drawing on its footer.
    static func settings(_ state: InboxState, _ selection: Int, _ grid: inout Grid) {
        let y0 = 1
        grid.put(" Notification settings", x: 0, y: y0, role: .section)
        let room = max(1, state.height - 1 - (y0 + 2))  // the lines between the title and the footer
        let roomy = InboxState.settingItems.count * 2 + max(1, state.alerts.count) <= room
        let lines = settingsLines(state, roomy: roomy)
        let selected = lines.firstIndex { $0.item == selection } ?? 0
        let top = max(0, min(selected - room + 1 + (roomy ? 1 : 0), lines.count - room))
        for (offset, line) in lines.dropFirst(top).prefix(room).enumerated() {
            let y = y0 + 2 + offset
            let isSelected = line.item == selection
            if isSelected { grid.tint(row: y, .selected) }
            grid.put(TextWidth.fit(line.text, width: state.width - 1), x: 0, y: y, role: isSelected ? .selected : line.role)
        }
        let footer: String
        if state.quietDraft != nil {
            footer = "type FROM-TO ZONE (22:00-07:00 Europe/Paris), empty: off  Enter set  Esc cancel"
        } else if selection >= InboxState.settingItems.count {
            footer = "j/k move  x remove  q back"
        } else if InboxState.settingItems[selection].item == .quietHours {
            footer = "j/k move  Enter set  x off  q back"
        } else {
            footer = "j/k move  Space toggle  q back"
        }
        putFooter(footerLine(footer, state), state, &grid)
    }

    /// A scrolling text screen under a title.
    static func text(_ title: String, _ lines: [TextLine], top: Int, _ state: InboxState, _ grid: inout Grid) {
        let y0 = 1
        grid.put(title, x: 0, y: y0, role: .section)
        let height = state.listHeight - 1
        let top = min(max(0, top), max(0, lines.count - 1))  // content may have shrunk under the scroll
        for (offset, index) in (top..<min(lines.count, top + height)).enumerated() {
            let line = lines[index]
            if line.role == .selected { grid.tint(row: y0 + 1 + offset, .selected) }
            let x = grid.put("  ", x: 0, y: y0 + 1 + offset, role: line.role)
            grid.put(TextWidth.fit(line.text, width: state.width - 3), x: x, y: y0 + 1 + offset, role: line.role, link: line.link)
        }
    }

    static func destination(_ screen: DestinationScreen, _ state: InboxState, _ grid: inout Grid) {
        guard let destination = screen.destination else {
            grid.put("  Opening…", x: 0, y: 2, role: .dim)
            putFooter(footerLine("q back", state), state, &grid)
            return
        }
        text(" " + destination.title, DestinationView.lines(destination, width: state.width, now: state.now), top: screen.top,
             state, &grid)
        var keys = "j/k scroll  q back"
        switch destination {
        case .step: keys = "j/k scroll  i hearts and shares  q back"
        case .journey(let page) where !page.isOwn: keys = "j/k scroll  b alerts  q back"
        case .profile(let page):
            if page.person != nil { keys = "j/k scroll  b alerts  q back" }
            switch page.openAction {
            case .acceptDecline: keys = "a accept  d decline  " + keys
            case .followBack: keys = "f follow back  " + keys
            case .none: break
            }
        case .journey, .interactions, .link, .push, .gone: break
        }
        putFooter(footerLine(keys, state), state, &grid)
    }

    // MARK: Footer

    /// One key hint of a footer, and how much it matters (0 most): a narrow window keeps the
    /// ones that matter most, in their order, rather than cutting the line at its end.
    struct Hint: Equatable {
        var text: String
        var rank: Int
        init(_ text: String, _ rank: Int) { self.text = text; self.rank = rank }
    }

    /// The hints that fit `width`, most important first chosen, shown in their own order.
    static func fit(_ hints: [Hint], width: Int) -> String {
        var kept = Set<Int>()
        var used = 0
        for (index, hint) in hints.enumerated().sorted(by: { ($0.element.rank, $0.offset) < ($1.element.rank, $1.offset) }) {
            let cost = TextWidth.cells(hint.text) + (kept.isEmpty ? 0 : 2)
            guard used + cost <= width else { continue }
            kept.insert(index)
            used += cost
        }
        return hints.indices.filter(kept.contains).map { hints[$0].text }.joined(separator: "  ")
    }

    /// The keys a row offers: a/d on a follow request not yet answered, f on a new follower
    /// not yet followed back (this session's acts count: `state.answered`); none on a row
    /// withheld, whose person is out of reach.
    static func actionHints(_ row: ActivityRow?, _ state: InboxState) -> [Hint] {
        guard let row, let actor = row.actor, !row.withheld, !state.answered.contains(actor) else { return [] }
        switch row.kind {
        case .followRequest: return [Hint("a accept", 1), Hint("d decline", 1)]
        case .newFollower: return [Hint("f follow back", 1)]
        case .steppedWithHeart, .steppedWithComment, .steppedWithShare, .heart, .comment, .share, .reply, .mention,
             .followRequestAccepted, .firstStep, .achievement, .newStep, .recognitionReceived, .recognitionEarned,
             .announcement, .batch: return []
        }
    }

    static func listHints(_ state: InboxState) -> [Hint] {
        var hints: [Hint] = []
        if let filter = state.filter, !filter.typing {
            hints.append(Hint("filter /\(TextWidth.fit(filter.text, width: 30)) (Esc clears)", 0))
        }
        if let tab = state.tab, let name = InboxState.tabs.first(where: { $0.category == tab })?.name {
            hints.append(Hint("\(name) only (0 all)", 0))
        }
        // New rows came while the top was not on screen: say so, and how to see them.
        if state.arrivedUnseen && !Inbox.showsNewest(state) {
            hints.append(Hint(state.filter == nil ? "↑ new rows: g" : "new rows: Esc clears the filter", 0))
        }
        if let line = state.list.selectedLine {
            hints += actionHints(line.row, state)
            if case .card(let card, _) = line, card.isThread { hints.append(Hint("Space expand", 5)) }
        }
        hints += [Hint("j/k move", 4), Hint("Enter open", 2), Hint("n next unread", 6), Hint("/ filter", 7), Hint("r sync", 8),
                  Hint("? help", 3), Hint("q quit", 1)]
        if let position = position(state) { hints.append(Hint(position, 2)) }
        return hints
    }

    /// Where the selection is in the list: "12/106" (cards), or "#12" in a narrowed list,
    /// whose length is not counted.
    static func position(_ state: InboxState) -> String? {
        guard state.list.loaded, let offset = state.list.offset else { return nil }
        let lines = state.list.lines
        guard state.list.selection < lines.count, lines[state.list.selection].isSelectable else { return nil }
        let cards = lines[...state.list.selection].filter { if case .card = $0 { return true }; return false }.count
        let at = offset + max(1, cards)
        if let total = state.list.total, !state.narrowed { return "\(at)/\(max(total, at))" }
        return "#\(at)"
    }

    static func listFooter(_ state: InboxState) -> String {
        if let filter = state.filter, filter.typing {
            return "/" + filter.text + "▏  Enter keep  Esc clear  (words, kind:A,B, from:NAME, category:NAME, is:unread, -TERM)"
        }
        return footerLine(listHints(state), state)
    }

    /// The footer's words: the question waiting for y/n; else the last notice, then the hints
    /// that fit beside it (all of the notice when it needs the whole line).
    static func footerLine(_ hints: [Hint], _ state: InboxState) -> String {
        if let question = state.confirming { return question.words }
        // The reader's bindings name the keys: a key bound elsewhere is not offered for its old work.
        let hints = hints.compactMap { hint in relabel(hint.text, state.keyLabels).map { Hint($0, hint.rank) } }
        let width = max(10, state.width - 2)
        guard let notice = state.notice else { return fit(hints, width: width) }
        let room = width - TextWidth.cells(notice) - 5
        let keys = room > 8 ? fit(hints.filter { $0.rank <= 3 }, width: room) : ""
        return keys.isEmpty ? notice : notice + "  ·  " + keys
    }

    /// Plain key hints (a text screen's), all of equal weight but the last, "q back", kept first.
    static func footerLine(_ keys: String, _ state: InboxState) -> String {
        let parts = keys.components(separatedBy: "  ")
        return footerLine(parts.enumerated().map { Hint($0.element, $0.offset == parts.count - 1 ? 0 : 1 + $0.offset) }, state)
    }

    /// `text` (keys, then after `separator` what they do) with each key the reader bound to
    /// other work replaced by the keys that do this work now (`labels`: "" when none does: the
    /// line goes).
    static func relabel(_ text: String, _ labels: [String: String], separator: String = " ") -> String? {
        guard !labels.isEmpty, let split = text.range(of: separator) else { return text }
        var changed = false
        let groups = text[..<split.lowerBound].split(separator: " ").compactMap { group -> String? in
            let keys = group == "/" ? ["/"] : group.split(separator: "/").map(String.init)
            let mapped = keys.compactMap { key -> String? in
                guard let label = labels[key] else { return key }
                changed = true
                return label.isEmpty ? nil : label
            }
            return mapped.isEmpty ? nil : mapped.joined(separator: "/")
        }
        guard changed else { return text }
        guard !groups.isEmpty else { return nil }
        return groups.joined(separator: " ") + text[split.lowerBound...]
    }

    static func putFooter(_ text: String, _ state: InboxState, _ grid: inout Grid) {
        let y = state.height - 1
        grid.paint(row: y, role: .footer)
        grid.put(" " + TextWidth.fit(text, width: state.width - 2), x: 0, y: y, role: .footer)
    }
}

/// now, 2m, 3h, 2d, then a date.
public enum RelativeTime {
    public static func text(_ at: Int64, now: Int64) -> String {
        let seconds = max(0, (now - at) / 1000)
        if seconds < 60 { return "now" }
        if seconds < 3600 { return "\(seconds / 60)m" }
        if seconds < 86_400 { return "\(seconds / 3600)h" }
        if seconds < 7 * 86_400 { return "\(seconds / 86_400)d" }
        let date = Timestamp.format(at)
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let month = Int(date.dropFirst(5).prefix(2)) ?? 1
        let day = Int(date.dropFirst(8).prefix(2)) ?? 1
        return "\(months[month - 1]) \(day)" + (date.prefix(4) == Timestamp.format(now).prefix(4) ? "" : " \(date.prefix(4))")
    }
}
