/// audiowaveform's vertical zoom (`--amplitude-scale`) and time windows over peak data.
extension WaveformData {
    /// The factor audiowaveform 1.10.3 picks for `--amplitude-scale auto` over points `range`
    /// (all points when nil), all channels together, on 16-bit values: with `hi` the largest
    /// max and `lo` the smallest min, |min(32767 / hi, 32767 / lo)| where a zero extreme counts
    /// as factor 1. So a negative minimum decides whenever there is one (its quotient is
    /// negative), and silence gives 1. 8-bit data is compared as its 16-bit equivalent (× 256).
    /// Called once per picture or data file, after the peaks are complete.
    public func autoAmplitudeScale(points range: Range<Int>? = nil) -> Double {
        let r = (range ?? 0..<length).clamped(to: 0..<length)
        guard !r.isEmpty else { return 1 }
        var lo = Int.max, hi = Int.min
        for i in r {
            for c in 0..<channels {
                lo = Swift.min(lo, Int(min(channel: c, at: i)))
                hi = Swift.max(hi, Int(max(channel: c, at: i)))
            }
        }
        let unit = bits == 8 ? 256 : 1
        let scaleHigh = hi == 0 ? 1.0 : 32767.0 / Double(hi * unit)
        let scaleLow = lo == 0 ? 1.0 : 32767.0 / Double(lo * unit)
        return abs(Swift.min(scaleHigh, scaleLow))
    }

    /// Every value times `factor`, clamped to the bit depth's range and truncated toward zero
    /// (audiowaveform's `MathUtil::scale` on 16-bit data). `factor` must be finite and ≥ 0.
    public func amplitudeScaled(by factor: Double) -> WaveformData {
        precondition(factor.isFinite && factor >= 0, "amplitude factor must be finite and ≥ 0")
        if factor == 1 { return self }
        let top = bits == 8 ? 127.0 : 32767.0, bottom = bits == 8 ? -128.0 : -32768.0
        let out = data.map { v -> Int16 in
            Int16(Swift.min(Swift.max(Double(v) * factor, bottom), top))  // Int16(_:) truncates toward zero
        }
        return WaveformData(unchecked: channels, sampleRate, samplesPerPixel, bits, out)
    }
}
