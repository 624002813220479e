import Notifications
import Replica
import Wire

/// Keys on the screens over the list: a destination, help, settings.
extension Inbox {
    static func screenKey(_ state: inout InboxState, _ screen: Screen, _ key: Key) -> [Effect] {
        // Typing quiet hours: every key is text, or Enter, or Esc (which cancels the typing).
        if case .settings = screen, state.quietDraft != nil { return quietHoursKey(&state, key) }
        if key == .escape || key == .character("q") || key == .left {
            return back(&state)
        }
        switch screen {
        case .settings(let selection): return settingsKey(&state, selection, key)
        case .help(let top):
            let top = scrolled(top, key, length: InboxState.helpLines.count + state.ownHelp.count, page: state.listHeight - 1)
            state.screens[state.screens.count - 1] = .help(top: top)
            return []
        case .destination(let destination): return destinationKey(&state, destination, key)
        case .stats(let top):
            if key == .character("r") {
                state.stats = .loading
                state.screens[state.screens.count - 1] = .stats(top: 0)
                return [.loadStats]
            }
            let length = ActivityView.statsLines(state).count
            state.screens[state.screens.count - 1] = .stats(top: scrolled(top, key, length: length, page: state.listHeight - 1))
            return []
        }
    }

    /// Back exactly one screen; on the list again, what arrived meanwhile is seen.
    private static func back(_ state: inout InboxState) -> [Effect] {
        state.screens.removeLast()
        state.notice = nil
        return state.showsList ? listShown(&state) : []
    }

    /// A text screen's scroll after `key`: lines, pages, the ends, the wheel.
    static func scrolled(_ top: Int, _ key: Key, length: Int, page: Int) -> Int {
        let last = max(0, length - page)
        switch key {
        case .down, .character("j"): return min(last, top + 1)
        case .up, .character("k"): return max(0, top - 1)
        case .pageDown, .space: return min(last, top + page)
        case .pageUp: return max(0, top - page)
        case .wheelDown: return min(last, top + 3)
        case .wheelUp: return max(0, top - 3)
        case .home, .character("g"): return 0
        case .end, .character("G"): return last
        default: return top
        }
    }

    private static func settingsKey(_ state: inout InboxState, _ selection: Int, _ key: Key) -> [Effect] {
        var selection = selection
        defer { state.screens[state.screens.count - 1] = .settings(selection: selection) }
        // Below the switches, the custom follow alerts: Space, Enter or x removes one.
        let onAlert = selection >= InboxState.settingItems.count
        switch key {
        case .down, .character("j"): selection = min(InboxState.settingItems.count - 1 + state.alerts.count, selection + 1)
        case .up, .character("k"): selection = max(0, selection - 1)
        case .space where onAlert, .enter where onAlert, .character("x") where onAlert:
            let index = selection - InboxState.settingItems.count
            guard state.alerts.indices.contains(index) else { break }
            let removed = state.alerts.remove(at: index)
            selection = min(selection, InboxState.settingItems.count - 1 + state.alerts.count)
            state.notice = "Alerts for \(removed.name): back to default"
            return [.setAlert(removed.target, .default)]
        case .enter where InboxState.settingItems[selection].item == .quietHours,
             .space where InboxState.settingItems[selection].item == .quietHours:
            guard let settings = state.settings else { break }
            state.quietDraft = settings.quietHours?.stored ?? "22:00-07:00 " + InboxState.localZone
        case .character("x") where InboxState.settingItems[selection].item == .quietHours:
            guard state.settings?.quietHours != nil else { break }
            state.settings?.quietHours = nil
            state.notice = "Quiet hours off: pushes go when they are decided"
            return [.setQuietHours(.off)]
        case .space, .enter:
            guard case .toggle(let name) = InboxState.settingItems[selection].item, let current = state.settings?[name] else { break }
            state.settings?[name] = !current
            // The master switch has no category.
            return [.setPreference(Mutation.PreferenceChange(category: name.category, on: !current))]
        default: break
        }
        return []
    }

    /// Keys while quiet hours are typed: Enter sets them (empty turns them off), Esc leaves
    /// them as they were; text that cannot be read says why and stays to be mended.
    private static func quietHoursKey(_ state: inout InboxState, _ key: Key) -> [Effect] {
        var draft = state.quietDraft ?? ""
        switch key {
        case .enter:
            let text = draft.split(separator: " ").joined(separator: " ")
            if text.isEmpty || text == "off" {
                state.quietDraft = nil
                guard state.settings?.quietHours != nil else { return [] }
                state.settings?.quietHours = nil
                state.notice = "Quiet hours off: pushes go when they are decided"
                return [.setQuietHours(.off)]
            }
            do {
                let hours = try QuietHours(text: text)
                state.quietDraft = nil
                state.settings?.quietHours = hours
                state.notice = "Quiet hours \(hours.fromText)–\(hours.toText) \(hours.zone): pushes wait until they end"
                return [.setQuietHours(.set(hours))]
            } catch {
                state.notice = "\(error)"
                return []
            }
        case .escape:
            state.quietDraft = nil
            return []
        case .backspace: draft = String(draft.dropLast())
        case .space where draft.count < 64: draft += " "
        case .character("\u{15}"): draft = ""   // ^U: the line
        case .character(let c) where c.unicodeScalars.allSatisfy({ !Preview.isControl($0) }) && draft.count < 64:
            draft.append(c)
        default: return []
        }
        state.quietDraft = draft
        return []
    }

    /// The link `y` and `o` act on in a destination: a link page's URL, else the row's deep link.
    static func destinationLink(_ screen: DestinationScreen) -> String? {
        if case .link(let page)? = screen.destination, !page.url.isEmpty { return page.url }
        switch screen.request {
        case .tap(let row), .push(let row): return row.tap.deepLink
        case .interactions(let step): return Tap.interactions(step).deepLink
        }
    }

    private static func destinationKey(_ state: inout InboxState, _ screen: DestinationScreen, _ key: Key) -> [Effect] {
        var screen = screen
        let length = screen.destination.map { DestinationView.lines($0, width: state.width).count } ?? 0
        switch key {
        case .character("y"), .character("o"):
            // The destination's link: the announcement's own, or where the row lands.
            guard let link = destinationLink(screen) else { break }
            return key == .character("y") ? copyLink(&state, link) : openLink(&state, link)
        case .character("i"):
            // From a step, the people behind its hearts and shares.
            guard case .step(let page)? = screen.destination else {
                if screen.destination != nil { state.notice = "i lists who hearted and shared a step: open one to use it" }
                break
            }
            return open(&state, .interactions(step: page.step.id))
        case .character("b"):
            // A profile's or a journey's custom follow alert: default → all → off → default.
            switch screen.destination {
            case .profile(var page)? where page.person != nil:
                page.alert = page.alert.next
                screen.destination = .profile(page)
                state.screens[state.screens.count - 1] = .destination(screen)
                state.notice = "Alerts for \(page.person?.name ?? page.id): \(page.alert.rawValue)"
                return [.setAlert(.person(page.id), page.alert)]
            case .journey(let page)? where page.isOwn:
                state.notice = "Your own journey has no alerts: they are for the journeys you follow"
            case .journey(var page)?:
                page.alert = page.alert.next
                screen.destination = .journey(page)
                state.screens[state.screens.count - 1] = .destination(screen)
                state.notice = "Alerts for \(page.journey.title): \(page.alert.rawValue)"
                return [.setAlert(.journey(page.journey.id), page.alert)]
            case .profile?:
                state.notice = "This profile is not synced yet: its alerts can be set once it is"
            case .step?, .interactions?, .link?, .push?, .gone?:
                state.notice = "b sets the alerts of a profile or a journey: open one to use it"
            case nil: break
            }
        case .character("a"), .character("d"), .character("f"):
            // A profile's inline Accept / Decline or Follow back, while still open.
            guard case .profile(let page)? = screen.destination, let person = page.person else {
                state.notice = key == .character("f") ? "f follows back someone, on their profile: this is not one"
                    : "a and d answer a follow request, on the requester's profile: this is not one"
                break
            }
            switch (key, page.openAction) {
            case (.character("a"), .acceptDecline), (.character("d"), .acceptDecline):
                return act(&state, key, kind: .followRequest, actor: person.id, name: person.name)
            case (.character("f"), .followBack):
                return act(&state, key, kind: .newFollower, actor: person.id, name: person.name)
            case (.character("f"), _):
                state.notice = "\(person.name) has nothing to follow back now"
            default:
                state.notice = "\(person.name) has no follow request waiting"
            }
        default:
            screen.top = scrolled(screen.top, key, length: length, page: state.listHeight - 1)
            state.screens[state.screens.count - 1] = .destination(screen)
        }
        return []
    }
}
