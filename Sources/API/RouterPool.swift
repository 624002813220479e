import Foundation

/// Routers, each with its own store connection, lent to one caller at a time: a long-poll
/// waiting on one never holds up a request beside it. A new router is opened when none is idle.
public final class RouterPool: @unchecked Sendable {
    private let open: () throws -> Router
    private let lock = NSLock()
    private var idle: [Router] = []

    /// `open` makes a router on the store (called when the pool needs one more).
    public init(open: @escaping () throws -> Router) {
        self.open = open
    }

    /// A pool of the routers given, which opens no more: a caller beyond them is refused with
    /// `open`'s error.
    public convenience init(only routers: [Router], otherwise refusal: Error) {
        self.init { throw refusal }
        idle = routers
    }

    public func borrow<T>(then body: (Router) throws -> T) throws -> T {
        lock.lock()
        let existing = idle.popLast()
        lock.unlock()
        let router = try existing ?? open()
        defer {
            // A router whose connection broke (the database restarted, or failed over) is
            // dropped: the next caller opens a fresh one instead of failing on it forever.
            if router.store.isConnected {
                lock.lock()
                idle.append(router)
                lock.unlock()
            }
        }
        return try body(router)
    }
}
