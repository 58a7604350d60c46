import Foundation
import SegnoAudio
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import Testing

/// Index of the largest |x| with parabolic refinement, in frames (fractional).
private func peakPosition(_ x: [Float]) -> Double {
    var m = 0
    for i in x.indices where abs(x[i]) > abs(x[m]) { m = i }
    guard m > 0, m + 1 < x.count else { return Double(m) }
    let a = Double(x[m - 1]), b = Double(x[m]), c = Double(x[m + 1])
    let den = a - 2 * b + c
    return den == 0 ? Double(m) : Double(m) + 0.5 * (a - c) / den
}

/// Frequency of a sine from its rising zero crossings (linear interpolation), in Hz.
private func zeroCrossingFrequency(_ x: [Float], rate: Int) -> Double {
    var crossings: [Double] = []
    for i in 1..<x.count where x[i - 1] < 0 && x[i] >= 0 {
        crossings.append(Double(i - 1) + Double(-x[i - 1] / (x[i] - x[i - 1])))
    }
    guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
    return Double(crossings.count - 1) / ((last - first) / Double(rate))
}

@Suite struct ResampleStageTests {
    static let conversions = [(44100, 16000), (48000, 44100), (8000, 48000)]

    @Test(arguments: conversions, [1, 2, 99, 1000, 4097, 12345])
    func outputLengthIsExact(rates: (Int, Int), frames: Int) throws {
        let (inRate, outRate) = rates
        let x = Signal.noise(frames: frames, channels: 2, amplitude: 0.5)
        let want = Int((Double(frames) * Double(outRate) / Double(inRate)).rounded())
        for block in [64, 4096] {
            for quality in [ResampleConfig.Quality.fast, .standard] {
                let tap = try runChain(x, channels: 2, rate: inRate, [ResampleConfig(rate: outRate, quality: quality)], blockFrames: block)
                #expect(tap.format == AudioFormat(sampleRate: outRate, channels: 2))
                #expect(tap.frames == want, "\(quality): \(frames) frames \(inRate)→\(outRate) Hz in blocks of \(block)")
            }
        }
    }

    @Test(arguments: ResampleConfig.Quality.allCases)
    func outputLengthIsExactForEveryQuality(quality: ResampleConfig.Quality) throws {
        let x = Signal.noise(frames: 22051)
        let tap = try runChain(x, channels: 1, rate: 44100, [ResampleConfig(rate: 16000, quality: quality)], blockFrames: 1000)
        #expect(tap.frames == 8000)  // 22051 × 16000 / 44100 = 8000.36
    }

    @Test(arguments: conversions, [ResampleConfig.Quality.standard, .best])
    func blockSizeDoesNotChangeTheOutput(rates: (Int, Int), quality: ResampleConfig.Quality) throws {
        let (inRate, outRate) = rates
        let x = Signal.noise(frames: 5000, channels: 2, amplitude: 0.5)
        let config = ResampleConfig(rate: outRate, quality: quality)
        let reference = try runChain(x, channels: 2, rate: inRate, [config], blockFrames: 4096).samples
        for block in [1, 7, 1000] {
            let got = try runChain(x, channels: 2, rate: inRate, [config], blockFrames: block).samples
            #expect(got.count == reference.count)
            guard got.count == reference.count else { continue }
            #expect(maxAbsDifference(got, reference) <= 1e-6, "block size \(block)")
        }
    }

    @Test(arguments: conversions)
    func sineKeepsItsFrequencyAmplitudeAndPhase(rates: (Int, Int)) throws {
        let (inRate, outRate) = rates
        let f = 1000.0, frames = inRate / 2
        let x = Signal.sine(frequency: f, rate: inRate, frames: frames, amplitude: 0.5)
        let y = try runChain(x, channels: 1, rate: inRate, [ResampleConfig(rate: outRate)], blockFrames: 4096).samples
        // Away from the edges, the output is the same sine sampled at the new rate: same
        // frequency, same amplitude and (if the resampler is time-aligned) the same phase.
        let middle = Array(y[(outRate / 20)..<(y.count - outRate / 20)])
        #expect(abs(zeroCrossingFrequency(middle, rate: outRate) - f) < 0.01)
        let ideal = Signal.sine(frequency: f, rate: outRate, frames: y.count, amplitude: 0.5)
        let err = maxAbsDifference(Array(y[(outRate / 20)..<(y.count - outRate / 20)]),
                                   Array(ideal[(outRate / 20)..<(y.count - outRate / 20)]))
        #expect(err < 1e-3, "output differs from the ideal aligned sine by \(err)")
    }

    @Test(arguments: conversions)
    func impulseComesOutAtTheSameTime(rates: (Int, Int)) throws {
        let (inRate, outRate) = rates
        // An impulse at t = 0.1 s in 0.5 s of silence.
        var x = [Float](repeating: 0, count: inRate / 2)
        x[inRate / 10] = 1
        let y = try runChain(x, channels: 1, rate: inRate, [ResampleConfig(rate: outRate)], blockFrames: 1024).samples
        let delay = peakPosition(y) - Double(outRate) / 10
        #expect(abs(delay) < 0.25, "impulse at \(outRate / 10) came out at \(peakPosition(y)) (delay \(delay) frames)")
    }

    @Test func channelsStaySeparate() throws {
        // Left: 1 kHz, right: silence. Nothing leaks into the right channel.
        var x = [Float](repeating: 0, count: 2 * 8000)
        let s = Signal.sine(frequency: 1000, rate: 44100, frames: 8000)
        for i in 0..<8000 { x[2 * i] = s[i] }
        let y = try runChain(x, channels: 2, rate: 44100, [ResampleConfig(rate: 16000)]).samples
        #expect(channel(1, of: y, channels: 2).allSatisfy { $0 == 0 })
        #expect((channel(0, of: y, channels: 2).map(abs).max() ?? 0) > 0.45)
    }

    @Test func sameRatePassesThroughUnchanged() throws {
        let x = Signal.noise(frames: 3000, channels: 2)
        let tap = try runChain(x, channels: 2, rate: 44100, [ResampleConfig(rate: 44100)], blockFrames: 700)
        #expect(tap.samples == x)
    }

    @Test func ratioBeyondLibsamplerateLimitFailsAtStart() throws {
        let t = try ResampleConfig(rate: 1000).makeTransform()
        #expect(throws: StageStartError.self) { _ = try t.start(AudioFormat(sampleRate: 384_000, channels: 1)) }
    }

    @Test func optionsAreCanonical() {
        #expect(ResampleConfig(rate: 16000).canonical == "resample@v1 rate=16000 quality=soxr-vhq")
        #expect(ResampleConfig(rate: 8000, quality: .fast).options.map(\.1) == ["8000", "fast"])
    }
}
