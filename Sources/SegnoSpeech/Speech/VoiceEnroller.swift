import Foundation
import SegnoCore
import SegnoDSP

/// Why a voice cannot be enrolled (`segno speakers enroll`): each message names the file or name.
public enum EnrollError: Error, Sendable, CustomStringConvertible {
    /// The name is not allowed (`VoicePrint.check`).
    case badName(String, why: String)
    /// A file cannot be read or decoded.
    case unreadable(path: String, detail: String)
    /// The voice activity detector found no speech of at least 0.5 s in the file.
    case noSpeech(path: String)
    /// The speech engines are missing or failed.
    case engine(SpeechError)

    public var description: String {
        switch self {
        case .badName(let n, let why): return "cannot enroll \(JSONValue.string(n).serialized()): \(why)"
        case .unreadable(let p, let d): return "\(AudioError.quoted(p)): \(d)"
        case .noSpeech(let p): return "\(AudioError.quoted(p)): no speech found (the voice activity detector heard no stretch of 0.5 s or more); enroll a recording of the voice speaking"
        case .engine(let e): return "\(e)"
        }
    }
}

/// Makes a voice print from recordings of one voice (decision 0075): each file is decoded, brought
/// to 16 kHz mono, its speech found by the voice activity detector and cut into the `speakers`
/// tap's windows, each window embedded by the GE2E helper; the print is the L2-normed mean of
/// every window's embedding over all the files. Then the same again with the files mixed with
/// each of `EnrolmentNoise.conditions` (decision 0086): one more print per condition, kept after
/// the first, so the name holds in noisy recordings. Nothing of the audio is kept.
package struct VoiceEnroller {
    package let engine: VoiceActivityEngine
    package let locator: SpeechLocator
    package let helpers: SpeakerHelperPool

    package init(engine: VoiceActivityEngine = .standard, locator: SpeechLocator = .standard, helpers: SpeakerHelperPool) {
        self.engine = engine
        self.locator = locator
        self.helpers = helpers
    }

    /// The enroller of a spec: the voice activity detector and engines of its first `speakers`
    /// stage, the standard ones when it has none.
    package init(stages: [any StageConfig], helpers: SpeakerHelperPool) {
        let speakers = stages.lazy.compactMap { $0 as? SpeakersConfig }.first
        self.init(engine: speakers?.engine ?? .standard, locator: speakers?.locator ?? .standard, helpers: helpers)
    }

    /// The print of `name` from `decoders` (each with its file's path, for messages), made now.
    package func enroll(name: String, files: [(path: String, open: () throws -> any AudioDecoder)], now: Date = Date()) throws(EnrollError) -> VoicePrint {
        if let why = VoicePrint.check(name) { throw .badName(name, why: why) }
        var all: [[Float]] = []
        var seconds = 0.0
        var powers: [Double] = []
        for f in files {
            let (embeddings, speech, power) = try embed(f.path, f.open, noise: nil)
            guard !embeddings.isEmpty else { throw .noSpeech(path: f.path) }
            all += embeddings
            seconds += speech
            powers.append(power)
        }
        var vectors = [Diarizer.centroid(all)]
        if vectors[0].count == VoicePrint.dimension {
            for (c, condition) in EnrolmentNoise.conditions.enumerated() {
                var noisy: [[Float]] = []
                for (i, f) in files.enumerated() {
                    let seed = UInt64(i) << 8 | UInt64(c)
                    noisy += try embed(f.path, f.open, noise: condition.generator(power: powers[i], seed: seed)).embeddings
                }
                // Noise can hide all of a short file's speech from the detector: no print for that condition.
                if !noisy.isEmpty { vectors.append(Diarizer.centroid(noisy)) }
            }
        }
        return VoicePrint(name: name, vector: vectors.flatMap { $0 }, files: files.count, seconds: seconds, enrolledAt: now.timeIntervalSince1970)
    }

    /// One file's window embeddings, its seconds of speech and its mean square (16 kHz mono, before
    /// any noise), with `noise` added to the samples before the detector and the encoder when given.
    private func embed(_ path: String, _ open: () throws -> any AudioDecoder,
                       noise: EnrolmentNoise.Generator?) throws(EnrollError) -> (embeddings: [[Float]], speech: Double, power: Double) {
        let decoder: any AudioDecoder
        do { decoder = try open() } catch { throw .unreadable(path: path, detail: "\(error)") }
        defer { decoder.close() }
        let input = SpeechInput()
        let helper: SpeakerHelper
        let windows: SpeakerWindows
        do {
            try input.start(sampleRate: decoder.info.sampleRate)
            let detector = try engine.make(locator: locator)
            helper = try helpers.take(locator: locator)
            windows = SpeakerWindows(detector: detector, helper: helper)
        } catch let e as SpeechError { throw .engine(e.naming(path)) } catch { throw .unreadable(path: path, detail: "\(error)") }
        var block = AudioBlock(channels: decoder.info.channels, capacity: 4096)
        var generator = noise
        var mixed: [Float] = []
        var squares = 0.0, count = 0
        let feed = { (samples: UnsafeBufferPointer<Float>) throws in
            for x in samples { squares += Double(x) * Double(x) }
            count += samples.count
            guard generator != nil else { return try windows.feed(samples) }
            generator?.mix(samples, into: &mixed)
            try mixed.withUnsafeBufferPointer { try windows.feed($0) }
        }
        do {
            while try decoder.read(into: &block, maxFrames: 4096) > 0 {
                try input.feed(block, feed)
            }
            try input.finish(feed)
        } catch let e as SpeechError {
            helper.terminate()
            throw .engine(e.naming(path))
        } catch {
            helper.terminate()
            throw .unreadable(path: path, detail: "\(error)")
        }
        let answer: Result<[[Float]], SpeechError>
        do { answer = try windows.finish() } catch {
            helper.terminate()
            throw .engine(error.naming(path))
        }
        helpers.checkIn(helper)
        switch answer {
        case .success(let e):
            let speech = windows.speech.reduce(0) { $0 + $1.count }
            return (e, Double(speech) / Double(VoiceActivityEngine.rate), count > 0 ? squares / Double(count) : 0)
        case .failure(let e): throw .engine(e.naming(path))
        }
    }
}
