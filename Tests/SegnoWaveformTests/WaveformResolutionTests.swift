@testable import SegnoWaveform
import Testing

@Suite struct WaveformResolutionTests {
    @Test func pixelsPerSecondUsesIntegerDivision() throws {
        #expect(try WaveformResolution.pixelsPerSecond(128).samplesPerPixel(sampleRate: 44100, frames: nil) == 344)
        #expect(try WaveformResolution.pixelsPerSecond(100).samplesPerPixel(sampleRate: 48000, frames: nil) == 480)
    }

    @Test func pointsRoundsSamplesPerPixelUpSoTheLengthNeverExceedsPoints() throws {
        let r = WaveformResolution.points(1000)
        #expect(try r.samplesPerPixel(sampleRate: 44100, frames: 1_000_000) == 1000)
        #expect(try r.samplesPerPixel(sampleRate: 44100, frames: 1_000_001) == 1001)  // 999 points
        #expect(try r.samplesPerPixel(sampleRate: 44100, frames: 10) == 2)  // never below 2
        #expect(try r.samplesPerPixel(sampleRate: 44100, frames: 0) == 2)
        for frames in [1, 999, 1000, 1001, 123_457, 10_000_000] {
            let spp = try r.samplesPerPixel(sampleRate: 8000, frames: frames)
            #expect((frames + spp - 1) / spp <= 1000)
        }
        #expect(throws: WaveformError.pointsNeedFrameCount) { try r.samplesPerPixel(sampleRate: 44100, frames: nil) }
    }

    @Test func validatesWithoutAudio() {
        #expect(throws: WaveformError.invalidSamplesPerPixel(1)) { try WaveformResolution.samplesPerPixel(1).validate() }
        #expect(throws: WaveformError.invalidPixelsPerSecond(0)) { try WaveformResolution.pixelsPerSecond(0).validate() }
        #expect(throws: WaveformError.invalidPoints(-5)) { try WaveformResolution.points(-5).validate() }
        #expect(throws: Never.self) { try WaveformResolution.samplesPerPixel(2).validate() }
    }

    @Test func rejectsResultsBelowTwo() {
        #expect(throws: WaveformError.invalidSamplesPerPixel(1)) {
            try WaveformResolution.pixelsPerSecond(8000).samplesPerPixel(sampleRate: 8000, frames: nil)
        }
        #expect(throws: WaveformError.invalidSampleRate(0)) {
            try WaveformResolution.samplesPerPixel(256).samplesPerPixel(sampleRate: 0, frames: nil)
        }
    }
}
