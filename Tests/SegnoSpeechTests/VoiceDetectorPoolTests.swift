import Foundation
import SegnoCoreTestSupport
@testable import SegnoSpeech
import Testing

/// The recordings of a run hand loaded Silero detectors on (`VoiceDetectorPool`): a detector
/// that already ran on one memo, reset, gives the next memo exactly what a newly loaded one gives.
@Suite struct VoiceDetectorPoolTests {
    @Test func aReusedDetectorEditsTheNextMemoAsANewOneDoes() throws {
        let first = try PausesStageTests.memo(snr: 10).noisy
        let second = try PausesStageTests.memo(snr: 20).noisy.reversed().map { $0 * 0.5 }
        let shared = PausesStageTests.config()
        _ = try PausesStageTests.run(first, rate: 16000, shared)
        // The transform's and the cut-list tap's detectors went back to the pool.
        #expect(shared.detectors.idleCount == 2)
        let reused = try PausesStageTests.run(second, rate: 16000, shared)
        #expect(shared.detectors.idleCount == 2, "the second memo loaded new detectors")
        let fresh = try PausesStageTests.run(second, rate: 16000, PausesStageTests.config())
        let same = reused.out.samples == fresh.out.samples
        #expect(same, "the edited audio differs (\(reused.out.samples.count) against \(fresh.out.samples.count) samples)")
        #expect(reused.cuts.cuts.map(\.source_start) == fresh.cuts.cuts.map(\.source_start))
        #expect(reused.cuts.cuts.map(\.source_end) == fresh.cuts.cuts.map(\.source_end))
        #expect(!fresh.cuts.cuts.isEmpty)
    }

    /// A detector is never lent to two recordings at once: two held together are two detectors.
    @Test func twoRecordingsAtOnceGetTwoDetectors() throws {
        let pool = VoiceDetectorPool()
        var a: (any VoiceDetector)? = try pool.take(.silero, locator: .standard)
        let b = try pool.take(.silero, locator: .standard)
        #expect((a as? PooledDetector)?.inner !== (b as? PooledDetector)?.inner)
        let kept = (a as? PooledDetector)?.inner
        a = nil
        #expect(pool.idleCount == 1)
        let c = try pool.take(.silero, locator: .standard)
        #expect((c as? PooledDetector)?.inner === kept)
        #expect(pool.idleCount == 0)
        _ = b
    }
}
