import Foundation
import Logging
import SegnoCore
import SegnoState

extension BatchRunner {
    /// Hands each tap that names voices (`VoiceNamingConfig`: `speakers`) the state, before the
    /// pass is planned: it loads the enrolled prints and the voices it kept, and writes again the
    /// files whose names were made with other prints (decision 0075). Does nothing for a store that
    /// keeps no voices. Returns true when files were written again (their steps' hashes changed:
    /// the caller reads the state again, so uploads of those files are planned).
    package func prepareVoices(store: any StateBackend, state: StateIndex) throws(RunError) -> Bool {
        guard let voices = store as? any VoiceStore else { return false }
        var rewritten = 0
        for tap in job.taps {
            guard let config = tap.config as? any VoiceNamingConfig else { continue }
            do {
                let r = try config.prepareVoices(store: voices, stage: tap.identity, outputRoot: job.spec.outputRoot,
                                                 step: { state[$0]?.steps[tap.identity] },
                                                 dependents: { try renameSpeakers(of: $0, before: $1, after: $2, finder: tap.identity, state: state) })
                rewritten += r.rewritten
                for n in r.notes { options.observer?.warning("segno: warning: \(n)") }
            } catch let e as AudioError {
                throw .input("speakers: \(e)")
            } catch {
                throw StateOpening.classify(error, path: job.spec.statePath)
            }
        }
        if rewritten > 0 { logger.info("speaker names written again", metadata: ["recordings": "\(rewritten)"]) }
        return rewritten > 0
    }

    /// Writes again, with the speakers' new names (label → name `before` and `after`), the files of
    /// the taps that carry them (`SpeakerNamesRewriting`: transcripts) for the recording `path`,
    /// from the files themselves (decision 0084); returns their new hashes and the catalogue's
    /// spoken words read again from every tap's recorded files (as a run reads those of taps that
    /// are up to date). A file changed since segno wrote it is left alone with a note.
    private func renameSpeakers(of path: String, before: [String: String], after: [String: String], finder: String,
                                state: StateIndex) throws -> DependentRelabel {
        var out = DependentRelabel()
        guard let recording = state[path] else { return out }
        let root = job.spec.outputRoot
        for (i, tap) in job.taps.enumerated() where tap.identity != finder && tap.config.usesKinds.contains(.turns) {
            guard let config = tap.config as? any SpeakerNamesRewriting, let step = recording.steps[tap.identity] else { continue }
            let paths = step.outputs.map { root + "/" + $0 }
            guard let contents = config.renamedSpeakers(paths: paths, before: before, after: after), contents.count == paths.count,
                  OutputRewrite.isOurs(paths, hash: step.outputHash, orAlready: contents) else {
                out.notes.append("\(job.labels[i]): \(AudioError.quoted(path)): its files changed since segno wrote them (or cannot be read back); speaker names not written again")
                continue
            }
            for (p, c) in zip(paths, contents) { try OutputFile.write(c, to: p) }
            let written = try paths.map { try FileHash.sha256(path: $0) }
            out.steps.append(RelabelledStep(stage: tap.identity, outputHash: FileHash.combine(written.map(\.digest)),
                                            outputSize: written.reduce(0) { $0 + $1.size }))
        }
        out.spoken = job.taps.compactMap { tap in
            recording.steps[tap.identity].flatMap { tap.config.spokenText(fromOutputs: $0.outputs.map { root + "/" + $0 }) }
        }.joined(separator: "\n")
        return out
    }
}
