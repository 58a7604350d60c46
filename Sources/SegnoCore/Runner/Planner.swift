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
    /// True when only `--force` makes it run: a plain run would leave it alone (fresh, or a known
    /// failure), so if it is not processed in this run nothing is left for the next one.
    public var forcedOnly = false
    /// The stored state of a recording that runs or is a known failure (nil when it has none,
    /// and for a skip: planning leaves recordings that stay alone in the compact index).
    public var prior: RecordingState? {
        get { priorBox?.state }
        set { priorBox = newValue.map(PriorBox.init) }
    }
    /// `prior` behind one pointer: a `RecordingState` is some 160 bytes, and a plan of 1,000,000
    /// new recordings has none.
    private var priorBox: PriorBox?
    private final class PriorBox: Sendable {
        let state: RecordingState
        init(_ state: RecordingState) { self.state = state }
    }

    package init(file: ScannedFile, action: Action, prior: RecordingState?) {
        self.file = file
        self.action = action
        self.priorBox = prior.map(PriorBox.init)
    }

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

    /// The stored stage names of the job's taps and uploads (`StateIndex` text ids; nil when no
    /// recording has that step).
    package let stageIds: (taps: [UInt32?], uploads: [UInt32?])

    public init(job: Job, state: StateIndex, source: any RecordingSource) {
        self.job = job
        self.state = state
        self.source = source
        stageIds = (job.taps.map { state.textId($0.identity) }, job.uploads.map { state.textId($0.identity) })
    }

    /// True when a plain run leaves this recording alone as a known failure (the one rule:
    /// `RecordingState.isKnownFailure`; `retry` and `--force` take it up again).
    public func isKnownFailure(_ file: ScannedFile) -> Bool {
        isKnownFailure(file, prior: state[file.relativePath])
    }

    package func isKnownFailure(_ file: ScannedFile, prior: RecordingState?) -> Bool {
        guard !retryOnly, force == .none, let prior else { return false }
        return prior.isKnownFailure(identity: file.identity, recipe: job.recipeFingerprint, reading: job.readingFingerprint)
    }

    /// Plans one scanned recording. Reads the stored state in place: a `RecordingState` is made
    /// only for a recording that runs or is a known failure (`RecordingPlan.prior`).
    public func plan(_ file: ScannedFile) -> RecordingPlan {
        let at = state.index(of: file.relativePath)
        let failedBefore = at.map { state.status(at: $0).hasFailure } ?? false
        if retryOnly && !failedBefore { return RecordingPlan(file: file, action: .skip, prior: nil) }
        if let at, failedBefore {
            let prior = state.state(at: at)
            if isKnownFailure(file, prior: prior) { return RecordingPlan(file: file, action: .knownFailure(prior.error ?? "failed"), prior: prior) }
        }
        var taps: [Int] = []
        var reasons: [StepReason] = []
        // What a plain run (no --force) would do, to tell a recording only --force runs.
        var plainTaps: [Int] = []
        var plainUploads = false
        let root = job.spec.outputRoot
        for (i, tap) in job.taps.enumerated() {
            var why: StepReason.Why? = nil
            let forced = force == .all || force == .stage(tap.config.name)
            if let at, let step = state.step(of: at, stage: stageIds.taps[i]) {
                let fingerprint = state.fingerprint(ofStep: step)
                if fingerprint != tap.fingerprint {
                    why = .optionsChanged(recipeLookup.flatMap { $0(fingerprint) }.map { Job.explainChange(old: $0, new: tap.recipe) })
                } else if !state.step(step, of: at, madeFrom: file.identity) {
                    why = .sourceChanged
                } else if let missing = state.outputs(ofStep: step).first(where: { !Self.exists(root + "/" + $0) }) {
                    why = .outputMissing(missing)
                } else if tap.config.storesFingerprints, !state.isFingerprinted(at, stage: tap.identity, step: step) {
                    why = .outputMissing("fingerprint row in the state database")
                }
            } else {
                why = failedBefore ? .failedBefore : .new
            }
            if why != nil { plainTaps.append(i) }
            if forced { why = .forced }
            if let why {
                taps.append(i)
                reasons.append(StepReason(label: job.labels[i], why: why))
            }
        }
        // A tap that uses what a due tap finds (a transcript the speakers' turns go into) is due
        // with it: its output would otherwise keep what the finder found before (decision 0077).
        var grew = true
        while grew {
            grew = false
            for (i, tap) in job.taps.enumerated() where !taps.contains(i) && !tap.config.usesKinds.isEmpty {
                guard let f = taps.first(where: { !job.taps[$0].config.findsKinds.isDisjoint(with: tap.config.usesKinds) }) else { continue }
                taps.append(i)
                if !plainTaps.contains(i) && plainTaps.contains(f) { plainTaps.append(i) }
                reasons.append(StepReason(label: job.labels[i], why: .tapOutputChanges(job.taps[f].config.name)))
                grew = true
            }
        }
        taps.sort()
        var uploads: [Int] = []
        for (u, up) in job.uploads.enumerated() {
            // Without --force: after a tap it feeds (one a plain run would redo), or for its own sake.
            let afterPlain = up.sourceTaps.contains(where: plainTaps.contains)
            let stale = afterPlain ? nil : uploadStaleness(up, u, at: at)
            plainUploads = plainUploads || afterPlain || stale != nil
            var why: StepReason.Why? = nil
            if force == .all || force == .stage(StageKind.upload.rawValue) {
                why = .forced
            } else if let t = up.sourceTaps.first(where: { taps.contains($0) }) {
                why = .tapOutputChanges(job.taps[t].config.name)
            } else {
                why = stale
            }
            if let why {
                uploads.append(u)
                reasons.append(StepReason(label: StageKind.upload.rawValue, why: why))
            }
        }
        if taps.isEmpty && uploads.isEmpty { return RecordingPlan(file: file, action: .skip, prior: nil) }
        let prior = at.map(state.state(at:))
        var plan = RecordingPlan(file: file, action: .run(taps: taps, uploads: uploads, reasons: reasons), prior: prior)
        if force != .none {
            let knownFailure = prior.map { failedBefore && $0.isKnownFailure(identity: file.identity, recipe: job.recipeFingerprint, reading: job.readingFingerprint) } ?? false
            plan.forcedOnly = knownFailure || (plainTaps.isEmpty && !plainUploads)
        }
        return plan
    }

    /// Why upload `u` would run without `--force` for its own sake: never made (or a file it sends
    /// has no stored step), or made from other files or options; nil when it is fresh.
    private func uploadStaleness(_ up: JobUpload, _ u: Int, at: Int?) -> StepReason.Why? {
        let hashes = at.map { at in up.sourceTaps.compactMap { state.step(of: at, stage: stageIds.taps[$0]).map(state.outputHash(ofStep:)) } } ?? []
        let stored = at.flatMap { state.step(of: $0, stage: stageIds.uploads[u]) }
        guard hashes.count == up.sourceTaps.count, let stored else { return .new }
        return state.fingerprint(ofStep: stored) != up.fingerprint(fileHashes: hashes) ? .uploadChanged : nil
    }

    /// With `verify: content`: true when a recording that would run only because its metadata
    /// changed still has the bytes its outputs were made from (touched, copied back). Reads the
    /// file; called by the run's workers and by `--dry-run`, so both decide alike.
    public func contentUnchanged(_ plan: RecordingPlan) -> Bool {
        guard job.spec.input.verify == .content, plan.onlySourceChanged, plan.prior?.status == .done,
              let known = plan.prior?.contentHash else { return false }
        return (try? source.contentHash(plan.file)) == known
    }

    static package func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }
}
