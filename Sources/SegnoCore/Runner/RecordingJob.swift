import Foundation
import SegnoDSP

/// One recording's pass: open the source, build the chain with only the taps that must run
/// (and only the transforms they need), stream it, then hash the outputs for the state store.
/// Runs on one worker thread.
struct RecordingJob {
    let job: Job
    let plan: RecordingPlan
    let tapIndices: [Int]
    let stop: StopFlag

    /// Returns the state update, the source duration in seconds and the outputs written.
    func run(progress: (Int, Int) -> Void) throws -> (StateUpdate, Double?, [String]) {
        let spec = job.spec
        let file = plan.file
        let decoder = try DecoderFactory.open(path: file.absolutePath)
        defer { decoder.close() }
        var context = RecordingContext(sourcePath: file.absolutePath, relativePath: file.relativePath,
                                       modified: file.identity.modified, source: decoder.info, outputRoot: spec.outputRoot)
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
        let duration = decoder.info.sampleRate > 0 ? Double(frames) / Double(decoder.info.sampleRate) : nil
        var steps: [StepState] = []
        var recipes: [String: String] = [:]
        let now = Date().timeIntervalSince1970
        for (tap, outs) in zip(tapsInChain, produced) {
            var digests: [Data] = []
            var size: Int64 = 0
            for out in outs {
                let h = try FileHash.sha256(path: out.path)
                digests.append(h.digest)
                size += h.size
            }
            let rels = outs.map { String($0.path.dropFirst(spec.outputRoot.count + 1)) }
            steps.append(StepState(stage: tap.identity, fingerprint: tap.fingerprint, source: file.identity.key,
                                   output: StepState.encodeOutputs(rels), outputHash: FileHash.combine(digests),
                                   outputSize: size, finishedAt: now))
            recipes[tap.fingerprint] = tap.recipe
        }
        var contentHash: Data? = nil
        if spec.input.verify == .content { contentHash = try FileHash.sha256(path: file.absolutePath).digest }
        return (.done(path: file.relativePath, identity: file.identity, contentHash: contentHash, duration: duration,
                      steps: steps, recipes: recipes), duration, produced.flatMap { $0.map(\.path) })
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
