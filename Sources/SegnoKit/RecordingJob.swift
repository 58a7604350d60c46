import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP
import SegnoSources
import SegnoSpeech
import SegnoState

/// What one recording's attempts produced so far in this run: the steps that finished (kept
/// across retries, so a retry reruns only what failed), and what failed in the last attempt.
package struct RecordingOutcome {
    package var steps: [String: StepState] = [:]
    package var recipes: [String: String] = [:]
    /// Source duration in seconds, once decoded.
    package var duration: Double?
    /// Absolute paths of the files written.
    package var written: [String] = []
    package var contentHash: Data?
    /// Fingerprints made in this run, by tap identity (stored in the `fingerprint` table).
    package var fingerprints: [String: AudioFingerprint] = [:]
    /// What `segno find` searches, once the source was opened.
    package var catalog: CatalogEntry?
    /// True once the source was decoded in this run (so `salvage` says what the last pass read).
    package var decoded = false
    /// What salvaging recovered (`damaged: salvage`), with the source's rate; nil when read whole.
    package var salvage: (report: SalvageReport, sampleRate: Int)?
    /// True when the last pass ran split over several threads (`SplitRule`, decision 0085).
    package var split = false
    /// The last attempt's failures: the stage that failed (nil for the whole recording) and why.
    package var failures: [(stage: String?, error: any Error)] = []

    /// The class that decides what happens next: a failure the environment or chance caused wins
    /// over the input's or the spec's, so a recording is parked only when nothing else went wrong.
    package var failureClass: FailureClass? {
        let classes = failures.map { FailureClass.of($0.error) }
        for c in [FailureClass.transient, .environment, .spec, .input] where classes.contains(c) { return c }
        return nil
    }

    /// One line: every failure, the failing tap named when the error does not say it.
    package var message: String {
        failures.map { f in f.stage.map { "\($0): \(f.error)" } ?? "\(f.error)" }.joined(separator: "; ")
    }
}

/// One attempt at a recording: open the source, build the chain with only the taps that must run
/// (and only the transforms they need), stream it, hash the outputs, then run the uploads whose
/// files are all there. A tap that fails does not stop the others, and a failed upload keeps the
/// taps' steps. With no tap to run (an upload only) the source is not decoded. Runs on one worker thread.
package struct RecordingJob {
    package let job: Job
    package let plan: RecordingPlan
    package let source: any RecordingSource
    package let uploaders: [any RecordingUploader]
    package let stop: StopFlag
    /// Who owns each output and upload destination in this run (nil: not checked, one-off use).
    package var owners: OutputOwners?
    /// Sees the seconds decoded so far over all passes (a loudness measuring pass counts), the
    /// duration from the header, and the number of passes known so far (progress).
    package var onDecoded: ((_ seconds: Double, _ total: Double?, _ passes: Int) -> Void)?
    /// Sees warnings from the chain (normalize missing its target).
    package var onNote: ((String) -> Void)?
    /// Decides whether the pass is split (`SplitRule`), given the length from the header (nil when
    /// unknown) and whether the chain has a transform; asked once per pass. Nil: never split.
    package var split: ((_ seconds: Double?, _ hasTransform: Bool) -> SplitRule.Decision)?
    /// Whether a long recording keeps checkpoints (decision 0095); nil: never.
    package var checkpoints: CheckpointRule?
    /// The run's worker pool (`RecordingContext.parking`); nil outside a run's pool.
    package var parking: WorkerParking?

    /// Runs `tapIndices` (into `Job.taps`) and `uploadIndices` (into `Job.uploads`), adding what
    /// finished to `outcome` and what failed to `outcome.failures`. Throws only `Interrupted`.
    package func run(taps tapIndices: [Int], uploads uploadIndices: [Int], into outcome: inout RecordingOutcome) throws(Interrupted) {
        var context = RecordingContext(sourcePath: plan.file.absolutePath, relativePath: plan.file.relativePath,
                                       modified: plan.file.identity.modified, source: nil, outputRoot: job.spec.outputRoot)
        context.extra.merge(source.templateValues(plan.file)) { a, _ in a }
        context.parking = parking
        if outcome.duration == nil { outcome.duration = plan.prior?.duration }
        var failedTaps = Set<Int>()
        if !tapIndices.isEmpty {
            do {
                failedTaps = try runTaps(tapIndices, context: &context, into: &outcome)
            } catch let e as Interrupted {
                throw e
            } catch {
                outcome.failures.append((nil, error))
                return
            }
        }
        for u in uploadIndices {
            let up = job.uploads[u]
            // Never upload a file a failed tap should have replaced.
            if up.sourceTaps.contains(where: { failedTaps.contains($0) }) { continue }
            do {
                try upload(up, with: uploaders[u], context: context, into: &outcome)
            } catch let e as Interrupted {
                throw e
            } catch {
                outcome.failures.append((nil, error))
            }
        }
    }

    /// The pass: returns the taps (indices into `Job.taps`) that failed alone; throws when the
    /// whole recording failed (source, transform, interrupted).
    private func runTaps(_ tapIndices: [Int], context: inout RecordingContext, into outcome: inout RecordingOutcome) throws -> Set<Int> {
        let spec = job.spec
        let file = plan.file
        // With verify: content the hash is taken before decoding, so it describes the bytes the
        // outputs were made from even if the source is rewritten during a long pass.
        if spec.input.verify == .content { outcome.contentHash = try source.contentHash(file) }
        let decoder = try source.open(file)
        defer { decoder.close() }
        context.source = decoder.info
        let carried = source.metadata(file, pictures: job.keepsPictures)
        context.carry(carried)
        for w in carried.warnings { onNote?(w) }
        let wanted = Dictionary(uniqueKeysWithValues: tapIndices.map { (job.taps[$0].index, $0) })
        let last = wanted.keys.max() ?? -1
        // Every file the state records for this recording (any tap, current or earlier settings).
        let recorded = Set((plan.prior?.steps.values ?? [:].values).flatMap { $0.outputs.map { spec.outputRoot + "/" + $0 } })
        var items: [ChainRecipe.Item] = []
        var inChain: [Int] = []  // indices into Job.taps, in chain order
        var failed = Set<Int>()
        for (i, placed) in spec.stages.enumerated() where i <= last {
            switch placed.config {
            case let t as any TransformConfig:
                items.append(.transform(t))
            case let tap as any TapConfig:
                guard let t = wanted[i] else { continue }
                do {
                    let paths: [String]
                    do { paths = try tap.resolvePaths(context) } catch {
                        throw StageStartError(stage: tap.name, "\(placed.keyPath).path: \(error.message)")
                    }
                    for p in paths {
                        try Self.checkContained(p, root: spec.outputRoot, source: file.absolutePath)
                        if let other = owners?.claim(p, for: file.relativePath) {
                            throw OutputClash(recording: file.relativePath, output: String(p.dropFirst(spec.outputRoot.count + 1)), other: other,
                                              template: tap.pathTemplate.text)
                        }
                        try Self.checkNotForeign(p, recorded: recorded)
                    }
                    items.append(.tap(tap, paths: paths))
                    inChain.append(t)
                } catch {
                    failed.insert(t)
                    outcome.failures.append((job.labels[t], error))
                }
            default:
                continue
            }
        }
        guard !inChain.isEmpty else { return failed }
        var frames = 0
        var reported = 0
        let rate = decoder.info.sampleRate
        let total: Double? = rate > 0 && decoder.info.frames > 0 ? Double(decoder.info.frames) / Double(rate) : nil
        onDecoded?(0, total, 1)
        let results: [Result<[ProducedFile], any Error>]
        var before = 0.0  // seconds decoded in the earlier passes
        var passes = 1
        do {
            var recipe = ChainRecipe(items: items)
            let hasTransform = items.contains { if case .transform = $0 { true } else { false } }
            recipe.pipelined = split?(total, hasTransform).split ?? false
            outcome.split = recipe.pipelined
            if let rule = checkpoints, rule.applies(seconds: total) {
                let chain = items.map { item -> String in
                    switch item {
                    case .transform(let t): return t.canonical
                    case .tap(let t, let paths): return ([t.canonical] + paths).joined(separator: "\u{1}")
                    }
                }
                recipe.checkpoints = rule.plan(outputRoot: spec.outputRoot, relativePath: file.relativePath, sourceKey: file.identity.key, chain: chain)
            }
            // A sensor series (.csv/.jsonl) has no loudness to speak of: normalize still scales
            // it, but its notes about LUFS and true peak would only alarm (issue 22: the demo).
            let sensor = decoder.info.codec == "sensor series"
            recipe.notes = sensor ? { [onNote] n in if !n.hasPrefix("normalize:") { onNote?(n) } } : onNote
            recipe.onPass = { pass, count in
                before = total.map { $0 * Double(pass) } ?? before + Double(frames) / Double(max(rate, 1))
                passes = count
                frames = 0
                reported = 0
                onDecoded?(before, total, count)
            }
            results = try recipe.runEach(open: source.passes(of: file, first: decoder), context: context,
                                                            isCancelled: { stop.isStopped }) { n in
                frames = n
                // Every 16th block or so is plenty for a progress line.
                if let onDecoded, rate > 0, n - reported >= 65536 {
                    reported = n
                    onDecoded(before + Double(n) / Double(rate), total, passes)
                }
            }
        } catch let e as StageStartError {
            throw StageStartError(stage: e.stage, "\(AudioError.quoted(file.relativePath)): \(e.message)")
        } catch let e as SpeechError {
            throw e.naming(file.relativePath)
        }
        outcome.duration = decoder.info.sampleRate > 0 ? Double(frames) / Double(decoder.info.sampleRate) : nil
        outcome.decoded = true
        outcome.salvage = decoder.salvage.map { ($0, decoder.info.sampleRate) }
        if let s = outcome.salvage { onNote?("salvaged: \(s.report.summary(sampleRate: s.sampleRate))") }
        outcome.catalog = CatalogEntry(context: context, duration: outcome.duration)
        var spoken: [Int: String] = [:]  // transcribe taps' text, by index into Job.taps
        let now = Date().timeIntervalSince1970
        // Kinds of finding whose finder failed here: a tap using them is not kept (decision 0077).
        let lost = zip(inChain, results).reduce(into: Set<Findings.Kind>()) { k, r in
            if case .failure = r.1 { k.formUnion(job.taps[r.0].config.findsKinds) }
        }
        for (t, result) in zip(inChain, results) {
            let tap = job.taps[t]
            do {
                if case .success = result, !tap.config.usesKinds.isDisjoint(with: lost) {
                    let finders = inChain.filter { !job.taps[$0].config.findsKinds.isDisjoint(with: tap.config.usesKinds) }.map { job.labels[$0] }
                    throw FindingsLost(tap: job.labels[t], finders: finders)
                }
                let outs = try result.get()
                var digests: [Data] = []
                var size: Int64 = 0
                let files = outs.filter { !$0.path.isEmpty }
                for out in files {
                    let h = try FileHash.sha256(path: out.path)
                    digests.append(h.digest)
                    size += h.size
                }
                var values: [String: String] = [:]
                for out in outs { values.merge(out.values) { a, _ in a } }
                let detail = values.isEmpty ? nil : JSONValue.object(values.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).serialized()
                let rels = files.map { String($0.path.dropFirst(spec.outputRoot.count + 1)) }
                removeSuperseded(plan.prior?.steps[tap.identity]?.outputs ?? [], keeping: rels)
                if let fp = outs.lazy.compactMap(\.fingerprint).first { outcome.fingerprints[tap.identity] = fp }
                if let s = outs.lazy.compactMap(\.spoken).first { spoken[t] = s }
                outcome.steps[tap.identity] = StepState(stage: tap.identity, fingerprint: tap.fingerprint, source: file.identity.key,
                                                        output: StepState.encodeOutputs(rels), outputHash: FileHash.combine(digests),
                                                        outputSize: size, finishedAt: now, detail: detail)
                outcome.recipes[tap.fingerprint] = tap.recipe
                outcome.written += files.map(\.path)
            } catch {
                failed.insert(t)
                outcome.failures.append((job.labels[t], error))
            }
        }
        // What was said (and who said it) goes into the catalogue: this run's transcripts and
        // speaker turns, else the recorded ones (`spokenText(fromOutputs:)`, nil from other taps).
        for (t, tap) in job.taps.enumerated() where spoken[t] == nil {
            if let step = plan.prior?.steps[tap.identity], let s = tap.config.spokenText(fromOutputs: step.outputs.map { spec.outputRoot + "/" + $0 }) {
                spoken[t] = s
            }
        }
        outcome.catalog?.spoken = spoken.sorted { $0.key < $1.key }.map(\.value).joined(separator: "\n")
        return failed
    }

    /// Sends one upload stage's files: this run's steps first, the stored ones for fresh taps.
    private func upload(_ up: JobUpload, with uploader: any RecordingUploader, context: RecordingContext, into outcome: inout RecordingOutcome) throws {
        let spec = job.spec
        var files: [(path: String, digest: Data)] = []
        var hashes: [Data] = []
        var ctx = context
        if let duration = outcome.duration { ctx.extra["duration"] = String(format: "%.3f", duration) }
        for t in up.sourceTaps {
            let tap = job.taps[t]
            guard let step = outcome.steps[tap.identity] ?? plan.prior?.steps[tap.identity] else {
                throw UploadError.configuration("\(tap.identity) has no output to upload")
            }
            hashes.append(step.outputHash)
            for (k, v) in step.values where ctx.extra[k] == nil { ctx.extra[k] = v }
            for rel in step.outputs {
                let path = spec.outputRoot + "/" + rel
                // Each file's own digest (a step of several files stores a combined one).
                let digest = step.outputs.count == 1 ? step.outputHash : try FileHash.sha256(path: path).digest
                files.append((path, digest))
            }
        }
        let fingerprint = up.fingerprint(fileHashes: hashes)
        if let owners {
            for uri in try uploader.destinations(files: files.map(\.path), context: ctx) {
                if let other = owners.claim(uri, for: plan.file.relativePath) {
                    throw OutputClash(recording: plan.file.relativePath, output: uri, other: other, template: up.config.to)
                }
            }
        }
        let uris = try uploader.upload(files: files, context: ctx, recipe: fingerprint, shouldContinue: { [stop] in !stop.isStopped })
        outcome.steps[up.identity] = StepState(stage: up.identity, fingerprint: fingerprint, source: plan.file.identity.key,
                                               output: StepState.encodeOutputs(uris), outputHash: FileHash.combine(files.map(\.digest)),
                                               outputSize: Int64(files.count), finishedAt: Date().timeIntervalSince1970)
        outcome.recipes[fingerprint] = up.recipe
    }

    /// Removes the files this recording's tap wrote before under another name (a `{title}` that
    /// changed): each only when it lies inside the output root through no symbolic link, carries
    /// segno's mark, and no other recording claims it. Called after the tap's new files are in place.
    private func removeSuperseded(_ old: [String], keeping new: [String]) {
        let root = job.spec.outputRoot
        for rel in old where !new.contains(rel) {
            let path = root + "/" + rel
            guard !rel.split(separator: "/").contains(".."), (try? Self.checkContained(path, root: root)) != nil,
                  OutputFile.isMarked(path), owners?.claim(path, for: plan.file.relativePath) == nil else { continue }
            unlink(path)
        }
    }

    /// Refuses an output path outside the output root, onto the source itself, or whose existing
    /// folders pass through a symbolic link (which could point outside the output root).
    static package func checkContained(_ path: String, root: String, source: String? = nil) throws(AudioError) {
        guard path.hasPrefix(root + "/") else { throw .refused(path: path, detail: "resolves outside output.root") }
        if let source, OutputFile.sameFile(path, source) {
            throw .refused(path: path, detail: "is the recording itself; segno never writes over its input")
        }
        var dir = (path as NSString).deletingLastPathComponent
        while dir.count > root.count {
            var st = stat()
            if lstat(dir, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK {
                throw .refused(path: path, detail: "output folder \(AudioError.quoted(dir)) is a symbolic link; refusing to write through it")
            }
            dir = (dir as NSString).deletingLastPathComponent
        }
    }

    /// Refuses a tap whose output path holds something segno did not write: not recorded for this
    /// recording and without segno's mark (`OutputFile.isMarked`). Called before decoding, so the
    /// user's file is left as it was; an environment failure, retried by the next plain run once
    /// the file is moved away.
    static package func checkNotForeign(_ path: String, recorded: Set<String>) throws(AudioError) {
        guard OutputFile.exists(path), !recorded.contains(path), !OutputFile.isMarked(path) else { return }
        throw .io(path: path, detail: "a file segno did not write is in the way (not in the state, no \(OutputFile.markAttribute) mark); move it away, then run again",
                  code: EEXIST)
    }

}

/// A tap's result not kept because a tap whose findings it uses failed for the recording
/// (decision 0077): both run again next time.
struct FindingsLost: Error, CustomStringConvertible {
    var tap: String
    var finders: [String]
    var description: String {
        "not kept: it uses what \(finders.joined(separator: ", ")) finds, which failed for this recording; both run again next time"
    }
}
