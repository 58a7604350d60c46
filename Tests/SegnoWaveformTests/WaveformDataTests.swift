@testable import SegnoWaveform
import Testing

@Suite struct WaveformDataTests {
    func mono16(_ data: [Int16], spp: Int = 2) throws -> WaveformData {
        try WaveformData(channels: 1, sampleRate: 44100, samplesPerPixel: spp, bits: 16, data: data)
    }

    @Test func converts16To8BitsTruncatingTowardZero() throws {
        // The table from the issue: a right shift would give −1 for −255.
        let d = try mono16([-255, -256, 32767, -32768, 255, 256, -1, 0])
        #expect(try d.converted(toBits: 8).data == [0, -1, 127, -128, 0, 1, 0, 0])
        #expect(try d.converted(toBits: 8).bits == 8)
        #expect(try d.converted(toBits: 16) == d)
    }

    @Test func converts8To16BitsByMultiplying() throws {
        let d = try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 8, data: [-128, 127, -1, 0])
        #expect(try d.converted(toBits: 16).data == [-32768, 32512, -256, 0])
        #expect(throws: WaveformError.invalidBits(12)) { try d.converted(toBits: 12) }
    }

    @Test func coarserZoomFromAWholeMultipleEqualsComputingItFromSamples() throws {
        let input = Fixture.noise(count: 2 * 10_007, seed: 5)
        for mode in [WaveformChannels.mix, .split] {
            let fine = try Fixture.generate(input, channels: 2, rate: 44100, spp: [256], mode: mode)[0]
            for k in [2, 3, 4, 40] {
                let direct = try Fixture.generate(input, channels: 2, rate: 44100, spp: [256 * k], mode: mode)[0]
                #expect(try fine.rescaled(toSamplesPerPixel: 256 * k) == direct, "×\(k) \(mode)")
                // On 8-bit data too: the 16 → 8 division commutes with min and max.
                #expect(try fine.converted(toBits: 8).rescaled(toSamplesPerPixel: 256 * k)
                        == direct.converted(toBits: 8))
            }
        }
    }

    @Test func refusesZoomsThatAreNotWholeMultiples() throws {
        let d = try mono16([0, 1, 2, 3], spp: 256)
        #expect(throws: WaveformError.notWholeMultiple(from: 256, to: 300)) { try d.rescaled(toSamplesPerPixel: 300) }
        #expect(throws: WaveformError.finerZoom(from: 256, to: 128)) { try d.rescaled(toSamplesPerPixel: 128) }
        #expect(try d.rescaled(toSamplesPerPixel: 256) == d)
        #expect("\(WaveformError.notWholeMultiple(from: 256, to: 300))".contains("compute it from the samples"))
    }

    @Test func rescalingEmptyDataGivesEmptyData() throws {
        let d = try mono16([], spp: 256)
        #expect(try d.rescaled(toSamplesPerPixel: 1024).length == 0)
    }

    @Test func checksItsInvariants() {
        #expect(throws: WaveformError.invalidChannelCount(0)) {
            try WaveformData(channels: 0, sampleRate: 44100, samplesPerPixel: 2, bits: 16, data: [])
        }
        #expect(throws: WaveformError.invalidChannelCount(25)) {
            try WaveformData(channels: 25, sampleRate: 44100, samplesPerPixel: 2, bits: 16, data: [])
        }
        #expect(throws: WaveformError.invalidSampleRate(0)) {
            try WaveformData(channels: 1, sampleRate: 0, samplesPerPixel: 2, bits: 16, data: [])
        }
        #expect(throws: WaveformError.invalidSamplesPerPixel(1)) {
            try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 1, bits: 16, data: [])
        }
        #expect(throws: WaveformError.invalidBits(24)) {
            try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 24, data: [])
        }
        #expect(throws: WaveformError.dataSizeMismatch(expectedValues: 4, actualValues: 3)) {
            try WaveformData(channels: 2, sampleRate: 8000, samplesPerPixel: 2, bits: 16, data: [1, 2, 3])
        }
        #expect(throws: WaveformError.valueOutOfRange(128)) {
            try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 8, data: [0, 128])
        }
    }

    @Test func describesItself() throws {
        let d = try WaveformData(channels: 2, sampleRate: 8000, samplesPerPixel: 4, bits: 16,
                                 data: [-1, 1, -2, 2, -3, 3, -4, 4])
        #expect(d.length == 2)
        #expect(d.version == 2)
        #expect(try mono16([0, 0]).version == 1)
        #expect(d.min(channel: 1, at: 1) == -4 && d.max(channel: 0, at: 1) == 3)
        #expect(d.coveredSeconds == 0.001)
    }
}
