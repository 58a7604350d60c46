import Foundation
import SegnoAudio
import SegnoAudioTestSupport
import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
import SegnoSpeech
import Testing

/// Decision 0093: `level` runs its voice detector once per recording (the measuring pass) and
/// rides every later pass on the segments it found. A ride on those segments must give exactly
/// the samples a ride with its own detector gives, whatever the blocks.
@Suite struct LevelVoiceOnceTests {
    /// Feeds `x` in blocks of `block` frames and returns every frame the rider gave out.
    static func ride(_ rider: LevelRider, _ x: [Float], block: Int) throws -> [Float] {
        try rider.start(AudioFormat(sampleRate: LevelMemo.rate, channels: 1))
        var out = AudioBlock(channels: 1, capacity: block), got: [Float] = []
        for start in stride(from: 0, to: x.count, by: block) {
            out.frames = 0
            try rider.feed(AudioBlock(interleaved: Array(x[start..<min(x.count, start + block)]), channels: 1), into: &out)
            got += out.samples[0..<out.frames]
        }
        out.frames = 0
        try rider.finish(into: &out)
        return got + out.samples[0..<out.frames]
    }

    static func detector() throws -> LevelRider.Voice { .detect(try VoiceActivityEngine.silero.make(locator: .standard)) }

    @Test func aRideOnTheMeasuredSegmentsEqualsARideWithTheDetector() throws {
        let dir = try TempDir()
        let memo = try LevelMemo.make(quieter: 10, in: dir).samples
        // The measuring pass: the detector's segments and the speech's loudness.
        let measuring = LevelRider(voice: try Self.detector(), reference: nil, maxGain: 20, pauseCap: 0, offset: 0)
        _ = try Self.ride(measuring, memo, block: 4096)
        let segments = measuring.voiceSegments
        // The memo has five turns: the detector must have found speech for the ride to mean anything.
        #expect(segments.count >= 5, "segments: \(segments)")
        let reference = try #require(measuring.measured.speech)
        let cap = reference - measuring.measured.integrated
        let withDetector = try Self.ride(LevelRider(voice: try Self.detector(), reference: reference, maxGain: 20, pauseCap: cap, offset: -1.5),
                                         memo, block: 4096)
        #expect(withDetector.count == memo.count)
        for block in [4096, 1000, 16384] {
            let onSegments = try Self.ride(LevelRider(voice: .known(segments), reference: reference, maxGain: 20, pauseCap: cap, offset: -1.5),
                                           memo, block: block)
            #expect(onSegments == withDetector, "blocks of \(block)")
        }
        // And it is a ride, not a copy: the quieter voice's turns were raised.
        #expect(withDetector != memo)
    }

    @Test func aRideOnNoSegmentsTreatsEverythingAsPause() throws {
        let dir = try TempDir()
        let memo = try LevelMemo.make(in: dir).samples
        let got = try Self.ride(LevelRider(voice: .known([]), reference: -20, maxGain: 20, pauseCap: 3, offset: 0), memo, block: 4096)
        // No voice: every hop takes the pause cap (3 dB), the whole memo one gain.
        let g = Float(pow(10, 3.0 / 20))
        #expect(got.count == memo.count)
        #expect(zip(got, memo).allSatisfy { abs($0 - $1 * g) <= 1e-6 * max(1, abs($1)) })
    }
}
