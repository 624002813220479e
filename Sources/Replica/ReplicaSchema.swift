import SQLite

/// The replica's schema: typed columns for rows and entities, cards for a list paged by
/// display lines, marks, and the queue.
///
/// A replica is a cache of the server's truth: a file written by another build (migrations
/// this build does not know) is started afresh rather than refused.
enum ReplicaSchema {
    static var migrator: Migrator {
        var m = Migrator()
        m.register("replica-1", """
            CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;

            -- One row of the reader's activity, as the server last sent it (or as stamped here).
            CREATE TABLE rows (
                id INTEGER PRIMARY KEY,
                version INTEGER NOT NULL,
                event TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                kind TEXT NOT NULL,
                actor TEXT,
                title TEXT NOT NULL,
                body TEXT NOT NULL,
                face TEXT,
                image TEXT,
                -- A batch's faces, one per line.
                facepile TEXT,
                -- The tap, in the contract's JSON (read back as a typed Tap).
                tap TEXT NOT NULL,
                thread TEXT NOT NULL,
                push TEXT NOT NULL,
                step TEXT,
                journey TEXT,
                comment TEXT,
                tier TEXT,
                seen_at INTEGER,
                read_at INTEGER,
                deleted INTEGER NOT NULL DEFAULT 0,
                withheld INTEGER NOT NULL DEFAULT 0,
                -- The list card the row belongs to (`Card.key(for:)`).
                card TEXT NOT NULL
            );
            CREATE INDEX rows_by_card ON rows(card, id);
            CREATE INDEX rows_by_kind ON rows(kind, id);
            CREATE INDEX rows_by_step ON rows(step) WHERE step IS NOT NULL;
            CREATE INDEX rows_by_actor ON rows(actor) WHERE actor IS NOT NULL;
            CREATE INDEX rows_by_journey ON rows(journey) WHERE journey IS NOT NULL;
            CREATE INDEX rows_by_comment ON rows(comment) WHERE comment IS NOT NULL;

            -- The list's cards: a step's rows of one day stack into one; every other row stands
            -- alone. `newest` is the card's newest row id: the list is ordered by it, so a page of
            -- the list is a range of this index however the rows group.
            CREATE TABLE cards (
                key TEXT PRIMARY KEY NOT NULL,
                newest INTEGER NOT NULL,
                rows INTEGER NOT NULL,
                people INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX cards_by_newest ON cards(newest);
            CREATE TABLE card_people (card TEXT NOT NULL, person TEXT NOT NULL, PRIMARY KEY (card, person)) WITHOUT ROWID;

            -- Seen and read marks: the server's (with their version), and the one made here on
            -- opening Activity (version NULL) until the server's arrives.
            CREATE TABLE marks (
                seq INTEGER PRIMARY KEY,
                version INTEGER,
                kind TEXT NOT NULL,
                through_row INTEGER NOT NULL,
                at INTEGER NOT NULL
            );

            CREATE TABLE users (
                id TEXT PRIMARY KEY NOT NULL,
                username TEXT NOT NULL,
                name TEXT NOT NULL,
                avatar_url TEXT,
                private INTEGER NOT NULL,
                state TEXT NOT NULL,
                following INTEGER NOT NULL,
                follows_you INTEGER NOT NULL,
                requested INTEGER NOT NULL,
                requested_you INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE steps (
                id TEXT PRIMARY KEY NOT NULL,
                journey TEXT NOT NULL,
                journey_title TEXT NOT NULL,
                owner TEXT NOT NULL,
                caption TEXT NOT NULL,
                photo_url TEXT,
                final INTEGER NOT NULL,
                published_at INTEGER,
                deleted INTEGER NOT NULL,
                hearts INTEGER NOT NULL,
                shares INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX steps_by_owner ON steps(owner);
            CREATE INDEX steps_by_journey ON steps(journey);
            CREATE TABLE comments (
                id TEXT PRIMARY KEY NOT NULL,
                step TEXT NOT NULL,
                author TEXT NOT NULL,
                text TEXT,
                parent TEXT,
                at INTEGER NOT NULL,
                deleted INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX comments_by_step ON comments(step, at);
            CREATE INDEX comments_by_author ON comments(author);
            CREATE TABLE journeys (id TEXT PRIMARY KEY NOT NULL, title TEXT NOT NULL, owner TEXT NOT NULL) WITHOUT ROWID;
            CREATE INDEX journeys_by_owner ON journeys(owner);
            CREATE TABLE journey_steps (
                journey TEXT NOT NULL,
                position INTEGER NOT NULL,
                step TEXT NOT NULL,
                final INTEGER NOT NULL,
                published_at INTEGER,
                PRIMARY KEY (journey, position)
            ) WITHOUT ROWID;
            CREATE TABLE supporters (
                journey TEXT NOT NULL,
                position INTEGER NOT NULL,
                user TEXT NOT NULL,
                tier TEXT NOT NULL,
                at INTEGER NOT NULL,
                PRIMARY KEY (journey, position)
            ) WITHOUT ROWID;

            -- Mutations made here and not yet acknowledged by the server, in order.
            CREATE TABLE pending (seq INTEGER PRIMARY KEY, mutation TEXT NOT NULL);
            """)
        // A card's oldest row: when it arrived after the reader last looked, the whole card
        // is new, and its new rows need no counting.
        m.register("replica-2", """
            ALTER TABLE cards ADD COLUMN oldest INTEGER NOT NULL DEFAULT 0;
            UPDATE cards SET oldest = coalesce((SELECT min(id) FROM rows WHERE rows.card = cards.key), newest);
            """)
        // Batches: a batch row counts its people and names what they did. Hearts and shares now
        // gather on the server (a batch per 30 minutes), so each stands as a card of its own,
        // and the cards are built again from the rows.
        m.register("replica-3", """
            ALTER TABLE rows ADD COLUMN members INTEGER;
            ALTER TABLE rows ADD COLUMN action TEXT;
            UPDATE rows SET card = 'row:' || id WHERE kind IN ('steppedWithHeart', 'steppedWithShare', 'heart', 'share', 'batch');
            DELETE FROM card_people;
            DELETE FROM cards;
            INSERT INTO card_people(card, person) SELECT DISTINCT card, coalesce(actor, title) FROM rows;
            INSERT INTO cards(key, newest, oldest, rows, people)
                SELECT card, max(id), min(id), count(*), (SELECT count(*) FROM card_people AS p WHERE p.card = r.card)
                FROM rows AS r GROUP BY card;
            """)
        // Custom follow alerts, as this reader set them: shown on profiles and journeys.
        m.register("replica-4", """
            CREATE TABLE alerts (target TEXT PRIMARY KEY NOT NULL, mode TEXT NOT NULL) WITHOUT ROWID;
            """)
        // What the `/` filter compares: a row's name and words without case or accents
        // (`stepo_search_key`, registered on every connection before migrating).
        m.register("replica-5", """
            ALTER TABLE rows ADD COLUMN search TEXT;
            UPDATE rows SET search = stepo_search_key(coalesce(title, '') || ' ' || coalesce(body, ''));
            """)
        // One card per step: every row about a step (its hearts, shares and batches too) is one
        // card, split at the last visit when the list is read. A batch counts its members as
        // people (`batch_people`), so a card's people are those of its rows plus its batches'.
        // The cards are built again from the rows.
        m.register("replica-6", """
            UPDATE rows SET card = thread WHERE thread LIKE 'step:%' AND card <> thread;
            ALTER TABLE cards ADD COLUMN batch_people INTEGER NOT NULL DEFAULT 0;
            DELETE FROM card_people;
            DELETE FROM cards;
            INSERT INTO card_people(card, person) SELECT DISTINCT card, coalesce(actor, title) FROM rows WHERE kind <> 'batch';
            INSERT INTO cards(key, newest, oldest, rows, people, batch_people)
                SELECT card, max(id), min(id), count(*), (SELECT count(*) FROM card_people AS p WHERE p.card = r.card),
                       sum(CASE WHEN kind = 'batch' THEN max(coalesce(members, 1), 1) ELSE 0 END)
                FROM rows AS r GROUP BY card;
            -- The cards of more than one row, by their newest: the ones a visit can split.
            CREATE INDEX cards_threads ON cards(newest) WHERE rows > 1;
            -- A card's unread rows, by themselves: whether a card of ten thousand rows holds one
            -- is a seek, not a walk.
            CREATE INDEX rows_unread ON rows(card, id) WHERE read_at IS NULL;
            """)
        return m
    }
}
