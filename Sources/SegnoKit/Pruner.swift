import Foundation
import SegnoAudio
import SegnoCore
import SegnoSources
import SegnoSpeech
import SegnoState

extension BatchRunner {
    /// Which recordings `prune` takes this run, or why it takes none. Called by planning, so
    /// `--dry-run` lists exactly what the real run deletes.
    package func pruneSelection(scan: ScanResult, state: StateIndex) -> ([String], String?) {
        let pruning = job.uploads.filter { $0.config.prune }
        guard !pruning.isEmpty else { return ([], nil) }
        let present = Set(scan.files.map(\.relativePath)).union(scan.settlingPaths).union(scan.unreadableNames.map(\.relativePath))
        let shard = options.shard
        let gone = state.keys.filter { !present.contains($0) && (shard?.contains($0) ?? true) }.sorted()
        guard !gone.isEmpty else { return ([], nil) }
        // An empty scan more likely means an unmounted folder than a deleted archive; a folder the
        // scan could not read may still hold the files.
        if scan.files.isEmpty && scan.settlingPaths.isEmpty { return ([], "the scan found no recording at all (an unmounted folder?)") }
        if !scan.problems.isEmpty { return ([], "the scan could not read everything") }
        let limit = pruning.map { $0.config.pruneLimit.allowed(recordings: state.count) }.min() ?? 0
        if gone.count > limit && options.force != .stage("prune") && options.force != .all {
            let shown = pruning.map { $0.config.pruneLimit.description }.joined(separator: ", ")
            return ([], "\(gone.count) recordings are gone from the input, more than prune_limit allows (\(limit), \(shown) of \(state.count)); nothing pruned — check the input, or run with --force=prune")
        }
        return (gone, nil)
    }

    /// Deletes the outputs, uploaded objects and state rows of `paths`. Files and objects a present
    /// recording still refers to are kept (two recordings can share an upload key), and so is
    /// whatever segno cannot prove it wrote (`PruneProof`: a state row naming a path outside
    /// `output.root` or the upload's folder, a link on the way, no mark, another size or hash):
    /// `refused` says so once for the run. Returns what was pruned, each with what was deleted; a
    /// recording with a deletion that failed stays.
    package func prune(_ paths: [String], state: StateIndex, store: any StateBackend, uploaders: [any RecordingUploader])
        -> (pruned: [(path: String, outputs: [String])], refused: String?) {
        guard !paths.isEmpty else { return ([], nil) }
        let gone = Set(paths)
        var kept = Set<String>()
        for (path, rec) in state where !gone.contains(path) {
            for step in rec.steps.values { kept.formUnion(step.outputs) }
        }
        let uploadsByIdentity = Dictionary(job.uploads.enumerated().map { ($1.identity, $0) }, uniquingKeysWith: { a, _ in a })
        let root = job.spec.outputRoot
        var done: [(path: String, outputs: [String])] = []
        var refusals: [PruneRefusal] = []
        for path in paths {
            guard let rec = state[path] else { continue }
            var ok = true
            var deleted: [String] = []
            for step in rec.steps.values {
                if let i = uploadsByIdentity[step.stage] {
                    guard job.uploads[i].config.prune else { continue }
                    do { deleted += try uploaders[i].delete(step, keeping: kept) } catch let refusal as PruneRefusal {
                        refusals.append(refusal)
                    } catch {
                        ok = false
                        logger.info("prune failed", metadata: ["step": "\(step.stage)", "error": "\(error)"])
                    }
                } else if !step.identity.isUpload {
                    let files = step.outputs.map { root + "/" + $0 }
                    let keeping = Set(step.outputs.filter { kept.contains($0) }.map { root + "/" + $0 })
                    do {
                        deleted += try PruneProof.delete(files, keeping: keeping, root: root, recordedSize: step.outputSize,
                                                         recordedHash: step.outputHash).map { String($0.dropFirst(root.count + 1)) }
                    } catch {
                        refusals.append(error)
                    }
                }
            }
            if ok { done.append((path, deleted)) }
        }
        try? store.forget(paths: done.map(\.path))
        guard let first = refusals.first else { return (done, nil) }
        let what = refusals.count == 1 ? "1 file or object" : "\(refusals.count) files or objects"
        let shown = refusals.count == 1 ? ": \(first)" : " (first \(first))"
        return (done, "kept \(what) the state lists but segno cannot prove it wrote\(shown); was the state changed by someone else?")
    }
}
