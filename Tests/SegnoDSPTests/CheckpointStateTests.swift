import SegnoDSP
import Testing

/// A filter's and the polyphase resampler's state saved between two blocks and restored in a fresh
/// object (decision 0095): the output goes on exactly as if the stream had never been cut.
@Suite struct CheckpointStateTests {
    /// Deterministic noise in −0.5…0.5, `frames × channels` interleaved.
    static func noise(_ frames: Int, channels: Int, seed: UInt64 = 7) -> [Float] {
        var x = seed
        return (0..<(frames * channels)).map { _ in
            x = x &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: x >> 11) % 1_000_000) / 2_000_000
        }
    }

    /// Runs `process` over `samples` in blocks of `block` frames from `from` to `to` (frames).
    static func blocks(_ samples: [Float], channels: Int, from: Int, to: Int, block: Int, _ process: (inout AudioBlock) -> Void) -> [Float] {
        var out: [Float] = []
        var at = from
        while at < to {
            let n = min(block, to - at)
            var b = AudioBlock(interleaved: Array(samples[(at * channels)..<((at + n) * channels)]), channels: channels)
            process(&b)
            out += b.samples.prefix(b.frames * channels)
            at += n
        }
        return out
    }

    @Test(arguments: [1, 2])
    func aRestoredCascadeGoesOnBitForBit(channels: Int) throws {
        let sections = try FilterDesign.highpass(frequency: 80, order: 4, q: nil, sampleRate: 48000)
            + FilterDesign.lowpass(frequency: 3000, order: 4, q: nil, sampleRate: 48000)
        let input = Self.noise(30_000, channels: channels)
        var whole = BiquadCascade(sections: sections, channels: channels)
        let expected = Self.blocks(input, channels: channels, from: 0, to: 30_000, block: 4096) { whole.process(&$0) }

        var first = BiquadCascade(sections: sections, channels: channels)
        // 4096 × 3 + 1001: the cut falls inside the cascade's 64-frame flush period.
        var got = Self.blocks(input, channels: channels, from: 0, to: 13_289, block: 4096) { first.process(&$0) }
        var w = StateBytes.Writer()
        first.save(into: &w)
        var second = BiquadCascade(sections: sections, channels: channels)
        var r = StateBytes.Reader(w.bytes)
        try second.restore(from: &r)
        #expect(r.atEnd)
        got += Self.blocks(input, channels: channels, from: 13_289, to: 30_000, block: 4096) { second.process(&$0) }
        #expect(got == expected)

        // Without the state the output differs: the test can fail.
        var fresh = BiquadCascade(sections: sections, channels: channels)
        let cold = Self.blocks(input, channels: channels, from: 13_289, to: 30_000, block: 4096) { fresh.process(&$0) }
        #expect(Array(expected[(13_289 * channels)...]) != cold)
    }

    @Test func aStateForOtherChannelsIsRefused() throws {
        let sections = try FilterDesign.lowpass(frequency: 3000, order: 2, q: nil, sampleRate: 48000)
        var mono = BiquadCascade(sections: sections, channels: 1)
        var w = StateBytes.Writer()
        mono.save(into: &w)
        var stereo = BiquadCascade(sections: sections, channels: 2)
        var r = StateBytes.Reader(w.bytes)
        #expect(throws: StateBytes.Mismatch.self) { try stereo.restore(from: &r) }
        var short = StateBytes.Reader(Array(w.bytes.prefix(10)))
        #expect(throws: StateBytes.Mismatch.self) { try mono.restore(from: &short) }
    }

    @Test(arguments: [(44100, 16000, 2), (48000, 16000, 1), (16000, 44100, 1)])
    func aRestoredResamplerGoesOnBitForBit(rates: (Int, Int, Int)) throws {
        let (inRate, outRate, channels) = rates
        let frames = 50_000
        let input = Self.noise(frames, channels: channels, seed: 11)
        func run(_ rs: inout PolyphaseResampler, from: Int, to: Int) -> [Float] {
            var out = AudioBlock(channels: channels, capacity: 8192)
            return Self.blocks(input, channels: channels, from: from, to: to, block: 4096) { b in
                let n = b.frames
                b.samples.withUnsafeBufferPointer { rs.process($0.baseAddress!, frames: n, into: &out) }
                swap(&b, &out)
            }
        }
        func tail(_ rs: inout PolyphaseResampler) -> [Float] {
            var b = AudioBlock(channels: channels, capacity: 0)
            rs.finish(into: &b)
            return Array(b.samples.prefix(b.frames * channels))
        }
        var whole = PolyphaseResampler(inputRate: inRate, outputRate: outRate, channels: channels)
        let expected = run(&whole, from: 0, to: frames) + tail(&whole)

        var first = PolyphaseResampler(inputRate: inRate, outputRate: outRate, channels: channels)
        var got = run(&first, from: 0, to: 20_480)
        var w = StateBytes.Writer()
        first.save(into: &w)
        var second = PolyphaseResampler(inputRate: inRate, outputRate: outRate, channels: channels)
        var r = StateBytes.Reader(w.bytes)
        try second.restore(from: &r)
        #expect(r.atEnd)
        got += run(&second, from: 20_480, to: frames) + tail(&second)
        #expect(got.count == expected.count)
        #expect(got == expected)
    }

    /// The pitch shifter in each of its layouts (resample then stretch, stretch then resample,
    /// stretch alone, resample alone), cut at a frame that is no multiple of its 2048-frame
    /// chunk, restored in a fresh shifter and fed in blocks of another size after the cut.
    @Test(arguments: [(3.0, 1.0, 1), (-5.0, 1.25, 2), (0.0, 0.8, 1), (12.0, 2.0, 1)])
    func aRestoredPitchShifterGoesOnBitForBit(shift: (Double, Double, Int)) throws {
        let (semitones, tempo, channels) = shift
        let frames = 60_000, cut = 23_333
        let input = Self.noise(frames, channels: channels, seed: 5)
        func run(_ ps: inout PitchShifter, from: Int, to: Int, block: Int) -> [Float] {
            var out = AudioBlock(channels: channels, capacity: 8192)
            return Self.blocks(input, channels: channels, from: from, to: to, block: block) { b in
                ps.process(b, into: &out)
                swap(&b, &out)
            }
        }
        func tail(_ ps: inout PitchShifter) -> [Float] {
            var b = AudioBlock(channels: channels, capacity: 0)
            ps.finish(into: &b)
            return Array(b.samples.prefix(b.frames * channels))
        }
        func make() throws -> PitchShifter { try PitchShifter(sampleRate: 44100, channels: channels, semitones: semitones, tempo: tempo) }
        var whole = try make()
        let expected = run(&whole, from: 0, to: frames, block: 4096) + tail(&whole)

        var first = try make()
        var got = run(&first, from: 0, to: cut, block: 4096)
        var w = StateBytes.Writer()
        first.save(into: &w)
        var second = try make()
        var r = StateBytes.Reader(w.bytes)
        try second.restore(from: &r)
        #expect(r.atEnd)
        got += run(&second, from: cut, to: frames, block: 1000) + tail(&second)
        #expect(got.count == expected.count)
        #expect(got == expected)

        // Without the state the output differs: the test can fail.
        var fresh = try make()
        let cold = run(&fresh, from: cut, to: frames, block: 1000) + tail(&fresh)
        #expect(Array(got.suffix(cold.count)) != cold)

        // A state for another shift does not fit.
        var other = try PitchShifter(sampleRate: 44100, channels: channels, semitones: semitones == 3 ? -5 : 3)
        var again = StateBytes.Reader(w.bytes)
        #expect(throws: StateBytes.Mismatch.self) { try other.restore(from: &again) }
    }
}
