import Foundation

/// The noises an enrolled voice's speech is mixed with (decision 0086), so that its print holds in
/// noisy recordings: pink and brown noise, each at 20, 10 and 5 dB under the speech. Reproducible
/// (a fixed seed per file and condition), so enrolling the same files again gives the same prints.
package struct EnrolmentNoise: Sendable, Equatable {
    package enum Colour: Sendable, Equatable {
        /// Falling 3 dB per octave (Paul Kellet's filter over Gaussian white noise).
        case pink
        /// Falling 6 dB per octave above about 13 Hz (Gaussian white noise through a leaky integrator).
        case brown
    }
    package var colour: Colour
    /// Speech power over noise power, in dB (the file's mean square at 16 kHz over the noise's).
    package var snr: Double

    /// The conditions a print is enrolled under besides the speech as it is, in the order the
    /// prints are kept after the first (decision 0086: measured with `tools/speakers_quality.py`).
    package static let conditions: [EnrolmentNoise] = [.init(colour: .pink, snr: 20), .init(colour: .pink, snr: 10), .init(colour: .pink, snr: 5),
                                                       .init(colour: .brown, snr: 20), .init(colour: .brown, snr: 10), .init(colour: .brown, snr: 5)]

    /// A generator of this noise for a signal whose mean square is `power`, seeded with `seed`.
    package func generator(power: Double, seed: UInt64) -> Generator {
        Generator(colour: colour, rms: Float((max(power, 0) / pow(10, snr / 10)).squareRoot()), seed: seed)
    }

    /// Adds noise to 16 kHz samples, block after block. Unit-variance noise scaled to `rms`.
    package struct Generator {
        private let colour: Colour
        private let rms: Float
        private var state: UInt64
        private var level: Float = 0
        private var pinkState = [Float](repeating: 0, count: 7)
        private var spare: Float?
        /// The leaky integrator's coefficient; its output variance is 1 / (1 − a²).
        private static let leak: Float = 0.995
        /// Paul Kellet's pink filter: six one-pole sections (pole, gain), a direct term and one of the
        /// previous sample. Its output variance for unit white noise is 9.318 (computed from these).
        private static let pinkPoles: [(a: Float, g: Float)] = [(0.99886, 0.0555179), (0.99332, 0.0750759), (0.96900, 0.1538520),
                                                                 (0.86650, 0.3104856), (0.55000, 0.5329522), (-0.7616, -0.0168980)]
        private static let pinkScale: Float = 1 / Float(9.318).squareRoot()

        init(colour: Colour, rms: Float, seed: UInt64) {
            self.colour = colour
            self.rms = rms
            state = seed &+ 0x9E37_79B9_7F4A_7C15
            if colour == .brown { level = gaussian() / (1 - Self.leak * Self.leak).squareRoot() }
        }

        /// `samples` with the noise added, into `out` (resized to match).
        package mutating func mix(_ samples: UnsafeBufferPointer<Float>, into out: inout [Float]) {
            out.removeAll(keepingCapacity: true)
            out.reserveCapacity(samples.count)
            let scale = (1 - Self.leak * Self.leak).squareRoot()
            for x in samples {
                let n: Float
                switch colour {
                case .pink:
                    let w = gaussian()
                    var sum = pinkState[6] + w * 0.5362
                    for (i, p) in Self.pinkPoles.enumerated() {
                        pinkState[i] = p.a * pinkState[i] + w * p.g
                        sum += pinkState[i]
                    }
                    pinkState[6] = w * 0.115926
                    n = sum * Self.pinkScale
                case .brown:
                    level = Self.leak * level + gaussian()
                    n = level * scale
                }
                out.append(x + rms * n)
            }
        }

        /// SplitMix64: the next 64 random bits.
        private mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }

        /// A standard normal sample (Box–Muller, the second of each pair kept for the next call).
        private mutating func gaussian() -> Float {
            if let s = spare { spare = nil; return s }
            let u1 = (Double(next() >> 11) + 0.5) / 9_007_199_254_740_992
            let u2 = Double(next() >> 11) / 9_007_199_254_740_992
            let r = (-2 * log(u1)).squareRoot()
            spare = Float(r * sin(2 * .pi * u2))
            return Float(r * cos(2 * .pi * u2))
        }
    }
}
