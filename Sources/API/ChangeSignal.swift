import Foundation

/// Wakes long-polls when the store changes. Writes made through the router signal it at once;
/// writes from other processes (`stepo ingest` on the same file) are found by the waiters'
/// periodic re-checks.
public final class ChangeSignal: @unchecked Sendable {  // its condition guards the generation
    public static let shared = ChangeSignal()

    private let condition = NSCondition()
    private var generation = 0

    /// Something changed: wake every waiter.
    public func signal() {
        condition.lock()
        generation += 1
        condition.broadcast()
        condition.unlock()
    }

    public var current: Int {
        condition.lock()
        defer { condition.unlock() }
        return generation
    }

    /// Waits until the generation moves past `seen` or `deadline` passes; returns the generation.
    @discardableResult
    public func wait(after seen: Int, until deadline: Date) -> Int {
        condition.lock()
        defer { condition.unlock() }
        while generation == seen && Date() < deadline {
            _ = condition.wait(until: deadline)
        }
        return generation
    }
}

/// A long-poll the router cannot answer yet: no change for `userKey` after `after`.
public struct LongPoll: Sendable {
    public var userKey: Int
    public var after: Int
    public var deadline: Date
}
