import SegnoDSP
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Measures filters from their actual output (test support shared by the filter and EQ tests).
enum FilterMeasurement {
    static let sampleRate = 48000.0

    /// `count` frequencies spaced evenly on a log scale from `low` to `high` Hz, both included.
    static func logSpaced(_ count: Int, from low: Double = 20, to high: Double = 0.9 * 24000) -> [Double] {
        (0..<count).map { i in low * pow(high / low, Double(i) / Double(count - 1)) }
    }

    /// Frames until the slowest pole of `sections` has decayed by `decades` powers of ten.
    static func settleFrames(_ sections: [Biquad], decades: Double = 10) -> Int {
        var radius = 0.0
        for s in sections {
            let discriminant = s.a1 * s.a1 - 4 * s.a2
            if discriminant < 0 {
                radius = max(radius, s.a2.squareRoot())
            } else {
                let root = discriminant.squareRoot()
                radius = max(radius, abs(-s.a1 + root) / 2, abs(-s.a1 - root) / 2)
            }
        }
        if radius < 1e-3 { return 16 }
        return Int((-decades * log(10) / log(radius)).rounded(.up)) + 16
    }

    /// The steady-state gain in dB of `sections` at `frequency` Hz, measured by running a sine
    /// through a `BiquadCascade` and fitting a sine and cosine at that frequency to the output
    /// (least squares, so the window need not hold whole cycles). 0 Hz and Nyquist use a constant
    /// and an alternating signal.
    static func measuredGainDB(_ sections: [Biquad], at frequency: Double,
                               sampleRate: Double = sampleRate) -> Double {
        let settle = settleFrames(sections)
        let cycles = frequency > 0 ? 8 * sampleRate / frequency : 0
        let window = max(4800, Int(cycles.rounded(.up)))
        let total = settle + window
        let amplitude = 0.5
        let w = 2 * Double.pi * frequency / sampleRate
        var samples = (0..<total).map { n in Float(amplitude * cos(w * Double(n) + 0.3)) }
        if frequency == 0 || frequency == sampleRate / 2 {
            samples = (0..<total).map { n in Float(frequency == 0 || n % 2 == 0 ? amplitude : -amplitude) }
        }
        var cascade = BiquadCascade(sections: sections, channels: 1)
        samples.withUnsafeMutableBufferPointer { cascade.process($0.baseAddress!, frames: total) }

        if frequency == 0 || frequency == sampleRate / 2 {
            var sum = 0.0
            for n in settle..<total { sum += Double(samples[n]) * (frequency == 0 || n % 2 == 0 ? 1 : -1) }
            return 20 * log10(abs(sum / Double(window)) / amplitude)
        }
        // Least squares: y ≈ A·cos(wn) + B·sin(wn).
        var cc = 0.0, ss = 0.0, cs = 0.0, yc = 0.0, ys = 0.0
        for n in settle..<total {
            let c = cos(w * Double(n)), s = sin(w * Double(n)), y = Double(samples[n])
            cc += c * c; ss += s * s; cs += c * s; yc += y * c; ys += y * s
        }
        let det = cc * ss - cs * cs
        let a = (yc * ss - ys * cs) / det
        let b = (ys * cc - yc * cs) / det
        return 20 * log10((a * a + b * b).squareRoot() / amplitude)
    }

    /// The largest difference in dB between measured and designed response over `frequencies`,
    /// counting only frequencies where the design is above `floor` dB.
    static func worstDeviationDB(_ sections: [Biquad], frequencies: [Double] = logSpaced(30),
                                 floor: Double = -60, sampleRate: Double = sampleRate) -> Double {
        var worst = 0.0
        for f in frequencies {
            let designed = BiquadCascade(sections: sections, channels: 1).magnitudeDB(at: f, sampleRate: sampleRate)
            guard designed > floor else { continue }
            worst = max(worst, abs(measuredGainDB(sections, at: f, sampleRate: sampleRate) - designed))
        }
        return worst
    }
}
