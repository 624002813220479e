import Notifications
import Replica

/// Draws the Activity tab into a grid: header, list, footer. Pure: a state in, cells out.
public enum ActivityView {
    public static let minimumWidth = 40
    public static let minimumHeight = 10

    public static func render(_ state: InboxState) -> Grid {
        var grid = Grid(width: state.width, height: state.height)
        guard state.width >= minimumWidth, state.height >= minimumHeight else {
            grid.put("Window too small (need \(minimumWidth)×\(minimumHeight))", x: 0, y: 0, role: .status)
            return grid
        }
        header(state, &grid)
        if case .activity = state.screen {
            list(state, &grid)
            footer(state, &grid)
        } else {
            destination(state, &grid)
        }
        return grid
    }

    static func header(_ state: InboxState, _ grid: inout Grid) {
        grid.paint(row: 0, role: .header)
        var x = grid.put(" Activity", x: 0, y: 0, role: .title) + 1
        let badge = state.counts.unseen > 0 ? " \(state.counts.unseen) " : " 0 "
        x += grid.put(badge + (state.counts.stale ? "(stale) " : ""), x: x, y: 0, role: .badge)
        let status = state.syncStatus
        let room = state.width - x - 1
        if room > 0 {
            let text = TextWidth.fit(status, width: room)
            grid.put(text, x: state.width - TextWidth.cells(text) - 1, y: 0, role: .status)
        }
    }

    static func list(_ state: InboxState, _ grid: inout Grid) {
        let lines = state.lines
        let height = Inbox.listHeight(state)
        guard !lines.isEmpty else {
            grid.put("  Nothing here yet: when someone steps with you, it shows up here.", x: 0, y: 2, role: .dim)
            return
        }
        for (offset, index) in (state.top..<min(lines.count, state.top + height)).enumerated() {
            let y = 1 + offset
            draw(lines[index], state: state, y: y, &grid)
            if index == state.selection { grid.paint(row: y, role: .selected) }
        }
    }

    static func draw(_ line: ListLine, state: InboxState, y: Int, _ grid: inout Grid) {
        switch line {
        case .header(let section):
            grid.put(" \(section.rawValue)", x: 0, y: y, role: .section)
        case .card(let card):
            let rows = card.rowIds.compactMap(state.row)
            guard let newest = rows.first else { return }
            let unseen = rows.filter { state.newIds.contains($0.id) }.count
            let isNew = unseen > 0
            if isNew { grid.paint(row: y, role: .newRow) }
            let title: String
            let body: String
            if card.isThread {
                let people = Array(Set(rows.map(\.title)))
                title = people.count > 1 ? "\(newest.title) and \(people.count - 1) other\(people.count > 2 ? "s" : "")" : newest.title
                // The step's caption: from a row whose copy quotes it (a heart, share or step),
                // else the newest row's own words.
                let captionRow = rows.first { !["steppedWithComment", "comment", "reply", "mention"].contains($0.kind) } ?? newest
                let caption = state.rowCaption(captionRow)
                body = "· \(caption)" + (unseen > 0 ? "  (\(unseen) new)" : "") + (state.expanded.contains(card.key) ? "  ▾" : "  ▸")
            } else {
                title = newest.title
                body = newest.body
            }
            row(title: title, body: body, at: newest.createdAt, dot: isNew, deleted: rows.allSatisfy(\.deleted),
                carries: card.isThread ? facepile(rows) : carries(newest), state: state, y: y, &grid)
        case .member(let id, _):
            guard let member = state.row(id) else { return }
            row(title: "   " + member.title, body: member.body, at: member.createdAt, dot: state.newIds.contains(id),
                deleted: member.deleted, carries: carries(member), state: state, y: y, &grid)
        }
    }

    /// What a row carries, as a small mark: the step photo.
    static func carries(_ row: ReplicaRow) -> String {
        row.json["media"]?["image"]?.string != nil ? "▣" : ""
    }

    /// A thread's facepile: the initials of up to four people.
    static func facepile(_ rows: [ReplicaRow]) -> String {
        var seen: [String] = []
        for row in rows where !seen.contains(row.title) { seen.append(row.title) }
        let initials = seen.prefix(4).map { name in
            String(name.split(separator: " ").prefix(2).compactMap(\.first))
        }
        return "(" + initials.joined(separator: " ") + (seen.count > 4 ? " +" : "") + ")"
    }

    static func row(title: String, body: String, at: Int64, dot: Bool, deleted: Bool, carries: String = "",
                    state: InboxState, y: Int, _ grid: inout Grid) {
        let time = (carries.isEmpty ? "" : carries + " ") + RelativeTime.text(at, now: state.now)
        let timeWidth = TextWidth.cells(time)
        var x = 1
        x += grid.put(dot ? "●" : " ", x: x, y: y, role: .dot) + 1
        let room = state.width - x - timeWidth - 2
        let used = grid.put(TextWidth.fit(title, width: max(0, room)), x: x, y: y, role: deleted ? .deleted : .actor)
        x += used + 1
        if room - used - 1 > 0 {
            let text = TextWidth.fit(body, width: room - used - 1)
            // Deleted content is struck through: a combining long stroke over each character.
            grid.put(deleted ? ActivityView.struck(text) : text, x: x, y: y, role: deleted ? .deleted : .body)
        }
        grid.put(time, x: state.width - timeWidth - 1, y: y, role: .time)
    }

    static func destination(_ state: InboxState, _ grid: inout Grid) {
        let y0 = 1
        if case .settings = state.screen {
            grid.put(" Notification settings", x: 0, y: y0, role: .section)
            for (i, item) in InboxState.settingItems.enumerated() {
                let y = y0 + 2 + i * 2
                let on = state.settings?[item.key]
                let box = item.key == "customFollow" ? "[–]" : (on == nil ? "[…]" : (on! ? "[x]" : "[ ]"))
                if i == state.settingsSelection { grid.paint(row: y, role: .selected) }
                grid.put("  \(box) \(item.name)", x: 0, y: y, role: i == state.settingsSelection ? .selected : .actor)
                grid.put("      " + TextWidth.fit(item.about, width: state.width - 7), x: 0, y: y + 1, role: .dim)
            }
            putFooter(footerLine("j/k move  Space toggle  q back", state), state, &grid)
            return
        }
        if case .help = state.screen {
            let height = Inbox.listHeight(state) - 1
            let lines = InboxState.helpLines.dropFirst(state.destinationTop).prefix(max(0, height))
            for (i, line) in lines.enumerated() {
                grid.put("  " + TextWidth.fit(line, width: state.width - 3), x: 0, y: y0 + 1 + i, role: .body)
            }
        } else if let destination = state.destination {
            grid.put(" " + destination.title, x: 0, y: y0, role: .section)
            let height = Inbox.listHeight(state) - 1
            for (offset, index) in (state.destinationTop..<min(destination.lines.count, state.destinationTop + height)).enumerated() {
                let line = destination.lines[index]
                if line.role == .selected { grid.paint(row: y0 + 1 + offset, role: .selected) }
                grid.put("  " + TextWidth.fit(line.text, width: state.width - 3), x: 0, y: y0 + 1 + offset, role: line.role)
            }
        } else {
            grid.put("  Opening…", x: 0, y: y0 + 1, role: .dim)
        }
        var keys = state.destination?.title == "Step" ? "j/k scroll  i hearts and shares  q back" : "j/k scroll  q back"
        // A profile offering its buttons takes the keys of the row that opened it.
        if state.destination?.lines.contains(where: { $0.role == .badge }) == true, case .destination(let id) = state.screen {
            keys = actionKeys(state.row(id)) + keys
        }
        putFooter(footerLine(keys, state), state, &grid)
    }

    /// The keys a row offers: a/d on a follow request, f on a new follower.
    static func actionKeys(_ row: ReplicaRow?) -> String {
        switch row?.kind {
        case "followRequest": return "a accept  d decline  "
        case "newFollower": return "f follow back  "
        default: return ""
        }
    }

    /// The footer's words: the question waiting for y/n, else `keys` after the last notice.
    static func footerLine(_ keys: String, _ state: InboxState) -> String {
        if let question = state.confirming { return "Decline \(question.name)'s request? y / n" }
        if let notice = state.notice { return notice + "  ·  " + keys }
        return keys
    }

    static func putFooter(_ text: String, _ state: InboxState, _ grid: inout Grid) {
        let y = state.height - 1
        grid.paint(row: y, role: .footer)
        grid.put(" " + TextWidth.fit(text, width: state.width - 2), x: 0, y: y, role: .footer)
    }

    /// `text` with U+0336 after each character: struck through in any UTF-8 terminal.
    static func struck(_ text: String) -> String {
        text.map { String($0) + "\u{0336}" }.joined()
    }

    static func footer(_ state: InboxState, _ grid: inout Grid) {
        var keys = "j/k move  Enter open  r sync  ? help  q quit"
        if let id = state.selectedRowIds.first {
            keys = actionKeys(state.row(id)) + (state.selectedRowIds.count > 1 ? "Space expand  " : "") + keys
        }
        let text: String
        if state.typingFilter {
            text = "/" + (state.filter ?? "") + "▏  Enter keep  Esc clear  (text, or kind:NAME)"
        } else if state.confirming == nil, state.notice == nil, let filter = state.filter, !filter.isEmpty {
            text = "filter /\(filter) (Esc clears)  ·  " + keys
        } else {
            text = footerLine(keys, state)
        }
        putFooter(text, state, &grid)
    }
}

extension InboxState {
    /// A step row's caption, for a thread card: from the row's preview after the colon.
    func rowCaption(_ row: ReplicaRow) -> String {
        guard let colon = row.body.firstIndex(of: ":") else { return row.body }
        return String(row.body[row.body.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
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
