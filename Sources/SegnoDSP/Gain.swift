#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A fixed gain, given in dB and applied as one linear factor to every sample.
/// Built once per job (`gain: { db: … }`), applied to each block; it holds no state.
public struct Gain: Sendable, Hashable {
    /// The gain in dB (0 = unchanged, −6.02 ≈ half the amplitude).
    public let decibels: Double
    /// The same gain as a linear amplitude factor, 10^(dB/20).
    public let linear: Float

    /// A gain of `decibels` dB. Validate it with `FilterDesign.validateGain` (±96 dB) first.
    public init(decibels: Double) {
        self.decibels = decibels
        self.linear = Float(Self.linear(fromDecibels: decibels))
    }

    /// 10^(dB/20): the amplitude factor for a gain in dB.
    public static func linear(fromDecibels dB: Double) -> Double {
        pow(10, dB / 20)
    }

    /// 20·log10(factor): the gain in dB of an amplitude factor (−∞ for 0).
    public static func decibels(fromLinear factor: Double) -> Double {
        20 * log10(abs(factor))
    }

    /// True when applying the gain changes nothing (exactly 0 dB after rounding to Float32).
    public var isIdentity: Bool { linear == 1 }

    /// Multiplies the valid frames of `block` by the gain, in place. Called once per block.
    public func apply(to block: inout AudioBlock) {
        let count = block.frames * block.channels
        precondition(count <= block.samples.count)
        block.samples.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            apply(to: base, count: count)
        }
    }

    /// Multiplies `count` samples at `samples` by the gain, in place (a loop the compiler vectorises).
    /// A product that would be a subnormal Float32 is written as 0, so later stages never slow down.
    public func apply(to samples: UnsafeMutablePointer<Float>, count: Int) {
        if isIdentity { return }
        let factor = linear
        let least = Float.leastNormalMagnitude
        for i in 0..<count {
            let v = samples[i] * factor
            samples[i] = abs(v) < least ? 0 : v
        }
    }
}
