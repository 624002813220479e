import Foundation
import Notifications
import Storage
import class SQLite.Database
import struct SQLite.ForeignDatabase
import struct SQLite.Migrator
import class Postgres.PGConnection

/// The authoritative store: the world, the processed events and the notification rows.
///
/// One `Store` is one connection; use it from one thread at a time.
public final class Store {
    let db: Connection

    /// The store's connection, for the bulk loaders of the benches and tests alone
    /// (`@_spi(Bench) import Backend`): nothing else reaches past the store's own calls.
    @_spi(Bench) public var connection: Connection { db }
    /// Set only inside `withInteractionCache`.
    var interactionCache: InteractionCache?
    /// Set only inside `withRecordMemo`.
    var recordMemo: RecordMemo?
    /// Recipients known to be at the daily ceiling, and from when until when (see `ceilingReached`).
    var ceilingSpans: [Int: (from: Int64, until: Int64)] = [:]
    /// The last horizon this connection learned (it only moves up): where the next look starts.
    var knownHorizon = 0
    /// What `keptSince` said when the apply's transaction began (see `refreshKeptSince`).
    var keptSinceNow: Int64?
    /// This store's identity, made with it (see `identity`).
    public let identity: String
    /// Migrations this build would apply that the store lacks: none, but for a store opened
    /// by `init(inspecting:)`, which changes nothing.
    public private(set) var pending: [String] = []
    /// The counter slot this connection adds to (see `Schema.statsSlots`): one of 32 by the
    /// server process on PostgreSQL, so writers side by side seldom share a counter row; 0 on
    /// SQLite, whose writers take turns anyway.
    let slot: Int
    /// For a store on a streaming standby, the primary it follows: the horizon is the
    /// primary's, and a read here waits for nothing — it is refused (`StandbyBehind`) unless
    /// the standby has replayed everything the primary had when the read began.
    let primary: Store?
    /// For a standby, the timeline it received the primary's WAL on when it was checked: a
    /// standby that moves to another (it followed a failover, or was pointed elsewhere) is
    /// opened and checked again.
    private(set) var timeline: Int? = nil
    /// Whether the ceiling may be settled by the push counters (`PushDays`); off, every push
    /// asks the exact test. Only the differential test turns it off, to hold the two equal.
    var ceilingFromCounters = true
    /// Writes the set path's trust-budget counters one statement a row, unsummed: the known
    /// regression CI's ingest guard is shown to catch (`stepo-bench engine --guard --regress
    /// counters`). Never set by the product.
    @_spi(Bench) public var countersPerRow = false

    /// Opens (creating and migrating when needed) the store at `path`.
    ///
    /// Foreign keys are declared but not enforced per write: every write path looks its
    /// references up first (an unknown id is bad input), and enforcing them again cost ingest
    /// a fifth of its speed. Tests run `PRAGMA foreign_key_check` over whole worlds instead.
    ///
    /// A file that is another program's database (tables of its own, no stepo schema) is
    /// refused and left as it is (`NotAStore`), unless `adopting` (`stepo init`).
    public init(path: String, adopting: Bool = false) throws {
        var looked = false
        if !adopting, (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 > 0 {
            // Looked at read-only first: opening it to write would turn its journal to WAL.
            do {
                try Migrator.requireOwn(try Database(path: path, readOnly: true, create: false, foreignKeys: false))
                looked = true
            } catch let foreign as ForeignDatabase {
                throw NotAStore(foreign: foreign.tables, at: path)
            } catch {
                // Unreadable this way (a folder, a damaged file): the open below says why.
            }
        }
        let database = try Database(path: path, foreignKeys: false)
        try database.execute("PRAGMA cache_size = -65536; PRAGMA mmap_size = 1073741824")
        let applied: [String]
        do {
            // (Not looked at again when it was above; a new file is looked at here.)
            applied = try Schema.migrator.migrate(database, adopting: adopting || looked)
        } catch let foreign as ForeignDatabase {
            throw NotAStore(foreign: foreign.tables, at: path)
        }
        db = Connection(database)
        identity = try db.first("SELECT value FROM settings WHERE key = 'identity'") { $0.string(0) } ?? ""
        slot = 0
        primary = nil
        if applied.contains(Store.countersMigration) { try countExistingRows() }
    }

    /// Connects to the store on the PostgreSQL server at `url` (`postgresql://…`), creating
    /// and migrating its schema when needed.
    public init(postgres url: String, adopting: Bool = false) throws {
        db = try Connection(postgres: url)
        let applied = try PostgresSchema.migrate(db, adopting: adopting)
        identity = try db.first("SELECT value FROM settings WHERE key = 'identity'") { $0.string(0) } ?? ""
        slot = try db.scalar("SELECT pg_backend_pid() % 32") ?? 0
        primary = nil
        if applied.contains(Store.countersMigration) { try countExistingRows() }
    }

    /// Connects to a streaming standby of `primary`'s PostgreSQL server, for reads only (pulls,
    /// counts, destinations): nothing is migrated there, it must already hold the schema this
    /// build expects, replayed from the primary.
    public init(standby url: String, primary: Store) throws {
        db = try Connection(postgres: url)
        guard try db.scalar("SELECT CASE WHEN pg_is_in_recovery() THEN 1 ELSE 0 END") == 1 else {
            throw EventError("\(db.path) is not a standby (it is not in recovery): reads go to a standby of the primary only")
        }
        let done = Set(try db.query("SELECT id FROM schema_migrations") { $0.string(0) })
        guard done == Set(PostgresSchema.migrations.map(\.id)) else {
            throw EventError("the standby at \(db.path) has not replayed this build's schema yet")
        }
        identity = try db.first("SELECT value FROM settings WHERE key = 'identity'") { $0.string(0) } ?? ""
        guard identity == primary.identity else {
            throw EventError("the standby at \(db.path) holds another store (\(identity)), not the primary's (\(primary.identity))")
        }
        slot = 0
        self.primary = primary
        // Same store is not same history: a copy of the primary promoted and written to (a
        // fork, an old standby still following a former primary) has the same identity, and
        // WAL positions there say nothing about the primary's. A mark written on the primary
        // now must come through here; then the timeline it came on is what every read checks.
        let beacon = UUID().uuidString
        try primary.db.run("""
            INSERT INTO settings(key, value) VALUES ('standby_beacon', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value
            """, beacon)
        let position = try primary.walPosition()
        // (A standby further behind than half a second serves no read anyway: each must be caught up.)
        let deadline = Date().addingTimeInterval(0.5)
        var seen: String??
        repeat {
            if try replayState(position).replayed {
                seen = .some(try db.first("SELECT value FROM settings WHERE key = 'standby_beacon'") { $0.string(0) })
                break
            }
            usleep(20_000)
        } while Date() < deadline
        guard let seen else { throw EventError("the standby at \(db.path) did not replay the primary's newest write within half a second") }
        guard seen == beacon else {
            throw EventError("the standby at \(db.path) does not follow this primary (a write made there now did not reach it): it is a copy with a history of its own")
        }
        timeline = try replayState(position).received
        guard timeline != nil else { throw EventError("the standby at \(db.path) is not receiving from a primary") }
    }

    /// Opens the store at `location` to read it and nothing else (`stepo check`): nothing is
    /// created, migrated or written. Throws `NotAStore` when what is there is not a stepo store
    /// (an empty file, another program's database, a database with no schema yet). `pending`:
    /// the migrations this build would still apply to it.
    public init(inspecting location: String) throws {
        if Store.isPostgresURL(location) {
            db = try Connection(postgres: location)
        } else {
            var directory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: location, isDirectory: &directory) else {
                throw NotAStore(location: location, why: "there is no file there")
            }
            guard !directory.boolValue else { throw NotAStore(location: location, why: "it is a folder") }
            let size = (try? FileManager.default.attributesOfItem(atPath: location)[.size] as? Int) ?? nil
            guard size != 0 else { throw NotAStore(location: location, why: "the file is empty") }
            db = Connection(try Database(path: location, readOnly: true, create: false, foreignKeys: false))
        }
        let catalogue = db.dialect.isOneFile
            ? "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
            : "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
        guard try db.scalar(catalogue) == 1 else {
            throw NotAStore(location: location, why: "it holds no stepo schema (another program's database, or one never opened by stepo)")
        }
        let done = Set(try db.query("SELECT id FROM schema_migrations") { $0.string(0) })
        let known = db.dialect.isOneFile ? Schema.migrator.migrations.map(\.id) : PostgresSchema.migrations.map(\.id)
        if let unknown = done.subtracting(known).sorted().first {
            throw NotAStore(location: location, why: "it has migration \(unknown), unknown to this build: it was written by a newer stepo")
        }
        pending = known.filter { !done.contains($0) }
        identity = try db.first("SELECT value FROM settings WHERE key = 'identity'") { $0.string(0) } ?? ""
        slot = 0
        primary = nil
    }

    /// The migration that made the trust budget's counters: a store it was applied to has
    /// them filled from its rows (see `Stats.recount`).
    static let countersMigration = "0010-stats-counters"

    /// Fills the counters from the rows a store held before it had counters (a new store has
    /// none to count).
    private func countExistingRows() throws {
        guard try db.scalar("SELECT EXISTS (SELECT 1 FROM events WHERE ext IS NOT NULL)") == 1 else { return }
        try stats.recount()
    }

    /// Opens the store at `location`: a PostgreSQL URL (`postgresql://…`, `postgres://…`), or
    /// else the path of a SQLite file.
    public convenience init(location: String, adopting: Bool = false) throws {
        if Store.isPostgresURL(location) {
            try self.init(postgres: location, adopting: adopting)
        } else {
            try self.init(path: location, adopting: adopting)
        }
    }

    /// Whether `location` names a PostgreSQL server rather than a file.
    public static func isPostgresURL(_ location: String) -> Bool {
        location.hasPrefix("postgresql://") || location.hasPrefix("postgres://")
    }

    /// Why a PostgreSQL URL can never be connected to as written (libpq refuses to parse it),
    /// or nil.
    public static func urlProblem(_ url: String) -> String? { PGConnection.parseError(url) }

    /// `location` as it may be shown: a PostgreSQL URL without its password.
    public static func redacted(_ location: String) -> String { Connection.redacted(location) }

    /// The file this store lives in, or the PostgreSQL location (without a password).
    public var path: String { db.path }

    /// Whether its connection still works (see `Connection.isConnected`).
    public var isConnected: Bool { db.isConnected }

    /// Which engine holds this store.
    public var engine: Engine { db.engine }
    /// Where its engine differs from the other.
    public var dialect: Dialect { db.dialect }

    /// Starts timing every statement this store's connection runs (see `profileReport`).
    public func startProfiling() { db.startProfiling() }

    /// The statements that took the most time since `startProfiling`.
    public func profileReport(top: Int = 15) -> [(sql: String, runs: Int, milliseconds: Double)] { db.profileReport(top: top) }

    /// Whether no event was ever applied (a store just made).
    public var isEmpty: Bool { ((try? db.scalar("SELECT EXISTS (SELECT 1 FROM events WHERE ext IS NOT NULL)")) ?? 0) == 0 }

    /// Runs `body` in one write transaction (nested: a savepoint).
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try db.transaction(body)
    }

    /// Runs `body` on one consistent snapshot of the store (a read transaction).
    public func snapshot<T>(_ body: () throws -> T) throws -> T {
        try db.transaction(.snapshot, body)
    }

    // MARK: Versions

    /// Records a stamp (`seen`, `read`) as a change and returns its version. An event's rows
    /// take the event's own id instead. Every row a change touches carries that version, so
    /// each recipient's versions strictly increase from one change to the next.
    @_spi(Bench) public func stampVersion(_ type: String, at: Int64) throws -> Int {
        try db.first("INSERT INTO events(\(versionColumn)type, at) VALUES (\(versionValue)?, ?) RETURNING id", [type, at]) { $0.int(0) } ?? 0
    }

    /// How a change takes its version. On SQLite, the next rowid (one writer at a time). On
    /// PostgreSQL, where writers run side by side, `stepo_version()`: the next id, registered
    /// as in flight until its transaction ends, so a pull never passes it (see `horizon`).
    @_spi(Bench) public var versionColumn: String { db.dialect.versionColumn }
    @_spi(Bench) public var versionValue: String { db.dialect.versionValue }

    /// The versions a pull may hand out are those below this one: every change below it has
    /// committed or rolled back, so none can appear later behind a client's `next`. On SQLite
    /// (one writer, committing in version order) that is every version; on PostgreSQL the
    /// oldest version still in flight, else the next one to be given. Asked before the pull's
    /// snapshot is taken, so that snapshot holds everything below it.
    ///
    /// On a standby, the primary's horizon, once this standby has replayed past the moment the
    /// primary gave it: every version below it committed before that moment, so a snapshot
    /// taken here after the check holds them all.
    public func horizon() throws -> Int {
        guard db.dialect.writersSideBySide else { return Int.max }
        if let primary {
            let (horizon, position) = try primary.horizonAndPosition()
            try requireReplayed(position)
            return horizon
        }
        knownHorizon = try db.scalar("SELECT stepo_horizon(?)", knownHorizon) ?? 0
        return knownHorizon
    }

    /// The horizon and, read after it, the primary's WAL position (`walPositionSQL`). (The
    /// subquery is a fence: the horizon is taken first.)
    func horizonAndPosition() throws -> (Int, String) {
        let answer = try db.first("""
            SELECT h, \(Store.walPositionSQL) FROM (SELECT stepo_horizon(?) AS h OFFSET 0) AS s
            """, [knownHorizon]) { ($0.int(0), $0.string(1)) }
        guard let answer else { throw EventError("the primary gave no horizon") }
        knownHorizon = answer.0
        return answer
    }

    /// On a standby: refuses (`StandbyBehind`) unless it has replayed everything the primary
    /// has written now, so a read here sees whatever a read there would have. Nothing elsewhere.
    public func requireCaughtUp() throws {
        guard let primary else { return }
        try requireReplayed(try primary.walPosition())
    }

    /// The primary's WAL position now, below which lies every commit it has answered: where a
    /// commit is flushed before it is answered (any `synchronous_commit` but `off`, which the
    /// writers share: they connect as the same role), the flushed position, which a standby
    /// receives at once; else the insert position, which a standby receives once the WAL
    /// writer flushes it. (The insert position alone could stay ahead of everything a standby
    /// ever receives on a quiet primary: records that are not commits wait in an unflushed page.)
    static let walPositionSQL = """
        CAST(CASE WHEN current_setting('synchronous_commit') = 'off' THEN pg_current_wal_insert_lsn()
                  ELSE pg_current_wal_flush_lsn() END AS TEXT)
        """

    private func walPosition() throws -> String {
        guard let position = try db.first("SELECT \(Store.walPositionSQL)", [], { $0.string(0) }) else {
            throw EventError("the primary gave no WAL position")
        }
        return position
    }

    /// On a standby: whether it has replayed up to `position`, and the timeline it receives on
    /// (nil while it receives nothing).
    private func replayState(_ position: String) throws -> (replayed: Bool, received: Int?) {
        try db.first("""
            SELECT CASE WHEN pg_last_wal_replay_lsn() >= CAST(? AS pg_lsn) THEN 1 ELSE 0 END,
                   (SELECT received_tli FROM pg_stat_wal_receiver)
            """, [position]) { ($0.optionalInt(0) == 1, $0.optionalInt(1)) } ?? (false, nil)
    }

    /// A standby a few milliseconds behind (a commit on its way) is given them: up to three
    /// looks over about 10 ms, then the read goes to the primary.
    private func requireReplayed(_ position: String) throws {
        for pause: useconds_t in [2_000, 8_000, 0] {
            let (replayed, received) = try replayState(position)
            if let received, received != timeline { throw StandbyBehind(position: position, moved: true) }
            if replayed && received == timeline { return }
            if pause > 0 { usleep(pause) }
        }
        throw StandbyBehind(position: position)
    }

    /// Keeps this connection's memory small: a page cache of `cacheKiB` and no memory map of
    /// the file (whose pages, once read, count in the process's resident memory). For a
    /// process that reads little of a large store again, as the push worker does. SQLite only.
    public func limitMemory(cacheKiB: Int) throws {
        guard !db.dialect.writersSideBySide else { return }
        try db.execute("PRAGMA cache_size = -\(cacheKiB); PRAGMA mmap_size = 0")
    }

    /// The newest version handed out.
    public func currentVersion() throws -> Int {
        try db.scalar("SELECT max(id) FROM events") ?? 0
    }

    // MARK: Lookups by producer id

    public func user(_ id: String) throws -> UserRecord? {
        try db.first("SELECT \(UserRecord.columns) FROM users WHERE ext = ?", [id], UserRecord.init)
    }

    public func user(key: Int) throws -> UserRecord? {
        if let known = recordMemo?.users[key] { return known }
        let found = try db.first("SELECT \(UserRecord.columns) FROM users WHERE id = ?", [key], UserRecord.init)
        recordMemo?.users[key] = found
        return found
    }

    public func user(username: String) throws -> UserRecord? {
        try db.first("SELECT \(UserRecord.columns) FROM users WHERE username = ?", [username.lowercased()], UserRecord.init)
    }

    public func journey(_ id: String) throws -> JourneyRecord? {
        try db.first("SELECT \(JourneyRecord.columns) FROM journeys WHERE ext = ?", [id], JourneyRecord.init)
    }

    public func journey(key: Int) throws -> JourneyRecord? {
        if let known = recordMemo?.journeys[key] { return known }
        let found = try db.first("SELECT \(JourneyRecord.columns) FROM journeys WHERE id = ?", [key], JourneyRecord.init)
        recordMemo?.journeys[key] = found
        return found
    }

    public func step(_ id: String) throws -> StepRecord? {
        try db.first("SELECT \(StepRecord.columns) FROM steps WHERE ext = ?", [id], StepRecord.init)
    }

    public func step(key: Int) throws -> StepRecord? {
        if let known = recordMemo?.steps[key] { return known }
        let found = try db.first("SELECT \(StepRecord.columns) FROM steps WHERE id = ?", [key], StepRecord.init)
        recordMemo?.steps[key] = found
        return found
    }

    /// The step with its owner, and the user `actor` (nil in the context when unknown).
    /// Inside `withInteractionCache`, answered from the cache when it can be.
    func stepContext(_ id: String, actor: String) throws -> StepContext? {
        guard let cache = interactionCache else { return try db.first(StepContext.select, [id, actor], StepContext.init) }
        if let (step, owner) = cache.steps[id] {
            var actorRecord = cache.users[actor]
            if actorRecord == nil, let found = try user(actor) {
                actorRecord = found
                cache.remember(found, as: actor)
            }
            return StepContext(step: step, owner: owner, actor: actorRecord)
        }
        guard let context = try db.first(StepContext.select, [id, actor], StepContext.init) else { return nil }
        cache.remember(context, step: id, actor: actor)
        return context
    }

    /// Runs `body` (one write transaction of an ingest) with the steps and people that events
    /// look up kept in memory: a stream of hearts or follows touches the same steps and people
    /// again and again. The cache holds until an event that changes a user or a step is applied,
    /// which clears it (see `applyUnguarded`); so does a rollback (`forgetLookups`). It lives no
    /// longer than the transaction, inside which no other connection can write.
    ///
    /// Not on PostgreSQL, where other servers write during the transaction: there every lookup
    /// reads the store.
    public func withInteractionCache<T>(_ body: () throws -> T) rethrows -> T {
        guard !db.dialect.writersSideBySide else { return try body() }
        interactionCache = InteractionCache()
        defer { interactionCache = nil }
        return try body()
    }

    /// Runs `body` (one transaction of a delivery worker's pass) with the people, steps,
    /// journeys and comments it reads by key remembered: the entries of one fan-out share their
    /// actor, step and journey. Inside one transaction on SQLite nothing else can change them,
    /// so a remembered record is the record; on PostgreSQL the batch is judged as of its first
    /// look, a few milliseconds. Nothing inside may change a person, step, journey or comment.
    public func withRecordMemo<T>(_ body: () throws -> T) rethrows -> T {
        recordMemo = RecordMemo()
        defer { recordMemo = nil }
        return try body()
    }

    /// Clears what was remembered inside a transaction: it may have been rolled back.
    public func forgetLookups() {
        interactionCache?.clear()
        ceilingSpans.removeAll()
    }

    public func comment(_ id: String) throws -> CommentRecord? {
        try db.first("SELECT \(CommentRecord.columns) FROM comments WHERE ext = ?", [id], CommentRecord.init)
    }

    public func comment(key: Int) throws -> CommentRecord? {
        if let known = recordMemo?.comments[key] { return known }
        let found = try db.first("SELECT \(CommentRecord.columns) FROM comments WHERE id = ?", [key], CommentRecord.init)
        recordMemo?.comments[key] = found
        return found
    }

    /// Whether a block stands between two users, in either direction.
    ///
    /// Two probes of the key, not one `OR`: on a table without rowid SQLite answers an `OR` of
    /// two index lookups through a temporary b-tree built for each run.
    public func blocked(_ a: Int, _ b: Int) throws -> Bool {
        let pair = RecordMemo.Pair(min(a, b), max(a, b))
        if let known = recordMemo?.blocks[pair] { return known }
        let found = try db.cached("""
            SELECT EXISTS (SELECT 1 FROM blocks WHERE blocker = ? AND blocked = ?)
                OR EXISTS (SELECT 1 FROM blocks WHERE blocker = ? AND blocked = ?)
            """).bind([a, b, b, a]).first { $0.bool(0) } ?? false
        recordMemo?.blocks[pair] = found
        return found
    }

    public func follows(_ follower: Int, _ followee: Int) throws -> Bool {
        if let known = recordMemo?.follows[RecordMemo.Pair(follower, followee)] { return known }
        return try db.scalar("SELECT EXISTS (SELECT 1 FROM follows WHERE followee = ? AND follower = ?)", followee, follower) == 1
    }

    /// Whether `follower` follows the journey `journey` (keys both).
    public func followsJourney(_ follower: Int, _ journey: Int) throws -> Bool {
        try db.scalar("SELECT EXISTS (SELECT 1 FROM journey_follows WHERE journey = ? AND follower = ?)", journey, follower) == 1
    }

    public func hasPendingRequest(from requester: Int, to target: Int) throws -> Bool {
        try db.scalar("SELECT EXISTS (SELECT 1 FROM follow_requests WHERE target = ? AND requester = ?)", target, requester) == 1
    }

    /// Pushes sent to `recipient` in the 24 hours up to `at`: the rolling ceiling's count.
    public func pushesInLastDay(to recipient: Int, at: Int64) throws -> Int {
        try db.scalar("""
            SELECT count(*) FROM notifications
            WHERE recipient = ? AND push = 'sent' AND created_at > ? AND created_at <= ?
            """, recipient, at - QuietRules.ceilingWindow, at) ?? 0
    }

    /// Whether a block stands between actor and recipient, either way (`known`, when the
    /// caller has just checked, is not asked again; no actor, no block).
    func blockedBetween(actor: Int?, recipient: Int, known: Bool? = nil) throws -> Bool {
        if let known { return known }
        guard let actor else { return false }
        return try db.cached(Store.blockedSQL).bind([actor, recipient, recipient, actor]).first { $0.bool(0) } ?? false
    }

    /// `ceilingReached`, asked under the recipient's lock on PostgreSQL, where other writers
    /// may be pushing to the same person at this moment: their inbox row, locked until this
    /// transaction ends, serialises that recipient only, and the count that follows sees
    /// whatever the writer before committed.
    ///
    /// The inbox row's push counters settle most cases at once (see `PushDays`): the three
    /// days around `at` holding fewer sent pushes than the ceiling, no span is full. The row is
    /// read as it stands once locked, so it counts what the writer before committed.
    func ceilingReachedLocking(_ recipient: Int, at: Int64) throws -> Bool {
        if let span = ceilingSpans[recipient], span.from <= at, at < span.until { return true }
        let bound = try db.cached(db.dialect.writersSideBySide ? Store.pushDaysLockingSQL : Store.pushDaysSQL).bind([recipient]).first {
            PushDays.bound(at: at, newest: $0.int64(0), counts: [$0.int(1), $0.int(2), $0.int(3)])
        } ?? nil
        if ceilingFromCounters, let bound, bound < QuietRules.dailyCeiling { return false }
        return try ceilingReached(recipient, at: at)
    }

    private static let pushDaysSQL = "SELECT push_day, pushes_0, pushes_1, pushes_2 FROM inboxes WHERE user = ?"
    /// Made once: the ceiling reads the push days for every row it weighs.
    private static let pushDaysLockingSQL = pushDaysSQL + Dialect(.postgresql).lockingRead

    /// The batch of (recipient, step, action) still open at `at` (opened less than 30 minutes
    /// before), with everything a join needs of its row: one read.
    func openBatch(recipient: Int, step: Int, action: Kind, at: Int64) throws -> OpenBatch? {
        // On PostgreSQL two hearts for one batch may come at once: the second waits for the
        // first to commit, then reads the batch as it left it.
        try db.cached(db.dialect.writersSideBySide ? Store.openBatchLockingSQL : Store.openBatchSQL).bind([recipient, step, action.rawValue, at - Batching.window, at]).first { r in
            OpenBatch(row: r.int(0), members: r.int(1), push: try r.decoded(2, table: "notifications", column: "push", PushStatus.init),
                      faces: r.optionalString(3).map { $0.split(separator: "\n").map(String.init) } ?? (r.optionalString(4).map { [$0] } ?? []),
                      event: r.string(5), createdAt: r.int64(6), image: r.optionalString(7), thread: r.string(8))
        }
    }

    private static let openBatchSQL = """
        SELECT b.row, coalesce(n.members, 1), n.push, n.facepile, n.face, e.ext, n.created_at, n.image, n.thread
        FROM batches AS b JOIN notifications AS n ON n.id = b.row AND n.recipient = b.recipient JOIN events AS e ON e.id = n.event
        WHERE b.recipient = ? AND b.step = ? AND b.action = ? AND b.opened_at > ? AND b.opened_at <= ?
        ORDER BY b.opened_at DESC LIMIT 1
        """

    private static let openBatchLockingSQL = openBatchSQL + Dialect(.postgresql).lockingRead(of: "n")

    private static let blockedSQL = """
        SELECT EXISTS (SELECT 1 FROM blocks WHERE blocker = ? AND blocked = ?)
               OR EXISTS (SELECT 1 FROM blocks WHERE blocker = ? AND blocked = ?)
        """

    /// Whether `recipient` has no room for another push at `at`: some 24-hour span holding `at`
    /// already holds the ceiling's 100 sent pushes (see `ceilingTest`). In order, that is the
    /// 100th push of the 24 hours up to `at`, found by reading at most 100 index entries and
    /// remembered: once found, the ceiling stays reached until that 100th push leaves the
    /// window (pushes are only ever added), so a popular person's stream does not read the same
    /// hundred entries for every event of the day.
    /// (A span already known is looked up by `ceilingReachedLocking`, before any lock.)
    func ceilingReached(_ recipient: Int, at: Int64) throws -> Bool {
        let values: [String: SQLBindable] = [":recipient": recipient, ":at": at, ":since": at - QuietRules.ceilingWindow,
                                             ":until": at + QuietRules.ceilingWindow]
        // One statement: the 100th push of the day up to `at`, and whether any is stamped after it.
        let (hundredth, later) = try db.cached(Store.hundredthSQL).bind(named: values)
            .first { ($0.optionalInt64(0), $0.bool(1)) } ?? (nil, false)
        if let hundredth {
            if ceilingSpans.count > 100_000 { ceilingSpans.removeAll(keepingCapacity: true) }
            ceilingSpans[recipient] = (from: at, until: hundredth + QuietRules.ceilingWindow)
            return true
        }
        guard later else { return false }
        // Late: pushes stamped after `at` may fill a span that holds it.
        return try db.cached("SELECT \(Store.lateCeilingTest(recipient: ":recipient"))").bind(named: values).first { $0.bool(0) } ?? false
    }

    private static let hundredthSQL = """
        SELECT (SELECT created_at FROM notifications
                WHERE recipient = :recipient AND push = 'sent' AND created_at > :since AND created_at <= :at
                ORDER BY created_at DESC LIMIT 1 OFFSET \(QuietRules.dailyCeiling - 1)),
               EXISTS (SELECT 1 FROM notifications WHERE recipient = :recipient AND push = 'sent'
                       AND created_at > :at AND created_at < :until)
        """

    /// The daily ceiling as one SQL test, the same for one candidate and for a fan-out: true
    /// when recipient `r` (an SQL expression) may not have another sent push at `:at`, because
    /// some 24-hour span holding `:at` already holds `QuietRules.dailyCeiling` of them. Binds
    /// `:at`, `:since` (`:at` − 24 h) and `:until` (`:at` + 24 h).
    ///
    /// Events may arrive late and out of order, so the span is not only the 24 hours up to
    /// `:at`: a span starting at any sent push of the day before (or at `:at` itself) may reach
    /// pushes stamped after it. When none is stamped after `:at`, the first test alone decides.
    ///
    /// Every span holding `:at` lies inside the 48 hours around it, so fewer than 100 there
    /// settles it at one index seek — what nearly every candidate of a fan-out costs.
    static func ceilingTest(recipient r: String) -> String {
        let full = QuietRules.dailyCeiling - 1
        return """
        (EXISTS (SELECT 1 FROM notifications WHERE recipient = \(r) AND push = 'sent' AND created_at > :since
                 AND created_at < :until LIMIT 1 OFFSET \(full))
         AND (EXISTS (SELECT 1 FROM notifications WHERE recipient = \(r) AND push = 'sent' AND created_at > :since
                      AND created_at <= :at LIMIT 1 OFFSET \(full))
              OR \(lateCeilingTest(recipient: r))))
        """
    }

    /// The part of `ceilingTest` that only a late event needs (some push is stamped after `:at`).
    static func lateCeilingTest(recipient r: String) -> String {
        let full = QuietRules.dailyCeiling - 1
        return """
        (EXISTS (SELECT 1 FROM notifications WHERE recipient = \(r) AND push = 'sent' AND created_at > :at AND created_at < :until)
         AND (EXISTS (SELECT 1 FROM notifications WHERE recipient = \(r) AND push = 'sent' AND created_at >= :at
                      AND created_at < :until LIMIT 1 OFFSET \(full))
              OR EXISTS (SELECT 1 FROM notifications AS p WHERE p.recipient = \(r) AND p.push = 'sent' AND p.created_at > :since
                         AND p.created_at <= :at
                         AND EXISTS (SELECT 1 FROM notifications AS q WHERE q.recipient = \(r) AND q.push = 'sent'
                                     AND q.created_at >= p.created_at AND q.created_at < p.created_at + \(QuietRules.ceilingWindow)
                                     LIMIT 1 OFFSET \(full)))))
        """
    }

    /// Writes a consistent copy of the whole store to `path` (which must not exist): a
    /// scratch world to act on without touching this one.
    public func copy(to path: String) throws {
        guard db.dialect.isOneFile else { throw EventError("a copy of the store is made of a SQLite store only") }
        try db.run("VACUUM INTO ?", path)
    }

    // MARK: Locations

    /// `$XDG_DATA_HOME/stepo/stepo.db` (or `~/.local/share/stepo/stepo.db`), its folder created.
    public static func defaultPath() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let base: String
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            base = xdg
        } else {
            base = (environment["HOME"] ?? NSHomeDirectory()) + "/.local/share"
        }
        let folder = base + "/stepo"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder + "/stepo.db"
    }
}

/// Records read by key inside `withRecordMemo` (nil: known to be absent).
final class RecordMemo {
    struct Pair: Hashable {
        var a: Int, b: Int
        init(_ a: Int, _ b: Int) { self.a = a; self.b = b }
    }
    var users: [Int: UserRecord?] = [:]
    var steps: [Int: StepRecord?] = [:]
    var journeys: [Int: JourneyRecord?] = [:]
    var comments: [Int: CommentRecord?] = [:]
    /// Whether a block stands between two people (the smaller key first).
    var blocks: [Pair: Bool] = [:]
    /// Whether `a` follows `b`.
    var follows: [Pair: Bool] = [:]
    /// Recipients' inbox counters (the badge).
    var counters: [Int: InboxCounters] = [:]
    /// Which person each device token is registered to (nil: to nobody).
    var devices: [String: Int?] = [:]
    /// Rows' pushes as stored (nil: no such row).
    var pushes: [Int: Outbox.StoredPush?] = [:]
}

/// The steps (with their owners) and users an ingest's interactions have looked up.
final class InteractionCache {
    private(set) var steps: [String: (StepRecord, UserRecord)] = [:]
    private(set) var users: [String: UserRecord] = [:]
    /// Entries kept at most, so a long stream of distinct ids cannot grow it without bound.
    static let capacity = 50_000

    func remember(_ user: UserRecord, as id: String) {
        if users.count >= InteractionCache.capacity { users.removeAll(keepingCapacity: true) }
        users[id] = user
    }

    func remember(_ context: StepContext, step id: String, actor: String) {
        if steps.count >= InteractionCache.capacity { steps.removeAll(keepingCapacity: true) }
        steps[id] = (context.step, context.owner)
        if let found = context.actor { remember(found, as: actor) }
    }

    func clear() {
        steps.removeAll(keepingCapacity: true)
        users.removeAll(keepingCapacity: true)
    }
}

/// A standby has not yet replayed what its primary had written when a read began: the read
/// goes to the primary instead.
public struct StandbyBehind: Error, CustomStringConvertible {
    public let position: String
    /// The standby now receives on another timeline than when it was checked: it is to be
    /// opened and checked again, not merely waited for.
    public var moved = false
    public var description: String {
        moved ? "the standby moved to another timeline" : "the standby has not replayed the primary's WAL up to \(position) yet"
    }
}
