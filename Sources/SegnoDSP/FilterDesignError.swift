/// A filter or EQ setting that cannot be designed. Thrown by the `FilterDesign.validate…` helpers
/// and the design functions, once when a spec is loaded and again when the real sample rate is
/// known. The message names the spec option; the caller adds the file and stage.
public enum FilterDesignError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `frequency` (Hz) is not a finite number above 0 Hz, or (when the sample rate is known) not below
    /// the Nyquist frequency `nyquist` (Hz).
    case frequencyOutOfRange(frequency: Double, nyquist: Double?)
    /// `bandwidth` (octaves) is not in (0, 10].
    case bandwidthOutOfRange(octaves: Double)
    /// `order` is not one of 2, 4, 6, 8.
    case unsupportedOrder(Int)
    /// `gain` (dB) is not in [−96, +96].
    case gainOutOfRange(dB: Double)
    /// `q` is not a finite number above 0.
    case qOutOfRange(Double)
    /// `q` was given together with an `order` other than 2 (only a single section has a free Q).
    case qRequiresOrder2(order: Int)
    /// The stream's sample rate (Hz) is not a finite number above 0.
    case invalidSampleRate(Double)

    /// The spec option the error is about.
    public var option: String {
        switch self {
        case .frequencyOutOfRange: "frequency"
        case .bandwidthOutOfRange: "bandwidth"
        case .unsupportedOrder: "order"
        case .gainOutOfRange: "gain"
        case .qOutOfRange, .qRequiresOrder2: "q"
        case .invalidSampleRate: "sample rate"
        }
    }

    public var description: String {
        switch self {
        case let .frequencyOutOfRange(frequency, nyquist?):
            "frequency must be above 0 Hz and below the Nyquist frequency (\(Self.format(nyquist)) Hz), "
                + "got \(Self.format(frequency)) Hz"
        case let .frequencyOutOfRange(frequency, nil):
            "frequency must be above 0 Hz, got \(Self.format(frequency)) Hz"
        case let .bandwidthOutOfRange(octaves):
            "bandwidth must be above 0 and at most \(Self.format(FilterDesign.maximumBandwidth)) octaves, "
                + "got \(Self.format(octaves))"
        case let .unsupportedOrder(order):
            "order must be 2, 4, 6 or 8, got \(order)"
        case let .gainOutOfRange(dB):
            "gain must be between -\(Self.format(FilterDesign.maximumGain)) and "
                + "+\(Self.format(FilterDesign.maximumGain)) dB, got \(Self.format(dB)) dB"
        case let .qOutOfRange(q):
            "q must be above 0, got \(Self.format(q))"
        case let .qRequiresOrder2(order):
            "q can only be set with order 2, got order \(order)"
        case let .invalidSampleRate(rate):
            "sample rate must be above 0 Hz, got \(Self.format(rate)) Hz"
        }
    }

    /// Whole numbers without a trailing ".0" (24000, not 24000.0).
    private static func format(_ value: Double) -> String {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
            return String(Int64(value))
        }
        return String(value)
    }
}
