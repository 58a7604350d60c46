import Testing
@testable import SegnoAudio

/// `IntegerPCM.int16` against the formula it replaced: `(x · scale).rounded()` (libm's `roundf`,
/// half away from zero), NaN as 0, clipped to the depth's range, shifted for 8 bits.
@Suite struct IntegerPCMTests {
    static func reference(_ x: Float, bits8: Bool) -> Int16 {
        let scale: Float = bits8 ? 128 : 32768
        let v = (x * scale).rounded()
        return Int16(max(-scale, min(scale - 1, v.isNaN ? 0 : v))) << (bits8 ? 8 : 0)
    }

    /// Every half-step of the range and its two neighbouring floats, values past full scale,
    /// the special values, and 200 000 reproducible random ones.
    static func samples(scale: Float) -> [Float] {
        var xs: [Float] = [0, -0.0, .nan, -.nan, .infinity, -.infinity, .greatestFiniteMagnitude,
                           -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, 1e30, -1e30]
        for k in Int(-2 * scale - 8)...Int(2 * scale + 8) {
            let x = Float(k) / 2 / scale
            xs += [x, x.nextUp, x.nextDown]
        }
        var state: UInt64 = 0x5EED
        for _ in 0..<200_000 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            xs.append(Float(Int64(bitPattern: state) >> 11) / Float(1 << 52) * 1.5)
        }
        return xs
    }

    @Test(arguments: [false, true])
    func equalsRoundingHalfAwayFromZero(bits8: Bool) {
        let xs = Self.samples(scale: bits8 ? 128 : 32768)
        var out = [Int16](repeating: 0x55, count: xs.count)
        xs.withUnsafeBufferPointer { src in out.withUnsafeMutableBufferPointer { IntegerPCM.int16(src, into: $0, bits8: bits8) } }
        let wrong = xs.indices.filter { out[$0] != Self.reference(xs[$0], bits8: bits8) }
        #expect(wrong.isEmpty, "\(wrong.count) differ, first \(wrong.first.map { "\(xs[$0]) → \(out[$0]), not \(Self.reference(xs[$0], bits8: bits8))" } ?? "")")
        // Ties go away from zero, not to even.
        let ties: [Float] = [0.5, 1.5, 2.5, -0.5, -2.5].map { $0 / (bits8 ? 128 : 32768) }
        var t = [Int16](repeating: 0, count: ties.count)
        ties.withUnsafeBufferPointer { src in t.withUnsafeMutableBufferPointer { IntegerPCM.int16(src, into: $0, bits8: bits8) } }
        #expect(t == [1, 2, 3, -1, -3].map { Int16($0) << (bits8 ? 8 : 0) })
    }
}
