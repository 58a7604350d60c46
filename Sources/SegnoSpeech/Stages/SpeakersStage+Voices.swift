import Foundation
import SegnoCore

/// Named voices across the archive (decision 0075): each pass, before planning, the runner hands
/// the `speakers` stage its state; the stage loads the enrolled prints and the voices it kept, and
/// writes again the files of every recording whose names were made with other prints, from the
/// turns and centroids the state keeps: no audio is decoded, so enrolling a voice names it in
/// every recording already processed at the cost of a JSON and an RTTM file each, plus the
/// transcripts that carry the names (decision 0084, through `dependents`).
extension SpeakersConfig: VoiceNamingConfig {
    public func prepareVoices(store: any VoiceStore, stage: String, outputRoot: String, step: (String) -> StepState?,
                              dependents: (String, [String: String], [String: String]) throws -> DependentRelabel) throws -> (rewritten: Int, notes: [String]) {
        let prints = try store.voicePrints()
        let ledger = try store.keptLedger(stage: stage)
        let kept = ledger.kept
        book.prepare(store: store, stage: stage, prints: prints, ledger: ledger)
        guard let digest = book.digest else { return (0, []) }
        var rewritten = 0
        var notes: [String] = []
        for k in kept where k.digest != digest {
            // A recording whose tap has no finished step is made again by the plan anyway.
            guard let st = step(k.path), var files = SpeakerFiles(kept: k.turns) else { continue }
            let outputs = st.outputs.map { outputRoot + "/" + $0 }
            let before = SpeakerFiles.names(inTurnFile: outputs[0])
            for (i, n) in VoiceBook.names(k.voices.map(\.centroid), prints: prints).enumerated() {
                if let n { files.names[i] = n }
            }
            let contents = [Array(files.json.utf8), Array(files.rttm.utf8)].prefix(outputs.count).map { $0 }
            // Files segno wrote (their hash is the step's), or already written with these names by
            // a pass that was stopped before the state recorded it.
            guard OutputRewrite.isOurs(outputs, hash: st.outputHash, orAlready: contents) else {
                notes.append("speakers: \(AudioError.quoted(k.path)): its speaker files changed since segno wrote them (or are missing); names not written again")
                continue
            }
            for (p, c) in zip(outputs, contents) { try OutputFile.write(c, to: p) }
            let written = try outputs.map { try FileHash.sha256(path: $0) }
            let own = RelabelledStep(stage: stage, outputHash: FileHash.combine(written.map(\.digest)), outputSize: written.reduce(0) { $0 + $1.size })
            let others = try dependents(k.path, before ?? [:], files.namesByLabel)
            notes += others.notes
            try store.relabelled(path: k.path, stage: stage, digest: digest, steps: [own] + others.steps, spoken: others.spoken)
            rewritten += 1
        }
        return (rewritten, notes)
    }
}

extension SpeakerFiles {
    /// Each label's name (`speaker-7` → Alice); a label two voices share takes the first voice's name.
    package var namesByLabel: [String: String] {
        var out: [String: String] = [:]
        for (speaker, name) in names.sorted(by: { $0.key < $1.key }) where out[label(of: speaker)] == nil { out[label(of: speaker)] = name }
        return out
    }

    /// The label → name map of a turn file as it is on disk; nil when it is not a turn file.
    package static func names(inTurnFile path: String) -> [String: String]? {
        guard let turns = SpeakerTurnsFile.read(path) else { return nil }
        var out: [String: String] = [:]
        for t in turns { if let n = t.name, out[t.label] == nil { out[t.label] = n } }
        return out
    }
}
