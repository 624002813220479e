import Foundation
import Synchronization

/// Runs passive checkpoints on a connection and a thread of its own, one at a time; a nudge
/// while one is running or waiting adds nothing. A passive checkpoint never blocks the writer.
public final class Checkpointer: @unchecked Sendable {  // its connection is used on its queue alone
    /// SQLite's own default, restored on a writer's connection afterwards.
    public static let defaultAutocheckpoint = 1000

    private let path: String
    private let queue = DispatchQueue(label: "stepo.checkpoint")
    private let pending = Mutex(false)
    private var connection: Database?

    public init(path: String) { self.path = path }

    public func nudge() {
        let first = pending.withLock { waiting in defer { waiting = true }; return !waiting }
        guard first else { return }
        queue.async { [self] in
            pending.withLock { $0 = false }
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

    /// How far a writer lets the log grow before emptying it itself (`truncate`): past this,
    /// every page read searches a longer log index, and a long ingest slows as it goes.
    public static let largestLog = 64 << 20

    /// The size of the write-ahead log beside the database at `path`, in bytes (0 when none).
    public static func logSize(_ path: String) -> Int {
        var info = stat()
        return stat(path + "-wal", &info) == 0 ? Int(info.st_size) : 0
    }

    /// Empties the log from the writer's own connection `db`: waits for the background
    /// checkpoint, then checkpoints with TRUNCATE, again (with growing pauses) while a reader
    /// still holds part of the log. A passive checkpoint alone never lets the log restart
    /// while a writer keeps committing: this does. Returns whether the log was emptied.
    @discardableResult
    public func truncate(_ db: Database, attempts: Int = 50) throws -> Bool {
        for attempt in 0..<attempts {
            wait()
            let busy = try db.first("PRAGMA wal_checkpoint(TRUNCATE)", []) { $0.int(0) } ?? 0
            if busy == 0 { return true }
            Thread.sleep(forTimeInterval: 0.01 * Double(attempt + 1))
        }
        return false
    }

    /// Waits for a running checkpoint, and closes the connection.
    public func finish() {
        queue.sync { connection = nil }
    }
}

