import Foundation

/// What the runner will do with one recording.
public struct RecordingPlan: Sendable {
    public enum Action: Sendable, Equatable {
        /// Every tap is fresh.
        case skip
        /// The recording failed before and its source has not changed (`segno retry` reruns it).
        case knownFailure(String)
        /// Run these taps (indices into `Job.taps`) and uploads (indices into `Job.uploads`),
        /// for these reasons. With no taps, the source is not decoded at all.
        case run(taps: [Int], uploads: [Int], reasons: [String])
    }
    public var file: ScannedFile
    public var action: Action
    /// The stored state, if any.
    public var prior: RecordingState?
}

/// `--force` / `--force=STAGE`.
public enum Force: Sendable, Equatable {
    case none, all
    /// Rerun taps of one stage kind, e.g. "waveform".
    case stage(String)
}

/// Decides run or skip for each tap of each recording from the state store, per DESIGN.md §3:
/// a tap runs when its fingerprint changed, its source changed, or its output is missing.
/// A recording whose taps are all fresh costs one dictionary look-up and a stat per output.
public struct Planner {
    public let job: Job
    public let state: [String: RecordingState]
    public var force: Force = .none
    /// `segno retry`: only recordings that failed.
    public var retryOnly = false
    /// Fill in human reasons for options changes (reads old recipes; `--explain`).
    public var recipeLookup: ((String) -> String?)? = nil

    public init(job: Job, state: [String: RecordingState]) {
        self.job = job
        self.state = state
    }

    public func plan(_ file: ScannedFile) -> RecordingPlan {
        let prior = state[file.relativePath]
        if retryOnly && prior?.status != "failed" { return RecordingPlan(file: file, action: .skip, prior: prior) }
        // A damaged source fails the same way every time: skip it until it changes or `retry`.
        // Upload failures (credentials, network) are not the source's fault: try again.
        if let prior, prior.status == "failed", !retryOnly, force == .none, prior.identity == file.identity,
           !(prior.error ?? "").hasPrefix("upload:"), prior.failedRecipe == nil || prior.failedRecipe == job.recipeFingerprint {
            return RecordingPlan(file: file, action: .knownFailure(prior.error ?? "failed"), prior: prior)
        }
        var taps: [Int] = []
        var reasons: [String] = []
        let root = job.spec.outputRoot
        for (i, tap) in job.taps.enumerated() {
            let name = tap.config.name
            var reason: String? = nil
            if force == .all { reason = "forced" }
            else if case .stage(let s) = force, s == name { reason = "forced" }
            else if let step = prior?.steps[tap.identity] {
                if step.fingerprint != tap.fingerprint {
                    if let lookup = recipeLookup, let old = lookup(step.fingerprint) {
                        reason = "options changed: " + Job.explainChange(old: old, new: tap.recipe)
                    } else {
                        reason = "options changed"
                    }
                } else if step.source != file.identity.key {
                    reason = "source changed"
                } else if let missing = step.outputs.first(where: { !Self.exists(root + "/" + $0) }) {
                    reason = "output missing: \(missing)"
                }
            } else {
                reason = prior?.status == "failed" ? "failed before" : "new"
            }
            if let reason {
                taps.append(i)
                reasons.append("\(job.labels[i]): \(reason)")
            }
        }
        var uploads: [Int] = []
        for (u, up) in job.uploads.enumerated() {
            let name = "upload"
            if force == .all || force == .stage(name) {
                uploads.append(u); reasons.append("\(name): forced"); continue
            }
            if let t = up.sourceTaps.first(where: { taps.contains($0) }) {
                uploads.append(u); reasons.append("\(name): \(job.taps[t].config.name) output changes"); continue
            }
            let hashes = up.sourceTaps.compactMap { prior?.steps[job.taps[$0].identity]?.outputHash }
            guard hashes.count == up.sourceTaps.count else { uploads.append(u); reasons.append("\(name): new"); continue }
            let fp = up.fingerprint(fileHashes: hashes)
            if let step = prior?.steps[up.identity] {
                if step.fingerprint != fp { uploads.append(u); reasons.append("\(name): options or files changed") }
            } else {
                uploads.append(u); reasons.append("\(name): new")
            }
        }
        let nothing = taps.isEmpty && uploads.isEmpty
        return RecordingPlan(file: file, action: nothing ? .skip : .run(taps: taps, uploads: uploads, reasons: reasons), prior: prior)
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }
}
