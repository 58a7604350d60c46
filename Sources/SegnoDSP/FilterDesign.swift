#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Filter designs as lists of biquad sections, ready for `BiquadCascade`.
///
/// Each design validates its arguments (throwing `FilterDesignError`) and is called when a stage
/// starts, once the stream's sample rate is known. Frequencies are in Hz, bandwidths in octaves,
/// gains in dB. The single-section cookbook formulas are in `FilterDesign+Cookbook.swift`, the
/// AVAudioUnitEQ band types in `EQBand.swift`.
public enum FilterDesign {
    /// Butterworth low-pass of `order` (2, 4, 6 or 8) with its −3.01 dB point exactly at `frequency`,
    /// as `order / 2` cascaded sections; the response falls by 6·order dB per octave above it.
    /// With `q` (order 2 only) it is a single resonant section whose gain at `frequency` is `q`
    /// (20·log10 q dB; q = 1/√2 is the Butterworth case).
    public static func lowpass(frequency: Double, order: Int = 2, q: Double? = nil,
                               sampleRate: Double) throws(FilterDesignError) -> [Biquad] {
        try validateFrequency(frequency, sampleRate: sampleRate)
        try validateOrder(order)
        try validateQ(q, order: order)
        return butterworthQs(order: order, q: q).map {
            cookbookLowpass(frequency: frequency, q: $0, sampleRate: sampleRate)
        }
    }

    /// Butterworth high-pass of `order` (2, 4, 6 or 8) with its −3.01 dB point exactly at `frequency`,
    /// as `order / 2` cascaded sections; the response falls by 6·order dB per octave below it.
    /// With `q` (order 2 only) it is a single resonant section whose gain at `frequency` is `q`.
    public static func highpass(frequency: Double, order: Int = 2, q: Double? = nil,
                                sampleRate: Double) throws(FilterDesignError) -> [Biquad] {
        try validateFrequency(frequency, sampleRate: sampleRate)
        try validateOrder(order)
        try validateQ(q, order: order)
        return butterworthQs(order: order, q: q).map {
            cookbookHighpass(frequency: frequency, q: $0, sampleRate: sampleRate)
        }
    }

    /// Band-pass centred on `frequency`: 0 dB there, −3 dB at the band edges `bandwidth` octaves
    /// apart (one cookbook section, 6 dB per octave skirts).
    public static func bandpass(frequency: Double, bandwidth: Double,
                                sampleRate: Double) throws(FilterDesignError) -> [Biquad] {
        try validateFrequency(frequency, sampleRate: sampleRate)
        try validateBandwidth(bandwidth)
        return [cookbookBandpass(Warp(frequency: frequency, sampleRate: sampleRate, octaves: bandwidth))]
    }

    /// Band-stop (notch) centred on `frequency`: an exact zero there, −3 dB at the band edges
    /// `bandwidth` octaves apart, 0 dB far from it (one cookbook section).
    public static func bandstop(frequency: Double, bandwidth: Double,
                                sampleRate: Double) throws(FilterDesignError) -> [Biquad] {
        try validateFrequency(frequency, sampleRate: sampleRate)
        try validateBandwidth(bandwidth)
        return [cookbookNotch(Warp(frequency: frequency, sampleRate: sampleRate, octaves: bandwidth))]
    }

    /// All sections of an equaliser made of `bands`, in order; bypassed bands contribute none.
    public static func equalizer(_ bands: [EQBand], sampleRate: Double) throws(FilterDesignError) -> [Biquad] {
        var sections: [Biquad] = []
        for band in bands {
            sections += try band.sections(sampleRate: sampleRate)
        }
        return sections
    }

    /// The Q of each section of a Butterworth filter of `order`, or `[q]` for a resonant order 2.
    /// The analogue poles sit at angles (2k − 1)·π / (2·order) from the imaginary axis, so section k
    /// has Q = 1 / (2·sin((2k − 1)·π / (2·order))): 0.7071 for order 2; 1.3066, 0.5412 for order 4.
    public static func butterworthQs(order: Int, q: Double? = nil) -> [Double] {
        if let q { return [q] }
        return (1...(order / 2)).map { k in
            1 / (2 * sin(Double(2 * k - 1) * Double.pi / Double(2 * order)))
        }
    }
}
