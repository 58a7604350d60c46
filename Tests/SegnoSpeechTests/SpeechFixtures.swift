import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCore
import SegnoCoreTestSupport
import SegnoSpeech

/// Recorded speech for the speech stages' tests: LibriVox utterances from Debian's
/// `pocketsphinx-testdata` (installed by `make test-deps`), decoded by sox.
enum Speech {
    static let folder = "/usr/share/pocketsphinx/test/data/librivox"
    /// "he was not an ill disposed young man" (2.99 s, 16 kHz mono).
    static let short = "sense_and_sensibility_01_austen_64kb-0880.wav"
    /// "he might even have been made amiable himself" (3.29 s).
    static let amiable = "sense_and_sensibility_01_austen_64kb-0930.wav"

    /// The utterance as Float32 at `rate` (sox resamples), mono.
    static func utterance(_ name: String = short, rate: Int = 16000) throws -> [Float] {
        let path = folder + "/" + name
        guard FileManager.default.fileExists(atPath: path) else {
            throw FixtureError("\(path) is missing: `make test-deps` installs Debian's pocketsphinx-testdata (recorded speech)")
        }
        let r = try Tool.run("sox", [path, "-t", "f32", "-r", String(rate), "-"])
        guard r.status == 0 else { throw FixtureError("sox could not read \(path): \(r.stderrText)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// Brown-ish noise (integrated white noise, DC removed) scaled to `rms`.
    static func noise(frames: Int, rms: Double, seed: UInt64 = 7) -> [Float] {
        let white = Signal.noise(frames: frames, amplitude: 1, seed: seed)
        var y = [Float](repeating: 0, count: frames)
        var acc: Float = 0
        for i in 0..<frames { acc = 0.995 * acc + white[i]; y[i] = acc }
        let mean = y.reduce(0, +) / Float(max(1, frames))
        var s = 0.0
        for i in 0..<frames { y[i] -= mean; s += Double(y[i] * y[i]) }
        let g = Float(rms / (s / Double(max(1, frames))).squareRoot())
        return y.map { $0 * g }
    }

    static func rms(_ x: ArraySlice<Float>) -> Double {
        (x.reduce(0.0) { $0 + Double($1 * $1) } / Double(max(1, x.count))).squareRoot()
    }

    /// The lag (in frames, −range…range) at which `y` best matches `x` (normalised cross-correlation).
    static func lag(_ y: [Float], _ x: [Float], range: Int) -> Int {
        var best = 0, bestValue = -Double.infinity
        let n = min(x.count, y.count)
        for l in -range...range {
            var s: Float = 0
            let lo = max(0, -l), hi = min(n, n - l)
            var i = lo
            while i < hi { s += y[i + l] * x[i]; i += 1 }
            if Double(s) > bestValue { bestValue = Double(s); best = l }
        }
        return best
    }
}

extension StageRegistry {
    /// The speech stages with what their spec tests put around them (pitch before, a metadata tap
    /// after): enough to load their options without the assembly's standard registry.
    static var speechForTests: StageRegistry {
        StageRegistry([
            Entry(PitchConfig.declaration, PitchConfig.parse),
            Entry(MetadataConfig.declaration, MetadataConfig.parse),
            Entry(DenoiseConfig.declaration, DenoiseConfig.parse),
            Entry(PausesConfig.declaration, PausesConfig.parse),
            Entry(TranscribeConfig.declaration, TranscribeConfig.parse),
        ])
    }
}
