import SegnoCore
/// The PostgreSQL schema: the same tables and meaning as SQLite's (README "State database"), with
/// hashes as hex text, plus `lease` for claims. Named migrations, only ever added; applied under
/// an advisory lock so machines starting together migrate once.
package enum PostgresMigrations {
    static package let all: [(name: String, sql: [String])] = [
        ("pg1: recordings, steps, recipes, runs, multipart, pruned, leases", [
            """
            CREATE TABLE recording (
              id BIGSERIAL PRIMARY KEY,
              path TEXT NOT NULL UNIQUE,
              size BIGINT NOT NULL, mtime_ns BIGINT NOT NULL, inode BIGINT NOT NULL,
              content_hash TEXT, duration DOUBLE PRECISION,
              status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, error TEXT,
              updated_at DOUBLE PRECISION NOT NULL, failed_recipe TEXT, failure_class TEXT)
            """,
            "CREATE TABLE recipe (fingerprint TEXT PRIMARY KEY, text TEXT NOT NULL)",
            """
            CREATE TABLE step (
              recording_id BIGINT NOT NULL REFERENCES recording(id) ON DELETE CASCADE,
              stage TEXT NOT NULL, fingerprint TEXT NOT NULL, source TEXT NOT NULL, output TEXT NOT NULL,
              output_hash TEXT NOT NULL, output_size BIGINT NOT NULL, finished_at DOUBLE PRECISION NOT NULL, detail TEXT,
              PRIMARY KEY (recording_id, stage))
            """,
            """
            CREATE TABLE run (
              id BIGSERIAL PRIMARY KEY, started_at DOUBLE PRECISION NOT NULL, finished_at DOUBLE PRECISION,
              spec TEXT NOT NULL, spec_name TEXT NOT NULL, segno_version TEXT NOT NULL, status TEXT NOT NULL,
              planned INTEGER NOT NULL DEFAULT 0, done INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
              skipped INTEGER NOT NULL DEFAULT 0, pruned INTEGER NOT NULL DEFAULT 0,
              worker TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL)
            """,
            "CREATE TABLE multipart (bucket TEXT NOT NULL, key TEXT NOT NULL, progress TEXT NOT NULL, started_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (bucket, key))",
            "CREATE TABLE pruned (id BIGSERIAL PRIMARY KEY, run_id BIGINT NOT NULL, path TEXT NOT NULL, outputs TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)",
            """
            CREATE TABLE lease (                  -- a worker's claim on a recording, renewed by its heartbeat
              path TEXT PRIMARY KEY, worker TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
              claimed_at TIMESTAMPTZ NOT NULL DEFAULT now(), expires_at TIMESTAMPTZ NOT NULL)
            """,
            "CREATE INDEX lease_worker ON lease (worker)",
        ]),
        ("pg2: no-op runs folded into one row (SQLite's v6)", [
            "ALTER TABLE run ADD COLUMN repeats INTEGER NOT NULL DEFAULT 1",
        ]),
        ("pg3: a lease stays once its result is written, stamped with the writing transaction", [
            // NULL: claimed (or expired) without a result. Set: the result was written by that
            // transaction; a worker whose snapshot does not see it skips the recording.
            "ALTER TABLE lease ADD COLUMN finished_xid xid8",
            "CREATE INDEX lease_live ON lease (worker) WHERE finished_xid IS NULL",
        ]),
        ("pg4: fingerprints and search (SQLite's v5)", [
            """
            CREATE TABLE fingerprint (            -- a fingerprint tap's result: raw Chromaprint items
              recording_id BIGINT NOT NULL REFERENCES recording(id) ON DELETE CASCADE,
              stage TEXT NOT NULL, algorithm INTEGER NOT NULL, duration DOUBLE PRECISION NOT NULL,
              items BYTEA NOT NULL,               -- 32-bit items, 4 bytes each, little-endian
              PRIMARY KEY (recording_id, stage))
            """,
            """
            CREATE TABLE catalog (                -- what `segno find` searches, one row per recording
              recording_id BIGINT PRIMARY KEY REFERENCES recording(id) ON DELETE CASCADE,
              title TEXT NOT NULL, recorded TEXT NOT NULL,
              latitude DOUBLE PRECISION, longitude DOUBLE PRECISION, duration DOUBLE PRECISION,
              words TEXT NOT NULL)                -- folded words of the searchable fields: " w1 w2 |" per field
            """,
            "CREATE INDEX catalog_recorded ON catalog (recorded)",
            "CREATE INDEX catalog_place ON catalog (latitude, longitude) WHERE latitude IS NOT NULL",
            // pg_trgm (contrib, in Debian's postgresql-15; a trusted extension a database owner may
            // create) makes `words LIKE '% word%'` an index scan. Without it search still works.
            """
            DO $$ BEGIN
              CREATE EXTENSION IF NOT EXISTS pg_trgm;
            EXCEPTION WHEN OTHERS THEN
              RAISE NOTICE 'pg_trgm is not available: find scans the catalogue';
            END $$
            """,
            """
            DO $$ BEGIN
              IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
                EXECUTE 'CREATE INDEX catalog_words ON catalog USING gin (words gin_trgm_ops)';
              END IF;
            END $$
            """,
        ]),
        ("pg5: salvaged recordings (SQLite's v8)", [
            """
            CREATE TABLE salvaged (
              recording_id BIGINT PRIMARY KEY REFERENCES recording(id) ON DELETE CASCADE,
              report TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)
            """,
        ]),
        ("pg6: voice prints and the speakers kept (SQLite's v9)", [
            """
            CREATE TABLE voice_print (
              name TEXT PRIMARY KEY, vector BYTEA NOT NULL, files INTEGER NOT NULL,
              seconds DOUBLE PRECISION NOT NULL, enrolled_at DOUBLE PRECISION NOT NULL)
            """,
            """
            CREATE TABLE speaker_kept (
              path TEXT NOT NULL, stage TEXT NOT NULL, voices TEXT NOT NULL, turns TEXT NOT NULL, digest TEXT NOT NULL,
              PRIMARY KEY (path, stage))
            """,
        ]),
        ("pg7: speaker labels given in the state (SQLite's v10)", [
            "ALTER TABLE speaker_kept ADD COLUMN seq BIGINT NOT NULL DEFAULT 0",
            "CREATE INDEX speaker_kept_seq ON speaker_kept (stage, seq)",
            "CREATE TABLE speaker_label (stage TEXT PRIMARY KEY, next_label INTEGER NOT NULL, last_seq BIGINT NOT NULL)",
            """
            INSERT INTO speaker_label (stage, next_label, last_seq)
              SELECT k.stage, COALESCE(MAX((v->>'label')::int), 0) + 1, 0
              FROM speaker_kept k LEFT JOIN LATERAL jsonb_array_elements(k.voices::jsonb) v ON true GROUP BY k.stage
            """,
        ]),
        ("pg8: chapters in the catalogue (SQLite's v11)", [
            // JSON {chapters:[{start,title}],markers:[…]}, source seconds; NULL: catalogued before (decision 0096).
            "ALTER TABLE catalog ADD COLUMN chapters TEXT",
        ]),
    ]

    /// Applies what is missing, under `pg_advisory_lock`. Called when a worker opens the store.
    static package func migrate(_ conn: PGConnection) throws {
        try conn.exec("SELECT pg_advisory_lock(7350120)")
        defer { _ = try? conn.exec("SELECT pg_advisory_unlock(7350120)") }
        try conn.exec("CREATE TABLE IF NOT EXISTS segno_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        let done = Set(try conn.exec("SELECT name FROM segno_migrations").compactMap { $0[0] })
        for m in all where !done.contains(m.name) {
            try conn.exec("BEGIN")
            do {
                for statement in m.sql { try conn.exec(statement) }
                try conn.exec("INSERT INTO segno_migrations (name) VALUES ($1)", [m.name])
                try conn.exec("COMMIT")
            } catch {
                _ = try? conn.exec("ROLLBACK")
                throw error
            }
        }
    }

    /// True when every migration is applied (readers never migrate).
    static package func isCurrent(_ conn: PGConnection) throws -> Bool {
        let exists = try conn.exec("SELECT to_regclass('segno_migrations') IS NOT NULL")
        guard exists.first?.first == "t" else { return false }
        let done = Set(try conn.exec("SELECT name FROM segno_migrations").compactMap { $0[0] })
        return all.allSatisfy { done.contains($0.name) }
    }
}
