import Notifications
import Wire

/// The trust budget drawn as text for a terminal: a headline mute rate with its per-day
/// sparkline, a table per category and per kind, bars for the kinds that preceded mutes, the
/// push load and the delivery figures. Fitted to `width` columns; Unicode blocks, or ASCII
/// stand-ins where the locale has no UTF-8; colour, attributes only (NO_COLOR), or plain text.
///
/// Pure: `stepo stats` prints these lines, and the inbox's Stats screen shows them.
public struct StatsReport {
    public enum Style: Sendable { case plain, attributes, colour }

    public let budget: TrustBudget
    public let width: Int
    public let unicode: Bool
    public let style: Style

    public init(_ budget: TrustBudget, width: Int, unicode: Bool, style: Style) {
        self.budget = budget
        self.width = max(40, width)
        self.unicode = unicode
        self.style = style
    }

    public var lines: [String] {
        var out: [String] = []
        let b = budget
        let span = "\(Self.minute(b.since)) → \(Self.minute(b.until)) UTC"
        let spanText = span + " · by event time"
        if 14 + spanText.count <= width {
            out.append(bold("Trust budget") + "  " + dim(spanText))
        } else {
            out.append(bold("Trust budget"))
            out.append(dim(span))
        }
        out.append("")
        // The headline: the board's own metric.
        let rate = Self.percent(b.muteRate)
        let headline = b.recipients == 0
            ? (b.mutes == 0 ? "Mute rate  –   no one was pushed to in this span"
                            : "Mute rate  –   \(b.mutes) mute\(b.mutes == 1 ? "" : "s"), but no one was pushed to in this span")
            : "Mute rate  \(rate)   \(b.mutes) mute\(b.mutes == 1 ? "" : "s") among \(b.recipients) \(b.recipients == 1 ? "person" : "people") pushed to"
                + " (a switch turned off within 24 h of a push)"
        for (index, line) in Self.wrap(headline, width: width, indent: 11).enumerated() {
            out.append(b.mutes > 0 && index == 0 ? accent(line) : line)
        }
        let days = b.days
        if days.count > 1 {
            let spark = sparkline(days.map(\.muteRate), room: width - 21)
            out.append("  per day      " + spark + dim("  \(days.first!.date) … \(days.last!.date)"))
            let sent = sparkline(days.map { Double($0.sent) }, room: width - 21)
            out.append("  sent per day " + sent + dim("  peak \(days.map(\.sent).max() ?? 0)"))
        }
        out.append("")

        // Categories: every column where there is room; on a narrow screen the mute figures
        // stay and the others go, least needed first.
        let allColumns = ["rows", "sent", "held", "seen", "read", "people", "mutes", "rate"]
        let dropOrder = ["seen", "read", "held", "rows", "sent", "people"]
        var shown = allColumns
        while 14 + shown.count * 7 > width, let next = dropOrder.first(where: { shown.contains($0) }) { shown.removeAll { $0 == next } }
        let sparkRoom = width - 16 - shown.count * 7
        out.append(bold(Self.pad("By category", 14) + Self.columns(shown)) + (sparkRoom >= 4 ? bold("  sent/day") : ""))
        for category in TrustBudget.categoryOrder {
            guard let c = b.categories[category] else { continue }
            let f = c.figures
            let cells: [String: String] = [
                "rows": "\(f.rows)", "sent": "\(f.sent)", "held": "\(f.suppressed.values.reduce(0, +))",
                "seen": Self.percent(f.seenRate, rows: f.rows), "read": Self.percent(f.readRate, rows: f.rows),
                "people": "\(c.recipients)", "mutes": "\(c.mutes)", "rate": c.recipients == 0 ? "–" : Self.percent(c.muteRate),
            ]
            var line = "  " + Self.pad(Self.label(category), 12) + Self.columns(shown.map { cells[$0] ?? "" })
            if sparkRoom >= 4, c.days.count > 1 { line += "  " + sparkline(c.days.map { Double($0.sent) }, room: sparkRoom) }
            out.append(c.mutes > 0 ? accent(line) : line)
        }
        out.append("")

        // Kinds that had anything in the span.
        let kindColumns = width >= 59 ? ["rows", "sent", "held", "seen", "read"] : width >= 45 ? ["sent", "seen", "read"] : ["sent"]
        out.append(bold(Self.pad("By kind", 24) + Self.columns(kindColumns)
                        + (width >= 80 ? "  " + Self.pad("to seen", 8) + "  to read" : "")))
        var anyKind = false
        for kind in TrustBudget.kindOrder {
            guard let f = b.kinds[kind], f.rows > 0 || !f.suppressed.isEmpty else { continue }
            anyKind = true
            let cells: [String: String] = [
                "rows": "\(f.rows)", "sent": "\(f.sent)", "held": "\(f.suppressed.values.reduce(0, +))",
                "seen": Self.percent(f.seenRate, rows: f.rows), "read": Self.percent(f.readRate, rows: f.rows),
            ]
            var line = "  " + Self.pad(kind.rawValue, 22) + Self.columns(kindColumns.map { cells[$0] ?? "" })
            if width >= 80 {
                line += "  " + Self.pad(f.medianToSeen.map { "≤ " + Self.duration($0) } ?? "–", 8) + "  " + (f.medianToRead.map { "≤ " + Self.duration($0) } ?? "–")
            }
            out.append(line)
        }
        if !anyKind { out.append(dim("  no rows in this span")) }
        out.append("")

        // What came before the mutes.
        var preceding: [Kind: Int] = [:]
        for c in b.categories.values { for (kind, n) in c.mutedAfter { preceding[kind, default: 0] += n } }
        if !preceding.isEmpty {
            out.append(bold("Mutes came after") + dim("  (pushes of each kind in the 24 h before a mute)"))
            let top = preceding.values.max() ?? 1
            for kind in Kind.allCases {
                guard let n = preceding[kind] else { continue }
                out.append("  " + Self.pad(kind.rawValue, 22) + accent(bar(Double(n) / Double(top), room: max(4, min(40, width - 32)))) + " \(n)")
            }
            out.append("")
        }

        // Withheld, by reason.
        var reasons: [Reason: Int] = [:]
        for c in b.categories.values { for (r, n) in c.figures.suppressed { reasons[r, default: 0] += n } }
        let held = Reason.allCases.compactMap { r in reasons[r].map { "\(r.rawValue) \($0)" } }
        out += wrapped("Withheld", held.isEmpty ? ["nothing"] : held)

        let l = b.load
        out += wrapped("Pushes per person per day", l.recipientDays == 0 ? ["none sent"] :
            ["median \(l.median)", "p99 \(l.p99)", "max \(l.max)",
             "\(l.atCeiling) person-day\(l.atCeiling == 1 ? "" : "s") at the ceiling (\(QuietRules.dailyCeiling))"])

        let d = b.delivery
        if d.entries == 0 {
            out.append(bold("Delivery") + "  " + dim("no outbox entries (no devices registered for these rows)"))
        } else {
            var parts = ["\(d.entries) entries", "\(d.sent) sent"]
            let dropped = d.dropped.values.reduce(0, +)
            if dropped > 0 {
                parts.append("\(dropped) dropped (" + d.dropped.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")")
            }
            parts += ["\(d.failed) failed", "\(d.retried) retried"]
            if d.superseded > 0 { parts.append("\(d.superseded) superseded") }
            if d.pending > 0 { parts.append("\(d.pending) pending") }
            if d.heldByQuietHours > 0 {
                parts.append("\(d.heldByQuietHours) held by quiet hours" + (d.medianHeld.map { " (median wait \(Self.duration($0)))" } ?? ""))
            }
            if let median = d.medianToAnswer, let p99 = d.p99ToAnswer {
                parts.append("row → answer median \(Self.duration(median)), p99 \(Self.duration(p99))")
            }
            out += wrapped("Delivery", parts)
        }
        return out.map { fit(unicode ? $0 : Self.ascii($0)) }
    }

    /// The report's few non-ASCII signs, for a terminal without UTF-8 (the blocks of the charts
    /// have their own ASCII levels).
    static func ascii(_ line: String) -> String {
        var out = ""
        for c in line {
            switch c {
            case "–": out += "-"
            case "≤": out += "<="
            case "…": out += "..."
            case "·": out += "-"
            case "→": out += "->"
            default: out.append(c)
            }
        }
        return out
    }

    // MARK: Drawing

    private static let levels: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
    private static let asciiLevels: [Character] = ["_", ".", ":", "-", "=", "+", "*", "#"]

    /// One character per value (values folded by summing into at most `room` cells), scaled to
    /// the largest; zero is the lowest block.
    func sparkline(_ values: [Double], room: Int) -> String {
        guard !values.isEmpty, room > 0 else { return "" }
        var cells = values
        if values.count > room {
            let per = (values.count + room - 1) / room
            cells = stride(from: 0, to: values.count, by: per).map { values[$0..<min($0 + per, values.count)].reduce(0, +) }
        }
        let top = cells.max() ?? 0
        let glyphs = unicode ? Self.levels : Self.asciiLevels
        return String(cells.map { v -> Character in
            guard top > 0, v > 0 else { return glyphs[0] }
            return glyphs[max(1, min(7, Int((v / top * 7).rounded(.up))))]
        })
    }

    /// A horizontal bar `fraction` of `room` cells long (eighths in Unicode).
    func bar(_ fraction: Double, room: Int) -> String {
        let eighths = Int((max(0, min(1, fraction)) * Double(room) * 8).rounded())
        guard unicode else { return String(repeating: "#", count: max(1, eighths / 8)) }
        let partial: [String] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
        let text = String(repeating: "█", count: eighths / 8) + partial[eighths % 8]
        return text.isEmpty ? "▏" : text
    }


    /// `text` broken at spaces into lines of at most `width` characters; lines after the first
    /// indented by `indent`.
    public static func wrap(_ text: String, width: Int, indent: Int = 0) -> [String] {
        var lines: [String] = [], line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            let prefix = lines.isEmpty ? "" : String(repeating: " ", count: indent)
            if !line.isEmpty, (prefix + line).count + 1 + word.count > width {
                lines.append(prefix + line)
                line = String(word)
            } else {
                line += (line.isEmpty ? "" : " ") + word
            }
        }
        lines.append((lines.isEmpty ? "" : String(repeating: " ", count: indent)) + line)
        return lines
    }

    /// `head` in bold, then the parts joined by " · ", wrapped to the width (continuation
    /// lines indented under the first part).
    private func wrapped(_ head: String, _ parts: [String]) -> [String] {
        let indent = head.count + 2
        var lines: [String] = [], current = "", currentWidth = indent
        for part in parts {
            let separator = current.isEmpty ? "" : " · "
            if !current.isEmpty, currentWidth + separator.count + part.count > width {
                lines.append(current)
                current = ""
                currentWidth = indent
            }
            current += (current.isEmpty ? "" : " · ") + part
            currentWidth += (current == part ? 0 : 3) + part.count
        }
        lines.append(current)
        return lines.enumerated().map { index, line in
            (index == 0 ? bold(head) + "  " : String(repeating: " ", count: indent)) + line
        }
    }

    /// Cuts a line to the width (counting visible characters, not escape sequences).
    private func fit(_ line: String) -> String {
        var visible = 0, out = "", escaping = false
        for c in line {
            if c == "\u{1B}" { escaping = true }
            if escaping {
                out.append(c)
                if c.isLetter { escaping = false }
                continue
            }
            guard visible < width else { continue }
            out.append(c)
            visible += 1
        }
        return out
    }

    private func bold(_ text: String) -> String { style == .plain ? text : "\u{1B}[1m\(text)\u{1B}[0m" }
    private func dim(_ text: String) -> String { style == .plain ? text : "\u{1B}[2m\(text)\u{1B}[0m" }
    /// Tangerine where there is colour; bold under NO_COLOR.
    private func accent(_ text: String) -> String {
        switch style {
        case .plain: return text
        case .attributes: return "\u{1B}[1m\(text)\u{1B}[0m"
        case .colour: return "\u{1B}[38;5;208m\(text)\u{1B}[0m"
        }
    }

    // MARK: Words

    static func label(_ category: Category) -> String {
        switch category {
        case .stepWith: return "Stepped with"
        case .social: return "Social"
        case .engagement: return "Engagement"
        case .journeys: return "Journeys"
        case .customFollow: return "Custom alerts"
        case .announcement: return "Stepo news"
        }
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// Right-aligned cells of 7 columns.
    static func columns(_ cells: [String]) -> String {
        cells.map { String(repeating: " ", count: max(1, 7 - $0.count)) + $0 }.joined()
    }

    static func percent(_ x: Double, rows: Int = 1) -> String {
        guard rows > 0 else { return "–" }
        let p = x * 100
        if p == 0 || p >= 10 { return "\(Int(p.rounded()))%" }
        return "\((p * 10).rounded() / 10)%"
    }

    static func duration(_ ms: Int64) -> String {
        let s = Double(ms) / 1000
        if s < 60 { return s < 10 ? "\((s * 10).rounded() / 10) s" : "\(Int(s.rounded())) s" }
        if s < 3600 { return "\(Int((s / 60).rounded())) min" }
        if s < 86_400 { return "\((s / 360).rounded() / 10) h" }
        return "\((s / 8640).rounded() / 10) d"
    }

    static func minute(_ at: Int64) -> String {
        let text = Timestamp.format(at)  // 2026-11-01T09:30:00Z
        return String(text.prefix(10)) + " " + String(text.dropFirst(11).prefix(5))
    }
}
