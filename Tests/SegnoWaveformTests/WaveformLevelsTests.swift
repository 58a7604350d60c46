@testable import SegnoWaveform
import Testing

@Suite struct WaveformLevelsTests {
    @Test func takesThePeakOfEachBucketOverFullScale() throws {
        // 8 points, 4 buckets of 2 points.
        let d = try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 16,
                                 data: [0, 0, -16384, 100, 0, 8192, -32768, 0, 0, 32767, 0, 0, -1, 1, 0, 0])
        let levels = try WaveformLevels(d, count: 4)
        #expect(levels.values == [0.5, 1, 32767.0 / 32768, 1.0 / 32768])
        #expect(levels.quantized == [128, 255, 255, 0])
    }

    @Test func usesEveryChannelAnd8BitFullScale() throws {
        let d = try WaveformData(channels: 2, sampleRate: 8000, samplesPerPixel: 2, bits: 8,
                                 data: [0, 0, -64, 0, 0, 32, 0, 0])
        #expect(try WaveformLevels(d, count: 2).values == [0.5, 0.25])
    }

    @Test func hasTheCountAskedForEvenForShortOrEmptyData() throws {
        let d = try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 16, data: [0, 16384, 0, 8192])
        #expect(try WaveformLevels(d, count: 4).values == [0.5, 0.5, 0.25, 0.25])
        let empty = try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 16, data: [])
        #expect(try WaveformLevels(empty).values == [Float](repeating: 0, count: 100))
        #expect(throws: WaveformError.invalidSize("level count", 0)) { try WaveformLevels(d, count: 0) }
    }

    @Test func canBeRelativeToTheLoudest() throws {
        let d = try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 16, data: [0, 8192, 0, 4096])
        #expect(try WaveformLevels(d, count: 2, relativeToLoudest: true).values == [1, 0.5])
    }

    @Test func encodesAsBase64OfQuantisedBytes() throws {
        let levels = WaveformLevels(values: [0, 1, 0.5, 2, -1, .nan])
        #expect(levels.quantized == [0, 255, 128, 255, 0, 0])
        #expect(levels.encoded == "AP+A/wAA")
        let back = try WaveformLevels(encoded: levels.encoded)
        #expect(back.quantized == levels.quantized)
        #expect(WaveformLevels(values: [1, 0.2]).encoded == "/zM=")
        #expect(WaveformLevels(values: [1]).encoded == "/w==")
        #expect(WaveformLevels(values: []).encoded == "")
    }

    @Test func defaultCountFitsInS3Metadata() throws {
        let d = try Fixture.generate(Fixture.noise(count: 44100), channels: 1, rate: 44100, spp: [256])[0]
        let text = try WaveformLevels(d).encoded
        #expect(text.utf8.count == 136)
        #expect(text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
        #expect(try WaveformLevels(d, count: 1400).encoded.utf8.count <= 2048 - 64)
    }

    @Test(arguments: ["A", "A===", "AP+A/wA=A", "AP*A", "=AAA", "AA=A"])
    func rejectsTextThatIsNotCanonicalBase64(text: String) {
        #expect(throws: WaveformError.invalidLevelsEncoding) { try WaveformLevels(encoded: text) }
    }
}
