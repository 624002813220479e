/// What goes out of the pushes that quiet hours held: one card with one sound a thread.
///
/// Pushes held through the night come due together when the hours end. Sent as they are, a
/// person who was commented on three times and hearted by twelve people overnight would wake to
/// a burst. Instead, each device gets one push a thread: the newest that the rules still allow
/// (the worker judges them all first), audible when any of the thread's held pushes was; the
/// others are superseded, as a batch's older card is — the newest carries the thread's latest
/// state, so sending the older ones first, even silently, would only be replaced at once.
public enum HeldPushes {
    public struct Candidate: Equatable, Sendable {
        /// The outbox entry; a later entry was made later.
        public var entry: Int
        public var token: String
        public var thread: String
        public var audible: Bool

        public init(entry: Int, token: String, thread: String, audible: Bool) {
            self.entry = entry
            self.token = token
            self.thread = thread
            self.audible = audible
        }
    }

    public struct Outcome: Equatable, Sendable {
        /// The entries that stand for their thread on their device, each audible or not.
        public var kept: [Int: Bool] = [:]
        public var superseded: Set<Int> = []
    }

    /// Groups `held` (entries the rules allow now) by device and thread. The worker and
    /// `stepo deliver --dry-run` both ask this.
    public static func coalesce(_ held: [Candidate]) -> Outcome {
        var outcome = Outcome()
        struct Key: Hashable { var token: String, thread: String }
        for (_, group) in Dictionary(grouping: held, by: { Key(token: $0.token, thread: $0.thread) }) {
            let newest = group.max { $0.entry < $1.entry }!
            outcome.kept[newest.entry] = group.contains(where: \.audible)
            for other in group where other.entry != newest.entry { outcome.superseded.insert(other.entry) }
        }
        return outcome
    }
}
