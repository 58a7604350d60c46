import Foundation
import SegnoAudio
import SegnoCore
import SegnoSources
import SegnoSpeech
import SegnoState

extension BatchRunner {
    /// Plans a scan against the stored state. Reads files only for `verify: content` decisions.
    package func makePlan(scan: ScanResult, state: StateIndex, recipeLookup: ((String) -> String?)?) -> RunPlan {
        var plan = RunPlan()
        var planner = Planner(job: job, state: state, source: source)
        planner.force = options.force
        planner.retryOnly = options.retryOnly
        planner.recipeLookup = recipeLookup
        let own = Self.recordedOutputs(job: job, state: state, scanned: scan.files)
        var files: [ScannedFile] = []
        for f in scan.files {
            if own.contains(f.absolutePath) { plan.ownOutputs.append(f.relativePath) } else { files.append(f) }
        }
        let collisions = Self.outputCollisions(job: job, files: files)
        let verbose = options.dryRun || options.explain
        for file in files {
            if let message = collisions[file.relativePath] {
                if planner.isKnownFailure(file) { plan.knownFailures += 1; continue }  // reported once, not every cron run
                plan.refused.append((file, message, .spec))
                if verbose { plan.lines.append("fail \(AudioError.quoted(file.relativePath)): \(message)") }
                continue
            }
            let p = planner.plan(file)
            switch p.action {
            case .skip: plan.upToDate += 1
            case .knownFailure: plan.knownFailures += 1
            case .run(_, _, let reasons):
                if planner.contentUnchanged(p) {
                    plan.unchanged.append(file)
                    plan.upToDate += 1
                    continue
                }
                plan.work.append(p)
                if verbose {
                    let name = AudioError.quoted(file.relativePath)
                    plan.lines.append(options.explain ? "run \(name): " + reasons.map(\.description).joined(separator: "; ") : "run \(name)")
                }
            }
        }
        for file in scan.unreadableNames {
            if planner.isKnownFailure(file) { plan.knownFailures += 1; continue }
            let message = "file name holds a code point of U+10FF80…U+10FFFF, which segno uses to carry names that are not UTF-8: rename it"
            plan.refused.append((file, message, .input))
            if verbose { plan.lines.append("fail \(AudioError.quoted(file.relativePath)): \(message)") }
        }
        (plan.prune, plan.pruneHeld) = pruneSelection(scan: scan, state: state)
        for path in plan.prune where verbose { plan.lines.append("prune \(AudioError.quoted(path))") }
        return plan
    }

    /// Absolute paths of every file this job's state says segno wrote: tap outputs and `file://`
    /// upload copies. A scan never takes one of them as a recording.
    static package func recordedOutputs(job: Job, state: StateIndex, scanned: [ScannedFile]) -> Set<String> {
        // Only outputs a scanned file could be are needed: those under output.root when some
        // scanned file is there, and `file://` copies. Skipping the rest spares a JSON parse per
        // step (a tenth of a no-op run over 100,000 recordings).
        let root = job.spec.outputRoot + "/"
        let underRoot = scanned.contains { $0.absolutePath.hasPrefix(root) }
        var out = Set<String>()
        state.forEachStepOutput(containing: underRoot ? nil : "file:") { output in
            for o in StepState.outputs(of: output) {
                switch StoredOutput(o) {
                case .relative(let rel): out.insert(job.spec.outputRoot + "/" + rel)
                case .file(let path): out.insert(path)
                case .object: break
                }
            }
        }
        return out
    }

    /// Recordings whose outputs would land on another recording's (`a.wav` and `a.flac` both
    /// writing `{stem}.flac`): the first in path order keeps the name, the others fail with a
    /// message. Only templates that need no decoding are checked (the rest are rare to collide).
    static package func outputCollisions(job: Job, files: [ScannedFile]) -> [String: String] {
        let decodeVariables = ["duration", "rate", "channels", "title", "recorded", "zoom"]
        let templates = job.taps.filter { t in !decodeVariables.contains(where: { t.config.pathTemplate.uses($0) }) }
        guard !templates.isEmpty else { return [:] }
        var owner: [String: String] = [:]
        var out: [String: String] = [:]
        for f in files {
            let ctx = RecordingContext(sourcePath: f.absolutePath, relativePath: f.relativePath, modified: f.identity.modified,
                                       outputRoot: job.spec.outputRoot)
            for t in templates {
                guard let path = try? t.config.pathTemplate.resolve(ctx) else { continue }
                if let first = owner[path], first != f.relativePath {
                    out[f.relativePath] = "\(t.config.name) would write \(AudioError.quoted(String(path.dropFirst(job.spec.outputRoot.count + 1)))) like \(AudioError.quoted(first)); add {ext} or {dir} to \(t.config.pathTemplate.text)"
                    break
                }
                owner[path] = f.relativePath
            }
        }
        return out
    }
}
