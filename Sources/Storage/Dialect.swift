/// Every way the two engines differ, in the words the backend asks them: the backend writes
/// its SQL once and asks its connection's dialect where the engines part (the SQL text itself
/// is translated by `PostgresDialect`). A new difference gets a name here, not an
/// `engine == …` test where it is used.
public struct Dialect: Sendable, Equatable {
    public let engine: Engine

    public init(_ engine: Engine) { self.engine = engine }

    /// Other writers — other servers — work beside this connection's (PostgreSQL). Then a read
    /// that decides a write locks what it read, nothing read is cached across statements, and a
    /// version is an id taken in flight. Alone (SQLite: one writer at a time) none of it is needed.
    public var writersSideBySide: Bool { engine == .postgresql }

    /// What makes a read lock the rows it returns until the transaction ends ("" alone).
    public var lockingRead: String { writersSideBySide ? " FOR UPDATE" : "" }

    /// The same, for the rows of one table of a join.
    public func lockingRead(of table: String) -> String { writersSideBySide ? " FOR UPDATE OF \(table)" : "" }

    /// A locking read that passes over rows another writer holds instead of waiting for them.
    public var lockingReadSkippingLocked: String { writersSideBySide ? " FOR UPDATE SKIP LOCKED" : "" }

    /// The columns, and their values, an insert into `events` names to take its place in the
    /// store's history: its version (SQLite's rowid is the version; PostgreSQL takes one
    /// registered as in flight, `stepo_version()`) and its history mark, a random number that
    /// no later change at the same version repeats (see `SyncPages.historyMark`).
    public var versionColumn: String { writersSideBySide ? "id, nonce, " : "nonce, " }
    public var versionValue: String { writersSideBySide ? "stepo_version(), \(randomInteger), " : "\(randomInteger), " }

    /// A random 64-bit integer (PostgreSQL's: 53 random bits).
    public var randomInteger: String {
        switch engine {
        case .sqlite: return "random()"
        case .postgresql: return "floor(random() * 9.0e18)::bigint"
        }
    }

    /// `column`, a blob, as lower-case hexadecimal text.
    public func hex(_ column: String) -> String {
        switch engine {
        case .sqlite: return "lower(hex(\(column)))"
        case .postgresql: return "encode(\(column), 'hex')"
        }
    }

    /// The rows one insert made are numbered without gaps, so the last id and the count name
    /// them all (SQLite, one writer); otherwise the insert returns them.
    public var insertedIdsAreContiguous: Bool { engine == .sqlite }

    /// The store is one file that can be copied whole (`VACUUM INTO`).
    public var isOneFile: Bool { engine == .sqlite }
}
