@testable import SegnoWaveform
import Testing

@Suite struct WaveformJSONTests {
    static let goldens = ["partial_last_pixel", "silence_8bit", "clipping_integer", "clipping_integer_8bit",
                          "clipping_float", "stereo_mix", "stereo_mix_8bit", "stereo_split", "stereo_split_8bit",
                          "three_channels", "three_channels_split", "pcm24", "pcm_u8", "pcm_u8_8bit",
                          "table_8bit", "empty"]

    @Test(arguments: goldens)
    func readsAndRewritesEachGoldenFileByteForByte(name: String) throws {
        let bytes = try Fixture.bytes(name + ".json")
        let data = try WaveformJSON.decode(bytes)
        #expect(WaveformJSON.encode(data) == bytes)
        // The same data read from the .dat golden is equal.
        #expect(try WaveformDat.decode(try Fixture.bytes(name + ".dat")) == data)
    }

    @Test func writesTheExactLayout() throws {
        let d = try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 3, bits: 16, data: [-200, 300, 5, 6])
        let text = String(decoding: WaveformJSON.encode(d), as: UTF8.self)
        #expect(text == "{\"version\":2,\"channels\":1,\"sample_rate\":8000,\"samples_per_pixel\":3,\"bits\":16,\"length\":2,\"data\":[-200,300,5,6]}\n")
    }

    @Test func addsDurationOnlyWhenAsked() throws {
        let d = try WaveformJSON.decode(try Fixture.bytes("partial_last_pixel.json"))
        #expect(WaveformJSON.encode(d, duration: 5.0 / 8000) == (try Fixture.bytes("partial_last_pixel_duration.json")))
        #expect(WaveformJSON.encode(d, duration: .nan) == (try Fixture.bytes("partial_last_pixel.json")))
        // A reader skips the extra key.
        #expect(try WaveformJSON.decode(try Fixture.bytes("partial_last_pixel_duration.json")) == d)
    }

    @Test func acceptsWhitespaceKeyOrderAndUnknownKeys() throws {
        let text = """
        { "data" : [ -1 , 2 ], "bits": 16, "length": 1, "samples_per_pixel": 512,
          "sample_rate": 48000, "channels": 1, "version": 1,
          "comment": {"made by": ["x", 1.5e3, true, null]} }

        """
        let d = try WaveformJSON.decode(Array(text.utf8))
        #expect(d == (try WaveformData(channels: 1, sampleRate: 48000, samplesPerPixel: 512, bits: 16, data: [-1, 2])))
    }

    func decode(_ text: String) throws(WaveformError) -> WaveformData { try WaveformJSON.decode(Array(text.utf8)) }

    static let head = "\"channels\":1,\"sample_rate\":8000,\"samples_per_pixel\":2"

    @Test func rejectsBadHeaders() {
        let h = Self.head
        #expect(throws: WaveformError.unsupportedVersion(3)) {
            try decode("{\"version\":3,\(h),\"bits\":8,\"length\":0,\"data\":[]}")
        }
        #expect(throws: WaveformError.invalidChannelCount(25)) {
            try decode("{\"version\":2,\"channels\":25,\"sample_rate\":8000,\"samples_per_pixel\":2,\"bits\":8,\"length\":0,\"data\":[]}")
        }
        #expect(throws: WaveformError.invalidSampleRate(0)) {
            try decode("{\"version\":2,\"channels\":1,\"sample_rate\":0,\"samples_per_pixel\":2,\"bits\":8,\"length\":0,\"data\":[]}")
        }
        #expect(throws: WaveformError.invalidSamplesPerPixel(1)) {
            try decode("{\"version\":2,\"channels\":1,\"sample_rate\":8000,\"samples_per_pixel\":1,\"bits\":8,\"length\":0,\"data\":[]}")
        }
        #expect(throws: WaveformError.invalidBits(12)) {
            try decode("{\"version\":2,\(h),\"bits\":12,\"length\":0,\"data\":[]}")
        }
        #expect(throws: WaveformError.dataSizeMismatch(expectedValues: 4, actualValues: 2)) {
            try decode("{\"version\":2,\(h),\"bits\":8,\"length\":2,\"data\":[1,2]}")
        }
        #expect(throws: WaveformError.valueOutOfRange(128)) {
            try decode("{\"version\":2,\(h),\"bits\":8,\"length\":1,\"data\":[0,128]}")
        }
        #expect(throws: WaveformError.valueOutOfRange(-32769)) {
            try decode("{\"version\":2,\(h),\"bits\":16,\"length\":1,\"data\":[-32769,0]}")
        }
        #expect(throws: WaveformError.missingKey("length")) {
            try decode("{\"version\":2,\(h),\"bits\":8,\"data\":[]}")
        }
        #expect(throws: WaveformError.duplicateKey("bits")) {
            try decode("{\"version\":2,\(h),\"bits\":8,\"bits\":8,\"length\":0,\"data\":[]}")
        }
    }

    @Test(arguments: ["", "[]", "{", "{\"version\":2,}", "{\"version\":2.5}", "{\"version\":\"2\"}",
                      "{\"data\":[1,]}", "{\"data\":[1 2]}", "{} x", "{\"version\":02}",
                      String(repeating: "{\"a\":", count: 100)])
    func rejectsMalformedJSON(text: String) {
        #expect(throws: WaveformError.self) { try decode(text) }
        do {
            _ = try decode(text)
        } catch {
            guard case .malformedJSON = error else {
                Issue.record("expected malformedJSON, got \(error)")
                return
            }
        }
    }
}
