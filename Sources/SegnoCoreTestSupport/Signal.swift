import Foundation

/// Deterministic test signals, interleaved Float32.
package enum Signal {
    /// A sine per channel: channel `c` at `frequency × (c + 1)` Hz, amplitude `amplitude` (linear).
    package static func sine(frequency: Double = 440, rate: Int = 44100, frames: Int, channels: Int = 1,
                     amplitude: Double = 0.5, phase: Double = 0) -> [Float] {
        var out = [Float](repeating: 0, count: frames * channels)
        for f in 0..<frames {
            for c in 0..<channels {
                let w = 2 * Double.pi * frequency * Double(c + 1) / Double(rate)
                out[f * channels + c] = Float(amplitude * sin(w * Double(f) + phase))
            }
        }
        return out
    }

    /// Uniform white noise in [−amplitude, amplitude) from a fixed seed (xorshift), so runs repeat.
    package static func noise(frames: Int, channels: Int = 1, amplitude: Double = 0.5, seed: UInt64 = 0x5E6_70) -> [Float] {
        var s = seed | 1
        var out = [Float](repeating: 0, count: frames * channels)
        for i in out.indices {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17
            let u = Double(s >> 11) / Double(1 << 53)   // [0, 1)
            out[i] = Float((2 * u - 1) * amplitude)
        }
        return out
    }

    /// Rounds every sample to the grid of a `bits`-bit integer PCM file (x = k / 2^(bits−1)),
    /// so writing and reading back is exact.
    package static func quantised(_ x: [Float], bits: Int) -> [Float] {
        let full = Float(1 << (bits - 1))
        return x.map { max(-full, min(full - 1, ($0 * full).rounded())) / full }
    }
}
