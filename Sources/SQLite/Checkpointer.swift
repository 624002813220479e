import Foundation

/// Runs passive checkpoints on a connection and a thread of its own, one at a time; a nudge
/// while one is running or waiting adds nothing. A passive checkpoint never blocks the writer.
public final class Checkpointer: @unchecked Sendable {
    /// SQLite's own default, restored on a writer's connection afterwards.
    public static let defaultAutocheckpoint = 1000

    private let path: String
    private let queue = DispatchQueue(label: "stepo.checkpoint")
    private let lock = NSLock()
    private var pending = false
    private var connection: Database?

    public init(path: String) { self.path = path }

    public func nudge() {
        lock.lock()
        defer { lock.unlock() }
        guard !pending else { return }
        pending = true
        queue.async { [self] in
            lock.lock(); pending = false; lock.unlock()
            // A failed checkpoint loses nothing (the log keeps the pages); the next one, or
            // SQLite's own when the last connection closes, copies them.
            if connection == nil { connection = try? Database(path: path, create: false) }
            try? connection?.execute("PRAGMA wal_checkpoint(PASSIVE)")
        }
    }

    /// Waits for a running (or waiting) checkpoint to end.
    public func wait() {
        queue.sync {}
    }

    /// Waits for a running checkpoint, and closes the connection.
    public func finish() {
        queue.sync { connection = nil }
    }
}

