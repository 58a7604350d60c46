import Crypto
import Foundation

/// A voice enrolled by name (`segno speakers enroll`): the L2-normed mean of the speaker
/// encoder's window embeddings over the speech of the files enrolled (decision 0075).
public struct VoicePrint: Sendable, Equatable {
    /// 1–64 characters (`VoicePrint.check`).
    public var name: String
    /// The print: one or more L2-normed vectors one after another (256 floats each for the GE2E
    /// encoder; decision 0086 keeps a clean one first, then the ones made under noise).
    public var vector: [Float]
    /// How many files and seconds of speech made it.
    public var files: Int
    public var seconds: Double
    /// Seconds since 1970.
    public var enrolledAt: Double

    public init(name: String, vector: [Float], files: Int, seconds: Double, enrolledAt: Double) {
        self.name = name
        self.vector = vector
        self.files = files
        self.seconds = seconds
        self.enrolledAt = enrolledAt
    }

    /// The longest name, in characters.
    public static let longestName = 64

    /// Why `name` cannot name a voice, or nil when it can: 1–64 characters, letters (any script),
    /// digits, spaces and `.` `-` `_` `'`, beginning with a letter or digit and not ending with a
    /// space; not `speaker-N` (the labels of voices without a name). A name travels into JSON,
    /// RTTM (where it must be one word: spaces become `_` there), WebVTT voice spans and search.
    public static func check(_ name: String) -> String? {
        guard !name.isEmpty else { return "a voice's name is empty" }
        guard name.count <= longestName else { return "a voice's name is at most \(longestName) characters, not \(name.count)" }
        let allowed: (Character) -> Bool = { $0.isLetter || $0.isNumber || " .-_'".contains($0) }
        if let bad = name.first(where: { !allowed($0) }) {
            let shown = bad.unicodeScalars.map { String(format: "U+%04X", $0.value) }.joined(separator: " ")
            return "a voice's name holds letters, digits, spaces and . - _ ' only, not \(shown)"
        }
        guard let first = name.first, first.isLetter || first.isNumber else { return "a voice's name begins with a letter or a digit" }
        guard name.last != " " else { return "a voice's name does not end with a space" }
        let lower = name.lowercased()
        if lower.hasPrefix("speaker-"), Int(lower.dropFirst(8)) != nil { return "speaker-N is the label of a voice without a name; choose another name" }
        return nil
    }

    /// The prints' digest (hex): what the names in a recording's outputs were made from, with the
    /// thresholds they were matched at (`noisyThreshold`: the one of the prints made under noise,
    /// when the matcher has one). Changes when a print is enrolled, replaced or forgotten.
    public static func digest(_ prints: [VoicePrint], threshold: Float, noisyThreshold: Float? = nil) -> String {
        var h = SHA256()
        h.update(data: Data("threshold \(threshold)\n".utf8))
        if let noisyThreshold { h.update(data: Data("noisy threshold \(noisyThreshold)\n".utf8)) }
        for p in prints.sorted(by: { $0.name < $1.name }) {
            h.update(data: Data(p.name.utf8))
            h.update(data: Data([0]))
            h.update(data: VoiceVectors.bytes(p.vector))
        }
        return h.finalize().prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}

/// Vectors as the stores keep them: float32, little-endian, 4 bytes each.
public enum VoiceVectors {
    public static func bytes(_ v: [Float]) -> Data {
        var d = Data(capacity: v.count * 4)
        for x in v { withUnsafeBytes(of: x.bitPattern.littleEndian) { d.append(contentsOf: $0) } }
        return d
    }

    /// The cosine similarity of two vectors (0 when either is zero); scale does not matter, so a
    /// sum of centroids compares as their mean would.
    public static func cosine(_ a: [Float], _ b: [Float]) -> Float {
        var dot: Float = 0, na: Float = 0, nb: Float = 0
        for i in 0..<min(a.count, b.count) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i] }
        return na > 0 && nb > 0 ? dot / (na.squareRoot() * nb.squareRoot()) : 0
    }

    public static func floats(_ d: Data) -> [Float] {
        d.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
    }
}

/// One voice heard in a recording, as the state keeps it: its archive-wide label number
/// (`speaker-7`), its seconds of speech and its centroid (L2-normed mean embedding). No audio.
public struct KeptVoice: Sendable, Equatable {
    public var label: Int
    public var seconds: Double
    public var centroid: [Float]

    public init(label: Int, seconds: Double, centroid: [Float]) {
        self.label = label
        self.seconds = seconds
        self.centroid = centroid
    }
}

/// What a `speakers` tap keeps of one recording (decision 0075): each voice heard, the turns
/// as the tap writes them again when names change (its own JSON, `turns`), and the digest of
/// the prints (`VoicePrint.digest`) the names in its outputs were made with.
public struct KeptSpeakers: Sendable, Equatable {
    /// The recording, relative to input.root.
    public var path: String
    /// The tap's identity (`step.stage`).
    public var stage: String
    /// Indexed by the recording's own speaker number (0, 1, … in order of first appearance).
    public var voices: [KeptVoice]
    public var turns: String
    public var digest: String

    public init(path: String, stage: String, voices: [KeptVoice], turns: String, digest: String) {
        self.path = path
        self.stage = stage
        self.voices = voices
        self.turns = turns
        self.digest = digest
    }

    /// `voices` as the stores keep it: a JSON array of `{"label":7,"seconds":12.5,"centroid":"<base64 float32>"}`.
    public var voicesText: String {
        JSONValue.array(voices.map { v in
            .object([("label", .int(v.label)), ("seconds", .rounded(v.seconds, places: 3)),
                     ("centroid", .string(VoiceVectors.bytes(v.centroid).base64EncodedString()))])
        }).serialized()
    }

    /// `voicesText` read back; nil when it is not what `voicesText` writes.
    public static func voices(fromText text: String) -> [KeptVoice]? {
        guard let list = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [[String: Any]] else { return nil }
        var out: [KeptVoice] = []
        for o in list {
            guard let label = (o["label"] as? NSNumber)?.intValue, let seconds = (o["seconds"] as? NSNumber)?.doubleValue,
                  let b64 = o["centroid"] as? String, let d = Data(base64Encoded: b64, options: .ignoreUnknownCharacters) else { return nil }
            out.append(KeptVoice(label: label, seconds: seconds, centroid: VoiceVectors.floats(d)))
        }
        return out
    }
}

/// The voices half of a state store (SQLite and PostgreSQL): enrolled prints, and what the
/// `speakers` taps kept of each recording, so names and archive-wide labels need no audio.
public protocol VoiceStore: AnyObject, Sendable {
    /// Every enrolled print, by name.
    func voicePrints() throws -> [VoicePrint]
    /// Stores a print, replacing one of the same name.
    func enroll(_ print: VoicePrint) throws
    /// Removes the print named `name`; false when there is none.
    func forgetVoice(_ name: String) throws -> Bool
    /// What the taps with identity `stage` kept, by recording path, read together with the
    /// position of the last row stored: a writer that learnt these rows asks `keep` for the rows
    /// stored after that position. Called once per pass, before planning.
    func keptLedger(stage: String) throws -> KeptLedger
    /// Stores what a tap kept of one recording, replacing what it kept before, in one transaction
    /// that decides its labels (decision 0094): it takes the allocation of the tap with identity
    /// `stage` (SQLite: the write transaction; PostgreSQL: the allocation row's lock), so no other
    /// writer stores a row for that tap until it ends; hands `decide` the rows stored after
    /// position `after` (by any writer; none when `after` is at least the last position) and the
    /// lowest label number never given; stores the row `decide` returns at the next position and
    /// records that its labels are given. `decide` may run again when the transaction is retried
    /// (a lost connection); a throw from it stores nothing. Returns the row's position.
    func keep(stage: String, after position: Int64,
              _ decide: (_ since: [KeptSpeakers], _ nextLabel: Int) throws -> KeptSpeakers) throws -> Int64
    /// After the files of `path` were written again with new names: the digest they were made
    /// with (the row of the tap with identity `stage`), each rewritten step's new combined output
    /// hash and size (the speakers tap's own and those of the taps that write its names, such as
    /// transcripts), and the catalogue's new spoken words when given, in one transaction.
    func relabelled(path: String, stage: String, digest: String, steps: [RelabelledStep], spoken: String?) throws
}

/// A step whose files were written again with new speaker names, without running it (decision
/// 0084): its identity and its new combined output hash and size.
public struct RelabelledStep: Sendable, Equatable {
    public var stage: String
    public var outputHash: Data
    public var outputSize: Int64

    public init(stage: String, outputHash: Data, outputSize: Int64) {
        self.stage = stage
        self.outputHash = outputHash
        self.outputSize = outputSize
    }
}

/// What a store keeps of one tap's voices, read in one snapshot: every row, and the position of
/// the last one stored (0 when none was stored since the labels were allocated in the state).
public struct KeptLedger: Sendable, Equatable {
    public var kept: [KeptSpeakers]
    public var position: Int64

    public init(kept: [KeptSpeakers], position: Int64) {
        self.kept = kept
        self.position = position
    }
}

extension VoiceStore {
    /// What the taps with identity `stage` kept, by recording path.
    public func keptSpeakers(stage: String) throws -> [KeptSpeakers] { try keptLedger(stage: stage).kept }

    /// Stores a row as it is, its labels already decided (tests, tools); the labels it carries
    /// count as given, so the next number is past them.
    public func keep(_ speakers: KeptSpeakers) throws {
        _ = try keep(stage: speakers.stage, after: .max) { _, _ in speakers }
    }

    /// The speakers tap's own files alone were written again.
    public func relabelled(path: String, stage: String, digest: String, outputHash: Data, outputSize: Int64) throws {
        try relabelled(path: path, stage: stage, digest: digest, steps: [RelabelledStep(stage: stage, outputHash: outputHash, outputSize: outputSize)], spoken: nil)
    }
}

/// What the runner did, for one recording whose speaker names changed, to the files of the taps
/// that write those names (`SpeakerNamesRewriting`: transcripts) and to the catalogue (decision 0084).
public struct DependentRelabel: Sendable {
    /// The steps written again.
    public var steps: [RelabelledStep] = []
    /// The recording's spoken words for the catalogue, read again from every tap's recorded files;
    /// nil to leave the catalogue as it is.
    public var spoken: String? = nil
    /// One line per file left as it was (changed since segno wrote it, missing, unreadable).
    public var notes: [String] = []

    public init(steps: [RelabelledStep] = [], spoken: String? = nil, notes: [String] = []) {
        self.steps = steps
        self.spoken = spoken
        self.notes = notes
    }
}

/// A tap whose files carry the speakers' names, made from the turns of a `speakers` tap in the
/// same chain (`transcribe`: WebVTT voice spans, SRT prefixes, JSON fields). When enrolling or
/// forgetting a voice changes the names of a recording already processed, the runner asks it for
/// its files with the new names, made from the files themselves: no audio is decoded and no
/// model runs (decision 0084).
public protocol SpeakerNamesRewriting: TapConfig {
    /// The new contents of the tap's recorded files `paths` (absolute, in the order the tap wrote
    /// them), with each label's (`speaker-7`) name now `after[label]` (no name when absent) where
    /// it was `before[label]`; nil when the files are not what this tap writes (or say something
    /// the names cannot be mapped from). Called once per recording whose names changed, before a pass.
    func renamedSpeakers(paths: [String], before: [String: String], after: [String: String]) -> [[UInt8]]?
}

/// A tap that names voices from the prints enrolled in the state and keeps what it heard there
/// (`speakers`, decision 0075).
public protocol VoiceNamingConfig: TapConfig {
    /// Called once per pass of a run that writes its state, before planning: reads the prints and
    /// the voices kept for the tap with identity `stage`, and writes again, from what the state
    /// keeps (no audio is decoded), the files of each recording whose names were made with other
    /// prints. `step(path)` is the recording's stored step of this tap. Returns one line per
    /// recording whose files were left as they are (changed by someone else, missing).
    /// `dependents(path, before, after)` writes again the files of the other taps that carry the
    /// recording's names (label → name before and after) and returns their steps and the
    /// catalogue's new spoken words; it is called after the tap's own files were written, before
    /// the state records them all in one transaction.
    func prepareVoices(store: any VoiceStore, stage: String, outputRoot: String, step: (String) -> StepState?,
                       dependents: (String, [String: String], [String: String]) throws -> DependentRelabel) throws -> (rewritten: Int, notes: [String])
}

extension VoiceNamingConfig {
    /// `prepareVoices` for a job whose other taps carry no names.
    public func prepareVoices(store: any VoiceStore, stage: String, outputRoot: String,
                              step: (String) -> StepState?) throws -> (rewritten: Int, notes: [String]) {
        try prepareVoices(store: store, stage: stage, outputRoot: outputRoot, step: step, dependents: { _, _, _ in DependentRelabel() })
    }
}
