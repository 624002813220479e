import SQLite

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
        return m
    }
}
