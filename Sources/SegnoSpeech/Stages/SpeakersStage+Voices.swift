import Foundation
import SegnoCore

/// Named voices across the archive (decision 0075): each pass, before planning, the runner hands
/// the `speakers` stage its state; the stage loads the enrolled prints and the voices it kept, and
/// writes again the files of every recording whose names were made with other prints, from the
/// turns and centroids the state keeps: no audio is decoded, so enrolling a voice names it in
/// every recording already processed at the cost of a JSON and an RTTM file each.
extension SpeakersConfig: VoiceNamingConfig {
    public func prepareVoices(store: any VoiceStore, stage: String, outputRoot: String,
                              step: (String) -> StepState?) throws -> (rewritten: Int, notes: [String]) {
        let prints = try store.voicePrints()
        let kept = try store.keptSpeakers(stage: stage)
        book.prepare(store: store, stage: stage, prints: prints, kept: kept)
        guard let digest = book.digest else { return (0, []) }
        var rewritten = 0
        var notes: [String] = []
        for k in kept where k.digest != digest {
            // A recording whose tap has no finished step is made again by the plan anyway.
            guard let st = step(k.path), var files = SpeakerFiles(kept: k.turns) else { continue }
            let outputs = st.outputs.map { outputRoot + "/" + $0 }
            guard let now = try? outputs.map({ try FileHash.sha256(path: $0) }),
                  FileHash.combine(now.map(\.digest)) == st.outputHash else {
                notes.append("speakers: \(AudioError.quoted(k.path)): its speaker files changed since segno wrote them (or are missing); names not written again")
                continue
            }
            for (i, n) in VoiceBook.names(k.voices.map(\.centroid), prints: prints).enumerated() {
                if let n { files.names[i] = n }
            }
            try OutputFile.write(Array(files.json.utf8), to: outputs[0])
            if outputs.count > 1 { try OutputFile.write(Array(files.rttm.utf8), to: outputs[1]) }
            let written = try outputs.map { try FileHash.sha256(path: $0) }
            try store.relabelled(path: k.path, stage: stage, digest: digest, outputHash: FileHash.combine(written.map(\.digest)),
                                 outputSize: written.reduce(0) { $0 + $1.size })
            rewritten += 1
        }
        return (rewritten, notes)
    }
}
