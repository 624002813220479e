import Notifications
import Replica

/// A row's push as the lock screen shows it — iOS collapsed and expanded, the Android banner,
/// the grouped thread — drawn only from the APNs and FCM payloads the server builds (a private
/// actor's push shows masked here exactly as on a phone), with the JSON beneath.
public enum PushPreviewView {
    static func lines(_ page: PushPage, width: Int) -> [TextLine] {
        if let reason = page.unavailable {
            return [TextLine("No push to preview", .section), .blank]
                + TextWidth.wrap(reason, width: max(20, width - 4), lines: 6).map { TextLine($0, .body) }
        }
        let aps = page.apns["payload"]?["aps"] ?? .null
        let title = aps["alert"]?["title"]?.string ?? ""
        let body = aps["alert"]?["body"]?.string ?? ""
        let image = page.apns["payload"]?["contentImageUrl"]?.string
        let message = page.fcm["message"] ?? .null
        let face = message["data"]?["largeIconUrl"]?.string
        let inner = max(20, min(width - 8, 60))
        var lines: [TextLine] = []
        func box(_ heading: String, _ content: [TextLine]) {
            lines.append(TextLine("┌ \(heading) " + String(repeating: "─", count: max(0, inner - TextWidth.cells(heading) - 1)), .dim))
            for line in content { lines.append(TextLine("│ " + line.text, line.role)) }
            lines.append(TextLine("└" + String(repeating: "─", count: inner + 1), .dim))
            lines.append(.blank)
        }
        func wrap(_ text: String, lines count: Int) -> [TextLine] {
            TextWidth.wrap(text, width: inner - 2, lines: count).map { TextLine($0, .body) }
        }
        let badge = aps["badge"]?.int ?? 0
        box("iOS · collapsed", [TextLine("STEPO · now" + (image != nil ? "   [photo]" : ""), .dim), TextLine(title, .actor)]
            + wrap(body, lines: 2))
        box("iOS · long-press expanded", [TextLine(title, .actor)] + wrap(body, lines: 6)
            + (image.map { [TextLine("[ photo: \($0) ]", .dim)] } ?? []))
        box("Android · banner", [TextLine((face != nil ? "(face) " : "") + title + " · now", .actor)] + wrap(body, lines: 2)
            + (message["notification"]?["image"]?.string.map { [TextLine("[ BigPicture: \($0) ]", .dim)] } ?? []))
        // iOS stacks a thread's notifications under the newest; Android groups them by tag.
        var stack = [TextLine(title, .actor)] + wrap(body, lines: 1)
        if !page.stacked.isEmpty {
            stack.append(TextLine("\(page.stacked.count) more notification\(page.stacked.count == 1 ? "" : "s")", .dim))
            for other in page.stacked.prefix(3) {
                stack.append(TextLine("  " + TextWidth.fit(other.title + ": " + other.body, width: inner - 4), .body))
            }
        }
        stack.append(TextLine("thread \(aps["thread-id"]?.string ?? "") · badge \(badge) · \(aps["interruption-level"]?.string ?? "")", .dim))
        box("Grouped · thread", stack)
        lines.append(TextLine("APNs request", .section))
        lines += page.apns.pretty.split(separator: "\n").map { TextLine(String($0), .body) }
        lines.append(.blank)
        lines.append(TextLine("FCM message", .section))
        lines += page.fcm.pretty.split(separator: "\n").map { TextLine(String($0), .body) }
        return lines
    }
}
