import Foundation
import SegnoAudio
import SegnoCoreTestSupport
import SegnoDSP
import Testing

@Suite struct MixStageTests {
    @Test(arguments: 1...6)
    func monoIsTheMeanOfTheChannels(channels: Int) throws {
        let x = Signal.noise(frames: 1000, channels: channels)
        let tap = try runChain(x, channels: channels, rate: 8000, [MixConfig(target: .mono)], blockFrames: 333)
        #expect(tap.format == AudioFormat(sampleRate: 8000, channels: 1))
        #expect(tap.frames == 1000)
        for f in 0..<1000 {
            var sum: Float = 0
            for c in 0..<channels { sum += x[f * channels + c] }
            #expect(abs(tap.samples[f] - sum / Float(channels)) < 1e-6)
        }
    }

    @Test func stereoDuplicatesMono() throws {
        let x = Signal.noise(frames: 500)
        let tap = try runChain(x, channels: 1, rate: 8000, [MixConfig(target: .stereo)])
        #expect(tap.format?.channels == 2)
        #expect(channel(0, of: tap.samples, channels: 2) == x)
        #expect(channel(1, of: tap.samples, channels: 2) == x)
    }

    @Test func stereoToStereoIsUntouched() throws {
        let x = Signal.noise(frames: 500, channels: 2)
        #expect(try runChain(x, channels: 2, rate: 8000, [MixConfig(target: .stereo)]).samples == x)
    }

    @Test(arguments: 3...8)
    func foldingKeepsFullScaleAndSides(channels: Int) throws {
        // Every channel at full scale stays full scale on both sides.
        let ones = [Float](repeating: 1, count: 10 * channels)
        let full = try runChain(ones, channels: channels, rate: 8000, [MixConfig(target: .stereo)]).samples
        #expect(full.count == 20)
        #expect(full.allSatisfy { abs($0 - 1) < 1e-6 }, "\(full)")
        // Only the first channel (left) playing: it must reach the left output and not the right.
        var left = [Float](repeating: 0, count: 10 * channels)
        for f in 0..<10 { left[f * channels] = 0.5 }
        let y = try runChain(left, channels: channels, rate: 8000, [MixConfig(target: .stereo)]).samples
        #expect(channel(0, of: y, channels: 2).allSatisfy { $0 > 0 })
        #expect(channel(1, of: y, channels: 2).allSatisfy { $0 == 0 })
    }

    @Test func fivePointOneUsesBS775Weights() throws {
        // L R C LFE Ls Rs: centre and surrounds at −3 dB, LFE dropped, normalised to full scale.
        let c: Float = 0.70710678, norm = 1 + 2 * c
        func fold(_ frame: [Float]) throws -> [Float] {
            try runChain(frame, channels: 6, rate: 48000, [MixConfig(target: .stereo)]).samples
        }
        let centre = try fold([0, 0, 1, 0, 0, 0])
        #expect(abs(centre[0] - c / norm) < 1e-6 && abs(centre[1] - c / norm) < 1e-6)
        #expect(try fold([0, 0, 0, 1, 0, 0]) == [0, 0], "LFE is dropped")
        let ls = try fold([0, 0, 0, 0, 1, 0])
        #expect(abs(ls[0] - c / norm) < 1e-6 && ls[1] == 0)
        let r = try fold([0, 1, 0, 0, 0, 0])
        #expect(r[0] == 0 && abs(r[1] - 1 / norm) < 1e-6)
    }

    /// Each channel carries its own tone; the fold's weight for a channel is that tone's amplitude
    /// on each output side (measured by projecting onto the tone).
    func toneWeights(channels: Int) throws -> (left: [Float], right: [Float]) {
        let rate = 48000, frames = 4800
        let freqs = (0..<channels).map { 300.0 + 200.0 * Double($0) }   // whole cycles in 0.1 s
        var x = [Float](repeating: 0, count: frames * channels)
        for f in 0..<frames { for ch in 0..<channels { x[f * channels + ch] = Float(0.5 * sin(2 * .pi * freqs[ch] * Double(f) / Double(rate))) } }
        let y = try runChain(x, channels: channels, rate: rate, [MixConfig(target: .stereo)], blockFrames: 1000).samples
        func amplitude(_ side: Int, _ freq: Double) -> Float {
            var s = 0.0
            for f in 0..<frames { s += Double(y[f * 2 + side]) * sin(2 * .pi * freq * Double(f) / Double(rate)) }
            return Float(2 * s / Double(frames) / 0.5)
        }
        return (freqs.map { amplitude(0, $0) }, freqs.map { amplitude(1, $0) })
    }

    @Test func sixPointOneAndSevenPointOneUseBS775Weights() throws {
        let c: Float = 0.70710678, norm = 1 + 3 * c
        // 7.1: L R C LFE Lb Rb Ls Rs.
        let w8 = try toneWeights(channels: 8)
        let l8: [Float] = [1, 0, c, 0, c, 0, c, 0], r8: [Float] = [0, 1, c, 0, 0, c, 0, c]
        for ch in 0..<8 {
            #expect(abs(w8.left[ch] - l8[ch] / norm) < 1e-3, "7.1 channel \(ch) left: \(w8.left[ch])")
            #expect(abs(w8.right[ch] - r8[ch] / norm) < 1e-3, "7.1 channel \(ch) right: \(w8.right[ch])")
        }
        #expect(abs(w8.left[2] - w8.right[2]) < 1e-4, "the centre is in both sides equally")
        #expect(abs(w8.left[3]) < 1e-4 && abs(w8.right[3]) < 1e-4, "LFE is dropped")
        // 6.1: L R C LFE Cs Ls Rs.
        let w7 = try toneWeights(channels: 7)
        let l7: [Float] = [1, 0, c, 0, c, c, 0], r7: [Float] = [0, 1, c, 0, c, 0, c]
        for ch in 0..<7 {
            #expect(abs(w7.left[ch] - l7[ch] / norm) < 1e-3, "6.1 channel \(ch) left: \(w7.left[ch])")
            #expect(abs(w7.right[ch] - r7[ch] / norm) < 1e-3, "6.1 channel \(ch) right: \(w7.right[ch])")
        }
    }

    @Test func moreThanEightChannelsFoldEvenLeftOddRight() throws {
        let w = try toneWeights(channels: 10)
        for ch in 0..<10 {
            #expect(abs(w.left[ch] - (ch % 2 == 0 ? 0.2 : 0)) < 1e-3, "channel \(ch) left: \(w.left[ch])")
            #expect(abs(w.right[ch] - (ch % 2 == 1 ? 0.2 : 0)) < 1e-3, "channel \(ch) right: \(w.right[ch])")
        }
    }

    @Test func blockSizeDoesNotMatter() throws {
        let x = Signal.noise(frames: 3001, channels: 6)
        let reference = try runChain(x, channels: 6, rate: 48000, [MixConfig(target: .stereo)], blockFrames: 4096).samples
        for block in [1, 7] {
            #expect(try runChain(x, channels: 6, rate: 48000, [MixConfig(target: .stereo)], blockFrames: block).samples == reference)
        }
    }

    @Test func optionsAreCanonical() {
        #expect(MixConfig(target: .mono).canonical == "mix@v1 to=mono")
        #expect(MixConfig(target: .stereo).kind == .transform)
    }
}
