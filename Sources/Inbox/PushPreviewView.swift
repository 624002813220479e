import Notifications
import Replica
import Wire

/// A row's push as the lock screen shows it — iOS collapsed and expanded, the Android banner,
/// the grouped thread — drawn only from the APNs and FCM payloads the server builds (a private
/// actor's push shows masked here exactly as on a phone), with the JSON beneath.
public enum PushPreviewView {
    static func lines(_ page: PushPage, width: Int) -> [TextLine] {
        guard let apns = page.apns, let fcm = page.fcm else {
            return [TextLine("No push to preview", .section), .blank]
                + TextWidth.wrap(page.unavailable ?? "", width: max(20, width - 4), lines: 6).map { TextLine($0, .body) }
        }
        let title = apns.title
        let body = apns.body
        let image = apns.image
        let face = fcm.face
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
        let badge = apns.badge
        box("iOS · collapsed", [TextLine("STEPO · now" + (image != nil ? "   [photo]" : ""), .dim), TextLine(title, .actor)]
            + wrap(body, lines: 2))
        box("iOS · long-press expanded", [TextLine(title, .actor)] + wrap(body, lines: 6)
            + (image.map { [TextLine("[ photo: \($0) ]", .dim)] } ?? []))
        // A batch's faces stack where a single push shows one.
        let faces = fcm.facepile.map { String(repeating: "(face)", count: min(4, $0.count)) + " " } ?? (face != nil ? "(face) " : "")
        box("Android · banner", [TextLine(faces + title + " · now", .actor)] + wrap(body, lines: 2)
            + (fcm.facepile.map { [TextLine("[ facepile: \($0.count) face\($0.count == 1 ? "" : "s") ]", .dim)] + $0.map { TextLine("  " + $0, .dim) } } ?? [])
            + (fcm.image.map { [TextLine("[ BigPicture: \($0) ]", .dim)] } ?? []))
        // iOS stacks a thread's notifications under the newest; Android groups them by tag.
        var stack = [TextLine(title, .actor)] + wrap(body, lines: 1)
        if !page.stacked.isEmpty {
            stack.append(TextLine("\(page.stacked.count) more notification\(page.stacked.count == 1 ? "" : "s")", .dim))
            for other in page.stacked.prefix(3) {
                stack.append(TextLine("  " + TextWidth.fit(other.title + ": " + other.body, width: inner - 4), .body))
            }
        }
        stack.append(TextLine("thread \(apns.thread) · badge \(badge) · \(apns.urgency)", .dim))
        box("Grouped · thread", stack)
        lines.append(TextLine("APNs request", .section))
        lines += apns.requestLines.map { TextLine($0, .body) }
        lines.append(.blank)
        lines.append(TextLine("FCM message", .section))
        lines += fcm.requestLines.map { TextLine($0, .body) }
        return lines
    }
}
