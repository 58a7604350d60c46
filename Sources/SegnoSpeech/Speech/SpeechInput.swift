import SegnoAudio
import SegnoCore
import SegnoDSP

/// The stream as the speech engines take it: the mean of its channels, resampled by libsoxr (HQ)
/// to `VoiceActivityEngine.rate` (16 kHz), the rate of Silero, WebRTC VAD, Whisper and the speaker
/// encoder. One per stage instance: `start` once per recording, `feed` once per block (nothing
/// allocated once its block holds the largest input block), `finish` once after the last block.
package final class SpeechInput {
    private let resampler = SoxrResampleTransform(rate: VoiceActivityEngine.rate, recipe: SoxrResampleTransform.highQuality)
    private var mono = AudioBlock(channels: 1)

    package init() {}

    /// Called once per recording with the sample rate (Hz) of the blocks `feed` will get.
    package func start(sampleRate: Int) throws {
        _ = try resampler.start(AudioFormat(sampleRate: sampleRate, channels: 1))
        mono = AudioBlock(channels: 1, capacity: 4096)
    }

    /// Hands `body` the 16 kHz mono samples `block` gives (none while the resampler fills).
    package func feed(_ block: AudioBlock, _ body: (UnsafeBufferPointer<Float>) throws -> Void) throws {
        let n = block.frames, ch = block.channels
        mono.reset(channels: 1, capacity: n)
        block.samples.withUnsafeBufferPointer { s in
            mono.samples.withUnsafeMutableBufferPointer { m in
                let scale = 1 / Float(ch)
                for f in 0..<n {
                    var sum: Float = 0
                    for c in 0..<ch { sum += s[f * ch + c] }
                    m[f] = sum * scale
                }
            }
        }
        mono.frames = n
        try resampler.process(&mono)
        try hand(mono, to: body)
    }

    /// Called once after the last block: hands `body` what the resampler held back.
    package func finish(_ body: (UnsafeBufferPointer<Float>) throws -> Void) throws {
        var tail = AudioBlock(channels: 1, capacity: 0)
        try resampler.finish(&tail)
        try hand(tail, to: body)
    }

    private func hand(_ b: AudioBlock, to body: (UnsafeBufferPointer<Float>) throws -> Void) throws {
        guard b.frames > 0 else { return }
        try b.samples.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[0..<b.frames])) }
    }
}
