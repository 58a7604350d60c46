import Foundation

/// A streaming resampler by a fixed, arbitrary ratio: a Kaiser-windowed sinc evaluated
/// from a table of `phases` sub-sample positions with linear interpolation between them.
///
/// Output frame `m` is the input interpolated at input position `m · step` (frames), so
/// `step > 1` shortens the signal (and raises pitch when played at the original rate) and
/// `step < 1` lengthens it. The pitch shifter uses it for the speed-change half of a pitch
/// shift. Values depend only on the input stream, never on how it was split into blocks.
///
/// The low-pass cuts at the lower of the two Nyquist frequencies, `B = 0.5 · min(1, 1/step)`
/// cycles per input frame, with a Kaiser window for 100 dB of stopband. When shortening,
/// the cutoff sits at `B` and the transition is `±t·B` (aliases fold only above `(1−t)·B`,
/// above 20 kHz at 44.1/48 kHz); when lengthening, the transition is `[(1−t)·B, B]` so no
/// image reaches below the input's Nyquist. `t` is 0.16 at 44.1 kHz and above, else 0.08.
struct SincResampler: Sendable {
    /// Input frames per output frame.
    let step: Double
    /// Input frames on each side of the interpolation point (a multiple of 4).
    let half: Int
    /// Sub-sample positions in the table.
    let phases: Int
    /// Row `p` (0 ..< phases): `2·half` coefficients for fraction `p/phases`, then the
    /// `2·half` differences to row `p + 1`.
    private let table: [Float]
    /// Absolute index of the next output frame.
    private(set) var next: Int

    /// A resampler whose first output frame has absolute index `firstOutput`.
    init(step: Double, sampleRate: Int, firstOutput: Int) {
        self.step = step
        let band = 0.5 * min(1.0, 1.0 / step)
        let t = sampleRate >= 44_100 ? 0.16 : 0.08
        let cutoff: Double
        let width: Double
        if step > 1 {
            cutoff = band
            width = 2 * t * band
        } else {
            cutoff = band * (1 - t / 2)
            width = t * band
        }
        let attenuation = 100.0
        let beta = 0.1102 * (attenuation - 8.7)
        let length = (attenuation - 7.95) / (2.285 * 2 * Double.pi * width) + 1
        let half = (Int((length / 2).rounded(.up)) + 3) / 4 * 4
        self.half = half
        let phases = 256
        self.phases = phases
        let taps = 2 * half
        var rows = [[Double]](repeating: [], count: phases + 1)
        let i0beta = Self.besselI0(beta)
        for p in 0...phases {
            let frac = Double(p) / Double(phases)
            var row = [Double](repeating: 0, count: taps)
            var sum = 0.0
            for k in 0..<taps {
                let x = Double(k - half + 1) - frac
                let u = x / Double(half)
                guard abs(u) < 1 else { continue }
                let arg = 2 * cutoff * x
                let sinc = arg == 0 ? 1.0 : sin(Double.pi * arg) / (Double.pi * arg)
                let w = Self.besselI0(beta * (1 - u * u).squareRoot()) / i0beta
                row[k] = 2 * cutoff * sinc * w
                sum += row[k]
            }
            rows[p] = row.map { $0 / sum }
        }
        var table = [Float](repeating: 0, count: phases * 2 * taps)
        for p in 0..<phases {
            for k in 0..<taps {
                table[p * 2 * taps + k] = Float(rows[p][k])
                table[p * 2 * taps + taps + k] = Float(rows[p + 1][k] - rows[p][k])
            }
        }
        self.table = table
        self.next = firstOutput
    }

    /// The first input frame (absolute index) that output frame `m` reads.
    func firstInput(for m: Int) -> Int {
        Self.floor(Double(m) * step) - half + 1
    }

    /// ⌊x⌋ without a libm call.
    @inline(__always)
    private static func floor(_ x: Double) -> Int {
        let i = Int(x)
        return Double(i) > x ? i - 1 : i
    }

    /// Produces every output frame the held input allows, appends them to `output`, and
    /// discards input no later output needs. Called whenever `input` has grown.
    mutating func run(_ input: inout PlanarFIFO, _ output: inout PlanarFIFO) {
        // Count the frames we can make: output m needs input up to floor(m·step) + half.
        var last = next
        while Self.floor(Double(last) * step) + half < input.end { last += 1 }
        let n = last - next
        guard n > 0 else { return }
        let outIndex = next
        precondition(output.end == outIndex, "SincResampler output out of step")
        output.reserveFree(n)
        let taps = 2 * half, h = half, ph = phases, st = step
        let inStart = input.start, inHead = input.head, inCap = input.capacity
        let outAt = output.head + output.count, outCap = output.capacity
        let first = next, ch = input.channels
        table.withUnsafeBufferPointer { tb in
            input.storage.withUnsafeBufferPointer { src in
                output.storage.withUnsafeMutableBufferPointer { dst in
                    for i in 0..<n {
                        let x = Double(first + i) * st
                        let xi = Self.floor(x)
                        let frac = x - Double(xi)
                        let pf = frac * Double(ph)
                        let p = min(Int(pf), ph - 1)
                        let u = Float(pf - Double(p))
                        let row = tb.baseAddress! + p * 2 * taps
                        let offset = xi - h + 1 - inStart + inHead
                        for c in 0..<ch {
                            let s = src.baseAddress! + c * inCap + offset
                            dst[c * outCap + outAt + i] = Self.dot(s, row, taps, u)
                        }
                    }
                }
            }
        }
        output.commit(n)
        next = last
        input.discard(before: firstInput(for: next))
    }

    /// Σ s[k]·(row[k] + u·row[taps + k]) over `taps` (a multiple of 8) taps.
    @inline(__always)
    private static func dot(_ s: UnsafePointer<Float>, _ row: UnsafePointer<Float>, _ taps: Int, _ u: Float) -> Float {
        typealias V = SIMD4<Float>
        var a0 = V(), a1 = V(), d0 = V(), d1 = V()
        var k = 0
        let raw = UnsafeRawPointer(s), rr = UnsafeRawPointer(row)
        let dOff = taps * 4
        while k < taps {
            let x0 = raw.loadUnaligned(fromByteOffset: k * 4, as: V.self)
            let x1 = raw.loadUnaligned(fromByteOffset: k * 4 + 16, as: V.self)
            a0 += x0 * rr.loadUnaligned(fromByteOffset: k * 4, as: V.self)
            a1 += x1 * rr.loadUnaligned(fromByteOffset: k * 4 + 16, as: V.self)
            d0 += x0 * rr.loadUnaligned(fromByteOffset: dOff + k * 4, as: V.self)
            d1 += x1 * rr.loadUnaligned(fromByteOffset: dOff + k * 4 + 16, as: V.self)
            k += 8
        }
        return (a0 + a1).sum() + u * (d0 + d1).sum()
    }

    /// The zeroth-order modified Bessel function of the first kind (for the Kaiser window).
    private static func besselI0(_ x: Double) -> Double {
        var sum = 1.0, term = 1.0
        let q = x * x / 4
        var k = 1.0
        while term > 1e-20 * sum {
            term *= q / (k * k)
            sum += term
            k += 1
        }
        return sum
    }
}
