import BenchSupport
import Foundation
import Postgres

/// Which engine the store tests run against: SQLite unless `STEPO_TEST_ENGINE=postgresql`.
/// `.ci/test` runs the store, API, sync and server suites once on each.
public enum TestEngine {
    public static var isPostgres: Bool {
        ProcessInfo.processInfo.environment["STEPO_TEST_ENGINE"] == "postgresql"
    }

    /// The store named `name` in `folder`: that SQLite file, or (on PostgreSQL) a database made
    /// for it on first use and the same one on every later call.
    public static func location(_ folder: String, _ name: String) throws -> String {
        guard isPostgres else { return folder + "/" + name }
        return try PostgresCluster.shared().database(for: folder + "/" + name)
    }

    /// The command-line words that name the store at `location` (`--db FILE` or `--database URL`).
    public static func storeArguments(_ location: String) -> [String] {
        location.hasPrefix("postgresql://") ? ["--database", location] : ["--db", location]
    }
}

/// The test process's throwaway PostgreSQL cluster (see `ThrowawayCluster`), started on first
/// use; each test takes a database of its own.
public final class PostgresCluster: @unchecked Sendable {
    private let cluster: ThrowawayCluster
    private let lock = NSLock()
    private var named: [String: String] = [:]

    nonisolated(unsafe) private static var instance: PostgresCluster?
    nonisolated(unsafe) private static var failure: String?
    private static let instanceLock = NSLock()

    /// Whether the tests can have a cluster: PostgreSQL is installed.
    public static var available: Bool { ThrowawayCluster.installedBinaries != nil }

    /// The process's cluster, started on first use (a failure to start is kept and rethrown).
    public static func shared() throws -> PostgresCluster {
        instanceLock.lock()
        defer { instanceLock.unlock() }
        if let instance { return instance }
        if let failure { throw Spawn.Failure(description: failure) }
        do {
            let made = PostgresCluster(try ThrowawayCluster())
            instance = made
            return made
        } catch {
            failure = "\(error)"
            throw error
        }
    }

    private init(_ cluster: ThrowawayCluster) { self.cluster = cluster }

    /// The database standing for `key` (made on first use); its URL.
    public func database(for key: String) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let known = named[key] { return known }
        let url = try cluster.createDatabase()
        named[key] = url
        return url
    }

    /// A new, empty database; its URL.
    public func newDatabase() throws -> String { try cluster.createDatabase() }
}
