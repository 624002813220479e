import Foundation
import Synchronization
import Postgres

/// A PostgreSQL cluster of one process's own, for tests and benchmarks: `initdb` in a
/// temporary folder, the server listening only on a unix socket there, stopped and removed
/// when the process ends — by a watchdog shell that outlives a crash, too.
///
/// Durability is off (fsync, full-page writes, synchronous commit): nothing here outlives
/// the process. As root, the `postgres` user runs it (PostgreSQL refuses root).
public final class ThrowawayCluster: Sendable {
    public let folder: String
    public let binaries: String
    private let made = Mutex(0)
    /// How to run its programs (as `postgres`, when root), and the server's options.
    private let prefix: [String]
    private let options: String

    /// The newest installed PostgreSQL's programs, or nil when none is installed.
    public static var installedBinaries: String? {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "/usr/lib/postgresql/\($0)/bin" }
            .first { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }
    }

    /// Makes and starts the cluster; `settings` are extra `-c name=value` server settings.
    public init(settings: [String] = []) throws {
        guard let binaries = ThrowawayCluster.installedBinaries else {
            throw PostgresError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): `bash .ci/deps` installs it")
        }
        self.binaries = binaries
        folder = NSTemporaryDirectory() + "stepo-pg-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        prefix = try ThrowawayCluster.runAs(folder)
        try ThrowawayCluster.run(prefix + [binaries + "/initdb", "-D", folder + "/data", "-A", "trust", "-U", "postgres", "--no-sync"],
                                 log: folder + "/initdb.log")
        options = (["listen_addresses=''", "fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=400"]
                       + settings).map { "-c \($0)" }.joined(separator: " ")
        try start()
        try watch()
    }

    /// A streaming standby of `primary`: a base backup of it (`pg_basebackup -R`, which also
    /// writes how to follow it) in a folder of its own, started on its own socket. It replays
    /// what the primary writes, serves reads, and refuses writes.
    private init(standbyOf primary: ThrowawayCluster) throws {
        binaries = primary.binaries
        folder = NSTemporaryDirectory() + "stepo-pg-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        prefix = try ThrowawayCluster.runAs(folder)
        try ThrowawayCluster.run(prefix + [binaries + "/pg_basebackup", "-h", primary.folder, "-U", "postgres", "-D", folder + "/data",
                                           "-R", "-X", "stream", "-c", "fast", "--no-sync"],
                                 log: folder + "/basebackup.log")
        options = primary.options
        try start()
        try watch()
    }

    /// Makes a standby a primary of its own (`pg_ctl promote`): from here its history parts
    /// from the one it followed.
    public func promote() throws {
        try ThrowawayCluster.run(prefix + [binaries + "/pg_ctl", "-D", folder + "/data", "-w", "promote"], log: folder + "/pg_ctl.log")
    }

    /// A new streaming standby of this cluster (see `init(standbyOf:)`).
    public func standby() throws -> ThrowawayCluster { try ThrowawayCluster(standbyOf: self) }

    /// Stops and removes the cluster when this process ends, however it ends.
    private func watch() throws {
        let stop = (prefix + [binaries + "/pg_ctl", "-D", folder + "/data", "-m", "immediate", "stop"]).map { "'\($0)'" }.joined(separator: " ")
        _ = try ThrowawayCluster.spawn(["/bin/sh", "-c", "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(stop) >/dev/null 2>&1; rm -rf '\(folder)'"],
                                       log: "/dev/null")
    }

    /// Starts the server (and waits until it accepts connections).
    public func start() throws {
        try ThrowawayCluster.run(prefix + [binaries + "/pg_ctl", "-D", folder + "/data", "-o", "-k \(folder) \(options)",
                                           "-l", folder + "/log", "-w", "start"], log: folder + "/pg_ctl.log")
    }

    /// Stops the server at once, as a crash or a failover would (every connection is cut).
    public func stop() throws {
        try ThrowawayCluster.run(prefix + [binaries + "/pg_ctl", "-D", folder + "/data", "-m", "immediate", "-w", "stop"],
                                 log: folder + "/pg_ctl.log")
    }

    /// The command prefix that runs a program as the cluster's owner (and, as root, gives the
    /// folder to `postgres`).
    private static func runAs(_ folder: String) throws -> [String] {
        guard getuid() == 0 else { return [] }
        guard let owner = getpwnam("postgres") else { throw PostgresError("as root, the postgres user runs PostgreSQL: there is none") }
        chown(folder, owner.pointee.pw_uid, owner.pointee.pw_gid)
        return ["/usr/sbin/runuser", "-u", "postgres", "--"]
    }

    /// Runs a program to its end; throws with its log when it fails.
    private static func run(_ arguments: [String], log: String) throws {
        let pid = try spawn(arguments, log: log)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        guard status == 0 else {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw PostgresError("\(URL(fileURLWithPath: arguments[0]).lastPathComponent) failed: \(text.suffix(600))")
        }
    }

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc ≥ 2.34 has it; the Glibc module does not declare it, so it is looked up by name.
    private static let closeFrom: CloseFrom? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: CloseFrom.self)
    }()

    /// Starts a program with its output in `log` and no other descriptor of this process: the
    /// server `pg_ctl` leaves running must hold none of ours (a pipe a caller waits on would
    /// never close).
    private static func spawn(_ arguments: [String], log: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        if let closeFrom { _ = closeFrom(&actions, 3) }
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        guard result == 0 else { throw PostgresError("cannot start \(arguments[0]): \(String(cString: strerror(result)))") }
        return pid
    }

    /// The URL of database `name`, over the unix socket.
    public func url(_ name: String) -> String {
        "postgresql:///\(name)?host=\(folder)&user=postgres"
    }

    /// A new, empty database; its URL.
    public func createDatabase() throws -> String {
        let name = made.withLock { made in made += 1; return "db\(made)" }
        let admin = try PGConnection(url("postgres"))
        try admin.execute("CREATE DATABASE \(name)")
        return url(name)
    }

    /// `psql`, for what a person would run by hand.
    public var psql: String { binaries + "/psql" }
}
