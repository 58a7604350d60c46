import Foundation
import GRDB
import SegnoCore

/// Voice prints and what the `speakers` taps kept (decision 0075), in SQLite: `voice_print`
/// (vectors as float32 little-endian BLOBs) and `speaker_kept` (one row per recording and tap).
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

    public func keptSpeakers(stage: String) throws -> [KeptSpeakers] {
        try dbReader.read { db in
            try Row.fetchAll(db, sql: "SELECT path, voices, turns, digest FROM speaker_kept WHERE stage = ? ORDER BY path", arguments: [stage]).compactMap { r in
                KeptSpeakers.voices(fromText: r[1]).map { KeptSpeakers(path: r[0], stage: stage, voices: $0, turns: r[2], digest: r[3]) }
            }
        }
    }

    public func keep(_ s: KeptSpeakers) throws {
        try dbReader.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO speaker_kept (path, stage, voices, turns, digest) VALUES (?, ?, ?, ?, ?)",
                           arguments: [s.path, s.stage, s.voicesText, s.turns, s.digest])
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
