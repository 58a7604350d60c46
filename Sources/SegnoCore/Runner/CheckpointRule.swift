import Foundation

/// `checkpoints:` in a spec: whether long recordings keep checkpoints (decision 0095).
public enum CheckpointMode: String, Sendable, CaseIterable {
    /// The runner decides (`CheckpointRule`): the default.
    case auto
    /// No checkpoint: an interrupted recording starts again from its beginning.
    case off
}

/// When a recording keeps checkpoints (issue 34 item 2, decision 0095): every `intervalSeconds` of
/// source audio, the state of the chain's transforms before `normalize` when all of them can save
/// it (filters, EQ, gain, mix, `resample`: the polyphase one saves its state, libsoxr's restarts on its
/// grid, decision 0100) and the stream they made so far, so that a run killed in
/// the middle of a long recording resumes there: those stages redo at most `intervalSeconds`, the
/// rest of the chain replays the kept stream. Asked once per recording by its worker.
public struct CheckpointRule: Sendable {
    /// Recordings shorter than this (seconds, from the header) keep no checkpoint: redoing them
    /// costs less than keeping their stream. Quoted by `segno run --help` and the docs.
    public static let minimumSeconds: Double = 1200
    /// Seconds of source audio between two checkpoints: at most this much is redone by the
    /// checkpointing stages after a kill. Quoted by `segno run --help` and the docs.
    public static let intervalSeconds: Double = 120
    /// The folder under the output root's `.segno` that holds one folder per recording.
    public static let folderName = "checkpoints"
    /// Bumped whenever a stage's saved state changes layout: older checkpoints are then discarded.
    public static let formatVersion = 3

    /// The spec's `checkpoints:`.
    public var mode: CheckpointMode
    /// Seconds from which a recording keeps checkpoints (`minimumSeconds`; tests lower it).
    public var minimumSeconds: Double
    /// Seconds between two checkpoints (`intervalSeconds`; tests lower it).
    public var intervalSeconds: Double

    public init(mode: CheckpointMode, minimumSeconds: Double = CheckpointRule.minimumSeconds,
                intervalSeconds: Double = CheckpointRule.intervalSeconds) {
        self.mode = mode
        self.minimumSeconds = minimumSeconds
        self.intervalSeconds = intervalSeconds
    }

    /// How many of `configs`' transforms (a chain's stages up to its last tap) a checkpoint would
    /// keep, or why it keeps none: a transform before `normalize` that cannot save its state or
    /// follows a tap, or no transform there at all. What `--explain` says; the pass decides from
    /// the transforms themselves (`CheckpointingTransform`).
    public static func lead(of configs: [any StageConfig]) -> (count: Int, blocker: String?) {
        var count = 0
        var leading = true
        var restarting = 0
        var holding: String? = nil
        for c in configs {
            guard let t = c as? any TransformConfig else { leading = false; continue }
            if t.setsLevel { break }
            if !t.savesState { return (0, "\(t.name) cannot save its state") }
            if !leading { return (0, "\(t.name) follows a tap") }
            if t.restartsOnGrid { restarting += 1 }
            if restarting > 1 { return (0, "a second \(t.name) restarts on a grid too") }
            if t.restartsOnGrid, let holding { return (0, "\(t.name) restarts on a grid and follows \(holding), which holds frames back") }
            if t.holdsFrames { holding = holding ?? t.name }
            count += 1
        }
        return count == 0 ? (0, "no transform before normalize keeps a state") : (count, nil)
    }

    /// True when a recording of `seconds` (nil: unknown before decoding) keeps checkpoints.
    public func applies(seconds: Double?) -> Bool {
        guard mode == .auto, let seconds else { return false }
        return seconds >= minimumSeconds
    }

    /// The plan for one recording: its folder under `outputRoot` and the key a checkpoint must
    /// match — the source's identity (size, modification time, inode), every stage of the chain
    /// with its output paths, and `formatVersion`.
    public func plan(outputRoot: String, relativePath: String, sourceKey: String, chain: [String]) -> CheckpointPlan {
        let key = (["v\(Self.formatVersion)", relativePath, sourceKey] + chain).joined(separator: "\n")
        return CheckpointPlan(folder: CheckpointPlan.folder(outputRoot: outputRoot, relativePath: relativePath), key: key,
                              intervalSeconds: intervalSeconds)
    }
}
