import Foundation
import Logging
import SegnoAudio
import SegnoCore
import SegnoSources
import SegnoSpeech
import SegnoState

/// `segno state rebuild SPEC`: after the state database was lost or damaged, adopts the outputs
/// that are already in place so the next run does not redo (and, for `file://` targets, rewrite)
/// an archive. For each recording the scan finds and the store does not know, a tap whose every
/// output file exists is recorded as done with the current spec's fingerprint and the file's
/// hash; an upload is recorded when every object (or copy) is in place with the same SHA-256 and,
/// on S3, the same `segno-recipe`. What is missing is left for the next run. Adopting trusts that
/// the files were made with this spec: after changing a spec, run with `--force` instead.
/// A tap that keeps what it heard in the state beside its files (`VoiceNamingConfig`: the
/// voices' centroids, which no file holds) is not adopted, nor the taps that use what it finds:
/// the next run finds the speakers again, so names and labels keep working (decision 0091).
public struct StateRebuild {
    public let job: Job
    package let logger: Logger
    /// The process environment as the CLI read it (S3 credentials for the uploads' checks).
    package let environment: [String: String]
    /// The helper pools and `PATH` recordings are decoded with (to learn their formats).
    package let tools: AudioTools

    public init(job: Job, logger: Logger, environment: [String: String], tools: AudioTools) {
        self.tools = tools
        self.job = job
        self.logger = logger
        self.environment = environment
    }

    /// What a rebuild found.
    public struct Summary: Sendable {
        public var recordings = 0
        public var adoptedRecordings = 0
        public var adoptedOutputs = 0
        public var adoptedUploads = 0
        public var problems: [String] = []
        /// Recordings whose speaker turns are found again by the next run (decision 0091).
        public var speakersRedone = 0
        /// The names the speaker files of those recordings carry.
        public var speakerNames: Set<String> = []
    }

    /// Takes the run (SQLite's lock; PostgreSQL claims each recording it adopts), opens (creating)
    /// the store and adopts what it can.
    public func run() throws(RunError) -> Summary {
        let spec = job.spec
        let (hold, store) = try spec.stateLocation.openForRebuild()
        defer {
            store.close()
            _ = hold
        }
        let known: StateIndex
        do { known = try store.loadAll() } catch { throw StateOpening.classify(error, path: spec.statePath) }
        let scan: ScanResult
        do { scan = try InputScanner(input: spec.input, skipDirectories: [spec.outputRoot]).scan(now: .distantFuture) } catch {
            throw .input("input.root \(AudioError.quoted(spec.input.root)) is not a readable folder")
        }
        var uploaders: [(any RecordingUploader)?] = []
        var summary = Summary()
        for up in job.uploads {
            do { uploaders.append(try up.config.makeUploader(environment: environment, progressStore: nil, logger: logger)) } catch {
                uploaders.append(nil)
                summary.problems.append("\(up.config.to): \(error); its objects are not checked (the next run verifies them)")
            }
        }
        var updates: [StateUpdate] = []
        for file in scan.files where !known.contains(file.relativePath) {
            summary.recordings += 1
            do {
                if let update = try adopt(file, uploaders: uploaders, into: &summary) { updates.append(update) }
            } catch {
                summary.problems.append("\(error)")
            }
            if updates.count >= 256 { try apply(&updates, store) }
        }
        try apply(&updates, store)
        try warnOfLostNames(&summary, store)
        return summary
    }

    /// A name in the speaker files that no print in the state gives would be lost when the next run
    /// finds the speakers again: says so, and how to keep it (decision 0091).
    private func warnOfLostNames(_ summary: inout Summary, _ store: any StateBackend) throws(RunError) {
        guard !summary.speakerNames.isEmpty else { return }
        let enrolled: [VoicePrint]
        do { enrolled = try (store as? any VoiceStore)?.voicePrints() ?? [] } catch { throw StateOpening.classify(error, path: job.spec.statePath) }
        let lost = summary.speakerNames.subtracting(enrolled.map(\.name)).sorted()
        guard !lost.isEmpty else { return }
        summary.problems.append("""
            warning: the speaker files name \(lost.joined(separator: ", ")), but the state holds no voice print for \(lost.count == 1 ? "it" : "them"): \
            enroll \(lost.count == 1 ? "it" : "them") again (segno speakers enroll SPEC NAME FILE…) before the next run, which finds the \
            speakers of \(summary.speakersRedone) recording\(summary.speakersRedone == 1 ? "" : "s") again and names only enrolled voices
            """)
    }

    /// Writes adopted recordings; a shared store's are claimed first, and one another worker
    /// holds or finished is left to it.
    private func apply(_ updates: inout [StateUpdate], _ store: any StateBackend) throws(RunError) {
        do {
            var batch = updates
            if store.claimsRecordings {
                let granted = try store.claim(updates.compactMap(\.path)).filter { $0.value == .granted }
                batch = updates.filter { $0.path.map { granted[$0] != nil } ?? false }
            }
            try store.apply(batch)
        } catch { throw StateOpening.classify(error, path: job.spec.statePath) }
        updates.removeAll()
    }

    /// The state update that adopts one recording's outputs, nil when none is in place.
    package func adopt(_ file: ScannedFile, uploaders: [(any RecordingUploader)?], into summary: inout Summary) throws -> StateUpdate? {
        let root = job.spec.outputRoot
        var context = RecordingContext(sourcePath: file.absolutePath, relativePath: file.relativePath,
                                       modified: file.identity.modified, source: nil, outputRoot: root)
        var duration: Double? = nil
        let decodeVariables = ["duration", "rate", "channels", "title", "recorded"]
        if job.taps.contains(where: { t in decodeVariables.contains { t.config.pathTemplate.uses($0) } }) {
            let decoder = try DecoderFactory.open(path: file.absolutePath, tools: tools)
            context.source = decoder.info
            if decoder.info.sampleRate > 0 { duration = Double(decoder.info.frames) / Double(decoder.info.sampleRate) }
            decoder.close()
        }
        var steps: [String: StepState] = [:]
        var recipes: [String: String] = [:]
        let now = Date().timeIntervalSince1970
        for tap in job.taps {
            guard let paths = try? tap.config.resolvePaths(context), !paths.isEmpty,
                  paths.allSatisfy({ access($0, F_OK) == 0 && $0.hasPrefix(root + "/") }) else { continue }
            if tap.config is any VoiceNamingConfig {
                // Its centroids are in no file: not adopted, so the next run finds the speakers again.
                summary.speakersRedone += 1
                summary.speakerNames.formUnion(SpeakerTurnsFile.read(paths[0])?.compactMap(\.name) ?? [])
                continue
            }
            var digests: [Data] = []
            var size: Int64 = 0
            for p in paths {
                let h = try FileHash.sha256(path: p)
                digests.append(h.digest)
                size += h.size
            }
            steps[tap.identity] = StepState(stage: tap.identity, fingerprint: tap.fingerprint, source: file.identity.key,
                                            output: StepState.encodeOutputs(paths.map { String($0.dropFirst(root.count + 1)) }),
                                            outputHash: FileHash.combine(digests), outputSize: size, finishedAt: now)
            recipes[tap.fingerprint] = tap.recipe
            summary.adoptedOutputs += paths.count
        }
        // A tap that uses what a tap left to the next run finds (a transcript with the speakers'
        // names) would be redone with it anyway (decision 0077): not adopted either.
        let redone = job.taps.filter { $0.config is any VoiceNamingConfig }.reduce(into: Set<Findings.Kind>()) { $0.formUnion($1.config.findsKinds) }
        for tap in job.taps where steps[tap.identity] != nil && !tap.config.usesKinds.isDisjoint(with: redone) {
            summary.adoptedOutputs -= steps[tap.identity]?.outputs.count ?? 0
            steps[tap.identity] = nil
        }
        for (u, up) in job.uploads.enumerated() {
            guard let uploader = uploaders[u],
                  let sources = Optional(up.sourceTaps.compactMap({ steps[job.taps[$0].identity] })), sources.count == up.sourceTaps.count else { continue }
            var files: [(path: String, digest: Data)] = []
            for step in sources {
                for rel in step.outputs {
                    let digest = step.outputs.count == 1 ? step.outputHash : try FileHash.sha256(path: root + "/" + rel).digest
                    files.append((root + "/" + rel, digest))
                }
            }
            var ctx = context
            if let duration { ctx.extra["duration"] = String(format: "%.3f", duration) }
            let fingerprint = up.fingerprint(fileHashes: sources.map(\.outputHash))
            guard let uris = try uploader.inPlace(files: files, context: ctx, recipe: fingerprint) else { continue }
            steps[up.identity] = StepState(stage: up.identity, fingerprint: fingerprint, source: file.identity.key,
                                           output: StepState.encodeOutputs(uris), outputHash: FileHash.combine(files.map(\.digest)),
                                           outputSize: Int64(files.count), finishedAt: now)
            recipes[fingerprint] = up.recipe
            summary.adoptedUploads += 1
        }
        guard !steps.isEmpty else { return nil }
        summary.adoptedRecordings += 1
        return .done(path: file.relativePath, identity: file.identity, contentHash: nil, duration: duration,
                     steps: Array(steps.values), recipes: recipes)
    }
}
