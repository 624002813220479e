import struct SQLite.Migrator
import struct Storage.Dialect

/// The backend's schema, as append-only migrations.
///
/// Producer ids (`"maya"`, `"s1"`) live in `ext` columns; joins use integer keys, so a
/// fan-out to 100,000 followers is integer work inside SQLite.
enum Schema {
    static var migrator: Migrator {
        var m = Migrator()
        m.register("0001-world-and-notifications", """

        CREATE TABLE users (
            id INTEGER PRIMARY KEY,
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
            created_at INTEGER NOT NULL
        );
        CREATE TABLE follows (
            followee INTEGER NOT NULL REFERENCES users(id),
            follower INTEGER NOT NULL REFERENCES users(id),
            created_at INTEGER NOT NULL,
            PRIMARY KEY (followee, follower)
        ) WITHOUT ROWID;
        CREATE INDEX follows_by_follower ON follows(follower, followee);
        CREATE TABLE follow_requests (
            target INTEGER NOT NULL REFERENCES users(id),
            requester INTEGER NOT NULL REFERENCES users(id),
            created_at INTEGER NOT NULL,
            PRIMARY KEY (target, requester)
        ) WITHOUT ROWID;
        CREATE TABLE blocks (
            blocker INTEGER NOT NULL REFERENCES users(id),
            blocked INTEGER NOT NULL REFERENCES users(id),
            PRIMARY KEY (blocker, blocked)
        ) WITHOUT ROWID;
        CREATE INDEX blocks_by_blocked ON blocks(blocked, blocker);
        CREATE TABLE mutes (
            muter INTEGER NOT NULL REFERENCES users(id),
            muted INTEGER NOT NULL REFERENCES users(id),
            PRIMARY KEY (muter, muted)
        ) WITHOUT ROWID;

        CREATE TABLE journeys (
            id INTEGER PRIMARY KEY,
            ext TEXT NOT NULL UNIQUE,
            owner INTEGER NOT NULL REFERENCES users(id),
            title TEXT NOT NULL,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX journeys_by_owner ON journeys(owner);
        CREATE TABLE journey_follows (
            journey INTEGER NOT NULL REFERENCES journeys(id),
            follower INTEGER NOT NULL REFERENCES users(id),
            created_at INTEGER NOT NULL,
            PRIMARY KEY (journey, follower)
        ) WITHOUT ROWID;
        CREATE TABLE steps (
            id INTEGER PRIMARY KEY,
            ext TEXT NOT NULL UNIQUE,
            journey INTEGER NOT NULL REFERENCES journeys(id),
            owner INTEGER NOT NULL REFERENCES users(id),
            caption TEXT NOT NULL,
            photo_url TEXT,
            final INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            published_at INTEGER,
            -- The event that published the step: its rows are that event's row range.
            publish_event INTEGER,
            deleted_at INTEGER
        );
        CREATE INDEX steps_by_journey ON steps(journey, published_at);
        CREATE TABLE comments (
            id INTEGER PRIMARY KEY,
            ext TEXT NOT NULL UNIQUE,
            step INTEGER NOT NULL REFERENCES steps(id),
            author INTEGER NOT NULL REFERENCES users(id),
            text TEXT NOT NULL,
            parent INTEGER REFERENCES comments(id),
            created_at INTEGER NOT NULL,
            -- The event that posted the comment: its rows are that event's row range.
            event INTEGER NOT NULL,
            deleted_at INTEGER
        );
        CREATE INDEX comments_by_step ON comments(step, created_at);
        -- Hearts and shares: one per (step, type, actor); a repeat is a re-ping and stays silent.
        CREATE TABLE interactions (
            step INTEGER NOT NULL REFERENCES steps(id),
            type TEXT NOT NULL CHECK (type IN ('heart', 'share')),
            actor INTEGER NOT NULL REFERENCES users(id),
            at INTEGER NOT NULL,
            event INTEGER NOT NULL,
            PRIMARY KEY (step, type, actor)
        ) WITHOUT ROWID;
        CREATE TABLE tiers (
            journey INTEGER NOT NULL REFERENCES journeys(id),
            supporter INTEGER NOT NULL REFERENCES users(id),
            tier TEXT NOT NULL,
            at INTEGER NOT NULL,
            PRIMARY KEY (journey, supporter, tier)
        ) WITHOUT ROWID;

        -- Every change applied to the store, once: each producer event (with its id, `ext`)
        -- and each seen or read stamp (no `ext`). The id is the version of every row the change
        -- touched; ids only grow (rows here are never deleted), so a recipient's versions do too.
        -- An event's rows are the id range [first_row, last_row]: rows are found through the
        -- events that made them (a deleted step's publish, interactions, comments), so no
        -- per-row index is needed for that. Producer payloads are not kept.
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            ext TEXT UNIQUE,
            type TEXT NOT NULL,
            at INTEGER NOT NULL,
            first_row INTEGER,
            last_row INTEGER,
            note TEXT,
            -- A fan-out's content, shared by all its rows (whose own content columns are NULL).
            title TEXT,
            body TEXT,
            push_body TEXT,
            push_image TEXT,
            face TEXT,
            image TEXT,
            tap TEXT,
            thread TEXT
        );
        -- Candidates of an event that got no row, and why: what `stepo explain` reads.
        CREATE TABLE suppressions (
            event INTEGER NOT NULL REFERENCES events(id),
            recipient INTEGER NOT NULL,
            kind TEXT NOT NULL,
            reason TEXT NOT NULL
        );
        CREATE INDEX suppressions_by_event ON suppressions(event);

        CREATE TABLE notifications (
            id INTEGER PRIMARY KEY,
            event INTEGER NOT NULL REFERENCES events(id),
            recipient INTEGER NOT NULL REFERENCES users(id),
            kind TEXT NOT NULL,
            actor INTEGER REFERENCES users(id),
            -- The content: here for a row of its own, NULL (title first) for a fan-out's row,
            -- whose content is stored once on its event.
            title TEXT,
            body TEXT,
            -- The push's body when it differs from the row's (a private actor's masked copy).
            push_body TEXT,
            push_image TEXT,
            face TEXT,
            image TEXT,
            step INTEGER,
            comment INTEGER,
            journey INTEGER,
            tap TEXT,
            thread TEXT,
            push TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            version INTEGER NOT NULL,
            seen_at INTEGER,
            read_at INTEGER,
            deleted INTEGER NOT NULL DEFAULT 0
        );
        -- Listing newest first, and the rolling push ceiling (covering: push is in the key).
        CREATE INDEX notifications_by_recipient ON notifications(recipient, created_at, push);
        -- Counts stay cheap: only unread rows are here, and since read implies seen, the unseen
        -- rows are the ones among them with no seen_at (a range at the front of each recipient).
        CREATE INDEX notifications_unread ON notifications(recipient, seen_at) WHERE read_at IS NULL;
        -- Sync pulls a recipient's changes after a version.
        CREATE INDEX notifications_by_version ON notifications(recipient, version);
        """)
        m.register("0002-tokens-and-client-mutations", """
        -- Bearer tokens: only a SHA-256 of each is kept. An admin token may post events.
        CREATE TABLE tokens (
            hash BLOB PRIMARY KEY NOT NULL,
            user INTEGER REFERENCES users(id),
            admin INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        -- The last mutation applied per (client, user): each is applied at most once.
        CREATE TABLE client_mutations (
            client TEXT NOT NULL,
            user INTEGER NOT NULL REFERENCES users(id),
            last_seq INTEGER NOT NULL,
            PRIMARY KEY (client, user)
        ) WITHOUT ROWID;
        """)
        m.register("0003-inboxes-marks-visibility", """
        -- The store's identity, made once with it: a replica belongs to one store.
        CREATE TABLE settings (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
        INSERT INTO settings(key, value) VALUES ('identity', lower(hex(randomblob(16))));

        -- Rows gain `ord`, their place among the recipient's rows (1, 2, 3 …): a seen or read
        -- mark is then one number, and counts are arithmetic instead of a scan. `seen_at` and
        -- `read_at` now hold only stamps made row by row (a read); marks hold the rest.
        CREATE TABLE notifications_v3 (
            id INTEGER PRIMARY KEY,
            event INTEGER NOT NULL REFERENCES events(id),
            recipient INTEGER NOT NULL REFERENCES users(id),
            ord INTEGER NOT NULL,
            kind TEXT NOT NULL,
            actor INTEGER REFERENCES users(id),
            title TEXT,
            body TEXT,
            push_body TEXT,
            push_image TEXT,
            face TEXT,
            image TEXT,
            step INTEGER,
            comment INTEGER,
            journey INTEGER,
            -- A recognition's tier: the copy keeps it when the journey's title is withheld.
            tier TEXT,
            tap TEXT,
            thread TEXT,
            push TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            version INTEGER NOT NULL,
            seen_at INTEGER,
            read_at INTEGER,
            deleted INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO notifications_v3(id, event, recipient, ord, kind, actor, title, body, push_body, push_image, face, image,
                                     step, comment, journey, tier, tap, thread, push, created_at, version, seen_at, read_at, deleted)
        SELECT n.id, n.event, n.recipient, row_number() OVER (PARTITION BY n.recipient ORDER BY n.id), n.kind, n.actor,
               n.title, n.body, n.push_body, n.push_image, n.face, n.image, n.step, n.comment, n.journey,
               CASE WHEN n.kind IN ('recognitionReceived', 'recognitionEarned') THEN
                   (SELECT t.tier FROM tiers AS t
                    WHERE t.journey = n.journey
                      AND t.supporter = CASE n.kind WHEN 'recognitionReceived' THEN n.actor ELSE n.recipient END
                    ORDER BY t.at DESC LIMIT 1)
               END,
               n.tap, n.thread, n.push, n.created_at, n.version, n.seen_at, n.read_at, n.deleted
        FROM notifications AS n;
        DROP TABLE notifications;
        ALTER TABLE notifications_v3 RENAME TO notifications;
        -- A recipient's rows in the order they arrived (event, then id): listing, and finding
        -- the last row a version covers.
        CREATE INDEX notifications_by_recipient ON notifications(recipient, event);
        -- Sync pulls a recipient's changes after a version.
        CREATE INDEX notifications_by_version ON notifications(recipient, version);
        -- The rolling ceiling reads at most 100 entries of these: only sent pushes.
        CREATE INDEX notifications_sent ON notifications(recipient, created_at) WHERE push = 'sent';
        -- Rows stamped one by one: few, and what a mark passing over them must subtract.
        CREATE INDEX notifications_stamped_seen ON notifications(recipient, ord) WHERE seen_at IS NOT NULL;
        CREATE INDEX notifications_stamped_read ON notifications(recipient, ord) WHERE read_at IS NOT NULL;
        -- Who has already told whom "started following you": one ping per person, ever.
        CREATE INDEX notifications_follow_pings ON notifications(recipient, actor) WHERE kind = 'newFollower';

        -- Per recipient: rows in all, how far the seen and read marks reach (as ords), and the
        -- rows past each mark stamped one by one. unseen = total - seen_ord - seen_above;
        -- unread = total - read_ord - read_above. A read mark moves the seen mark with it.
        CREATE TABLE inboxes (
            user INTEGER PRIMARY KEY REFERENCES users(id),
            total INTEGER NOT NULL DEFAULT 0,
            seen_ord INTEGER NOT NULL DEFAULT 0,
            read_ord INTEGER NOT NULL DEFAULT 0,
            seen_above INTEGER NOT NULL DEFAULT 0,
            read_above INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO inboxes(user, total, seen_above, read_above)
        SELECT u.id, count(n.id), count(n.seen_at), count(n.read_at)
        FROM users AS u LEFT JOIN notifications AS n ON n.recipient = u.id GROUP BY u.id;
        -- Every seen and read mark, kept: a row's seenAt is the time of the first that covers it.
        CREATE TABLE marks (
            user INTEGER NOT NULL REFERENCES users(id),
            version INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('seen', 'read')),
            through_ord INTEGER NOT NULL,
            through_row INTEGER NOT NULL,
            at INTEGER NOT NULL,
            PRIMARY KEY (user, version)
        ) WITHOUT ROWID;
        CREATE INDEX marks_by_reach ON marks(user, through_ord);
        CREATE INDEX marks_by_kind ON marks(user, kind, through_ord);

        -- What a reader may no longer see, as changes of their sync: a block either way, an
        -- unfollow of a private account (viewer = that reader), a switch to private or an
        -- inactive account (viewer 0: everyone who does not follow them), a deleted comment
        -- (viewer = the step's owner, who holds all its comments).
        CREATE TABLE revocations (
            version INTEGER NOT NULL,
            viewer INTEGER NOT NULL,
            owner INTEGER,
            comment INTEGER,
            reason TEXT NOT NULL CHECK (reason IN ('block', 'unfollow', 'private', 'inactive', 'comment'))
        );
        CREATE INDEX revocations_by_viewer ON revocations(viewer, version);

        -- A step's hearts and shares, counted as they come: a step with 100,000 hearts is
        -- shown without counting them again.
        ALTER TABLE steps ADD COLUMN hearts INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE steps ADD COLUMN shares INTEGER NOT NULL DEFAULT 0;
        UPDATE steps SET hearts = (SELECT count(*) FROM interactions WHERE step = steps.id AND type = 'heart'),
                         shares = (SELECT count(*) FROM interactions WHERE step = steps.id AND type = 'share');
        -- Who hearted and shared a step, newest first; a journey's newest tiers.
        CREATE INDEX interactions_by_time ON interactions(step, at);
        CREATE INDEX tiers_by_time ON tiers(journey, at);

        -- A deleted comment's replies show it as their parent.
        CREATE INDEX comments_by_parent ON comments(parent) WHERE parent IS NOT NULL;
        CREATE INDEX steps_by_owner ON steps(owner);

        -- Tokens may expire and be revoked; a label says which device holds one.
        ALTER TABLE tokens ADD COLUMN expires_at INTEGER;
        ALTER TABLE tokens ADD COLUMN revoked_at INTEGER;
        ALTER TABLE tokens ADD COLUMN label TEXT;
        CREATE INDEX tokens_by_user ON tokens(user);
        """)
        // V2: batches. A batchable row (a heart or a share on a step) opens a batch; the next
        // distinct people within 30 minutes join it, and the row becomes the batch.
        m.register("0004-batches", """
        -- A batch row: its people counted, what they did, its faces (one per line, newest first).
        ALTER TABLE notifications ADD COLUMN members INTEGER;
        ALTER TABLE notifications ADD COLUMN action TEXT;
        ALTER TABLE notifications ADD COLUMN facepile TEXT;
        -- Every batchable row, findable by what it gathers: (recipient, step, action), newest
        -- first. Joining is one seek here and one insert below.
        CREATE TABLE batches (
            row INTEGER PRIMARY KEY REFERENCES notifications(id),
            recipient INTEGER NOT NULL,
            step INTEGER NOT NULL,
            action TEXT NOT NULL,
            opened_at INTEGER NOT NULL
        );
        CREATE INDEX batches_open ON batches(recipient, step, action, opened_at);
        -- Who is counted in a batch, when they joined, and the face they brought.
        CREATE TABLE batch_members (
            row INTEGER NOT NULL,
            person INTEGER NOT NULL,
            at INTEGER NOT NULL,
            face TEXT,
            PRIMARY KEY (row, person)
        ) WITHOUT ROWID;
        CREATE INDEX batch_members_by_person ON batch_members(person);
        """)
        // V2: custom follow alerts. A user sets a person or a journey to all or off (default
        // is no row). `users.alerts` counts a user's overrides, so a fan-out looks them up only
        // for the users who have any.
        m.register("0005-custom-follow-alerts", """
        CREATE TABLE person_alerts (
            user INTEGER NOT NULL REFERENCES users(id),
            person INTEGER NOT NULL REFERENCES users(id),
            mode TEXT NOT NULL CHECK (mode IN ('all', 'off')),
            PRIMARY KEY (user, person)
        ) WITHOUT ROWID;
        CREATE TABLE journey_alerts (
            user INTEGER NOT NULL REFERENCES users(id),
            journey INTEGER NOT NULL REFERENCES journeys(id),
            mode TEXT NOT NULL CHECK (mode IN ('all', 'off')),
            PRIMARY KEY (user, journey)
        ) WITHOUT ROWID;
        ALTER TABLE users ADD COLUMN alerts INTEGER NOT NULL DEFAULT 0;
        """)
        // Push delivery: the devices a user registered, and the outbox of pushes to send,
        // written in the same transaction as the rows they announce.
        m.register("0006-devices-and-outbox", """
        CREATE TABLE devices (
            token TEXT PRIMARY KEY NOT NULL,
            user INTEGER NOT NULL REFERENCES users(id),
            platform TEXT NOT NULL CHECK (platform IN ('apns', 'fcm')),
            environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
            registered_at INTEGER NOT NULL,
            -- Set when the provider said the token is gone (APNs 410, FCM UNREGISTERED).
            disabled_at INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX devices_by_user ON devices(user) WHERE disabled_at IS NULL;
        -- One entry per push per device. state: due (waiting, or waiting to retry), claimed (a
        -- worker holds it until claimed_until), sent, dead (given up), superseded (a newer
        -- state of its batch replaced it before it went).
        CREATE TABLE outbox (
            id INTEGER PRIMARY KEY,
            row INTEGER NOT NULL REFERENCES notifications(id),
            token TEXT NOT NULL,
            platform TEXT NOT NULL,
            silent INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT 'due' CHECK (state IN ('due', 'claimed', 'sent', 'dead', 'superseded')),
            created_at INTEGER NOT NULL,
            due_at INTEGER NOT NULL,
            expires_at INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0,
            claimed_by TEXT,
            claimed_until INTEGER
        );
        CREATE INDEX outbox_due ON outbox(due_at) WHERE state IN ('due', 'claimed');
        CREATE INDEX outbox_by_row ON outbox(row);
        -- Every attempt: what the provider answered, and how long it took.
        CREATE TABLE delivery_attempts (
            entry INTEGER NOT NULL REFERENCES outbox(id),
            at INTEGER NOT NULL,
            status INTEGER,
            reason TEXT,
            provider_id TEXT,
            latency_ms INTEGER
        );
        CREATE INDEX delivery_attempts_by_entry ON delivery_attempts(entry);
        """)
        // The rules hold at send time: an entry they now forbid is dropped (its reason is its
        // attempt's). SQLite cannot change a CHECK in place: the table is copied.
        m.register("0007-outbox-dropped", """
        CREATE TABLE outbox_v7 (
            id INTEGER PRIMARY KEY,
            row INTEGER NOT NULL REFERENCES notifications(id),
            token TEXT NOT NULL,
            platform TEXT NOT NULL,
            silent INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT 'due' CHECK (state IN ('due', 'claimed', 'sent', 'dead', 'superseded', 'dropped')),
            created_at INTEGER NOT NULL,
            due_at INTEGER NOT NULL,
            expires_at INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0,
            claimed_by TEXT,
            claimed_until INTEGER
        );
        INSERT INTO outbox_v7 SELECT id, row, token, platform, silent, state, created_at, due_at, expires_at, attempts,
                                     claimed_by, claimed_until FROM outbox;
        DROP TABLE outbox;
        ALTER TABLE outbox_v7 RENAME TO outbox;
        CREATE INDEX outbox_due ON outbox(due_at) WHERE state IN ('due', 'claimed');
        CREATE INDEX outbox_by_row ON outbox(row);
        """)
        // The trust budget: every change of a push switch, so a switch turned off soon after
        // a push can be counted as a mute of that push's category.
        m.register("0009-preference-changes", """
        CREATE TABLE preference_changes (
            event INTEGER NOT NULL REFERENCES events(id),
            user INTEGER NOT NULL REFERENCES users(id),
            switch TEXT NOT NULL,
            was_on INTEGER NOT NULL,
            now_on INTEGER NOT NULL,
            at INTEGER NOT NULL
        );
        CREATE INDEX preference_changes_by_time ON preference_changes(at);
        """)
        m.register("0010-stats-counters", Schema.statsCounters(user: "user", rowid: " WITHOUT ROWID"))
        m.register("0011-stats-slots", Schema.statsSlots(rowid: " WITHOUT ROWID"))
        m.register("0013-pushes-by-day", PushDays.migration(user: "user"))
        m.register("0014-history-marks", Schema.historyMarks(random: Dialect(.sqlite).randomInteger))
        m.register("0015-request-pings", Schema.requestPings)
        m.register("0016-quiet-hours", Schema.quietHours)
        m.register("0017-retention", Schema.retention(rowid: " WITHOUT ROWID"))
        m.register("0018-frozen-mutes", Schema.frozenMutes)
        return m
    }

    /// The trust budget's counters (see `StatsCounters`), the same on both engines but for
    /// how `user` is written and SQLite's rowid-less tables. Filled from the rows already there
    /// by `Stats.recount` when the migration runs.
    static func statsCounters(user: String, rowid: String) -> String {
        """
        CREATE TABLE stats_rows (hour BIGINT NOT NULL, kind TEXT NOT NULL, category TEXT NOT NULL, push TEXT NOT NULL,
            n BIGINT NOT NULL, PRIMARY KEY (hour, kind, category, push))\(rowid);
        CREATE TABLE stats_withheld (hour BIGINT NOT NULL, kind TEXT NOT NULL, reason TEXT NOT NULL, n BIGINT NOT NULL,
            PRIMARY KEY (hour, kind, reason))\(rowid);
        CREATE TABLE stats_stamps (hour BIGINT NOT NULL, kind TEXT NOT NULL, category TEXT NOT NULL, stamp TEXT NOT NULL,
            bucket INTEGER NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (hour, kind, category, stamp, bucket))\(rowid);
        CREATE TABLE push_load (hour BIGINT NOT NULL, \(user) BIGINT NOT NULL, category TEXT NOT NULL, sent BIGINT NOT NULL,
            held BIGINT NOT NULL, PRIMARY KEY (hour, \(user), category))\(rowid);
        CREATE TABLE push_daily (day BIGINT NOT NULL, \(user) BIGINT NOT NULL, category TEXT NOT NULL, sent BIGINT NOT NULL,
            held BIGINT NOT NULL, PRIMARY KEY (day, \(user), category))\(rowid);
        -- Outbox entries by the hour of their row: made, and how each ended (sent, dropped with
        -- its reason, dead, superseded), those that took more than one attempt (retried), and
        -- the sent ones by how long from row to answer (answered, the bucket as the reason).
        CREATE TABLE stats_delivery (hour BIGINT NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL, n BIGINT NOT NULL,
            PRIMARY KEY (hour, outcome, reason))\(rowid);
        -- Fan-outs whose pushes are not yet in push_load and push_daily: a publish to a million
        -- people writes one line here, and its million load entries are counted when the figures
        -- are next read (Stats.catchUpStamps).
        CREATE TABLE stats_pending (event BIGINT PRIMARY KEY NOT NULL, hour BIGINT NOT NULL);
        -- How far each person's rows are counted as seen and read by their marks: marks are
        -- counted later (see Stats.catchUpStamps), so opening Activity stays one write.
        CREATE TABLE stats_reach (\(user) BIGINT PRIMARY KEY NOT NULL, seen_ord BIGINT NOT NULL, read_ord BIGINT NOT NULL);
        -- The rows of a span's first and last partial hours are found through their events.
        CREATE INDEX events_by_time ON events(at);
        """
    }

    /// The shared counters gain a `slot`: each writer adds to its own entry (on PostgreSQL a
    /// slot per connection, see `Store.slot`), so writers side by side never wait on one
    /// counter row held until the other commits; readers sum the slots. What was counted
    /// moves to slot 0.
    static func statsSlots(rowid: String) -> String {
        let tables: [(name: String, key: String, columns: String)] = [
            ("stats_rows", "hour BIGINT NOT NULL, kind TEXT NOT NULL, category TEXT NOT NULL, push TEXT NOT NULL",
             "hour, kind, category, push"),
            ("stats_withheld", "hour BIGINT NOT NULL, kind TEXT NOT NULL, reason TEXT NOT NULL", "hour, kind, reason"),
            ("stats_stamps", "hour BIGINT NOT NULL, kind TEXT NOT NULL, category TEXT NOT NULL, stamp TEXT NOT NULL, bucket INTEGER NOT NULL",
             "hour, kind, category, stamp, bucket"),
            ("stats_delivery", "hour BIGINT NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL", "hour, outcome, reason"),
        ]
        return tables.map { t in
            """
            CREATE TABLE \(t.name)_slotted (\(t.key), slot INTEGER NOT NULL DEFAULT 0, n BIGINT NOT NULL,
                PRIMARY KEY (\(t.columns), slot))\(rowid);
            INSERT INTO \(t.name)_slotted(\(t.columns), slot, n) SELECT \(t.columns), 0, n FROM \(t.name);
            DROP TABLE \(t.name);
            ALTER TABLE \(t.name)_slotted RENAME TO \(t.name);
            """
        }.joined(separator: "\n")
    }
}

extension Schema {
    /// Every change gets a history mark: a random number beside its version, so a replica can
    /// tell the store's history from its own. A store restored from an older copy reuses the
    /// versions it had lost, but with other marks (see `SyncPages.historyMark`). The changes
    /// made before this migration are marked now.
    static func historyMarks(random: String) -> String {
        """
        ALTER TABLE events ADD COLUMN nonce BIGINT;
        UPDATE events SET nonce = \(random);
        """
    }
}

extension Schema {
    /// Who has already asked whom to follow them, and who has already been told "accepted":
    /// like "started following you", one ping per pair, ever (see `Store.pinged`).
    static let requestPings = """
        CREATE INDEX notifications_request_pings ON notifications(recipient, actor) WHERE kind = 'followRequest';
        CREATE INDEX notifications_accepted_pings ON notifications(recipient, actor) WHERE kind = 'followRequestAccepted';
        """
}

extension Schema {
    /// Quiet hours (`QuietHours.stored`, NULL: none) and the outbox entries they hold: an
    /// entry made inside its recipient's quiet hours is `held`, due when they end.
    static let quietHours = """
        ALTER TABLE users ADD COLUMN quiet_hours TEXT;
        ALTER TABLE outbox ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX outbox_held ON outbox(token) WHERE held = 1 AND state = 'due';
        """
}

extension Schema {
    /// Retention (`stepo prune`): each inbox's prune mark — its rows through `pruned_ord` are
    /// gone or going, `pruned_row` the last of them — and the pings whose rows went, so that
    /// "started following you" stays one ping per person, ever.
    static func retention(rowid: String) -> String {
        """
        ALTER TABLE inboxes ADD COLUMN pruned_ord BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE inboxes ADD COLUMN pruned_row BIGINT NOT NULL DEFAULT 0;
        CREATE TABLE pings (recipient BIGINT NOT NULL, actor BIGINT NOT NULL, kind TEXT NOT NULL,
            PRIMARY KEY (recipient, actor, kind))\(rowid);
        """
    }
}

extension Schema {
    /// Mutes weighed before a prune removed what they are weighed against (`Stats.freezeMutes`):
    /// the change's event, its person and time, and what it muted (`category:kind,kind;…`).
    static let frozenMutes = """
        CREATE TABLE stats_mutes (event BIGINT PRIMARY KEY, person BIGINT NOT NULL, at BIGINT NOT NULL, muted TEXT NOT NULL);
        CREATE INDEX stats_mutes_by_time ON stats_mutes(at);
        """
}
