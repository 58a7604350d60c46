@testable import SegnoWaveform
import Testing

@Suite struct WaveformDatTests {
    @Test(arguments: WaveformJSONTests.goldens)
    func readsAndRewritesEachGoldenFileByteForByte(name: String) throws {
        let bytes = try Fixture.bytes(name + ".dat")
        #expect(WaveformDat.encode(try WaveformDat.decode(bytes)) == bytes)
    }

    @Test func writesVersion1ForOneChannelAndVersion2Otherwise() throws {
        let mono = try WaveformData(channels: 1, sampleRate: 44100, samplesPerPixel: 256, bits: 8, data: [-1, 1])
        let bytes = WaveformDat.encode(mono)
        #expect(bytes == [1, 0, 0, 0, 1, 0, 0, 0, 0x44, 0xAC, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0xFF, 0x01])
        let stereo = try WaveformData(channels: 2, sampleRate: 44100, samplesPerPixel: 256, bits: 16,
                                      data: [-2, 2, -32768, 32767])
        #expect(WaveformDat.encode(stereo) == [2, 0, 0, 0, 0, 0, 0, 0, 0x44, 0xAC, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0,
                                               2, 0, 0, 0, 0xFE, 0xFF, 2, 0, 0x00, 0x80, 0xFF, 0x7F])
        #expect(WaveformDat.headerSize(version: 1) == 20 && WaveformDat.headerSize(version: 2) == 24)
    }

    /// A valid version 2 header for 1 point of 2 channels, 16-bit, with fields overridable.
    func header(version: Int32 = 2, flags: UInt32 = 0, rate: Int32 = 44100, spp: Int32 = 256,
                length: UInt32 = 1, channels: Int32 = 2) -> [UInt8] {
        var b: [UInt8] = []
        for v in [UInt32(bitPattern: version), flags, UInt32(bitPattern: rate), UInt32(bitPattern: spp), length,
                  UInt32(bitPattern: channels)] {
            b += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
        }
        return b
    }

    @Test func acceptsTheValidHeaderUsedBelow() throws {
        let d = try WaveformDat.decode(header() + [UInt8](repeating: 0, count: 8))
        #expect(d.channels == 2 && d.length == 1 && d.bits == 16 && d.samplesPerPixel == 256)
    }

    @Test func rejectsBadHeaders() {
        let data = [UInt8](repeating: 0, count: 8)
        #expect(throws: WaveformError.truncated(needed: 20, got: 19)) { try WaveformDat.decode(Array(header().prefix(19))) }
        #expect(throws: WaveformError.truncated(needed: 24, got: 22)) { try WaveformDat.decode(Array(header().prefix(22))) }
        #expect(throws: WaveformError.unsupportedVersion(3)) { try WaveformDat.decode(header(version: 3) + data) }
        #expect(throws: WaveformError.unsupportedVersion(0)) { try WaveformDat.decode(header(version: 0) + data) }
        #expect(throws: WaveformError.unsupportedFlags(2)) { try WaveformDat.decode(header(flags: 2) + data) }
        #expect(throws: WaveformError.invalidSampleRate(0)) { try WaveformDat.decode(header(rate: 0) + data) }
        #expect(throws: WaveformError.invalidSampleRate(-1)) { try WaveformDat.decode(header(rate: -1) + data) }
        #expect(throws: WaveformError.invalidSamplesPerPixel(1)) { try WaveformDat.decode(header(spp: 1) + data) }
        #expect(throws: WaveformError.invalidChannelCount(0)) { try WaveformDat.decode(header(channels: 0) + data) }
        #expect(throws: WaveformError.invalidChannelCount(25)) { try WaveformDat.decode(header(channels: 25) + data) }
    }

    @Test func rejectsDataOfTheWrongSize() {
        #expect(throws: WaveformError.dataSizeMismatch(expectedValues: 4, actualValues: 3)) {
            try WaveformDat.decode(header() + [UInt8](repeating: 0, count: 7))
        }
        #expect(throws: WaveformError.trailingBytes(1)) {
            try WaveformDat.decode(header() + [UInt8](repeating: 0, count: 9))
        }
        // A huge length claim fails on the size check without allocating.
        #expect(throws: WaveformError.dataSizeMismatch(expectedValues: Int(UInt32.max) * 4, actualValues: 4)) {
            try WaveformDat.decode(header(length: .max) + [UInt8](repeating: 0, count: 8))
        }
        // 8-bit: one byte per value.
        #expect(throws: WaveformError.trailingBytes(4)) {
            try WaveformDat.decode(header(flags: 1) + [UInt8](repeating: 0, count: 8))
        }
    }

    @Test func versionOneHasNoChannelsField() throws {
        var v1 = Array(header(version: 1).prefix(20))
        v1 += [0x80, 0x7F]  // flags 0 (16-bit): one point of one channel needs 4 bytes
        #expect(throws: WaveformError.dataSizeMismatch(expectedValues: 2, actualValues: 1)) { try WaveformDat.decode(v1) }
        v1 += [0x01, 0x00]
        let d = try WaveformDat.decode(v1)
        #expect(d.channels == 1 && d.data == [32640, 1])
    }
}
