import CEbur128
import SegnoCore
import SegnoDSP

/// libebur128 (EBU R128 / ITU-R BS.1770) behind a small face, for stages outside this module
/// that measure loudness (`level`): integrated loudness, the loudness of the last few hundred
/// milliseconds, and the true peak. Owned by one recording; frees libebur128's state when released.
final package class LoudnessMeter {
    private var state: UnsafeMutablePointer<ebur128_state>?
    /// The frames per second it was made for, in Hz.
    package let sampleRate: Int

    /// A meter for `format`; `truePeak` adds the 4× oversampled true-peak measurement (costly).
    /// `stage` names the stage in the error when libebur128 refuses the format.
    package init(format: AudioFormat, truePeak: Bool, stage: String) throws {
        var mode = EBUR128_MODE_I.rawValue
        if truePeak { mode |= EBUR128_MODE_TRUE_PEAK.rawValue }
        sampleRate = format.sampleRate
        state = ebur128_init(UInt32(format.channels), UInt(format.sampleRate), Int32(mode))
        if state == nil { throw StageStartError(stage: stage, "libebur128 cannot measure \(format.channels) channels at \(format.sampleRate) Hz") }
    }

    deinit { if state != nil { ebur128_destroy(&state) } }

    /// Adds `frames` interleaved frames at `samples`.
    package func add(_ samples: UnsafePointer<Float>, frames: Int) throws {
        guard frames > 0 else { return }
        let rc = ebur128_add_frames_float(state, samples, frames)
        if rc != 0 { throw StageStartError(stage: "loudness", "libebur128 failed (\(rc))") }
    }

    /// Adds the valid frames of `block`.
    package func add(_ block: AudioBlock) throws {
        try block.samples.withUnsafeBufferPointer { try add($0.baseAddress!, frames: block.frames) }
    }

    /// The loudness of the last `milliseconds` (at most 400), in LUFS; −∞ for silence.
    package func loudness(lastMilliseconds milliseconds: Int) -> Double {
        var v = -Double.infinity
        ebur128_loudness_window(state, UInt(milliseconds), &v)
        return v
    }

    /// Integrated (gated) loudness of everything added, in LUFS; −∞ for silence.
    package var integrated: Double {
        var v = -Double.infinity
        ebur128_loudness_global(state, &v)
        return v
    }

    /// The highest true peak of any channel so far, linear (needs `truePeak`).
    package func truePeak(channels: Int) -> Double {
        var peak = 0.0
        for ch in 0..<channels {
            var v = 0.0
            ebur128_true_peak(state, UInt32(ch), &v)
            peak = max(peak, v)
        }
        return peak
    }
}
