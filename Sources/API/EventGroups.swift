import Backend
import Foundation
import Notifications
import Storage
import Synchronization

/// A `POST /v1/events` request that joined a group: `leadsNow` when it found none being
/// written and writes one at once (`Router.finishEvents`); else it parks until woken.
public struct PendingEvents: Sendable {
    public let member: EventGroups.Member
    let groups: EventGroups
    public let leadsNow: Bool

    /// Whether it must write the group it heads before it has an answer: it found no group
    /// being written, or it was woken to lead.
    public var mustLead: Bool { member.answer == nil && (leadsNow || member.leads) }

    /// For a request that must lead when no router can be had (the store cannot be opened):
    /// fails the group it heads, as a store that cannot be reached fails it, and passes the
    /// lead on — a group never waits for a leader that will not come.
    public func failLead() {
        guard mustLead else { return }
        groups.lead(member) { _ in throw APIError.unavailable(.unavailable) }
    }
}

/// Group commit for `POST /v1/events`. Requests that arrive while a group is being written
/// wait together; when it commits, the first of them leads the next group: it applies every
/// body waiting (in arrival order, as if posted one after another, hearts of different bodies
/// in one set) in one transaction on its own connection, then hands each request its own
/// answer. A request is answered only once the group it joined has committed; a group that
/// fails fails every request in it, and stores nothing of any.
///
/// One group at a time per store in this process: on SQLite there is one writer anyway, and on
/// PostgreSQL the servers beside this one write their own groups side by side.
public final class EventGroups: Sendable {
    /// The groups of each store this process serves, by the store's identity.
    private static let byStore = Mutex<[String: EventGroups]>([:])

    static func of(_ store: Store) -> EventGroups {
        byStore.withLock { all in
            if let groups = all[store.identity] { return groups }
            let groups = EventGroups()
            all[store.identity] = groups
            return groups
        }
    }

    /// The most lines one group takes (a group takes at least one request, however long).
    static let largestGroup = 8_192

    /// What one request gets back: each line's outcome, and the rows it asked for.
    struct Answer {
        var lines: [(line: Int, outcome: Result<EventOutcome, EventError>)]
        var rows: [JSON]
    }

    /// A request in a group: its body, and (once its group committed) its answer. A request
    /// waiting for its group is parked — a thread blocked on a semaphore, or a suspended HTTP
    /// connection that holds no thread — and woken either with its answer or, with none, to
    /// lead the next group.
    public final class Member: @unchecked Sendable {  // `answer`, `woken` and `resume` are guarded by `lock`; `answer` is set before `wake`
        let body: Ingestor.Body
        let wanted: Int
        private let lock = NSLock()
        private var woken = false
        private var resume: (() -> Void)?
        private var _answer: Result<Answer, Error>?

        init(body: Ingestor.Body, wanted: Int) {
            self.body = body
            self.wanted = wanted
        }

        var answer: Result<Answer, Error>? {
            get { lock.withLock { _answer } }
            set { lock.withLock { _answer = newValue } }
        }

        /// Parks the request unless it was woken already (then false: go on at once). `suspend`
        /// runs under the lock, so `resume` can never come before it.
        public func park(suspend: () -> Void, resume: @escaping () -> Void) -> Bool {
            lock.withLock {
                if woken { return false }
                suspend()
                self.resume = resume
                return true
            }
        }

        /// Parks the calling thread until the request is woken.
        func wait() {
            let woken = DispatchSemaphore(value: 0)
            if park(suspend: {}, resume: { woken.signal() }) { woken.wait() }
        }

        func wake() {
            let resume = lock.withLock {
                woken = true
                defer { self.resume = nil }
                return self.resume
            }
            resume?()
        }

        /// Whether it was woken to lead (no answer yet) rather than to answer.
        var leads: Bool { lock.withLock { woken && _answer == nil } }
    }

    /// How the requests joined groups, since the process started (`/v1/health` shows them).
    struct Counts: Sendable {
        var requests = 0
        var groups = 0
        var largest = 0
        /// Groups tried again because PostgreSQL chose them as a deadlock's victim or could not
        /// serialize them.
        var retried = 0
    }

    private struct State {
        var waiting: [Member] = []
        var leading = false
        var counts = Counts()
        /// Servers that lend this store a writer thread (see `attachWriter`).
        var servers = 0
        var writerRunning = false
    }
    private let state = Mutex(State())
    /// Signalled when a group is to be written and the writer thread leads them.
    private let work = DispatchSemaphore(value: 0)

    var counts: Counts { state.withLock { $0.counts } }

    func countRetry() { state.withLock { $0.counts.retried += 1 } }

    /// Joins the group being gathered: true when no group is being written and the caller
    /// leads one now (`lead`); false when it must park until woken. With a writer thread
    /// attached, the writer leads every group and this is always false.
    func join(_ member: Member) -> Bool {
        let (leads, wakeWriter) = state.withLock { state -> (Bool, Bool) in
            state.waiting.append(member)
            state.counts.requests += 1
            if state.leading { return (false, false) }
            state.leading = true
            return state.writerRunning ? (false, true) : (true, false)
        }
        if wakeWriter { work.signal() }
        return leads
    }

    /// The next group: the requests waiting, in order, up to `largestGroup` lines.
    private func take() -> [Member] {
        state.withLock { state -> [Member] in
            var lines = 0
            var taken = 0
            for member in state.waiting {
                if taken > 0 && lines + member.body.count > EventGroups.largestGroup { break }
                lines += member.body.count
                taken += 1
            }
            let group = Array(state.waiting.prefix(taken))
            state.waiting.removeFirst(taken)
            return group
        }
    }

    /// Gives each member of a written group its answer; the first request that arrived
    /// meanwhile, if any (it heads the next group), else nil, and no group is being written.
    private func answer(_ group: [Member], _ written: Result<[Answer], Error>) -> Member? {
        for (index, member) in group.enumerated() { member.answer = written.map { $0[index] } }
        return state.withLock { state -> Member? in
            state.counts.groups += 1
            state.counts.largest = max(state.counts.largest, group.count)
            guard let first = state.waiting.first else {
                state.leading = false
                return nil
            }
            return first
        }
    }

    /// Writes the group `me` heads, answers and wakes its members, and wakes the first
    /// request that arrived meanwhile to lead the next.
    func lead(_ me: Member, writing write: ([Member]) throws -> [Answer]) {
        let group = take()
        assert(group.first === me)
        let next = answer(group, Result { try write(group) })
        for member in group where member !== me { member.wake() }
        next?.wake()
    }

    /// Lends the store a thread of its own that writes every group, so that no server thread
    /// (which serves many connections) waits on the store while others queue behind it: each
    /// request only parks. `open` makes its router (again, after its connection broke). A
    /// second server on the same store in this process shares the one thread.
    public func attachWriter(open: @escaping @Sendable () throws -> Router) {
        let start = state.withLock { state -> Bool in
            state.servers += 1
            guard !state.writerRunning else { return false }
            state.writerRunning = true
            return true
        }
        guard start else { return }
        let thread = Thread { [self] in writer(open: open) }
        thread.name = "stepo.events.writer"
        thread.start()
    }

    /// A server stops lending its writer; the last one's leaves once no group waits.
    public func detachWriter() {
        let last = state.withLock { state -> Bool in
            state.servers -= 1
            return state.servers == 0
        }
        if last { work.signal() }
    }

    private func writer(open: @Sendable () throws -> Router) {
        var router: Router?
        while true {
            work.wait()
            // Groups until none waits.
            while true {
                let more = state.withLock { state -> Bool? in
                    if !state.waiting.isEmpty { return true }
                    if state.servers == 0 {
                        state.writerRunning = false
                        return nil
                    }
                    return false
                }
                guard let more else { return }
                guard more else { break }
                if router == nil { router = try? open() }
                let group = take()
                let written = Result {
                    guard let router else { throw APIError.unavailable(.unavailable) }
                    return try router.write(group)
                }
                // A connection that broke is dropped: the next group opens a fresh one.
                if router?.store.isConnected == false { router = nil }
                let next = answer(group, written)
                for member in group { member.wake() }
                if next == nil { break }
            }
        }
    }

    /// Answers every request still waiting for a group (none of it written) with `error`: a
    /// server that must stop while the store does not answer. A group being written is left to
    /// finish or fail on its own.
    public func failWaiting(_ error: Error) {
        let waiting = state.withLock { state -> [Member] in
            let waiting = state.waiting
            state.waiting.removeAll()
            return waiting
        }
        for member in waiting {
            member.answer = .failure(error)
            member.wake()
        }
    }
}

extension Router {
    /// The groups `POST /v1/events` requests on this router's store join.
    public var eventGroups: EventGroups { EventGroups.of(store) }

    /// Applies a group's bodies in one transaction (tried again when PostgreSQL chose it as a
    /// deadlock's victim or could not serialize it): each member's answer.
    func write(_ group: [EventGroups.Member]) throws -> [EventGroups.Answer] {
        let ingestor = Ingestor(store: store)
        var tries = 0
        while true {
            do {
                let answers = try writing {
                    try store.transaction {
                        let results = try ingestor.apply(bodies: group.map(\.body))
                        return try zip(group, results).map { member, lines in
                            var rows: [JSON] = []
                            for (_, outcome) in lines where rows.count < member.wanted {
                                guard case .success(let applied) = outcome else { continue }
                                try store.inboxes.forEachRow(ofEvent: applied, limit: member.wanted - rows.count) { rows.append($0.contractJSON) }
                            }
                            return EventGroups.Answer(lines: lines, rows: rows)
                        }
                    }
                }
                if answers.contains(where: { $0.lines.contains { if case .success(let o) = $0.outcome { !o.repeated } else { false } } }) {
                    ChangeSignal.shared.signal()
                }
                return answers
            } catch {
                // What the rolled-back transaction had remembered is gone with it.
                store.forgetLookups()
                // The requests led here answer for this connection: one that broke without a
                // word is a store that cannot be reached, for them too.
                if Connection.fault(of: error) == nil && !store.isConnected { throw APIError.unavailable(.unavailable) }
                guard Connection.isTransient(error), tries < Ingestor.retries else { throw error }
                tries += 1
                eventGroups.countRetry()
            }
        }
    }
}
