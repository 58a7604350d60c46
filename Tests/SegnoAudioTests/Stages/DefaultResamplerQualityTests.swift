import Foundation
import SegnoAudio
import SegnoCore
import SegnoCoreTestSupport
import Testing

/// Amplitude of the component at `frequency` Hz in `x` (linear): a Kaiser-windowed (β = 28,
/// side lobes near −220 dB) DFT evaluated at exactly that frequency, in Double, scaled so a
/// sine of amplitude A reads A. The window keeps a 0 dB tone 1 kHz away from leaking into a
/// −150 dB measurement.
private func toneAmplitude(_ x: ArraySlice<Float>, rate: Int, frequency: Double) -> Double {
    let n = x.count
    let beta = 28.0
    func i0(_ v: Double) -> Double {
        var sum = 1.0, term = 1.0, k = 1.0
        let q = v * v / 4
        while term > 1e-21 * sum { term *= q / (k * k); sum += term; k += 1 }
        return sum
    }
    let norm = i0(beta)
    let w = 2 * Double.pi * frequency / Double(rate)
    var re = 0.0, im = 0.0, wsum = 0.0
    for (k, i) in x.indices.enumerated() {
        let u = 2 * Double(k) / Double(n - 1) - 1
        let win = i0(beta * (1 - u * u).squareRoot()) / norm
        re += win * Double(x[i]) * cos(w * Double(k))
        im -= win * Double(x[i]) * sin(w * Double(k))
        wsum += win
    }
    return 2 * (re * re + im * im).squareRoot() / wsum
}

/// The default resampler (`ResampleConfig.Quality.standard`), pinned: flat to ±0.01 dB at 7 kHz,
/// and whatever folds into (downsampling) or appears in (upsampling) the 16 kHz band from
/// outside it at least 150 dB down. Levels are of a 0.5-amplitude tone, relative to it, measured
/// on the middle second of the output (the edges carry the start and end of the tone).
@Suite struct DefaultResamplerQualityTests {
    static let amplitude = 0.5

    /// Output level in dB (re the input tone) at `measure` Hz after resampling a tone at `tone` Hz.
    static func level(from inRate: Int, to outRate: Int, tone: Double, measure: Double,
                      quality: ResampleConfig.Quality = .standard) throws -> Double {
        let x = Signal.sine(frequency: tone, rate: inRate, frames: inRate * 3 / 2, amplitude: amplitude)
        let y = try runChain(x, channels: 1, rate: inRate, [ResampleConfig(rate: outRate, quality: quality)]).samples
        #expect(y.count == outRate * 3 / 2)
        let middle = y[(outRate / 4)..<(outRate * 5 / 4)]
        return 20 * log10(max(toneAmplitude(middle, rate: outRate, frequency: measure) / amplitude, 1e-20))
    }

    @Test func defaultIsLibsoxrVeryHighQuality() {
        #expect(ResampleConfig(rate: 16000).quality == .soxrVHQ)
    }

    /// 44.1 and 48 kHz → 16 kHz: 7 kHz passes, 8.5 and 11 kHz (folding to 7.5 and 5 kHz) do not.
    @Test(arguments: [44100, 48000])
    func downsamplingTo16kIsFlatAndRejectsAliases(inRate: Int) throws {
        let pass = try Self.level(from: inRate, to: 16000, tone: 7000, measure: 7000)
        #expect(abs(pass) <= 0.01, "7 kHz came out at \(pass) dB")
        for (tone, alias) in [(8500.0, 7500.0), (11000.0, 5000.0)] {
            let db = try Self.level(from: inRate, to: 16000, tone: tone, measure: alias)
            #expect(db <= -150, "\(tone) Hz folded to \(alias) Hz at \(db) dB")
        }
    }

    /// 16 → 44.1 kHz: 7 kHz passes; the images of 7, 7.5 and 5 kHz (at 9, 8.5 and 11 kHz) do not.
    @Test func upsamplingFrom16kIsFlatAndRejectsImages() throws {
        let pass = try Self.level(from: 16000, to: 44100, tone: 7000, measure: 7000)
        #expect(abs(pass) <= 0.01, "7 kHz came out at \(pass) dB")
        for (tone, image) in [(7000.0, 9000.0), (7500.0, 8500.0), (5000.0, 11000.0)] {
            let db = try Self.level(from: 16000, to: 44100, tone: tone, measure: image)
            #expect(db <= -150, "\(tone) Hz imaged at \(image) Hz at \(db) dB")
        }
    }

    /// The same bound fails for soxr's 20-bit preset, so the test tells the presets apart.
    @Test func highQualityPresetFallsShortOf150dB() throws {
        let db = try Self.level(from: 44100, to: 16000, tone: 8500, measure: 7500, quality: .soxrHQ)
        #expect(db > -150 && db < -120, "soxr-hq: 8.5 kHz folded to 7.5 kHz at \(db) dB")
    }

    /// Same output, sample for sample, whatever the block size.
    @Test func blockSizeDoesNotChangeTheOutput() throws {
        let x = Signal.noise(frames: 30000, channels: 2)
        let cfg = [ResampleConfig(rate: 16000)] as [any TransformConfig]
        let reference = try runChain(x, channels: 2, rate: 44100, cfg, blockFrames: 4096).samples
        #expect(reference.count == 2 * 10884)  // round(30000 × 16000 / 44100) = round(10884.35)
        for block in [1, 7] {
            #expect(try runChain(x, channels: 2, rate: 44100, cfg, blockFrames: block).samples == reference, "block size \(block)")
        }
    }

    /// The measurement itself reads a −160 dB tone, and a 0 dB tone 500 Hz away does not
    /// leak into it (so the bounds above can fail).
    @Test func measurementResolvesMinus160dB() {
        let rate = 16000
        let weak = Signal.sine(frequency: 7500, rate: rate, frames: rate, amplitude: 0.5 * pow(10, -160.0 / 20))
        let db = 20 * log10(toneAmplitude(weak[...], rate: rate, frequency: 7500) / 0.5)
        #expect(abs(db + 160) < 0.1, "a −160 dB tone read \(db) dB")
        let strong = Signal.sine(frequency: 7000, rate: rate, frames: rate, amplitude: 0.5)
        let leak = 20 * log10(toneAmplitude(strong[...], rate: rate, frequency: 7500) / 0.5)
        #expect(leak < -170, "a 0 dB tone 500 Hz away reads \(leak) dB")
    }
}
