import Foundation

/// Why one tap or upload of a recording runs (`--explain` prints `label: why`).
public struct StepReason: Sendable, Equatable, CustomStringConvertible {
    public enum Why: Sendable, Equatable, CustomStringConvertible {
        case forced
        /// The recipe changed; the words say how when the old recipe is known (`--explain`).
        case optionsChanged(String?)
        case sourceChanged
        case outputMissing(String)
        case new
        case failedBefore
        /// An upload whose files a tap rewrites in this run.
        case tapOutputChanges(String)
        case uploadChanged

        public var description: String {
            switch self {
            case .forced: return "forced"
            case .optionsChanged(let words): return words.map { "options changed: \($0)" } ?? "options changed"
            case .sourceChanged: return "source changed"
            case .outputMissing(let path): return "output missing: \(path)"
            case .new: return "new"
            case .failedBefore: return "failed before"
            case .tapOutputChanges(let tap): return "\(tap) output changes"
            case .uploadChanged: return "options or files changed"
            }
        }
    }
    /// The tap's label (`Job.labels`) or "upload".
    public var label: String
    public var why: Why
    public var description: String { "\(label): \(why)" }
}

/// What the runner will do with one recording.
public struct RecordingPlan: Sendable {
    public enum Action: Sendable, Equatable {
        /// Every tap is fresh.
        case skip
        /// The recording failed before for its input or the spec, and neither changed (`segno retry` reruns it).
        case knownFailure(String)
        /// Run these taps (indices into `Job.taps`) and uploads (indices into `Job.uploads`),
        /// for these reasons. With no taps, the source is not decoded at all.
        case run(taps: [Int], uploads: [Int], reasons: [StepReason])
    }
    public var file: ScannedFile
    public var action: Action
    /// The stored state, if any.
    public var prior: RecordingState?

    /// True when the only reason to run is a changed source (size, time, inode): with
    /// `verify: content` the content hash then decides.
    public var onlySourceChanged: Bool {
        guard case .run(_, _, let reasons) = action else { return false }
        return !reasons.isEmpty && reasons.allSatisfy { $0.why == .sourceChanged }
    }
}

/// `--force` / `--force=STAGE`.
public enum Force: Sendable, Equatable {
    case none, all
    /// Rerun taps of one stage kind ("waveform"), or `prune` past its limit.
    case stage(String)
}

/// Decides run or skip for each tap of each recording from the state store, per DESIGN.md §3:
/// a tap runs when its fingerprint changed, its source changed, or its output is missing.
/// A recording whose taps are all fresh costs one dictionary look-up and a stat per output.
public struct Planner {
    public let job: Job
    public let state: StateIndex
    /// Reads content for `verify: content` decisions.
    public let source: any RecordingSource
    public var force: Force = .none
    /// `segno retry`: only recordings that failed.
    public var retryOnly = false
    /// Fill in human reasons for options changes (reads old recipes; `--explain`).
    public var recipeLookup: ((String) -> String?)? = nil

    public init(job: Job, state: StateIndex, source: any RecordingSource) {
        self.job = job
        self.state = state
        self.source = source
    }

    /// True when a plain run leaves this recording alone as a known failure (the one rule:
    /// `RecordingState.isKnownFailure`; `retry` and `--force` take it up again).
    public func isKnownFailure(_ file: ScannedFile) -> Bool {
        isKnownFailure(file, prior: state[file.relativePath])
    }

    func isKnownFailure(_ file: ScannedFile, prior: RecordingState?) -> Bool {
        guard !retryOnly, force == .none, let prior else { return false }
        return prior.isKnownFailure(identity: file.identity, recipe: job.recipeFingerprint)
    }

    public func plan(_ file: ScannedFile) -> RecordingPlan {
        let prior = state[file.relativePath]
        if retryOnly && !(prior?.status.hasFailure ?? false) { return RecordingPlan(file: file, action: .skip, prior: prior) }
        if let prior, isKnownFailure(file, prior: prior) {
            return RecordingPlan(file: file, action: .knownFailure(prior.error ?? "failed"), prior: prior)
        }
        var taps: [Int] = []
        var reasons: [StepReason] = []
        let root = job.spec.outputRoot
        for (i, tap) in job.taps.enumerated() {
            var why: StepReason.Why? = nil
            if force == .all || force == .stage(tap.config.name) { why = .forced }
            else if let step = prior?.steps[tap.identity] {
                if step.fingerprint != tap.fingerprint {
                    why = .optionsChanged(recipeLookup.flatMap { $0(step.fingerprint) }.map { Job.explainChange(old: $0, new: tap.recipe) })
                } else if step.source != file.identity.key {
                    why = .sourceChanged
                } else if let missing = step.outputs.first(where: { !Self.exists(root + "/" + $0) }) {
                    why = .outputMissing(missing)
                } else if tap.config is FingerprintConfig, !(prior?.fingerprinted.contains(tap.identity) ?? false) {
                    why = .outputMissing("fingerprint row in the state database")
                }
            } else {
                why = prior?.status.hasFailure == true ? .failedBefore : .new
            }
            if let why {
                taps.append(i)
                reasons.append(StepReason(label: job.labels[i], why: why))
            }
        }
        var uploads: [Int] = []
        for (u, up) in job.uploads.enumerated() {
            var why: StepReason.Why? = nil
            if force == .all || force == .stage("upload") {
                why = .forced
            } else if let t = up.sourceTaps.first(where: { taps.contains($0) }) {
                why = .tapOutputChanges(job.taps[t].config.name)
            } else {
                let hashes = up.sourceTaps.compactMap { prior?.steps[job.taps[$0].identity]?.outputHash }
                if hashes.count != up.sourceTaps.count || prior?.steps[up.identity] == nil {
                    why = .new
                } else if prior?.steps[up.identity]?.fingerprint != up.fingerprint(fileHashes: hashes) {
                    why = .uploadChanged
                }
            }
            if let why {
                uploads.append(u)
                reasons.append(StepReason(label: "upload", why: why))
            }
        }
        let nothing = taps.isEmpty && uploads.isEmpty
        return RecordingPlan(file: file, action: nothing ? .skip : .run(taps: taps, uploads: uploads, reasons: reasons), prior: prior)
    }

    /// With `verify: content`: true when a recording that would run only because its metadata
    /// changed still has the bytes its outputs were made from (touched, copied back). Reads the
    /// file; called by the run's workers and by `--dry-run`, so both decide alike.
    public func contentUnchanged(_ plan: RecordingPlan) -> Bool {
        guard job.spec.input.verify == .content, plan.onlySourceChanged, plan.prior?.status == .done,
              let known = plan.prior?.contentHash else { return false }
        return (try? source.contentHash(plan.file)) == known
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }
}
