import SegnoDSP
@testable import SegnoWaveform
import Testing

@Suite struct PeakGeneratorTests {
    // Stereo frames (1,−2) (−3,−4) (32767,32767) (−32768,−32768) (32767,−32768) (5,6) (7,8).
    static let stereoInt16 = [1, -2, -3, -4, 32767, 32767, -32768, -32768, 32767, -32768, 5, 6, 7, 8]
    static let threeChannelInt16 = [3, 4, 5, -1, -1, -1, -1, 0, 0, 1, 1, -4,
                                    32767, 32767, 32767, -32768, -32768, -32767]

    func json(_ d: WaveformData) -> [UInt8] { WaveformJSON.encode(d) }

    @Test func keepsTheLastPartialPixel() throws {
        let out = try Fixture.generate(Fixture.floats16([100, -200, 300, 5, 6]), channels: 1, rate: 8000, spp: [3])
        #expect(out[0].length == 2)
        #expect(json(out[0]) == (try Fixture.bytes("partial_last_pixel.json")))
        #expect(WaveformDat.encode(out[0]) == (try Fixture.bytes("partial_last_pixel.dat")))
    }

    @Test func silenceGivesZeroPeaks() throws {
        let out = try Fixture.generate([Float](repeating: 0, count: 5), channels: 1, rate: 8000, spp: [2], bits: 8)
        #expect(json(out[0]) == (try Fixture.bytes("silence_8bit.json")))
        #expect(WaveformDat.encode(out[0]) == (try Fixture.bytes("silence_8bit.dat")))
    }

    @Test func clampsFullScaleForIntegerPCM() throws {
        let input: [Float] = [1.0, -1.0, 1.5, -1.5, 0.99999]
        let out16 = try Fixture.generate(input, channels: 1, rate: 44100, spp: [4])
        #expect(json(out16[0]) == (try Fixture.bytes("clipping_integer.json")))
        let out8 = try Fixture.generate(input, channels: 1, rate: 44100, spp: [4], bits: 8)
        #expect(WaveformDat.encode(out8[0]) == (try Fixture.bytes("clipping_integer_8bit.dat")))
    }

    @Test func clipsFloatingPointInsteadOfWrapping() throws {
        let input: [Float] = [1.0, -1.0, 1.5, -1.5, 0.99999]
        let out = try Fixture.generate(input, channels: 1, rate: 44100, spp: [4], conversion: .floatingPoint)
        #expect(json(out[0]) == (try Fixture.bytes("clipping_float.json")))
    }

    @Test func mixesStereoWithTruncatingDivision() throws {
        let out = try Fixture.generate(Fixture.floats16(Self.stereoInt16), channels: 2, rate: 44100, spp: [2])
        // (1,−2) → 0 and (−3,−4) → −3: the first pixel is [−3, 0].
        #expect(out[0].min(channel: 0, at: 0) == -3 && out[0].max(channel: 0, at: 0) == 0)
        #expect(json(out[0]) == (try Fixture.bytes("stereo_mix.json")))
        #expect(WaveformDat.encode(out[0]) == (try Fixture.bytes("stereo_mix.dat")))
        let out8 = try Fixture.generate(Fixture.floats16(Self.stereoInt16), channels: 2, rate: 44100, spp: [2], bits: 8)
        #expect(json(out8[0]) == (try Fixture.bytes("stereo_mix_8bit.json")))
        #expect(WaveformDat.encode(out8[0]) == (try Fixture.bytes("stereo_mix_8bit.dat")))
    }

    @Test func splitsStereoChannels() throws {
        let input = Fixture.floats16(Self.stereoInt16)
        let out = try Fixture.generate(input, channels: 2, rate: 44100, spp: [2], mode: .split)
        #expect(json(out[0]) == (try Fixture.bytes("stereo_split.json")))
        #expect(WaveformDat.encode(out[0]) == (try Fixture.bytes("stereo_split.dat")))
        let out8 = try Fixture.generate(input, channels: 2, rate: 44100, spp: [2], mode: .split, bits: 8)
        #expect(json(out8[0]) == (try Fixture.bytes("stereo_split_8bit.json")))
        #expect(WaveformDat.encode(out8[0]) == (try Fixture.bytes("stereo_split_8bit.dat")))
    }

    @Test func mixesAndSplitsThreeChannels() throws {
        let input = Fixture.floats16(Self.threeChannelInt16)
        let mixed = try Fixture.generate(input, channels: 3, rate: 16000, spp: [4])
        #expect(json(mixed[0]) == (try Fixture.bytes("three_channels.json")))
        let split = try Fixture.generate(input, channels: 3, rate: 16000, spp: [4], mode: .split)
        #expect(WaveformDat.encode(split[0]) == (try Fixture.bytes("three_channels_split.dat")))
    }

    @Test func reproducesTheShiftOf24BitPCM() throws {
        let pcm24 = [255, -1, -256, -257, 8_388_607, -8_388_608, 256, 511]
        let input = pcm24.map { Float($0) / 8_388_608 }  // sf_read_float's normalisation
        let out = try Fixture.generate(input, channels: 1, rate: 48000, spp: [2])
        #expect(json(out[0]) == (try Fixture.bytes("pcm24.json")))
    }

    @Test func reproducesUnsigned8BitPCM() throws {
        let u8 = [128, 0, 255, 129, 127]
        let input = u8.map { Float($0 - 128) / 128 }  // sf_read_float's normalisation
        let out = try Fixture.generate(input, channels: 1, rate: 8000, spp: [2])
        #expect(json(out[0]) == (try Fixture.bytes("pcm_u8.json")))
        let out8 = try Fixture.generate(input, channels: 1, rate: 8000, spp: [2], bits: 8)
        #expect(json(out8[0]) == (try Fixture.bytes("pcm_u8_8bit.json")))
    }

    @Test func int16InputMatchesTheGoldenFiles() throws {
        var g = try PeakGenerator(format: AudioFormat(sampleRate: 44100, channels: 2), samplesPerPixel: [2])
        let values = Self.stereoInt16.map { Int16($0) }
        values.withUnsafeBufferPointer { g.process(int16: $0, frames: 7) }
        #expect(json(try g.finish()[0]) == (try Fixture.bytes("stereo_mix.json")))

        var t = try PeakGenerator(format: AudioFormat(sampleRate: 44100, channels: 1), samplesPerPixel: [2])
        let table: [Int16] = [-255, -255, -256, -256, 32767, 32767, -32768, -32768]
        table.withUnsafeBufferPointer { t.process(int16: $0, frames: 8) }
        #expect(WaveformDat.encode(try t.finish(bits: 8)[0]) == (try Fixture.bytes("table_8bit.dat")))
    }

    @Test func emptyInputGivesLengthZero() throws {
        let out = try Fixture.generate([], channels: 2, rate: 44100, spp: [256], bits: 8)
        #expect(out[0].length == 0)
        #expect(json(out[0]) == (try Fixture.bytes("empty.json")))
        #expect(WaveformDat.encode(out[0]) == (try Fixture.bytes("empty.dat")))
    }

    @Test func eachZoomOfAMultiZoomRunEqualsASingleZoomRun() throws {
        let input = Fixture.noise(count: 2 * 20_011)
        let zooms = [2, 3, 256, 300, 1024, 20_000, 50_000]
        for mode in [WaveformChannels.mix, .split] {
            let all = try Fixture.generate(input, channels: 2, rate: 44100, spp: zooms, mode: mode, bits: 8)
            for (k, z) in zooms.enumerated() {
                let one = try Fixture.generate(input, channels: 2, rate: 44100, spp: [z], mode: mode, bits: 8)
                #expect(WaveformDat.encode(all[k]) == WaveformDat.encode(one[0]), "zoom \(z) \(mode)")
                #expect(all[k].length == (20_011 + z - 1) / z)
            }
        }
    }

    @Test(arguments: [1, 7, 4096, 5000])
    func blockSizeDoesNotChangeTheOutput(blockFrames: Int) throws {
        // 9001 frames: longer than the 4096-frame internal chunk, not a multiple of any zoom.
        let input = Fixture.noise(count: 3 * 9001, seed: 7)
        for conversion in Int16Conversion.allCases {
            for mode in [WaveformChannels.mix, .split] {
                let reference = try Fixture.generate(input, channels: 3, rate: 22050, spp: [2, 7, 512], mode: mode,
                                                     conversion: conversion, blockFrames: 9001)
                let cut = try Fixture.generate(input, channels: 3, rate: 22050, spp: [2, 7, 512], mode: mode,
                                               conversion: conversion, blockFrames: blockFrames)
                #expect(cut == reference, "\(conversion) \(mode)")
            }
        }
    }

    @Test func agreesWithAPlainReferenceLoop() throws {
        // A direct transcription of the rules, sample by sample, against the vectorised loops.
        let channels = 2, spp = 5
        let input = Fixture.noise(count: channels * 1003, seed: 3)
        for conversion in Int16Conversion.allCases {
            var mixed: [Int] = []
            for f in 0..<1003 {
                let a = Int(conversion.int16(input[2 * f])), b = Int(conversion.int16(input[2 * f + 1]))
                let s = a + b
                mixed.append(s >= 0 ? s / 2 : -((-s) / 2))
            }
            var expected: [Int16] = []
            for p in stride(from: 0, to: mixed.count, by: spp) {
                let slice = mixed[p..<min(p + spp, mixed.count)]
                expected += [Int16(slice.min()!), Int16(slice.max()!)]
            }
            let out = try Fixture.generate(input, channels: channels, rate: 8000, spp: [spp], conversion: conversion)
            #expect(out[0].data == expected, "\(conversion)")
        }
    }

    @Test func derivesSamplesPerPixelFromResolutions() throws {
        let g = try PeakGenerator(format: AudioFormat(sampleRate: 44100, channels: 2),
                                  resolutions: [.pixelsPerSecond(128), .samplesPerPixel(256), .points(1000)],
                                  expectedFrames: 44100 * 60)
        #expect(g.samplesPerPixel == [344, 256, 2646])
        #expect(g.outputChannels == 1)
    }

    @Test func rejectsImpossibleSettings() {
        let stereo = AudioFormat(sampleRate: 44100, channels: 2)
        #expect(throws: WaveformError.invalidSamplesPerPixel(1)) {
            try PeakGenerator(format: stereo, samplesPerPixel: [256, 1])
        }
        #expect(throws: WaveformError.noZoomLevels) { try PeakGenerator(format: stereo, samplesPerPixel: []) }
        #expect(throws: WaveformError.invalidChannelCount(25)) {
            try PeakGenerator(format: AudioFormat(sampleRate: 44100, channels: 25), samplesPerPixel: [256],
                              channels: .split)
        }
        #expect(throws: WaveformError.invalidSampleRate(0)) {
            try PeakGenerator(format: AudioFormat(sampleRate: 0, channels: 1), samplesPerPixel: [256])
        }
        #expect(throws: WaveformError.pointsNeedFrameCount) {
            try PeakGenerator(format: stereo, resolutions: [.points(100)])
        }
        // 8000 Hz at 5000 pixels per second would be 1 sample per pixel.
        #expect(throws: WaveformError.invalidSamplesPerPixel(1)) {
            try PeakGenerator(format: AudioFormat(sampleRate: 8000, channels: 1), resolutions: [.pixelsPerSecond(5000)])
        }
    }

    @Test func mixesMoreThan24Channels() throws {
        // Mixing has no channel limit; 30 channels of 0.5 and one frame mix to 16384.
        let out = try Fixture.generate([Float](repeating: 0.5, count: 30), channels: 30, rate: 8000, spp: [2])
        #expect(out[0].data == [16384, 16384])
    }

    @Test func rejectsABlockWithTheWrongChannelCount() throws {
        var g = try PeakGenerator(format: AudioFormat(sampleRate: 44100, channels: 2), samplesPerPixel: [256])
        #expect(throws: WaveformError.blockChannelMismatch(expected: 2, got: 1)) {
            try g.process(AudioBlock(interleaved: [0, 0], channels: 1))
        }
    }

    @Test func countsFramesAndCanBePeekedThroughACopy() throws {
        var g = try PeakGenerator(format: AudioFormat(sampleRate: 8000, channels: 1), samplesPerPixel: [4])
        try g.process(AudioBlock(interleaved: Fixture.floats16([1, 2, 3, 4, 5]), channels: 1))
        #expect(g.framesProcessed == 5)
        var peek = g  // finishing a copy leaves the original as it was
        #expect(try peek.finish()[0].data == [1, 4, 5, 5])
        try g.process(AudioBlock(interleaved: Fixture.floats16([-6]), channels: 1))
        #expect(try g.finish()[0].data == [1, 4, -6, 5])
        #expect(try g.finish()[0].data == [])  // finished: nothing left
    }
}

/// The int16 stereo mix (8 frames per vector step) against the C-style scalar rule, at the
/// extremes and across block and vector boundaries.
@Suite struct Int16StereoMixTests {
    @Test func mixesLikeIntegerDivisionAtEveryBoundary() throws {
        let pairs: [(Int16, Int16)] = [(-32768, -32767), (32767, 32767), (-1, 0), (1, -2), (-3, -4), (-32768, -32768), (5, -6), (0, -1), (7, 8)]
        var samples: [Int16] = []
        for k in 0..<1003 { let p = pairs[k % pairs.count]; samples += [p.0, p.1] }
        let expected: [Int16] = (0..<1003).map { f in Int16((Int32(samples[2 * f]) + Int32(samples[2 * f + 1])) / 2) }
        let format = AudioFormat(sampleRate: 8000, channels: 2)
        for cut in [0, 1, 7, 8, 9, 500] {
            var g = try PeakGenerator(format: format, samplesPerPixel: [2, 3])
            samples.withUnsafeBufferPointer { all in
                g.process(int16: UnsafeBufferPointer(rebasing: all[0..<(2 * cut)]), frames: cut)
                g.process(int16: UnsafeBufferPointer(rebasing: all[(2 * cut)...]), frames: 1003 - cut)
            }
            let out = try g.finish(bits: 16)
            for (z, spp) in [2, 3].enumerated() {
                var want: [Int16] = []
                var f = 0
                while f < 1003 {
                    let chunk = expected[f..<min(1003, f + spp)]
                    want += [chunk.min()!, chunk.max()!]
                    f += spp
                }
                #expect(out[z].data == want, "cut \(cut), spp \(spp)")
            }
        }
    }
}
