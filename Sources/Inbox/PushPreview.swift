import Notifications
import Replica

/// A row's push as the lock screen shows it — iOS collapsed and expanded, the Android banner,
/// the grouped thread — drawn from the real APNs and FCM payloads, with the JSON beneath.
public enum PushPreview {
    /// - Parameter thread: the other rows of the same thread that were pushed, newest first:
    ///   the lock screen stacks them under this one.
    public static func destination(apns: JSON, fcm: JSON, width: Int, thread: [ReplicaRow] = []) -> Destination {
        let aps = apns["payload"]?["aps"] ?? .null
        let title = aps["alert"]?["title"]?.string ?? ""
        let body = aps["alert"]?["body"]?.string ?? ""
        let image = apns["payload"]?["contentImageUrl"]?.string
        let message = fcm["message"] ?? .null
        let face = message["data"]?["largeIconUrl"]?.string
        let inner = max(20, min(width - 8, 60))
        var lines: [(String, Role)] = []
        func box(_ heading: String, _ content: [(String, Role)]) {
            lines.append(("┌ \(heading) " + String(repeating: "─", count: max(0, inner - TextWidth.cells(heading) - 1)), .dim))
            for (text, role) in content { lines.append(("│ " + text, role)) }
            lines.append(("└" + String(repeating: "─", count: inner + 1), .dim))
            lines.append(("", .normal))
        }
        func wrap(_ text: String, lines count: Int) -> [String] {
            var out: [String] = [], rest = text
            while !rest.isEmpty && out.count < count {
                let piece = TextWidth.fit(rest, width: inner - 2)
                let taken = piece.hasSuffix("…") && out.count < count - 1 ? String(piece.dropLast()) : piece
                out.append(out.count == count - 1 ? TextWidth.fit(rest, width: inner - 2) : taken)
                rest = String(rest.dropFirst(taken.count))
            }
            return out
        }
        let badge = aps["badge"]?.int ?? 0
        box("iOS · collapsed", [("STEPO · now" + (image != nil ? "   [photo]" : ""), .dim), (title, .actor)]
            + wrap(body, lines: 2).map { ($0, .body) })
        box("iOS · long-press expanded", [(title, .actor)] + wrap(body, lines: 6).map { ($0, .body) }
            + (image.map { [("[ photo: \($0) ]", .dim)] } ?? []))
        box("Android · banner", [((face != nil ? "(face) " : "") + title + " · now", .actor)] + wrap(body, lines: 2).map { ($0, .body) }
            + (message["notification"]?["image"]?.string.map { [("[ BigPicture: \($0) ]", .dim)] } ?? []))
        // iOS stacks a thread's notifications under the newest; Android groups them by tag.
        var stack: [(String, Role)] = [(title, .actor)] + wrap(body, lines: 1).map { ($0, .body) }
        if !thread.isEmpty {
            stack.append(("\(thread.count) more notification\(thread.count == 1 ? "" : "s")", .dim))
            for row in thread.prefix(3) {
                stack.append(("  " + TextWidth.fit(row.title + ": " + row.body, width: inner - 4), .body))
            }
        }
        stack.append(("thread \(aps["thread-id"]?.string ?? "") · badge \(badge) · \(aps["interruption-level"]?.string ?? "")", .dim))
        box("Grouped · thread", stack)
        lines.append(("APNs request", .section))
        lines += apns.pretty.split(separator: "\n").map { (String($0), Role.body) }
        lines.append(("", .normal))
        lines.append(("FCM message", .section))
        lines += fcm.pretty.split(separator: "\n").map { (String($0), Role.body) }
        return Destination(title: "Push preview", lines: lines, focus: 0)
    }
}
