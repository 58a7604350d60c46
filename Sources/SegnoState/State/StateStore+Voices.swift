import Foundation
import GRDB
import SegnoCore

/// Voice prints and what the `speakers` taps kept (decision 0075), in SQLite: `voice_print`
/// (vectors as float32 little-endian BLOBs), `speaker_kept` (one row per recording and tap) and
/// `speaker_label` (per tap, the labels given and the last row's position, decision 0094).
extension StateStore: VoiceStore {
    public func voicePrints() throws -> [VoicePrint] {
        try dbReader.read { db in
            try Row.fetchAll(db, sql: "SELECT name, vector, files, seconds, enrolled_at FROM voice_print ORDER BY name").map { r in
                let blob: Data = r[1]
                return VoicePrint(name: r[0], vector: VoiceVectors.floats(blob), files: r[2], seconds: r[3], enrolledAt: r[4])
            }
        }
    }

    public func enroll(_ print: VoicePrint) throws {
        try dbReader.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO voice_print (name, vector, files, seconds, enrolled_at) VALUES (?, ?, ?, ?, ?)",
                           arguments: [print.name, VoiceVectors.bytes(print.vector), print.files, print.seconds, print.enrolledAt])
        }
    }

    public func forgetVoice(_ name: String) throws -> Bool {
        try dbReader.write { db in
            try db.execute(sql: "DELETE FROM voice_print WHERE name = ?", arguments: [name])
            return db.changesCount > 0
        }
    }

    public func keptLedger(stage: String) throws -> KeptLedger {
        try dbReader.read { db in
            let position = try Int64.fetchOne(db, sql: "SELECT last_seq FROM speaker_label WHERE stage = ?", arguments: [stage]) ?? 0
            return KeptLedger(kept: try Self.kept(db, stage: stage, after: nil), position: position)
        }
    }

    /// The rows of the tap `stage`, all of them (by path) or those stored after position `after` (in order).
    private static func kept(_ db: Database, stage: String, after: Int64?) throws -> [KeptSpeakers] {
        let rows = try after.map { try Row.fetchAll(db, sql: "SELECT path, voices, turns, digest FROM speaker_kept WHERE stage = ? AND seq > ? ORDER BY seq", arguments: [stage, $0]) }
            ?? Row.fetchAll(db, sql: "SELECT path, voices, turns, digest FROM speaker_kept WHERE stage = ? ORDER BY path", arguments: [stage])
        return rows.compactMap { r in
            KeptSpeakers.voices(fromText: r[1]).map { KeptSpeakers(path: r[0], stage: stage, voices: $0, turns: r[2], digest: r[3]) }
        }
    }

    /// Decision 0094: the write transaction is IMMEDIATE (GRDB's for a writable connection), so it
    /// holds SQLite's write lock from its first statement: every other writer, in this process or
    /// another, waits (busy timeout) and then reads what this one stored.
    public func keep(stage: String, after position: Int64,
                     _ decide: (_ since: [KeptSpeakers], _ nextLabel: Int) throws -> KeptSpeakers) throws -> Int64 {
        try dbReader.write { db in
            let row = try Row.fetchOne(db, sql: "SELECT next_label, last_seq FROM speaker_label WHERE stage = ?", arguments: [stage])
            let next = row.map { $0[0] as Int } ?? 1, last = row.map { $0[1] as Int64 } ?? 0
            let since = try position >= last ? [] : Self.kept(db, stage: stage, after: position)
            let s = try decide(since, next)
            let seq = last + 1
            try db.execute(sql: "INSERT OR REPLACE INTO speaker_kept (path, stage, voices, turns, digest, seq) VALUES (?, ?, ?, ?, ?, ?)",
                           arguments: [s.path, stage, s.voicesText, s.turns, s.digest, seq])
            try db.execute(sql: """
                INSERT INTO speaker_label (stage, next_label, last_seq) VALUES (?, ?, ?)
                ON CONFLICT (stage) DO UPDATE SET next_label = max(next_label, excluded.next_label), last_seq = excluded.last_seq
                """, arguments: [stage, max(next, (s.voices.map(\.label).max() ?? 0) + 1), seq])
            return seq
        }
    }

    public func relabelled(path: String, stage: String, digest: String, steps: [RelabelledStep], spoken: String?) throws {
        try dbReader.write { db in
            try db.execute(sql: "UPDATE speaker_kept SET digest = ? WHERE path = ? AND stage = ?", arguments: [digest, path, stage])
            for s in steps {
                try db.execute(sql: """
                    UPDATE step SET output_hash = ?, output_size = ? WHERE stage = ? AND recording_id = (SELECT id FROM recording WHERE path = ?)
                    """, arguments: [s.outputHash, s.outputSize, s.stage, path])
            }
            // The catalogue's triggers keep its full-text index in step.
            if let spoken {
                try db.execute(sql: "UPDATE catalog SET spoken = ? WHERE recording_id = (SELECT id FROM recording WHERE path = ?)", arguments: [spoken, path])
            }
        }
    }
}
