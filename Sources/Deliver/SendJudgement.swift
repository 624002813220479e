import Backend
import Notifications

/// What becomes of claimed entries as they leave, judged once for the worker and for
/// `stepo deliver --dry-run` alike: the quiet rules asked again (a block, a switch turned off
/// since…), one card a thread of what quiet hours held (`HeldPushes`), then the daily ceiling
/// by send time (`SendCeiling`) over what is still going.
public enum SendJudgement {
    public enum Verdict {
        /// Goes out as this content (its `silent` decided).
        case send(PushContent)
        /// A newer held push of its device and thread goes instead.
        case superseded
        /// The rules withhold it now: the reason its attempt records, and the sentence saying so.
        case dropped(reason: String, description: String)
        /// It cannot go at all (its row is gone): given up, with why.
        case abandoned(reason: String)
    }

    /// The verdict on each of `entries`, in their order (all that is claimed for this moment).
    /// An entry already past its expiry is judged but not weighed against the ceiling: the
    /// worker gives it up unsent.
    public static func judge(_ entries: [OutboxEntry], queue: any PushQueue, now: Int64) throws -> [Verdict] {
        let judged = zip(entries, try queue.pushContents(for: entries))
        let held = HeldPushes.coalesce(judged.compactMap { entry, result in
            guard entry.held, case .success(let content) = result else { return nil }
            return HeldPushes.Candidate(entry: entry.id, token: entry.token, thread: content.thread, audible: !entry.silent)
        })
        let going = judged.filter { entry, result in
            guard case .success = result, !held.superseded.contains(entry.id) else { return false }
            return entry.expiresAt.map { $0 > now } ?? true
        }.map(\.0)
        let over = try queue.ceilingAtSend(going, launching: entries, now: now)
        return try judged.map { entry, result -> Verdict in
            if held.superseded.contains(entry.id) { return .superseded }
            switch result {
            case .success(var content):
                if over.contains(entry.id) {
                    return .dropped(reason: Reason.dailyCeiling.rawValue, description: """
                        row \(entry.row)'s push is withheld now: dailyCeiling — its recipient has had \(QuietRules.dailyCeiling) pushes \
                        in the last 24 hours
                        """)
                }
                content.silent = held.kept[entry.id].map { !$0 } ?? entry.silent
                return .send(content)
            case .failure(let unavailable as PushUnavailable):
                if let reason = unavailable.dropReason { return .dropped(reason: reason, description: unavailable.description) }
                return .abandoned(reason: unavailable.description)
            case .failure(let error):
                throw error
            }
        }
    }
}
