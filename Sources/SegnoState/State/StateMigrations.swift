import GRDB
import SegnoCore

/// The state schema, as named migrations that are only ever added, never edited once shipped.
/// Inspect a store with `sqlite3 STATE.sqlite .schema`; README.md documents each table.
package enum StateMigrations {
    static package var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1: recordings, recipes, steps, runs") { db in
            try db.execute(sql: """
                CREATE TABLE recording (
                  id INTEGER PRIMARY KEY,
                  path TEXT NOT NULL UNIQUE,          -- relative to input.root
                  size INTEGER NOT NULL,              -- bytes, as last seen
                  mtime_ns INTEGER NOT NULL,          -- modification time, ns since 1970
                  inode INTEGER NOT NULL,
                  content_hash BLOB,                  -- SHA-256 of the source (input.verify: content)
                  duration REAL,                      -- seconds, once decoded
                  status TEXT NOT NULL,               -- done | failed
                  attempts INTEGER NOT NULL DEFAULT 0,
                  error TEXT,                         -- last failure's message
                  updated_at REAL NOT NULL            -- seconds since 1970
                );
                CREATE TABLE recipe (                 -- what a fingerprint stands for (for --explain)
                  fingerprint TEXT PRIMARY KEY,
                  text TEXT NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE step (                   -- one finished tap output of one recording
                  recording_id INTEGER NOT NULL REFERENCES recording(id) ON DELETE CASCADE,
                  stage TEXT NOT NULL,                -- tap identity: "encode:{dir}/{stem}.flac"
                  fingerprint TEXT NOT NULL,          -- options + upstream transforms + versions
                  source TEXT NOT NULL,               -- "size:mtime_ns:inode" of the source it was made from
                  output TEXT NOT NULL,               -- path relative to output.root
                  output_hash BLOB NOT NULL,          -- SHA-256 of the file written
                  output_size INTEGER NOT NULL,
                  finished_at REAL NOT NULL,
                  PRIMARY KEY (recording_id, stage)
                ) WITHOUT ROWID;
                CREATE TABLE run (
                  id INTEGER PRIMARY KEY,
                  started_at REAL NOT NULL,
                  finished_at REAL,
                  spec TEXT NOT NULL,
                  spec_name TEXT NOT NULL,
                  segno_version TEXT NOT NULL,
                  status TEXT NOT NULL,               -- running | done | failures | interrupted | time-up
                  planned INTEGER NOT NULL DEFAULT 0,
                  done INTEGER NOT NULL DEFAULT 0,
                  failed INTEGER NOT NULL DEFAULT 0,
                  skipped INTEGER NOT NULL DEFAULT 0
                );
                """)
        }
        m.registerMigration("v2: tap values, multipart uploads") { db in
            try db.execute(sql: """
                ALTER TABLE step ADD COLUMN detail TEXT;       -- JSON object of values a tap reported (levels)
                CREATE TABLE multipart (                       -- unfinished multipart uploads, for resume
                  bucket TEXT NOT NULL,
                  key TEXT NOT NULL,
                  progress TEXT NOT NULL,                      -- JSON: file sha256, upload id, part size, part ETags
                  started_at REAL NOT NULL,
                  PRIMARY KEY (bucket, key)
                ) WITHOUT ROWID;
                """)
        }
        m.registerMigration("v3: the recipe a failure happened with") { db in
            // A known failure is skipped only while the source AND the job's stages are unchanged.
            try db.execute(sql: "ALTER TABLE recording ADD COLUMN failed_recipe TEXT")
        }
        m.registerMigration("v4: failure classes, partial recordings, prune log") { db in
            // Every failure recorded before classes existed gets one more try: it is marked
            // "environment", and the next run classifies it anew.
            try db.execute(sql: """
                ALTER TABLE recording ADD COLUMN failure_class TEXT;  -- input | spec | environment | transient; NULL when done
                UPDATE recording SET failure_class = 'environment' WHERE status = 'failed';
                ALTER TABLE run ADD COLUMN pruned INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE pruned (                 -- recordings whose source vanished and whose outputs were deleted
                  id INTEGER PRIMARY KEY,
                  run_id INTEGER NOT NULL,
                  path TEXT NOT NULL,                 -- the recording, relative to input.root
                  outputs TEXT NOT NULL,              -- JSON array of the files and objects deleted
                  at REAL NOT NULL                    -- seconds since 1970
                );
                """)
        }
        m.registerMigration("v5: fingerprints and search") { db in
            // The FTS5 index mirrors `catalog` through triggers (an external-content table), so a
            // recording deleted by prune leaves no words behind. unicode61 with remove_diacritics 2
            // finds "Café" by "cafe"; Korean words are found by prefix queries ("서울" finds "서울에서").
            try db.execute(sql: """
                CREATE TABLE fingerprint (            -- a fingerprint tap's result: raw Chromaprint items
                  recording_id INTEGER NOT NULL REFERENCES recording(id) ON DELETE CASCADE,
                  stage TEXT NOT NULL,                -- the tap's identity, as in step.stage: "fingerprint:"
                  algorithm INTEGER NOT NULL,         -- fpcalc's number (1…5)
                  duration REAL NOT NULL,             -- seconds fingerprinted
                  items BLOB NOT NULL,                -- 32-bit items, 4 bytes each, little-endian
                  PRIMARY KEY (recording_id, stage)
                ) WITHOUT ROWID;
                CREATE TABLE catalog (                -- what `segno find` searches, one row per recording
                  recording_id INTEGER PRIMARY KEY REFERENCES recording(id) ON DELETE CASCADE,
                  title TEXT NOT NULL,
                  tags TEXT NOT NULL,                 -- descriptive tag values, one per line
                  name TEXT NOT NULL,                 -- path relative to input.root
                  recorded TEXT NOT NULL,             -- ISO 8601: "2024-05-01T09:30:12Z" or "2024-05-01"
                  latitude REAL,                      -- degrees, from the ISO 6709 location tag
                  longitude REAL,
                  duration REAL
                );
                CREATE INDEX catalog_recorded ON catalog(recorded);
                CREATE INDEX catalog_place ON catalog(latitude, longitude) WHERE latitude IS NOT NULL;
                CREATE VIRTUAL TABLE catalog_fts USING fts5(
                  title, tags, name, content = 'catalog', content_rowid = 'recording_id',
                  tokenize = 'unicode61 remove_diacritics 2'
                );
                CREATE TRIGGER catalog_ai AFTER INSERT ON catalog BEGIN
                  INSERT INTO catalog_fts (rowid, title, tags, name) VALUES (new.recording_id, new.title, new.tags, new.name);
                END;
                CREATE TRIGGER catalog_ad AFTER DELETE ON catalog BEGIN
                  INSERT INTO catalog_fts (catalog_fts, rowid, title, tags, name) VALUES ('delete', old.recording_id, old.title, old.tags, old.name);
                END;
                CREATE TRIGGER catalog_au AFTER UPDATE ON catalog BEGIN
                  INSERT INTO catalog_fts (catalog_fts, rowid, title, tags, name) VALUES ('delete', old.recording_id, old.title, old.tags, old.name);
                  INSERT INTO catalog_fts (rowid, title, tags, name) VALUES (new.recording_id, new.title, new.tags, new.name);
                END;
                """)
        }
        m.registerMigration("v6: no-op runs folded into one row") { db in
            // A cron run that found nothing to do extends the previous such row instead of adding
            // one; `repeats` counts the runs folded into a row (1 for a run of its own).
            try db.execute(sql: "ALTER TABLE run ADD COLUMN repeats INTEGER NOT NULL DEFAULT 1")
        }
        m.registerMigration("v7: transcripts in the catalogue") { db in
            // What was said (`transcribe`) becomes a searchable column; FTS5 tables cannot gain
            // columns, so the index and its triggers are made again and rebuilt from `catalog`.
            try db.execute(sql: """
                ALTER TABLE catalog ADD COLUMN spoken TEXT NOT NULL DEFAULT '';
                DROP TRIGGER catalog_ai; DROP TRIGGER catalog_ad; DROP TRIGGER catalog_au;
                DROP TABLE catalog_fts;
                CREATE VIRTUAL TABLE catalog_fts USING fts5(
                  title, tags, name, spoken, content = 'catalog', content_rowid = 'recording_id',
                  tokenize = 'unicode61 remove_diacritics 2'
                );
                CREATE TRIGGER catalog_ai AFTER INSERT ON catalog BEGIN
                  INSERT INTO catalog_fts (rowid, title, tags, name, spoken) VALUES (new.recording_id, new.title, new.tags, new.name, new.spoken);
                END;
                CREATE TRIGGER catalog_ad AFTER DELETE ON catalog BEGIN
                  INSERT INTO catalog_fts (catalog_fts, rowid, title, tags, name, spoken) VALUES ('delete', old.recording_id, old.title, old.tags, old.name, old.spoken);
                END;
                CREATE TRIGGER catalog_au AFTER UPDATE ON catalog BEGIN
                  INSERT INTO catalog_fts (catalog_fts, rowid, title, tags, name, spoken) VALUES ('delete', old.recording_id, old.title, old.tags, old.name, old.spoken);
                  INSERT INTO catalog_fts (rowid, title, tags, name, spoken) VALUES (new.recording_id, new.title, new.tags, new.name, new.spoken);
                END;
                INSERT INTO catalog_fts (catalog_fts) VALUES ('rebuild');
                """)
        }
        m.registerMigration("v8: salvaged recordings") { db in
            // A recording processed from what salvage recovered: what was lost, where, why (JSON).
            try db.execute(sql: """
                CREATE TABLE salvaged (
                  recording_id INTEGER PRIMARY KEY REFERENCES recording(id) ON DELETE CASCADE,
                  report TEXT NOT NULL,               -- {"frames_lost":…,"at":…,"frames":…,"method":…,"causes":[…]}
                  at REAL NOT NULL                    -- seconds since 1970
                )
                """)
        }
        m.registerMigration("v9: voice prints and the speakers kept") { db in
            // Named voices (decision 0075): prints enrolled by `segno speakers enroll`, and what each
            // `speakers` tap kept of a recording (voices' centroids and archive-wide labels, its
            // turns, the digest of the prints its names came from), so names change without audio.
            try db.execute(sql: """
                CREATE TABLE voice_print (
                  name TEXT PRIMARY KEY,
                  vector BLOB NOT NULL,               -- float32 little-endian, L2-normed (256 for GE2E)
                  files INTEGER NOT NULL,             -- files enrolled
                  seconds REAL NOT NULL,              -- seconds of speech enrolled
                  enrolled_at REAL NOT NULL           -- seconds since 1970
                ) WITHOUT ROWID;
                CREATE TABLE speaker_kept (
                  path TEXT NOT NULL,                 -- the recording, relative to input.root
                  stage TEXT NOT NULL,                -- the tap's identity, as in step.stage
                  voices TEXT NOT NULL,               -- JSON: [{label, seconds, centroid (base64 float32)}] per speaker
                  turns TEXT NOT NULL,                -- JSON: the turns as the tap writes them again
                  digest TEXT NOT NULL,               -- the prints the names in its files were made with
                  PRIMARY KEY (path, stage)
                ) WITHOUT ROWID;
                """)
        }
        m.registerMigration("v10: speaker labels given in the state") { db in
            // Decision 0094: a recording's new labels are given in the transaction that keeps its
            // voices. Per tap, the lowest label never given and the position of the last row kept;
            // each row's position, so a writer reads only the rows kept since it last read. The
            // labels the rows already carry count as given.
            try db.execute(sql: """
                ALTER TABLE speaker_kept ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;  -- position among the tap's rows, 0 before v10
                CREATE INDEX speaker_kept_seq ON speaker_kept (stage, seq);
                CREATE TABLE speaker_label (
                  stage TEXT PRIMARY KEY,             -- the tap's identity, as in speaker_kept.stage
                  next_label INTEGER NOT NULL,        -- the lowest label number never given
                  last_seq INTEGER NOT NULL           -- the position of the last row kept
                ) WITHOUT ROWID;
                INSERT INTO speaker_label (stage, next_label, last_seq)
                  SELECT k.stage, COALESCE(MAX(json_extract(v.value, '$.label')), 0) + 1, 0
                  FROM speaker_kept k LEFT JOIN json_each(k.voices) v GROUP BY k.stage;
                """)
        }
        m.registerMigration("v11: chapters in the catalogue") { db in
            // Each recording's chapters and markers, so `find` prints their times without opening
            // the file (decision 0096). NULL: catalogued before; `find` reads the file until a run
            // decodes the recording again. Not searched (their titles are in `tags`): no FTS change.
            // JSON {"chapters":[{"start","title"}],"markers":[…]}, source seconds (`ChapterList.catalogJSON`).
            try db.execute(sql: "ALTER TABLE catalog ADD COLUMN chapters TEXT")
        }
        return m
    }
}
