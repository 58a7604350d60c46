import Foundation
import SegnoCore

/// Voice prints and what the `speakers` taps kept (decision 0075), in PostgreSQL: the same tables
/// as SQLite's, vectors as `bytea` (float32 little-endian).
extension PostgresState: VoiceStore {
    public func voicePrints() throws -> [VoicePrint] {
        try pool.with { conn in
            try conn.exec("SELECT name, encode(vector, 'base64'), files, seconds, enrolled_at FROM voice_print ORDER BY name COLLATE \"C\"").compactMap { r in
                guard let name = r[0], let b64 = r[1], let d = Data(base64Encoded: b64, options: .ignoreUnknownCharacters),
                      let files = r[2].flatMap({ Int($0) }), let seconds = r[3].flatMap({ Double($0) }), let at = r[4].flatMap({ Double($0) }) else { return nil }
                return VoicePrint(name: name, vector: VoiceVectors.floats(d), files: files, seconds: seconds, enrolledAt: at)
            }
        }
    }

    public func enroll(_ print: VoicePrint) throws {
        try pool.with { conn in
            _ = try conn.exec("""
                INSERT INTO voice_print (name, vector, files, seconds, enrolled_at) VALUES ($1, decode($2, 'base64'), $3, $4, $5)
                ON CONFLICT (name) DO UPDATE SET vector = excluded.vector, files = excluded.files, seconds = excluded.seconds,
                  enrolled_at = excluded.enrolled_at
                """, [print.name, VoiceVectors.bytes(print.vector).base64EncodedString(), String(print.files),
                      String(print.seconds), String(print.enrolledAt)])
        }
    }

    public func forgetVoice(_ name: String) throws -> Bool {
        try pool.with { conn in
            let gone = try conn.exec("DELETE FROM voice_print WHERE name = $1 RETURNING name", [name])
            return !gone.isEmpty
        }
    }

    public func keptLedger(stage: String) throws -> KeptLedger {
        try pool.with { conn in
            // One snapshot for the rows and the position: a row stored after it is after the position.
            try conn.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            let position = try conn.exec("SELECT last_seq FROM speaker_label WHERE stage = $1", [stage]).first?[0].flatMap { Int64($0) } ?? 0
            let kept = try Self.kept(conn, stage: stage, after: nil)
            try conn.exec("COMMIT")
            return KeptLedger(kept: kept, position: position)
        }
    }

    /// The rows of the tap `stage`, all of them (by path) or those stored after position `after` (in order).
    private static func kept(_ conn: PGConnection, stage: String, after: Int64?) throws -> [KeptSpeakers] {
        let sql = after == nil ? "SELECT path, voices, turns, digest FROM speaker_kept WHERE stage = $1 ORDER BY path COLLATE \"C\""
            : "SELECT path, voices, turns, digest FROM speaker_kept WHERE stage = $1 AND seq > $2 ORDER BY seq"
        let params: [String?] = [stage] + (after.map { [String($0)] } ?? [])
        return try conn.exec(sql, params).compactMap { r in
            guard let path = r[0], let v = r[1].flatMap(KeptSpeakers.voices(fromText:)), let turns = r[2], let digest = r[3] else { return nil }
            return KeptSpeakers(path: path, stage: stage, voices: v, turns: turns, digest: digest)
        }
    }

    /// Decision 0094: the upsert of the tap's `speaker_label` row takes its row lock, held to the
    /// end of the transaction, so the writers of one tap (any machine) store one at a time; READ
    /// COMMITTED, so each statement after the lock sees every row the writers before it committed.
    public func keep(stage: String, after position: Int64,
                     _ decide: (_ since: [KeptSpeakers], _ nextLabel: Int) throws -> KeptSpeakers) throws -> Int64 {
        try pool.transaction { conn in
            try conn.exec("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
            let row = try conn.exec("""
                INSERT INTO speaker_label (stage, next_label, last_seq) VALUES ($1, 1, 0)
                ON CONFLICT (stage) DO UPDATE SET last_seq = speaker_label.last_seq RETURNING next_label, last_seq
                """, [stage]).first
            let next = row?[0].flatMap { Int($0) } ?? 1, last = row?[1].flatMap { Int64($0) } ?? 0
            let since = try position >= last ? [] : Self.kept(conn, stage: stage, after: position)
            let s = try decide(since, next)
            let seq = last + 1
            try conn.exec("""
                INSERT INTO speaker_kept (path, stage, voices, turns, digest, seq) VALUES ($1, $2, $3, $4, $5, $6)
                ON CONFLICT (path, stage) DO UPDATE SET voices = excluded.voices, turns = excluded.turns, digest = excluded.digest, seq = excluded.seq
                """, [s.path, stage, s.voicesText, s.turns, s.digest, String(seq)])
            try conn.exec("UPDATE speaker_label SET next_label = GREATEST(next_label, $2::int), last_seq = $3 WHERE stage = $1",
                          [stage, String(max(next, (s.voices.map(\.label).max() ?? 0) + 1)), String(seq)])
            return seq
        }
    }

    public func relabelled(path: String, stage: String, digest: String, steps: [RelabelledStep], spoken: String?) throws {
        try pool.transaction { conn in
            _ = try conn.exec("UPDATE speaker_kept SET digest = $1 WHERE path = $2 AND stage = $3", [digest, path, stage])
            for s in steps {
                _ = try conn.exec("""
                    UPDATE step SET output_hash = $1, output_size = $2 WHERE stage = $3 AND recording_id = (SELECT id FROM recording WHERE path = $4)
                    """, [FileHash.hex(s.outputHash), String(s.outputSize), s.stage, path])
            }
            guard let spoken, let field = CatalogEntry.searchFields.firstIndex(where: { $0.column == "spoken" }) else { return }
            // `words` holds every search field, "|" between them: the spoken field alone is replaced.
            let rows = try conn.exec("SELECT c.recording_id, c.words FROM catalog c JOIN recording r ON r.id = c.recording_id WHERE r.path = $1 FOR UPDATE OF c", [path])
            guard let row = rows.first, let id = row[0], let words = row[1] else { return }
            var fields = words.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == CatalogEntry.searchFields.count else { return }
            fields[field] = " " + SearchWords.of(spoken).joined(separator: " ") + " "
            _ = try conn.exec("UPDATE catalog SET words = $1 WHERE recording_id = $2", [fields.joined(separator: "|"), id])
        }
    }
}
