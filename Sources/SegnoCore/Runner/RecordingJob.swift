import Foundation
import SegnoDSP

/// One recording's work: open the source, build the chain with only the taps that must run (and
/// only the transforms they need), stream it, hash the outputs, then run the uploads that must
/// run on the taps' files. With no tap to run (an upload only) the source is not decoded.
/// Runs on one worker thread.
struct RecordingJob {
    let job: Job
    let plan: RecordingPlan
    let tapIndices: [Int]
    let uploadIndices: [Int]
    let uploaders: [Uploader]
    let stop: StopFlag

    /// Returns the state update, the source duration in seconds and the outputs written.
    func run() throws -> (StateUpdate, Double?, [String]) {
        let spec = job.spec
        let file = plan.file
        var context = RecordingContext(sourcePath: file.absolutePath, relativePath: file.relativePath,
                                       modified: file.identity.modified, source: nil, outputRoot: spec.outputRoot)
        var steps: [String: StepState] = [:]
        var recipes: [String: String] = [:]
        var written: [String] = []
        var duration = plan.prior?.duration

        // With verify: content the hash is taken before decoding, so it describes the bytes the
        // outputs were made from even if the source is rewritten during a long pass.
        var contentHash: Data? = nil
        if spec.input.verify == .content && !tapIndices.isEmpty { contentHash = try FileHash.sha256(path: file.absolutePath).digest }
        if !tapIndices.isEmpty {
            let decoder = try DecoderFactory.open(path: file.absolutePath)
            defer { decoder.close() }
            context.source = decoder.info
            let wanted = Set(tapIndices.map { job.taps[$0].index })
            let last = wanted.max() ?? -1
            var items: [ChainRecipe.Item] = []
            var tapsInChain: [JobTap] = []
            for (i, placed) in spec.stages.enumerated() where i <= last {
                switch placed.config {
                case let t as any TransformConfig:
                    items.append(.transform(t))
                case let tap as any TapConfig where wanted.contains(i):
                    let paths: [String]
                    do { paths = try tap.resolvePaths(context) } catch { throw StageStartError(stage: tap.name, "\(placed.keyPath).path: \(error.message)") }
                    for p in paths { try Self.checkContained(p, root: spec.outputRoot) }
                    items.append(.tap(tap, paths: paths))
                    tapsInChain.append(job.taps.first { $0.index == i }!)
                default:
                    continue
                }
            }
            var frames = 0
            let produced: [[ProducedFile]]
            var first = true
            do {
                produced = try ChainRecipe(items: items).run(open: {
                    if first { first = false; return decoder }
                    return try DecoderFactory.open(path: file.absolutePath)
                }, context: context, isCancelled: { stop.isStopped }) { frames = $0 }
            } catch let e as StageStartError {
                throw StageStartError(stage: e.stage, "\(AudioError.quoted(file.relativePath)): \(e.message)")
            }
            duration = decoder.info.sampleRate > 0 ? Double(frames) / Double(decoder.info.sampleRate) : nil
            let now = Date().timeIntervalSince1970
            for (tap, outs) in zip(tapsInChain, produced) {
                var digests: [Data] = []
                var size: Int64 = 0
                for out in outs {
                    let h = try FileHash.sha256(path: out.path)
                    digests.append(h.digest)
                    size += h.size
                }
                var values: [String: String] = [:]
                for out in outs { values.merge(out.values) { a, _ in a } }
                let detail = values.isEmpty ? nil : JSONValue.object(values.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).serialized()
                let rels = outs.map { String($0.path.dropFirst(spec.outputRoot.count + 1)) }
                steps[tap.identity] = StepState(stage: tap.identity, fingerprint: tap.fingerprint, source: file.identity.key,
                                                output: StepState.encodeOutputs(rels), outputHash: FileHash.combine(digests),
                                                outputSize: size, finishedAt: now, detail: detail)
                recipes[tap.fingerprint] = tap.recipe
                written += outs.map(\.path)
            }
        }

        for u in uploadIndices {
            let up = job.uploads[u]
            var files: [(path: String, digest: Data)] = []
            var hashes: [Data] = []
            var ctx = context
            if let duration { ctx.extra["duration"] = String(format: "%.3f", duration) }
            for t in up.sourceTaps {
                let tap = job.taps[t]
                guard let step = steps[tap.identity] ?? plan.prior?.steps[tap.identity] else {
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
            let uris = try uploaders[u].upload(files: files, context: ctx, recipe: fingerprint, shouldContinue: { [stop] in !stop.isStopped })
            steps[up.identity] = StepState(stage: up.identity, fingerprint: fingerprint, source: file.identity.key,
                                           output: StepState.encodeOutputs(uris), outputHash: FileHash.combine(files.map(\.digest)),
                                           outputSize: Int64(files.count), finishedAt: Date().timeIntervalSince1970)
            recipes[steps[up.identity]!.fingerprint] = up.recipe
        }

        return (.done(path: file.relativePath, identity: file.identity, contentHash: contentHash, duration: duration,
                      steps: Array(steps.values), recipes: recipes), duration, written)
    }

    /// Refuses an output path whose existing folders pass through a symbolic link (which could
    /// point outside the output root).
    static func checkContained(_ path: String, root: String) throws {
        guard path.hasPrefix(root + "/") else { throw AudioError.io(path: path, detail: "resolves outside output.root") }
        var dir = (path as NSString).deletingLastPathComponent
        while dir.count > root.count {
            var st = stat()
            if lstat(dir, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK {
                throw AudioError.io(path: path, detail: "output folder \(AudioError.quoted(dir)) is a symbolic link; refusing to write through it")
            }
            dir = (dir as NSString).deletingLastPathComponent
        }
    }
}
