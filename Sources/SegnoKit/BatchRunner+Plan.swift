import Foundation
import SegnoAudio
import SegnoCore
import SegnoSources
import SegnoSpeech
import SegnoState

extension BatchRunner {
    /// Output collisions worked out before the state is read (so their map is gone before the
    /// state's index is made: the two together were the peak of planning 1,000,000 recordings),
    /// or nil when a scanned file lies under the output root: then the state must first say which
    /// files are the job's own outputs. `makePlan` uses them when the state names no own output
    /// among the scanned files (a `file://` copy could still be one), and works them out again otherwise.
    package func collisionsBeforeState(scan: ScanResult) -> [String: String]? {
        let root = job.spec.outputRoot + "/"
        if scan.files.contains(where: { $0.absolutePathHasPrefix(root) }) { return nil }
        return Self.outputCollisions(job: job, files: scan.files)
    }

    /// Plans a scan against the stored state. Reads files only for `verify: content` decisions.
    /// `collisions`: from `collisionsBeforeState` over the same scan, if it was called.
    package func makePlan(scan: ScanResult, state: StateIndex, recipeLookup: ((String) -> String?)?, collisions early: [String: String]? = nil) -> RunPlan {
        var plan = RunPlan()
        var planner = Planner(job: job, state: state, source: source)
        planner.force = options.force
        planner.retryOnly = options.retryOnly
        planner.recipeLookup = recipeLookup
        // The scan's files are planned in place (a filtered copy would be 64 MB at 1,000,000).
        let own = Self.recordedOutputs(job: job, state: state, scanned: scan.files)
        func isOwn(_ f: ScannedFile) -> Bool { !own.isEmpty && own.contains(f.absolutePath) }
        let collisions = own.isEmpty ? early ?? Self.outputCollisions(job: job, files: scan.files) : Self.outputCollisions(job: job, files: scan.files, excluding: isOwn)
        let verbose = options.dryRun || options.explain
        // The last distinct action planned: equal actions share it (its arrays), so 1,000,000 new
        // recordings hold one `[taps]` and one `[reasons]` between them, not one each.
        var lastAction: RecordingPlan.Action?
        var runLines: [String: Int] = [:]  // --explain: where each recording's run line is
        for file in scan.files {
            if isOwn(file) { plan.ownOutputs.append(file.relativePath); continue }
            if let message = collisions[file.relativePath] {
                if planner.isKnownFailure(file) { plan.knownFailures += 1; continue }  // reported once, not every cron run
                plan.refused.append((file, message, .spec))
                if verbose { plan.lines.append("fail \(AudioError.quoted(file.relativePath)): \(message)") }
                continue
            }
            var p = planner.plan(file)
            if let last = lastAction, last == p.action { p.action = last } else { lastAction = p.action }
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
                    if options.explain { runLines[file.relativePath] = plan.lines.count - 1 }
                }
            }
        }
        for file in scan.unreadableNames {
            if planner.isKnownFailure(file) { plan.knownFailures += 1; continue }
            let message = "file name holds a code point of U+10FF80…U+10FFFF, which segno uses to carry names that are not UTF-8: rename it"
            plan.refused.append((file, message, .input))
            if verbose { plan.lines.append("fail \(AudioError.quoted(file.relativePath)): \(message)") }
        }
        if options.explain { explainSplits(&plan, runLines: runLines) }
        (plan.prune, plan.pruneHeld) = pruneSelection(scan: scan, state: state)
        for path in plan.prune where verbose { plan.lines.append("prune \(AudioError.quoted(path))") }
        return plan
    }

    /// `--explain`: after each recording's run line, whether it will be split (`SplitRule`) and why,
    /// for the recordings split and for those long enough to be but not split; nothing for the
    /// rest. The length is the one recorded by an earlier run, else read from the header when there
    /// are fewer recordings to run than cores (so `split: off` is named for a long one too). Decided as the run starts: a long
    /// recording started when fewer recordings are left than cores is split then.
    package func explainSplits(_ plan: inout RunPlan, runLines: [String: Int]) {
        let rule = splitRule
        let pending = plan.work.count
        let lastTap = job.spec.stages.lastIndex { $0.config is any TapConfig } ?? -1
        let hasTransform = job.spec.stages.prefix(lastTap + 1).contains { $0.config is any TransformConfig }
        let checkpoints = checkpointRule
        let lead = CheckpointRule.lead(of: job.spec.stages.prefix(lastTap + 1).map(\.config))
        var extra: [Int: [String]] = [:]
        for p in plan.work {
            guard let at = runLines[p.file.relativePath] else { continue }
            var seconds = p.prior?.duration
            var exact: Bool? = nil
            if seconds == nil, hasTransform, pending < rule.cores, let d = try? source.open(p.file) {
                let info = d.info
                exact = (d as? any ExactSeeking)?.seeksExactly == true
                d.close()
                if info.sampleRate > 0 && info.frames > 0 { seconds = Double(info.frames) / Double(info.sampleRate) }
            }
            let decision = rule.decide(seconds: seconds, pending: pending, hasTransform: hasTransform)
            let name = AudioError.quoted(p.file.relativePath)
            if decision.split {
                extra[at, default: []].append("split \(name): \(decision.reason)")
            } else if let seconds, seconds >= rule.minimumSeconds {
                extra[at, default: []].append("one core \(name): \(decision.reason)")
            }
            // Checkpoints (decision 0095), for a recording known to be long enough.
            guard let seconds, seconds >= checkpoints.minimumSeconds else { continue }
            var why = checkpoints.mode == .off ? "the spec pins checkpoints: off" : lead.blocker
            if why == nil {
                if exact == nil, let d = try? source.open(p.file) {
                    exact = (d as? any ExactSeeking)?.seeksExactly == true
                    d.close()
                }
                if exact != true { why = "its source does not seek exactly (PCM and FLAC do)" }
            }
            let length = "\(SplitRule.duration(seconds)) ≥ \(SplitRule.duration(checkpoints.minimumSeconds))"
            extra[at, default: []].append(why.map { "no checkpoints \(name): \($0)" }
                ?? "checkpoints \(name): every \(SplitRule.duration(checkpoints.intervalSeconds)) of source, \(length); "
                + (lead.count == 1 ? "the first stage keeps its state" : "the first \(lead.count) stages keep their state"))
        }
        guard !extra.isEmpty else { return }
        var lines = TextList()
        for (i, line) in plan.lines.enumerated() {
            lines.append(line)
            for e in extra[i] ?? [] { lines.append(e) }
        }
        plan.lines = lines
    }

    /// Absolute paths of every file this job's state says segno wrote: tap outputs and `file://`
    /// upload copies. A scan never takes one of them as a recording.
    static package func recordedOutputs(job: Job, state: StateIndex, scanned: [ScannedFile]) -> Set<String> {
        // Only outputs a scanned file could be are needed: those under output.root when some
        // scanned file is there, and `file://` copies. Skipping the rest spares a JSON parse per
        // step (a tenth of a no-op run over 100,000 recordings).
        let root = job.spec.outputRoot + "/"
        let underRoot = scanned.contains { $0.absolutePathHasPrefix(root) }
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
    /// `excluding`: files not planned (the job's own outputs). Each output path is kept as its
    /// hash and the index of the file that resolved it (16 bytes, not the path: 1,000,000 paths
    /// would be some 150 MB); a hash seen before is confirmed by resolving the first file again.
    static package func outputCollisions(job: Job, files: [ScannedFile], excluding: (ScannedFile) -> Bool = { _ in false }) -> [String: String] {
        let decodeVariables = ["duration", "rate", "channels", "title", "recorded", "zoom"]
        let templates = job.taps.filter { t in !decodeVariables.contains(where: { t.config.pathTemplate.uses($0) }) }
        guard !templates.isEmpty, files.count * templates.count < Int(UInt32.max) else { return [:] }
        func resolve(_ f: ScannedFile, _ t: Int) -> String? {
            let ctx = RecordingContext(sourcePath: f.absolutePath, relativePath: f.relativePath, modified: f.identity.modified,
                                       outputRoot: job.spec.outputRoot)
            return try? templates[t].config.pathTemplate.resolve(ctx)
        }
        // Hash → file index × templates + template index of the first to resolve it.
        var owner: [Int: UInt32] = [:]
        owner.reserveCapacity(files.count * templates.count)  // no rehash: two tables at once at the peak
        // Paths whose hash an earlier, different path took (a 64-bit collision: in practice never).
        var spilled: [String: Int] = [:]
        var out: [String: String] = [:]
        for (i, f) in files.enumerated() where !excluding(f) {
            let ctx = RecordingContext(sourcePath: f.absolutePath, relativePath: f.relativePath, modified: f.identity.modified,
                                       outputRoot: job.spec.outputRoot)
            for t in templates.indices {
                guard let path = try? templates[t].config.pathTemplate.resolve(ctx) else { continue }
                let me = i * templates.count + t, hash = path.hashValue
                var first: Int?
                if let o = owner[hash].map(Int.init) {
                    let (fi, ft) = o.quotientAndRemainder(dividingBy: templates.count)
                    if resolve(files[fi], ft) == path { first = o } else if let s = spilled[path] { first = s } else { spilled[path] = me }
                } else {
                    owner[hash] = UInt32(me)
                }
                if let first, files[first / templates.count].relativePath != f.relativePath {
                    let other = files[first / templates.count].relativePath
                    out[f.relativePath] = "\(templates[t].config.name) would write \(AudioError.quoted(String(path.dropFirst(job.spec.outputRoot.count + 1)))) like \(AudioError.quoted(other)); add {ext} or {dir} to \(templates[t].config.pathTemplate.text)"
                    break
                }
            }
        }
        return out
    }
}
