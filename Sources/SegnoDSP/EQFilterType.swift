/// The band types of an `EQBand`, named as AVAudioUnitEQ names them so a spec can carry over an
/// iOS app's settings (`type: highShelf`). How each maps to a biquad is in `EQBand.swift` and
/// docs/eq-mapping.md.
public enum EQFilterType: String, Sendable, Hashable, CaseIterable, Codable {
    /// Peak or dip of `gain` dB at `frequency`, `bandwidth` octaves wide at half the gain in dB.
    case parametric
    /// Butterworth 2nd-order low-pass, −3 dB at `frequency`.
    case lowPass
    /// Butterworth 2nd-order high-pass, −3 dB at `frequency`.
    case highPass
    /// 2nd-order low-pass whose resonance (Q) comes from `bandwidth`.
    case resonantLowPass
    /// 2nd-order high-pass whose resonance (Q) comes from `bandwidth`.
    case resonantHighPass
    /// Band-pass, 0 dB at `frequency`, −3 dB `bandwidth` octaves apart.
    case bandPass
    /// Band-stop (notch) at `frequency`, −3 dB `bandwidth` octaves apart.
    case bandStop
    /// Boost or cut of `gain` dB below `frequency` (half of it at `frequency`), no overshoot.
    case lowShelf
    /// Boost or cut of `gain` dB above `frequency` (half of it at `frequency`), no overshoot.
    case highShelf
    /// Low shelf whose Q comes from `bandwidth`; narrow bandwidths overshoot around `frequency`.
    case resonantLowShelf
    /// High shelf whose Q comes from `bandwidth`; narrow bandwidths overshoot around `frequency`.
    case resonantHighShelf
}
