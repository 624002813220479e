import Foundation
import Synchronization
import Postgres
import Storage

/// Listens, on a PostgreSQL connection of its own, for the notifications writers send when
/// they commit (`Connection.changeChannel`), and calls `heard` for each batch of them: how a
/// server learns that another server (or an ingest) changed the store, so its parked
/// long-polls answer at once. A notification carries no data; the long-polls look at versions.
///
/// When the connection breaks it reconnects, a second apart; meanwhile (and always) the
/// server's own periodic look covers what a lost notification would have told.
public final class ChangeListener: @unchecked Sendable {  // its libpq connections live on its own thread; `thread` is set once, at start
    private let url: String
    private let heard: @Sendable () -> Void
    private let stopped = Mutex(false)
    private let heardCount = Mutex(0)
    private var thread: Thread?
    /// Notifications heard since start (for tests and the log).
    public var count: Int { heardCount.withLock { $0 } }

    public init(url: String, heard: @escaping @Sendable () -> Void) {
        self.url = url
        self.heard = heard
    }

    /// Connects and starts listening; throws when the first connection fails.
    public func start() throws {
        let first = try listen()
        let thread = Thread { [self] in run(first) }
        thread.name = "stepo.listen"
        thread.start()
        self.thread = thread
    }

    public func stop() {
        stopped.withLock { $0 = true }
    }

    private var isStopped: Bool {
        stopped.withLock { $0 }
    }

    private func listen() throws -> PGConnection {
        let connection = try PGConnection(url)
        try connection.execute("LISTEN \(Connection.changeChannel)")
        return connection
    }

    private func run(_ first: PGConnection) {
        var connection: PGConnection? = first
        while !isStopped {
            guard let current = connection else {
                sleep(1)
                connection = try? listen()
                if connection != nil { heard() }  // what happened while away
                continue
            }
            var descriptor = pollfd(fd: current.socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 200)
            guard ready > 0 else { continue }
            do {
                let channels = try current.notifications()
                if !channels.isEmpty {
                    heardCount.withLock { $0 += channels.count }
                    heard()
                }
            } catch {
                connection = nil
            }
        }
    }
}
