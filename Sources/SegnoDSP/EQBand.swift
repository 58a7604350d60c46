// How each AVAudioUnitEQ band type maps to a biquad (same table as docs/eq-mapping.md).
//
// All designs are single sections from the RBJ Audio EQ Cookbook, with ω0 = 2π·frequency/sampleRate.
// "α from bandwidth" is the cookbook's bandwidth form α = sin ω0 · sinh(ln2/2 · bandwidth · ω0/sin ω0),
// which stands for Q = sin ω0 / (2α) ≈ 1 / (2·sinh(ln2/2 · bandwidth)) (bandwidth 1 oct → Q 1.41,
// 1.9 oct → Q 0.707, 0.5 oct → Q 2.87). Every field is validated whether or not the type uses it.
//
// | type              | cookbook design | frequency means                | bandwidth (octaves) means          | gain (dB)             |
// |-------------------|-----------------|--------------------------------|------------------------------------|-----------------------|
// | parametric        | peakingEQ       | centre: exactly `gain` there   | width between the gain/2 points    | peak/dip height       |
// | lowPass           | LPF, Q = 1/√2   | −3.01 dB point (Butterworth)   | ignored                            | ignored               |
// | highPass          | HPF, Q = 1/√2   | −3.01 dB point (Butterworth)   | ignored                            | ignored               |
// | resonantLowPass   | LPF, α from bw  | corner: gain there is Q        | resonance: narrower = higher peak  | ignored               |
// | resonantHighPass  | HPF, α from bw  | corner: gain there is Q        | resonance: narrower = higher peak  | ignored               |
// | bandPass          | BPF (0 dB peak) | centre: exactly 0 dB there     | width between the −3 dB points     | ignored               |
// | bandStop          | notch           | centre: exact zero there       | width between the −3 dB points     | ignored               |
// | lowShelf          | lowShelf, S = 1 | midpoint: gain/2 there         | ignored (steepest monotonic shelf) | exactly at 0 Hz       |
// | highShelf         | highShelf, S = 1| midpoint: gain/2 there         | ignored (steepest monotonic shelf) | exactly at Nyquist    |
// | resonantLowShelf  | lowShelf, α from bw | midpoint: gain/2 there     | Q: below 1.9 oct the shelf overshoots (bump and dip) | exactly at 0 Hz |
// | resonantHighShelf | highShelf, α from bw| midpoint: gain/2 there     | Q: below 1.9 oct the shelf overshoots (bump and dip) | exactly at Nyquist |
//
// A bypassed band, and a parametric or shelf band with gain 0, contributes no section at all.

/// One band of an equaliser in AVAudioUnitEQ's vocabulary: a type, a frequency in Hz, a bandwidth
/// in octaves, a gain in dB and a bypass switch. Validated when the spec is loaded (`validate()`)
/// and turned into biquads when the stage starts (`sections(sampleRate:)`).
public struct EQBand: Sendable, Hashable {
    /// Bandwidth used when a spec leaves it out, in octaves (segno's choice; Apple documents none).
    public static let defaultBandwidth = 1.0

    /// The band type (see the mapping table at the top of this file).
    public var type: EQFilterType
    /// Centre, corner or shelf midpoint frequency, in Hz.
    public var frequency: Double
    /// Width in octaves, for the types that use it.
    public var bandwidth: Double
    /// Boost (positive) or cut (negative) in dB, for parametric and shelf types.
    public var gain: Double
    /// When true the band passes audio through unchanged.
    public var bypass: Bool

    public init(type: EQFilterType, frequency: Double, bandwidth: Double = EQBand.defaultBandwidth,
                gain: Double = 0, bypass: Bool = false) {
        self.type = type
        self.frequency = frequency
        self.bandwidth = bandwidth
        self.gain = gain
        self.bypass = bypass
    }

    /// Checks every field. Without `sampleRate` (spec load time) the frequency is only checked to
    /// be above 0 Hz; with it (stage start) also below the Nyquist frequency.
    public func validate(sampleRate: Double? = nil) throws(FilterDesignError) {
        try FilterDesign.validateFrequency(frequency, sampleRate: sampleRate)
        try FilterDesign.validateBandwidth(bandwidth)
        try FilterDesign.validateGain(gain)
    }

    /// The band's biquads for a stream at `sampleRate` Hz: none when bypassed or when a parametric
    /// or shelf band has gain 0, otherwise one section. Called once when the stage starts.
    public func sections(sampleRate: Double) throws(FilterDesignError) -> [Biquad] {
        try validate(sampleRate: sampleRate)
        if bypass { return [] }
        let butterworthQ = 0.5.squareRoot()
        let byBandwidth = FilterDesign.Warp(frequency: frequency, sampleRate: sampleRate, octaves: bandwidth)
        let byButterworthQ = FilterDesign.Warp(frequency: frequency, sampleRate: sampleRate, q: butterworthQ)
        switch type {
        case .parametric:
            return gain == 0 ? [] : [FilterDesign.cookbookPeaking(byBandwidth, gain: gain)]
        case .lowPass:
            return [FilterDesign.cookbookLowpass(frequency: frequency, q: butterworthQ, sampleRate: sampleRate)]
        case .highPass:
            return [FilterDesign.cookbookHighpass(frequency: frequency, q: butterworthQ, sampleRate: sampleRate)]
        case .resonantLowPass:
            return [FilterDesign.cookbookLowpass(frequency: frequency, q: resonance(sampleRate: sampleRate), sampleRate: sampleRate)]
        case .resonantHighPass:
            return [FilterDesign.cookbookHighpass(frequency: frequency, q: resonance(sampleRate: sampleRate), sampleRate: sampleRate)]
        case .bandPass:
            return [FilterDesign.cookbookBandpass(byBandwidth)]
        case .bandStop:
            return [FilterDesign.cookbookNotch(byBandwidth)]
        case .lowShelf:
            return gain == 0 ? [] : [FilterDesign.cookbookLowShelf(byButterworthQ, gain: gain)]
        case .highShelf:
            return gain == 0 ? [] : [FilterDesign.cookbookHighShelf(byButterworthQ, gain: gain)]
        case .resonantLowShelf:
            return gain == 0 ? [] : [FilterDesign.cookbookLowShelf(byBandwidth, gain: gain)]
        case .resonantHighShelf:
            return gain == 0 ? [] : [FilterDesign.cookbookHighShelf(byBandwidth, gain: gain)]
        }
    }

    /// The Q that `bandwidth` stands for at `frequency` for a stream at `sampleRate` Hz (the
    /// resonance of the resonant pass types, and the Q of the resonant shelves).
    public func resonance(sampleRate: Double) -> Double {
        FilterDesign.Warp.q(frequency: frequency, sampleRate: sampleRate, octaves: bandwidth)
    }
}
