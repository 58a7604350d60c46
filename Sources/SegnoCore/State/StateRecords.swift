import Foundation

/// How a source file looked when it was scanned: enough to notice a change without reading it.
public struct FileIdentity: Sendable, Hashable, Codable {
    public var size: Int64
    /// Modification time in nanoseconds since 1970.
    public var mtimeNs: Int64
    public var inode: Int64

    public init(size: Int64, mtimeNs: Int64, inode: Int64) {
        self.size = size
        self.mtimeNs = mtimeNs
        self.inode = inode
    }

    /// "size:mtime_ns:inode", as stored in `step.source`.
    public var key: String { "\(size):\(mtimeNs):\(inode)" }
    public var modified: Date { Date(timeIntervalSince1970: Double(mtimeNs) / 1e9) }
}

/// A finished step as stored.
public struct StepState: Sendable, Equatable {
    /// Tap identity, "encode:{dir}/{stem}.flac".
    public var stage: String
    public var fingerprint: String
    /// `FileIdentity.key` of the source it was made from.
    public var source: String
    /// Output paths relative to the output root, as a JSON array (`encodeOutputs`).
    public var output: String
    public var outputHash: Data
    public var outputSize: Int64
    public var finishedAt: Double
    /// Values the tap reported (`levels`), as a JSON object; nil for none.
    public var detail: String?

    /// `detail` decoded.
    public var values: [String: String] {
        guard let d = detail?.data(using: .utf8), let v = try? JSONSerialization.jsonObject(with: d) as? [String: String] else { return [:] }
        return v
    }

    public init(stage: String, fingerprint: String, source: String, output: String, outputHash: Data,
                outputSize: Int64, finishedAt: Double, detail: String? = nil) {
        self.detail = detail
        self.stage = stage
        self.fingerprint = fingerprint
        self.source = source
        self.output = output
        self.outputHash = outputHash
        self.outputSize = outputSize
        self.finishedAt = finishedAt
    }
}

extension StepState {
    /// The `output` column: a JSON array of relative paths (several for a multi-zoom waveform).
    public static func encodeOutputs(_ paths: [String]) -> String {
        JSONValue.array(paths.map { .string($0) }).serialized()
    }

    /// The relative paths in `output`.
    public var outputs: [String] { Self.outputs(of: output) }

    /// The relative paths in an `output` text.
    public static func outputs(of output: String) -> [String] {
        // The usual form, `["a/b.flac"]`, read without a JSON parser: with no backslash, every
        // quote is a delimiter, so `","` only separates entries.
        if output.hasPrefix("[\""), output.hasSuffix("\"]"), output.utf8.count >= 4, !output.utf8.contains(UInt8(ascii: "\\")) {
            let parts = output.dropFirst(2).dropLast(2).split(separator: "\",\"", omittingEmptySubsequences: false)
            if !parts.contains(where: { $0.contains("\"") }) { return parts.map(String.init) }
        }
        guard let data = output.data(using: .utf8),
              let list = try? JSONSerialization.jsonObject(with: data) as? [String] else { return [output] }
        return list
    }
}

/// A recording's status in the state store (`recording.status`).
public enum RecordingStatus: String, Sendable, Codable {
    /// Every tap and upload of its last pass finished.
    case done
    /// The last pass failed and nothing of the recording is recorded as finished.
    case failed
    /// The last pass failed for some taps or uploads; others finished and stay recorded ("partly done").
    case partial

    /// True for `failed` and `partial`: the recording has a failure to show and maybe retry.
    public var hasFailure: Bool { self != .done }
}

/// How a run ended (`run.status`).
public enum RunStatus: String, Sendable, Codable {
    case running, done, failures, interrupted
    case timeUp = "time-up"
    /// Left `running` by a process that was killed; marked by the next run.
    case killed
}

/// A recording as stored, with its finished steps.
public struct RecordingState: Sendable {
    public var id: Int64
    public var path: String
    public var identity: FileIdentity
    public var contentHash: Data?
    public var duration: Double?
    public var status: RecordingStatus
    public var attempts: Int
    public var error: String?
    public var updatedAt: Double
    public var steps: [String: StepState]
    /// `Job.recipeFingerprint` when the recording failed: a fixed spec retries it.
    public var failedRecipe: String? = nil
    /// The class of the last failure (nil when done).
    public var failureClass: FailureClass? = nil
    /// Identities of the fingerprint taps whose row is in the `fingerprint` table.
    public var fingerprinted: Set<String> = []

    /// The one rule for "known failure", used by every caller (planner, collisions, dry run):
    /// the last pass failed for a parked class, and since then neither the source changed nor,
    /// for a *spec* failure, the job's stages (`recipe`), nor, for an *input* failure, the way
    /// sources are read (`reading`: `Job.readingFingerprint`; `recipe` when not given).
    /// Environment and transient failures are never known failures.
    public func isKnownFailure(identity now: FileIdentity, recipe: String, reading: String? = nil) -> Bool {
        guard status.hasFailure, let failureClass, failureClass.isParked else { return false }
        return identity == now && failedRecipe == (failureClass == .input ? reading ?? recipe : recipe)
    }

    /// Every stored property: the initializer the other modules of segno use.
    package init(id: Int64, path: String, identity: FileIdentity, contentHash: Data? = nil, duration: Double? = nil, status: RecordingStatus, attempts: Int, error: String? = nil, updatedAt: Double, steps: [String: StepState], failedRecipe: String? = nil, failureClass: FailureClass? = nil, fingerprinted: Set<String> = []) {
        self.id = id
        self.path = path
        self.identity = identity
        self.contentHash = contentHash
        self.duration = duration
        self.status = status
        self.attempts = attempts
        self.error = error
        self.updatedAt = updatedAt
        self.steps = steps
        self.failedRecipe = failedRecipe
        self.failureClass = failureClass
        self.fingerprinted = fingerprinted
    }
}

/// One change to the state, applied by the writer in a batch.
public enum StateUpdate: Sendable {
    /// A recording's pass succeeded: its steps (the taps that ran) are recorded.
    case done(path: String, identity: FileIdentity, contentHash: Data?, duration: Double?, steps: [StepState], recipes: [String: String])
    /// A recording failed: message, attempt count, the job's recipe and the failure's class; the
    /// steps that did finish in this pass are recorded too (the recording is then "partial").
    case failed(path: String, identity: FileIdentity, error: String, attempts: Int, recipe: String? = nil,
                failureClass: FailureClass, steps: [StepState] = [], recipes: [String: String] = [:])
    /// A source is unchanged in content though its metadata changed (verify: content).
    case touched(path: String, identity: FileIdentity)
    /// What a pass learnt for the archive: fingerprints by tap identity, and the search entry.
    /// Follows the recording's `done` or `failed` update.
    case archived(path: String, fingerprints: [String: AudioFingerprint], catalog: CatalogEntry?)
    /// What salvaging a damaged recording recovered (`SalvageReport.json`), or nil when its last
    /// pass read it whole (a previous report is removed). Follows the recording's `done` or `failed`.
    case salvaged(path: String, report: String?)
}

/// A recording processed from what salvage recovered (`damaged: salvage`), as the state keeps it.
public struct SalvagedRecord: Sendable, Equatable {
    /// Relative to input.root.
    public var path: String
    /// `SalvageReport.json`: `{"frames_lost":…,"at":…,"frames":…,"method":…,"causes":[…]}`.
    public var report: String
    /// Seconds since 1970.
    public var at: Double

    /// Every stored property: the initializer the other modules of segno use.
    package init(path: String, report: String, at: Double) {
        self.path = path
        self.report = report
        self.at = at
    }

    /// `report` as the JSON object it holds (what every `--json` prints), or the text itself
    /// when it is not one.
    public var reportJSON: JSONValue { Self.parse(report).map(\.json) ?? .string(report) }

    /// `report` as one line for people: "277810 frames lost from 2.270 s (truncated); 100000
    /// frames recovered (read to the end of the file)".
    public var reportProse: String { Self.parse(report).map(\.prose) ?? report }

    private static func parse(_ text: String) -> (json: JSONValue, prose: String)? {
        guard let o = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
              let lost = (o["frames_lost"] as? NSNumber)?.intValue, let frames = (o["frames"] as? NSNumber)?.intValue,
              let method = o["method"] as? String else { return nil }
        let at = (o["at"] as? NSNumber)?.doubleValue
        let causes = o["causes"] as? [String] ?? []
        let json = JSONValue.object([
            ("frames_lost", .int(lost)), ("at", at.map { .double($0) } ?? .null), ("frames", .int(frames)),
            ("method", .string(method)), ("causes", .array(causes.map { .string($0) })),
        ])
        var prose = lost > 0 ? "\(lost) frames lost" + (at.map { String(format: " from %.3f s", $0) } ?? "") : "no frames lost"
        if !causes.isEmpty { prose += " (\(causes.joined(separator: ", ")))" }
        prose += "; \(frames) frames recovered (\(method))"
        return (json, prose)
    }
}

extension StateUpdate {
    /// The recording the update is about (relative to input.root).
    public var path: String? {
        switch self {
        case .done(let p, _, _, _, _, _), .failed(let p, _, _, _, _, _, _, _), .touched(let p, _), .archived(let p, _, _), .salvaged(let p, _): return p
        }
    }
}

/// Counts and timing of one run, as stored in `run`.
public struct RunRecord: Sendable {
    public var id: Int64
    public var startedAt: Double
    public var finishedAt: Double?
    public var spec: String
    public var specName: String
    public var status: RunStatus
    public var planned: Int
    public var done: Int
    public var failed: Int
    public var skipped: Int
    /// Consecutive no-op runs folded into this row (1 for a run of its own).
    public var repeats: Int = 1
    /// Recordings whose source vanished and whose outputs the run deleted.
    public var pruned: Int = 0

    /// A run that finished with nothing planned, done, failed or pruned: cron finding no work.
    public static func isNoOp(status: RunStatus, planned: Int, done: Int, failed: Int, pruned: Int) -> Bool {
        status == .done && planned == 0 && done == 0 && failed == 0 && pruned == 0
    }

    /// Every stored property: the initializer the other modules of segno use.
    package init(id: Int64, startedAt: Double, finishedAt: Double? = nil, spec: String, specName: String, status: RunStatus, planned: Int, done: Int, failed: Int, skipped: Int, repeats: Int = 1, pruned: Int = 0) {
        self.id = id
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.spec = spec
        self.specName = specName
        self.status = status
        self.planned = planned
        self.done = done
        self.failed = failed
        self.skipped = skipped
        self.repeats = repeats
        self.pruned = pruned
    }
}

/// A recording with a failure, as `segno status --failed` lists it.
public struct FailureRecord: Sendable {
    public var path: String
    public var error: String
    public var attempts: Int
    /// Seconds since 1970.
    public var at: Double
    /// `failed`, or `partial` when some taps finished.
    public var status: RecordingStatus
    public var failureClass: FailureClass

    /// What the next plain run does with it, in words.
    public var nextRun: String {
        switch failureClass {
        case .input: return "skipped until the file changes (segno retry)"
        case .spec: return "skipped until the file or the spec changes (segno retry)"
        default: return "retried by the next run"
        }
    }

    /// Every stored property: the initializer the other modules of segno use.
    package init(path: String, error: String, attempts: Int, at: Double, status: RecordingStatus, failureClass: FailureClass) {
        self.path = path
        self.error = error
        self.attempts = attempts
        self.at = at
        self.status = status
        self.failureClass = failureClass
    }
}

/// A step's identity as a value: the stage kind and its path template or upload target.
/// Stored as "kind:target" (`step.stage`); parsed here and nowhere else.
public struct StepIdentity: Hashable, Sendable, CustomStringConvertible {
    /// "encode", "waveform", "metadata", "upload".
    public var kind: String
    /// The path template of a tap, or the `to:` of an upload.
    public var target: String

    public init(kind: String, target: String) {
        self.kind = kind
        self.target = target
    }

    /// Parses the stored form.
    public init(stored: String) {
        let parts = stored.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        kind = String(parts[0])
        target = parts.count > 1 ? String(parts[1]) : ""
    }

    public var stored: String { "\(kind):\(target)" }
    public var description: String { stored }
    public var isUpload: Bool { kind == StageKind.upload.rawValue }
}

/// Where a step's output lives, parsed from the stored text (`step.output` entries): a path
/// relative to `output.root` for taps, a `file://` path or an `s3://bucket/key` for uploads.
public enum StoredOutput: Sendable, Equatable {
    case relative(String)
    case file(String)
    case object(bucket: String, key: String)

    public init(_ text: String) {
        if text.starts(with: "s3://") {
            let rest = text.dropFirst("s3://".count)
            let bucket = String(rest.prefix { $0 != "/" })
            self = .object(bucket: bucket, key: String(rest.dropFirst(bucket.count + 1)))
        } else if text.starts(with: "file://") {
            self = .file(String(text.dropFirst("file://".count)))
        } else {
            self = .relative(text)
        }
    }
}

extension StepState {
    /// `stage` as a value.
    public var identity: StepIdentity { StepIdentity(stored: stage) }
}
