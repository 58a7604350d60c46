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
                let r = try config.prepareVoices(store: voices, stage: tap.identity, outputRoot: job.spec.outputRoot) { state[$0]?.steps[tap.identity] }
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
}
