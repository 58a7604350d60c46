import Foundation
import Synchronization

/// Silero detectors that one stage's recordings hand on to each other within a run. Loading the
/// model costs about 70 ms of CPU, more than detecting speech in a 5-second memo takes (measured:
/// `pauses` over 40 memos of 3–7 s cost 7.5 CPU-s, over the same 198 s joined into one file 2.0 s,
/// with two detectors loaded per recording). A detector taken from the pool is reset
/// (`SileroDetector.reset`), so its segments are those of a fresh one; it goes back when the last
/// reference to its `PooledDetector` goes. WebRTC's detector has no model and is made each time.
///
/// One pool per stage's config, made with it when the spec is loaded, shared by its workers; it
/// holds at most as many detectors as were in use at once.
package final class VoiceDetectorPool: Sendable {
    /// A detector while it is idle in the pool. Unchecked: it moves from one recording to the next
    /// only through the pool's lock, and one recording at a time uses it.
    private struct Idle: @unchecked Sendable { let detector: SileroDetector }
    private let idle = Mutex<[Idle]>([])

    package init() {}

    /// A detector of `engine` for one recording: a reset idle one when there is one, else a new
    /// one. Called as a stage starts on a recording. Throws what `VoiceActivityEngine.make` throws.
    package func take(_ engine: VoiceActivityEngine, locator: SpeechLocator) throws(SpeechError) -> any VoiceDetector {
        guard engine == .silero else { return try engine.make(locator: locator) }
        if let kept = idle.withLock({ $0.popLast() }) {
            kept.detector.reset()
            return PooledDetector(kept.detector, pool: self)
        }
        return PooledDetector(try SileroDetector(locator: locator), pool: self)
    }

    /// Takes `detector` back. Called by `PooledDetector` when its recording is done with it.
    fileprivate func give(_ detector: SileroDetector) {
        idle.withLock { $0.append(Idle(detector: detector)) }
    }

    /// Detectors idle in the pool (for tests).
    package var idleCount: Int { idle.withLock { $0.count } }
}

/// A pooled Silero detector on loan to one recording: forwards every call, and hands the detector
/// back to its pool when released.
final package class PooledDetector: VoiceDetector {
    package let inner: SileroDetector
    private let pool: VoiceDetectorPool

    init(_ inner: SileroDetector, pool: VoiceDetectorPool) {
        self.inner = inner
        self.pool = pool
    }

    deinit { pool.give(inner) }

    package func accept(_ samples: UnsafePointer<Float>, count: Int) { inner.accept(samples, count: count) }
    package func flush() { inner.flush() }
    package func takeSegments(into segments: inout [Range<Int>]) { inner.takeSegments(into: &segments) }
    package var decided: Int { inner.decided }
}
