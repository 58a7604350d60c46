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
    public var outputs: [String] {
        guard let data = output.data(using: .utf8),
              let list = try? JSONSerialization.jsonObject(with: data) as? [String] else { return [output] }
        return list
    }
}

/// A recording as stored, with its finished steps.
public struct RecordingState: Sendable {
    public var id: Int64
    public var path: String
    public var identity: FileIdentity
    public var contentHash: Data?
    public var duration: Double?
    /// "done" or "failed".
    public var status: String
    public var attempts: Int
    public var error: String?
    public var updatedAt: Double
    public var steps: [String: StepState]
    /// `Job.recipeFingerprint` when the recording failed: a fixed spec retries it.
    public var failedRecipe: String? = nil
}

/// One change to the state, applied by the writer in a batch.
public enum StateUpdate: Sendable {
    /// A recording's pass succeeded: its steps (the taps that ran) are recorded.
    case done(path: String, identity: FileIdentity, contentHash: Data?, duration: Double?, steps: [StepState], recipes: [String: String])
    /// A recording failed: message and attempt count.
    case failed(path: String, identity: FileIdentity, error: String, attempts: Int, recipe: String? = nil)
    /// A source is unchanged in content though its metadata changed (verify: content).
    case touched(path: String, identity: FileIdentity)
}

/// Counts and timing of one run, as stored in `run`.
public struct RunRecord: Sendable {
    public var id: Int64
    public var startedAt: Double
    public var finishedAt: Double?
    public var spec: String
    public var specName: String
    public var status: String
    public var planned: Int
    public var done: Int
    public var failed: Int
    public var skipped: Int
}
