import CEbur128
import SegnoCore
import SegnoDSP

/// libebur128 (EBU R128 / ITU-R BS.1770) behind a small face, for stages outside this module
/// that measure loudness (`level`): integrated loudness, the loudness of the last few hundred
/// milliseconds, and the true peak (`TruePeakMeter`: libebur128's, measured in SIMD lanes,
/// decision 0101). Owned by one recording; frees libebur128's state when released.
final package class LoudnessMeter {
    private var state: UnsafeMutablePointer<ebur128_state>?
    private var truePeaks: TruePeakMeter?
    /// The frames per second it was made for, in Hz.
    package let sampleRate: Int

    /// A meter for `format`; `truePeak` adds the 4× oversampled true-peak measurement.
    /// `stage` names the stage in the error when libebur128 refuses the format.
    package init(format: AudioFormat, truePeak: Bool, stage: String) throws {
        sampleRate = format.sampleRate
        state = ebur128_init(UInt32(format.channels), UInt(format.sampleRate), Int32(EBUR128_MODE_I.rawValue))
        if truePeak { truePeaks = TruePeakMeter(channels: format.channels, sampleRate: format.sampleRate) }
        if state == nil { throw StageStartError(stage: stage, "libebur128 cannot measure \(format.channels) channels at \(format.sampleRate) Hz") }
    }

    deinit { if state != nil { ebur128_destroy(&state) } }

    /// Adds `frames` interleaved frames at `samples`.
    package func add(_ samples: UnsafePointer<Float>, frames: Int) throws {
        guard frames > 0 else { return }
        let rc = ebur128_add_frames_float(state, samples, frames)
        if rc != 0 { throw StageStartError(stage: "loudness", "libebur128 failed (\(rc))") }
        truePeaks?.add(samples, frames: frames)
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

    /// The highest true peak of any channel so far, linear (needs `truePeak`; 0 without).
    package func truePeak(channels: Int) -> Double { truePeaks?.truePeak ?? 0 }
}
