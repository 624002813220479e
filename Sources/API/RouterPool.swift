import Foundation
import Synchronization

/// Routers, each with its own store connection, lent to one caller at a time: a long-poll
/// waiting on one never holds up a request beside it. A new router is opened when none is idle.
public final class RouterPool: @unchecked Sendable {  // its routers own store connections (C handles), each lent to one thread at a time
    private let open: () throws -> Router
    private let idle = Mutex<[IdleRouter]>([])

    /// `open` makes a router on the store (called when the pool needs one more).
    public init(open: @escaping () throws -> Router) {
        self.open = open
    }

    /// A pool of the routers given, which opens no more: a caller beyond them is refused with
    /// `open`'s error.
    public convenience init(only routers: [Router], otherwise refusal: Error) {
        self.init { throw refusal }
        idle.withLock { $0 = routers.map(IdleRouter.init) }
    }

    public func borrow<T>(then body: (Router) throws -> T) throws -> T {
        let router = try idle.withLock { $0.popLast() }?.router ?? open()
        defer {
            // A router whose connection broke (the database restarted, or failed over) is
            // dropped: the next caller opens a fresh one instead of failing on it forever.
            if router.store.isConnected {
                let back = IdleRouter(router: router)
                idle.withLock { $0.append(back) }
            }
        }
        return try body(router)
    }
}

/// A router resting in the pool: no thread holds it until it is lent again.
private struct IdleRouter: @unchecked Sendable { let router: Router }
