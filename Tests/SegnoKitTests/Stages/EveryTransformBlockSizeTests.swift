import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Every transform a spec can name, through the stage harness: its output must not depend on
/// the block sizes it is fed (1, 7 and 4096 frames), as decoders hand out blocks of any size and
/// a file's last block is short. Each stage is taken from a spec, as a user writes it.
@Suite struct EveryTransformBlockSizeTests {
    /// A stage as a spec line, with the channels and rate of the signal fed to it.
    static let stages: [(yaml: String, channels: Int, rate: Int)] = [
        ("gain: -6", 2, 44100),
        ("lowpass: 3000", 2, 44100),
        ("highpass: { frequency: 120, order: 4 }", 1, 16000),
        ("bandpass: { frequency: 1000, bandwidth: 2 }", 1, 16000),
        ("eq: { bands: [{ type: parametric, frequency: 1000, gain: 6 }, { type: highShelf, frequency: 6000, gain: -3 }] }", 2, 48000),
        ("mix: mono", 2, 44100),
        ("resample: 16000", 1, 44100),
        ("resample: { rate: 48000, quality: soxr-vhq }", 2, 44100),
        ("resample: { rate: 8000, quality: polyphase }", 1, 44100),
        ("pitch: { semitones: 3 }", 1, 22050),
        ("denoise: { engine: speex, amount_db: 12 }", 1, 16000),
    ]

    @Test(arguments: stages.indices)
    func theOutputDoesNotDependOnTheBlockSize(_ i: Int) throws {
        let (yaml, channels, rate) = Self.stages[i]
        let spec = try SpecLoader.parseForTests("""
            version: 1
            input:
              root: in
            output:
              root: out
            stages:
              - \(yaml)
              - encode: { path: "{stem}.flac" }
            """)
        let transforms = spec.stages.compactMap { $0.config as? any TransformConfig }
        try #require(transforms.count == 1, "\(yaml)")
        let frames = rate / 2 + 123  // half a second and a ragged tail
        let signal = zip(Signal.sine(frequency: 440, rate: rate, frames: frames, channels: channels, amplitude: 0.4),
                         Signal.noise(frames: frames, channels: channels, amplitude: 0.1)).map { $0 + $1 }
        let difference = try StageHarness.blockSizeDifference(signal, channels: channels, rate: rate, transforms)
        let d = try #require(difference, "\(yaml): the length or format differs between block sizes")
        #expect(d == 0, "\(yaml): blocks of \(StageHarness.blockSizes) give outputs up to \(d) apart")
    }
}
