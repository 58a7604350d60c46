extension FilterDesign {
    /// Butterworth orders `lowpass` and `highpass` accept.
    public static let supportedOrders = [2, 4, 6, 8]
    /// Largest accepted `bandwidth`, in octaves.
    public static let maximumBandwidth = 10.0
    /// Largest accepted `gain` magnitude, in dB.
    public static let maximumGain = 96.0

    /// Checks a corner or centre `frequency` in Hz. Without `sampleRate` (spec load time) only
    /// checks it is above 0; with it (stage start) also that it is below the Nyquist frequency.
    public static func validateFrequency(_ frequency: Double, sampleRate: Double? = nil) throws(FilterDesignError) {
        var nyquist: Double?
        if let sampleRate {
            try validateSampleRate(sampleRate)
            nyquist = sampleRate / 2
        }
        guard frequency.isFinite, frequency > 0 else {
            throw .frequencyOutOfRange(frequency: frequency, nyquist: nyquist)
        }
        if let nyquist, frequency >= nyquist {
            throw .frequencyOutOfRange(frequency: frequency, nyquist: nyquist)
        }
    }

    /// Checks a `bandwidth` in octaves: above 0 and at most `maximumBandwidth`.
    public static func validateBandwidth(_ octaves: Double) throws(FilterDesignError) {
        guard octaves.isFinite, octaves > 0, octaves <= maximumBandwidth else {
            throw .bandwidthOutOfRange(octaves: octaves)
        }
    }

    /// Checks a Butterworth `order`: one of `supportedOrders`.
    public static func validateOrder(_ order: Int) throws(FilterDesignError) {
        guard supportedOrders.contains(order) else { throw .unsupportedOrder(order) }
    }

    /// Checks a `gain` in dB: within ±`maximumGain`.
    public static func validateGain(_ dB: Double) throws(FilterDesignError) {
        guard dB.isFinite, abs(dB) <= maximumGain else { throw .gainOutOfRange(dB: dB) }
    }

    /// Checks an optional `q` for a filter of `order`: above 0, and only with order 2.
    public static func validateQ(_ q: Double?, order: Int) throws(FilterDesignError) {
        guard let q else { return }
        guard q.isFinite, q > 0 else { throw .qOutOfRange(q) }
        guard order == 2 else { throw .qRequiresOrder2(order: order) }
    }

    /// Checks a stream's sample rate in Hz: finite and above 0.
    public static func validateSampleRate(_ sampleRate: Double) throws(FilterDesignError) {
        guard sampleRate.isFinite, sampleRate > 0 else { throw .invalidSampleRate(sampleRate) }
    }
}
