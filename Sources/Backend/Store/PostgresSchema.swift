import Notifications
import Storage

/// The store's schema on PostgreSQL: the shape SQLite's migrations arrive at (`Schema`), made
/// in one step, as a store on PostgreSQL starts new. Later changes come as further migrations
/// here and in `Schema` alike.
///
/// What differs from SQLite: keys are `BIGSERIAL`; `user` is quoted (reserved here); and the
/// tables read and written per recipient — `notifications`, `inboxes`, `marks` — are
/// hash-partitioned by recipient, so they can later spread over nodes (a partition's primary
/// key must hold the partition key, so a row's own key is (recipient, id), with an index on id
/// for the lookups by id).
enum PostgresSchema {
    /// Partitions of each per-recipient table.
    static let partitions = 8

    static var migrations: [(id: String, sql: String)] {
        [("0001-store", initial),
         ("0007-outbox-dropped", """
          ALTER TABLE outbox DROP CONSTRAINT outbox_state_check;
          ALTER TABLE outbox ADD CONSTRAINT outbox_state_check
              CHECK (state IN ('due', 'claimed', 'sent', 'dead', 'superseded', 'dropped'));
          """),
         ("0008-one-version-lock-per-transaction", versionsPerTransaction),
         ("0009-preference-changes", """
          CREATE TABLE preference_changes (
              event BIGINT NOT NULL REFERENCES events(id),
              "user" BIGINT NOT NULL REFERENCES users(id),
              switch TEXT NOT NULL,
              was_on INTEGER NOT NULL,
              now_on INTEGER NOT NULL,
              at BIGINT NOT NULL
          );
          CREATE INDEX preference_changes_by_time ON preference_changes(at);
          """),
         ("0010-stats-counters", Schema.statsCounters(user: "\"user\"", rowid: "")),
         ("0011-stats-slots", Schema.statsSlots(rowid: "")),
         ("0012-room-for-updates", roomForUpdates),
         ("0013-pushes-by-day", PushDays.migration(user: "\"user\"")),
         ("0014-history-marks", Schema.historyMarks(random: Dialect(.postgresql).randomInteger)),
         ("0015-request-pings", Schema.requestPings),
         ("0016-quiet-hours", Schema.quietHours),
         ("0017-retention", Schema.retention(rowid: "")),
         ("0018-frozen-mutes", Schema.frozenMutes)]
    }

    /// Applies the migrations the database lacks, each in its own transaction. Several servers
    /// starting at once take turns (an advisory lock), so each migration runs once.
    @discardableResult
    static func migrate(_ db: Connection, adopting: Bool = false) throws -> [String] {
        try db.execute("SELECT pg_advisory_lock(\(Connection.migrationLock))")
        defer { try? db.execute("SELECT pg_advisory_unlock(\(Connection.migrationLock))") }
        if !adopting {
            // Another program's tables and none of our migrations: not ours to change.
            let tables = try db.query("""
                SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name
                """) { $0.string(0) }
            let columns = try db.query("""
                SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'schema_migrations'
                """) { $0.string(0) }
            if columns.isEmpty ? !tables.isEmpty : columns != ["id"] { throw NotAStore(foreign: tables, at: db.path) }
        }
        try db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY NOT NULL)")
        let done = Set(try db.query("SELECT id FROM schema_migrations") { $0.string(0) })
        if let unknown = done.subtracting(migrations.map(\.id)).sorted().first {
            throw EventError("the database has migration \(unknown), unknown to this build: it was written by a newer stepo")
        }
        var applied: [String] = []
        for migration in migrations where !done.contains(migration.id) {
            try db.transaction(.concurrent) {
                try db.execute(migration.sql)
                try db.run("INSERT INTO schema_migrations(id) VALUES (?)", migration.id)
            }
            applied.append(migration.id)
        }
        return applied
    }

    /// Versions in flight, registered once per transaction instead of once per version: a
    /// transaction's later versions are all above its first, so the first one's lock holds the
    /// horizon below every one of them. (One lock per version filled PostgreSQL's lock table on
    /// an ingest of 25,000 lines: "out of shared memory".) The first version of a transaction
    /// is remembered in a transaction-local setting; a savepoint rolled back takes back both
    /// the setting and the lock, so the next version registers again. The horizon tries each
    /// version's lock at session level and lets it go at once, so a long look holds no locks.
    static var versionsPerTransaction: String {
        """
        CREATE OR REPLACE FUNCTION stepo_version() RETURNS BIGINT LANGUAGE plpgsql AS $$
        DECLARE v BIGINT;
        BEGIN
            IF coalesce(current_setting('stepo.first_version', true), '') <> '' THEN
                RETURN nextval('events_id_seq');
            END IF;
            PERFORM pg_advisory_lock(\(Connection.versionLock));
            v := nextval('events_id_seq');
            PERFORM pg_advisory_xact_lock(v);
            PERFORM pg_advisory_unlock(\(Connection.versionLock));
            PERFORM set_config('stepo.first_version', v::text, true);
            RETURN v;
        END $$;
        CREATE OR REPLACE FUNCTION stepo_horizon(known BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $$
        DECLARE last BIGINT; called BOOLEAN; v BIGINT; oldest BIGINT;
        BEGIN
            PERFORM pg_advisory_lock(\(Connection.versionLock));
            SELECT last_value, is_called INTO last, called FROM events_id_seq;
            PERFORM pg_advisory_unlock(\(Connection.versionLock));
            IF NOT called THEN last := last - 1; END IF;
            IF known IS NULL OR known < 1 OR last - known > 256 THEN
                SELECT min((l.classid::bigint << 32) | l.objid::bigint) INTO oldest FROM pg_locks AS l
                WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.classid < 256 AND l.granted
                  AND l.mode = 'ExclusiveLock'
                  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database());
                RETURN least(coalesce(oldest, last + 1), last + 1);
            END IF;
            v := known;
            WHILE v <= last LOOP
                IF NOT pg_try_advisory_lock_shared(v) THEN RETURN v; END IF;
                PERFORM pg_advisory_unlock_shared(v);
                v := v + 1;
            END LOOP;
            RETURN last + 1;
        END $$;
        """
    }

    /// Rows written and then updated soon after — an event's row range and note, a batch row
    /// as members join, a person's counters, a step's hearts — leave room on their page, so the
    /// new version stays on the same page and no index is touched (a HOT update). Full pages
    /// made each `UPDATE events SET first_row …` a new tuple elsewhere and an entry in each of
    /// the table's indexes: 49 pages read and 0.27 ms a call under load, the second costliest
    /// statement. Applies to pages written from now on.
    private static var roomForUpdates: String {
        let partitioned = ["notifications": 80, "inboxes": 50]
        let plain = ["events": 70, "steps": 80, "outbox": 70]
        return (plain.sorted { $0.key < $1.key }.map { "ALTER TABLE \($0.key) SET (fillfactor = \($0.value));" }
                + partitioned.sorted { $0.key < $1.key }.flatMap { table, fill in
                    (0..<partitions).map { "ALTER TABLE \(table)_p\($0) SET (fillfactor = \(fill));" }
                }).joined(separator: "\n")
    }

    /// `CREATE TABLE name_pN PARTITION OF name …` for each partition.
    private static func partitionsOf(_ table: String) -> String {
        (0..<partitions).map {
            "CREATE TABLE \(table)_p\($0) PARTITION OF \(table) FOR VALUES WITH (MODULUS \(partitions), REMAINDER \($0));"
        }.joined(separator: "\n")
    }

    static var initial: String {
        """
        CREATE TABLE users (
            id BIGSERIAL PRIMARY KEY,
            ext TEXT NOT NULL UNIQUE,
            username TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            avatar_url TEXT,
            private INTEGER NOT NULL DEFAULT 0,
            signed_in INTEGER NOT NULL DEFAULT 1,
            state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'banned', 'deactivated')),
            pref_all INTEGER NOT NULL DEFAULT 1,
            pref_stepWith INTEGER NOT NULL DEFAULT 1,
            pref_social INTEGER NOT NULL DEFAULT 1,
            pref_engagement INTEGER NOT NULL DEFAULT 1,
            pref_journeys INTEGER NOT NULL DEFAULT 1,
            created_at BIGINT NOT NULL,
            alerts INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE follows (
            followee BIGINT NOT NULL REFERENCES users(id),
            follower BIGINT NOT NULL REFERENCES users(id),
            created_at BIGINT NOT NULL,
            PRIMARY KEY (followee, follower)
        );
        CREATE INDEX follows_by_follower ON follows(follower, followee);
        CREATE TABLE follow_requests (
            target BIGINT NOT NULL REFERENCES users(id),
            requester BIGINT NOT NULL REFERENCES users(id),
            created_at BIGINT NOT NULL,
            PRIMARY KEY (target, requester)
        );
        CREATE TABLE blocks (
            blocker BIGINT NOT NULL REFERENCES users(id),
            blocked BIGINT NOT NULL REFERENCES users(id),
            PRIMARY KEY (blocker, blocked)
        );
        CREATE INDEX blocks_by_blocked ON blocks(blocked, blocker);
        CREATE TABLE mutes (
            muter BIGINT NOT NULL REFERENCES users(id),
            muted BIGINT NOT NULL REFERENCES users(id),
            PRIMARY KEY (muter, muted)
        );
        CREATE TABLE journeys (
            id BIGSERIAL PRIMARY KEY,
            ext TEXT NOT NULL UNIQUE,
            owner BIGINT NOT NULL REFERENCES users(id),
            title TEXT NOT NULL,
            created_at BIGINT NOT NULL
        );
        CREATE INDEX journeys_by_owner ON journeys(owner);
        CREATE TABLE journey_follows (
            journey BIGINT NOT NULL REFERENCES journeys(id),
            follower BIGINT NOT NULL REFERENCES users(id),
            created_at BIGINT NOT NULL,
            PRIMARY KEY (journey, follower)
        );
        CREATE TABLE steps (
            id BIGSERIAL PRIMARY KEY,
            ext TEXT NOT NULL UNIQUE,
            journey BIGINT NOT NULL REFERENCES journeys(id),
            owner BIGINT NOT NULL REFERENCES users(id),
            caption TEXT NOT NULL,
            photo_url TEXT,
            final INTEGER NOT NULL DEFAULT 0,
            created_at BIGINT NOT NULL,
            published_at BIGINT,
            publish_event BIGINT,
            deleted_at BIGINT,
            hearts BIGINT NOT NULL DEFAULT 0,
            shares BIGINT NOT NULL DEFAULT 0
        );
        CREATE INDEX steps_by_journey ON steps(journey, published_at);
        CREATE INDEX steps_by_owner ON steps(owner);
        CREATE TABLE comments (
            id BIGSERIAL PRIMARY KEY,
            ext TEXT NOT NULL UNIQUE,
            step BIGINT NOT NULL REFERENCES steps(id),
            author BIGINT NOT NULL REFERENCES users(id),
            text TEXT NOT NULL,
            parent BIGINT REFERENCES comments(id),
            created_at BIGINT NOT NULL,
            event BIGINT NOT NULL,
            deleted_at BIGINT
        );
        CREATE INDEX comments_by_step ON comments(step, created_at);
        CREATE INDEX comments_by_parent ON comments(parent) WHERE parent IS NOT NULL;
        CREATE TABLE interactions (
            step BIGINT NOT NULL REFERENCES steps(id),
            type TEXT NOT NULL CHECK (type IN ('heart', 'share')),
            actor BIGINT NOT NULL REFERENCES users(id),
            at BIGINT NOT NULL,
            event BIGINT NOT NULL,
            PRIMARY KEY (step, type, actor)
        );
        CREATE INDEX interactions_by_time ON interactions(step, at);
        CREATE TABLE tiers (
            journey BIGINT NOT NULL REFERENCES journeys(id),
            supporter BIGINT NOT NULL REFERENCES users(id),
            tier TEXT NOT NULL,
            at BIGINT NOT NULL,
            PRIMARY KEY (journey, supporter, tier)
        );
        CREATE INDEX tiers_by_time ON tiers(journey, at);

        -- Every change, once; its id is the version of every row it touched. Writers run side by
        -- side, so ids can commit out of order: see stepo_version() and stepo_horizon().
        CREATE TABLE events (
            id BIGSERIAL PRIMARY KEY,
            ext TEXT UNIQUE,
            type TEXT NOT NULL,
            at BIGINT NOT NULL,
            first_row BIGINT,
            last_row BIGINT,
            note TEXT,
            title TEXT,
            body TEXT,
            push_body TEXT,
            push_image TEXT,
            face TEXT,
            image TEXT,
            tap TEXT,
            thread TEXT
        );
        CREATE TABLE suppressions (
            event BIGINT NOT NULL REFERENCES events(id),
            recipient BIGINT NOT NULL,
            kind TEXT NOT NULL,
            reason TEXT NOT NULL
        );
        CREATE INDEX suppressions_by_event ON suppressions(event);

        CREATE TABLE notifications (
            id BIGSERIAL NOT NULL,
            event BIGINT NOT NULL,
            recipient BIGINT NOT NULL,
            ord BIGINT NOT NULL,
            kind TEXT NOT NULL,
            actor BIGINT,
            title TEXT,
            body TEXT,
            push_body TEXT,
            push_image TEXT,
            face TEXT,
            image TEXT,
            step BIGINT,
            comment BIGINT,
            journey BIGINT,
            tier TEXT,
            tap TEXT,
            thread TEXT,
            push TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            version BIGINT NOT NULL,
            seen_at BIGINT,
            read_at BIGINT,
            deleted INTEGER NOT NULL DEFAULT 0,
            members BIGINT,
            action TEXT,
            facepile TEXT,
            PRIMARY KEY (recipient, id)
        ) PARTITION BY HASH (recipient);
        \(partitionsOf("notifications"))
        CREATE INDEX notifications_by_id ON notifications(id);
        CREATE INDEX notifications_by_recipient ON notifications(recipient, event);
        CREATE INDEX notifications_by_version ON notifications(recipient, version);
        CREATE INDEX notifications_sent ON notifications(recipient, created_at) WHERE push = 'sent';
        CREATE INDEX notifications_stamped_seen ON notifications(recipient, ord) WHERE seen_at IS NOT NULL;
        CREATE INDEX notifications_stamped_read ON notifications(recipient, ord) WHERE read_at IS NOT NULL;
        CREATE INDEX notifications_follow_pings ON notifications(recipient, actor) WHERE kind = 'newFollower';
        -- Whose rows changed since a version: what a server's waker asks on each commit it hears.
        CREATE INDEX notifications_by_change ON notifications(version);

        CREATE TABLE tokens (
            hash BYTEA PRIMARY KEY NOT NULL,
            "user" BIGINT REFERENCES users(id),
            admin INTEGER NOT NULL DEFAULT 0,
            created_at BIGINT NOT NULL,
            expires_at BIGINT,
            revoked_at BIGINT,
            label TEXT
        );
        CREATE INDEX tokens_by_user ON tokens("user");
        CREATE TABLE client_mutations (
            client TEXT NOT NULL,
            "user" BIGINT NOT NULL REFERENCES users(id),
            last_seq BIGINT NOT NULL,
            PRIMARY KEY (client, "user")
        );
        CREATE TABLE settings (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
        INSERT INTO settings(key, value) VALUES ('identity', replace(gen_random_uuid()::text, '-', ''));

        CREATE TABLE inboxes (
            "user" BIGINT NOT NULL,
            total BIGINT NOT NULL DEFAULT 0,
            seen_ord BIGINT NOT NULL DEFAULT 0,
            read_ord BIGINT NOT NULL DEFAULT 0,
            seen_above BIGINT NOT NULL DEFAULT 0,
            read_above BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY ("user")
        ) PARTITION BY HASH ("user");
        \(partitionsOf("inboxes"))
        CREATE TABLE marks (
            "user" BIGINT NOT NULL,
            version BIGINT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('seen', 'read')),
            through_ord BIGINT NOT NULL,
            through_row BIGINT NOT NULL,
            at BIGINT NOT NULL,
            PRIMARY KEY ("user", version)
        ) PARTITION BY HASH ("user");
        \(partitionsOf("marks"))
        CREATE INDEX marks_by_reach ON marks("user", through_ord);
        CREATE INDEX marks_by_kind ON marks("user", kind, through_ord);
        CREATE INDEX marks_by_change ON marks(version);
        CREATE TABLE revocations (
            version BIGINT NOT NULL,
            viewer BIGINT NOT NULL,
            owner BIGINT,
            comment BIGINT,
            reason TEXT NOT NULL CHECK (reason IN ('block', 'unfollow', 'private', 'inactive', 'comment'))
        );
        CREATE INDEX revocations_by_viewer ON revocations(viewer, version);
        CREATE INDEX revocations_by_change ON revocations(version);

        CREATE TABLE batches (
            row BIGINT PRIMARY KEY,
            recipient BIGINT NOT NULL,
            step BIGINT NOT NULL,
            action TEXT NOT NULL,
            opened_at BIGINT NOT NULL
        );
        CREATE INDEX batches_open ON batches(recipient, step, action, opened_at);
        CREATE TABLE batch_members (
            row BIGINT NOT NULL,
            person BIGINT NOT NULL,
            at BIGINT NOT NULL,
            face TEXT,
            PRIMARY KEY (row, person)
        );
        CREATE INDEX batch_members_by_person ON batch_members(person);

        CREATE TABLE person_alerts (
            "user" BIGINT NOT NULL REFERENCES users(id),
            person BIGINT NOT NULL REFERENCES users(id),
            mode TEXT NOT NULL CHECK (mode IN ('all', 'off')),
            PRIMARY KEY ("user", person)
        );
        CREATE TABLE journey_alerts (
            "user" BIGINT NOT NULL REFERENCES users(id),
            journey BIGINT NOT NULL REFERENCES journeys(id),
            mode TEXT NOT NULL CHECK (mode IN ('all', 'off')),
            PRIMARY KEY ("user", journey)
        );

        CREATE TABLE devices (
            token TEXT PRIMARY KEY NOT NULL,
            "user" BIGINT NOT NULL REFERENCES users(id),
            platform TEXT NOT NULL CHECK (platform IN ('apns', 'fcm')),
            environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
            registered_at BIGINT NOT NULL,
            disabled_at BIGINT
        );
        CREATE INDEX devices_by_user ON devices("user") WHERE disabled_at IS NULL;
        CREATE TABLE outbox (
            id BIGSERIAL PRIMARY KEY,
            row BIGINT NOT NULL,
            token TEXT NOT NULL,
            platform TEXT NOT NULL,
            silent INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT 'due' CHECK (state IN ('due', 'claimed', 'sent', 'dead', 'superseded')),
            created_at BIGINT NOT NULL,
            due_at BIGINT NOT NULL,
            expires_at BIGINT,
            attempts INTEGER NOT NULL DEFAULT 0,
            claimed_by TEXT,
            claimed_until BIGINT
        );
        CREATE INDEX outbox_due ON outbox(due_at) WHERE state IN ('due', 'claimed');
        CREATE INDEX outbox_by_row ON outbox(row);
        -- SQLite orders attempts by its rowid; here the column of that name does.
        CREATE TABLE delivery_attempts (
            rowid BIGSERIAL PRIMARY KEY,
            entry BIGINT NOT NULL REFERENCES outbox(id),
            at BIGINT NOT NULL,
            status INTEGER,
            reason TEXT,
            provider_id TEXT,
            latency_ms BIGINT
        );
        CREATE INDEX delivery_attempts_by_entry ON delivery_attempts(entry);

        -- A change's version: the next event id, registered as in flight — an advisory lock
        -- keyed by the version, held until its transaction ends — in the same moment it is
        -- taken (under a lock the horizon takes too), so no reader can see it taken but not
        -- in flight.
        CREATE FUNCTION stepo_version() RETURNS BIGINT LANGUAGE plpgsql AS $$
        DECLARE v BIGINT;
        BEGIN
            PERFORM pg_advisory_lock(\(Connection.versionLock));
            v := nextval('events_id_seq');
            PERFORM pg_advisory_xact_lock(v);
            PERFORM pg_advisory_unlock(\(Connection.versionLock));
            RETURN v;
        END $$;
        -- The versions a pull may hand out are those below this one: the oldest version still
        -- in flight, else the next to be taken. Below it every change has committed or rolled
        -- back, so one read after it sees them all. The horizon only moves up, so the caller
        -- passes the last one it had (`known`) and only the versions taken since are tried: a
        -- version is in flight when its lock cannot be shared. Far behind (or knowing none),
        -- the lock table is read once instead.
        CREATE FUNCTION stepo_horizon(known BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $$
        DECLARE last BIGINT; called BOOLEAN; v BIGINT; oldest BIGINT;
        BEGIN
            PERFORM pg_advisory_lock(\(Connection.versionLock));
            SELECT last_value, is_called INTO last, called FROM events_id_seq;
            PERFORM pg_advisory_unlock(\(Connection.versionLock));
            IF NOT called THEN last := last - 1; END IF;
            IF known IS NULL OR known < 1 OR last - known > 10000 THEN
                SELECT min((l.classid::bigint << 32) | l.objid::bigint) INTO oldest FROM pg_locks AS l
                WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.classid < 256 AND l.granted
                  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database());
                RETURN least(coalesce(oldest, last + 1), last + 1);
            END IF;
            v := known;
            WHILE v <= last LOOP
                IF NOT pg_try_advisory_xact_lock_shared(v) THEN RETURN v; END IF;
                v := v + 1;
            END LOOP;
            RETURN last + 1;
        END $$;
        """
    }
}
