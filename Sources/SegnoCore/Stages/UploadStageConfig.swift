import Foundation
import Logging
import SegnoMultipart

/// An upload stage as the runner sees it: where it sends, which taps' files, whether it prunes,
/// and how to make the object that sends. `UploadConfig` (SegnoSources) is the one segno ships.
public protocol UploadStageConfig: StageConfig {
    /// The destination as written in the spec ("s3://bucket/{dir}/", "file:///srv/out/").
    var to: String { get }
    /// Names of the taps whose files it sends; nil for every tap.
    var files: [String]? { get }
    /// True when objects of recordings gone from the input are deleted (`prune: true`).
    var prune: Bool { get }
    /// How many recordings one run may prune.
    var pruneLimit: PruneLimit { get }
    /// Builds the sender for this stage; called once per run, before any recording. Resolves
    /// credentials from `environment`; throws a message naming what is missing, never a secret.
    func makeUploader(environment: [String: String], progressStore: (any MultipartProgressStore)?,
                      logger: Logger) throws -> any RecordingUploader
}

/// Sends a recording's files for one upload stage; built once per run, used by every worker.
public protocol RecordingUploader: Sendable {
    /// Sends `files` (path and SHA-256) for the recording of `context`; returns the destination
    /// URIs. Called on a worker thread after the recording's pass; stops early when
    /// `shouldContinue` turns false.
    func upload(files: [(path: String, digest: Data)], context: RecordingContext, recipe: String,
                shouldContinue: @escaping @Sendable () -> Bool) throws -> [String]
    /// The URIs `upload` would send `files` (absolute paths) to, sending nothing. Called before
    /// `upload`, so that no two recordings share a destination (`OutputOwners`).
    func destinations(files: [String], context: RecordingContext) throws -> [String]
    /// The URIs when every file is already at its destination with this digest and recipe, else
    /// nil (used by `state rebuild`); sends nothing.
    func inPlace(files: [(path: String, digest: Data)], context: RecordingContext, recipe: String) throws -> [String]?
    /// Deletes the objects or files of one recorded upload step (`prune`), but the URIs in
    /// `keeping`, and only what it proves it sent (`PruneProof`: inside the target's fixed folder
    /// or prefix, segno's mark, the recorded hash). Returns the URIs deleted (missing ones
    /// included). Throws `PruneRefusal` when it cannot prove them (nothing deleted), another
    /// error when deleting failed.
    func delete(_ step: StepState, keeping: Set<String>) throws -> [String]
    /// Aborts multipart uploads `store` records as started more than a day ago. Called once per run.
    func abortStale(store: any StateBackend)
}

/// How many recordings one run may prune: `prune_limit` on an upload, a count or a share of the
/// recordings in the state store. Past it, nothing is pruned without `--force=prune`.
public enum PruneLimit: Sendable, Equatable, CustomStringConvertible {
    case count(Int)
    /// Percent of the recordings in the state store, at least 1 recording.
    case percent(Double)

    /// The default: 10 % of the recordings, at least 1.
    public static let standard = PruneLimit.percent(10)

    /// The largest number of recordings allowed for a store of `recordings`.
    public func allowed(recordings: Int) -> Int {
        switch self {
        case .count(let n): return n
        case .percent(let p): return max(1, Int((Double(recordings) * p / 100).rounded(.down)))
        }
    }

    public var description: String {
        switch self {
        case .count(let n): return "\(n)"
        case .percent(let p): return "\(canonicalNumber(p))%"
        }
    }
}

