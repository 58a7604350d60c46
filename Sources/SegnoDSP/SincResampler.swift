import Foundation

/// A streaming resampler by a fixed ratio: a Kaiser-windowed sinc, polyphase.
///
/// Output frame `m` is the input interpolated at input position `m · step` (frames), so
/// `step > 1` shortens the signal (and raises pitch when played at the original rate) and
/// `step < 1` lengthens it. The pitch shifter uses it for the speed-change half of a pitch
/// shift. Values depend only on the input stream, never on how it was split into blocks.
///
/// When `step` is a fraction `p/q` with `q ≤ 1024` (see `rational(near:)`), the table has one
/// row per phase `k/q` and each output costs one dot product; otherwise the table has 256
/// phases and each output interpolates linearly between two rows.
///
/// The low-pass cuts at the lower of the two Nyquist frequencies, `B = 0.5 · min(1, 1/step)`
/// cycles per input frame, with a Kaiser window for 96 dB of stopband. When shortening,
/// the cutoff sits at `B` and the transition is `±0.16·B` (aliases fold only above `0.84·B`,
/// above 20 kHz at 48 kHz); when lengthening, the transition is `[0.8·B, B]` (the band kept
/// reaches 19.2 kHz at 48 kHz) so no image reaches below the input's Nyquist. Below
/// 44.1 kHz, where the top of the band is audible, both transitions narrow to `0.08·B`.
struct SincResampler: Sendable {
    /// Input frames per output frame.
    let step: Double
    /// Input frames on each side of the interpolation point (even).
    let half: Int
    /// `step` as a fraction, when it is one (exact phases), else nil (interpolated phases).
    private let fraction: (p: Int, q: Int)?
    /// Rows of `2·half` coefficients, one per phase; when interpolating, each row is followed
    /// by its differences to the next row.
    private let table: [Float]
    /// Phases in the table.
    private let phases: Int
    /// The inverse of `p` modulo `q` (exact phases only): output m has phase k when
    /// m ≡ k·inverseP (mod q).
    private let inverseP: Int
    /// Absolute index of the next output frame.
    var next: Int

    /// The fraction `p/q` (`q ≤ 1024`) with the smallest `q` within 2·10⁻⁵ (relative) of
    /// `x`, if any: a pitch ratio that close is off by less than 0.035 cent. Every whole
    /// number of semitones from −24 to +24 has one (+3 st: 44/37).
    static func rational(near x: Double) -> (p: Int, q: Int)? {
        for q in 1...1024 {
            let p = Int((x * Double(q)).rounded())
            if p > 0 && abs(Double(p) / Double(q) - x) <= 2e-5 * x { return (p, q) }
        }
        return nil
    }

    /// `x` as `p/q` with `q ≤ 1024`, if it is one (to 1e-12).
    private static func exactFraction(_ x: Double) -> (p: Int, q: Int)? {
        for q in 1...1024 {
            let p = Int((x * Double(q)).rounded())
            if p > 0 && abs(Double(p) / Double(q) - x) <= 1e-12 * x { return (p, q) }
        }
        return nil
    }

    /// A resampler whose first output frame has absolute index `firstOutput`. Pass the
    /// fraction `rational(near:)` found, when it found one, as `step`.
    init(step: Double, sampleRate: Int, firstOutput: Int) {
        self.step = step
        let band = 0.5 * min(1.0, 1.0 / step)
        let wide = sampleRate >= 44_100
        let cutoff: Double
        let width: Double
        if step > 1 {
            let t = wide ? 0.16 : 0.08
            cutoff = band
            width = 2 * t * band
        } else {
            let t = wide ? 0.2 : 0.08
            cutoff = band * (1 - t / 2)
            width = t * band
        }
        let attenuation = 96.0
        let beta = 0.1102 * (attenuation - 8.7)
        let length = (attenuation - 7.95) / (2.285 * 2 * Double.pi * width) + 1
        let half = (Int((length / 2).rounded(.up)) + 1) / 2 * 2
        self.half = half
        let taps = 2 * half
        let i0beta = Self.besselI0(beta)
        func row(_ frac: Double) -> [Double] {
            var r = [Double](repeating: 0, count: taps)
            var sum = 0.0
            for k in 0..<taps {
                let x = Double(k - half + 1) - frac
                let u = x / Double(half)
                guard abs(u) < 1 else { continue }
                let arg = 2 * cutoff * x
                let sinc = arg == 0 ? 1.0 : sin(Double.pi * arg) / (Double.pi * arg)
                r[k] = 2 * cutoff * sinc * Self.besselI0(beta * (1 - u * u).squareRoot()) / i0beta
                sum += r[k]
            }
            return r.map { $0 / sum }
        }
        if let f = Self.exactFraction(step) {
            fraction = f
            phases = f.q
            inverseP = (0..<f.q).first { ($0 * f.p) % f.q == 1 % f.q } ?? 0
            var table = [Float](repeating: 0, count: f.q * taps)
            for k in 0..<f.q {
                let r = row(Double(k) / Double(f.q))
                for i in 0..<taps { table[k * taps + i] = Float(r[i]) }
            }
            self.table = table
        } else {
            fraction = nil
            inverseP = 0
            let count = 256
            phases = count
            let rows = (0...count).map { row(Double($0) / Double(count)) }
            var table = [Float](repeating: 0, count: count * 2 * taps)
            for k in 0..<count {
                for i in 0..<taps {
                    table[k * 2 * taps + i] = Float(rows[k][i])
                    table[k * 2 * taps + taps + i] = Float(rows[k + 1][i] - rows[k][i])
                }
            }
            self.table = table
        }
        self.next = firstOutput
    }

    /// ⌊m · step⌋, exactly when `step` is a fraction.
    @inline(__always)
    private func position(_ m: Int) -> Int {
        if let f = fraction {
            let n = m * f.p
            return n >= 0 ? n / f.q : -((-n + f.q - 1) / f.q)
        }
        let x = Double(m) * step
        let i = Int(x)
        return Double(i) > x ? i - 1 : i
    }

    /// The first input frame (absolute index) that output frame `m` reads.
    func firstInput(for m: Int) -> Int {
        position(m) - half + 1
    }

    /// Produces every output frame the held input allows, appends them to `output`, and
    /// discards input no later output needs. Called whenever `input` has grown.
    mutating func run(_ input: inout PlanarFIFO, _ output: inout PlanarFIFO) {
        // Output m needs input up to ⌊m·step⌋ + half: it can be made when ⌊m·step⌋ < end − half.
        var last = next
        if let f = fraction {
            // ⌊m·p/q⌋ < e ⟺ m·p < e·q, so the first output that cannot be made is ⌈e·q/p⌉
            // (one division instead of one per output).
            let a = (input.end - half) * f.q
            last = max(next, a >= 0 ? (a + f.p - 1) / f.p : -(-a / f.p))
            assert(position(last) + half >= input.end && (last == next || position(last - 1) + half < input.end))
        } else {
            while position(last) + half < input.end { last += 1 }
        }
        let n = last - next
        guard n > 0 else { return }
        precondition(output.end == next, "SincResampler output out of step")
        output.reserveFree(n)
        let taps = 2 * half, h = half, ph = phases, st = step
        let inStart = input.start, inHead = input.head, inCap = input.capacity
        let outAt = output.head + output.count, outCap = output.capacity
        let first = next, ch = input.channels
        let fraction = self.fraction
        table.withUnsafeBufferPointer { tb in
            input.storage.withUnsafeBufferPointer { src in
                output.storage.withUnsafeMutableBufferPointer { dst in
                    if let f = fraction {
                        // Exact phases, taken one at a time so that each row of the table is
                        // read once per call while it serves every output with that phase:
                        // output m has phase (m·p) mod q, and the outputs sharing a phase are
                        // q apart, their input positions p apart.
                        let inverse = self.inverseP
                        for phase in 0..<f.q {
                            let residue = (phase * inverse) % f.q
                            var m = first + (((residue - first) % f.q) + f.q) % f.q
                            guard m < first + n else { continue }
                            var whole = (m * f.p - phase) / f.q
                            if (m * f.p - phase) < 0 && (m * f.p - phase) % f.q != 0 { whole -= 1 }
                            let row = tb.baseAddress! + phase * taps
                            // Four outputs of this phase at once share each load of the row.
                            let stride = f.p
                            while m + 3 * f.q < first + n {
                                let offset = whole - h + 1 - inStart + inHead
                                let i = m - first
                                for c in 0..<ch {
                                    let d = Self.dot4(src.baseAddress! + c * inCap + offset, stride, row, taps)
                                    let o = dst.baseAddress! + c * outCap + outAt + i
                                    o[0] = d[0]
                                    o[f.q] = d[1]
                                    o[2 * f.q] = d[2]
                                    o[3 * f.q] = d[3]
                                }
                                m += 4 * f.q
                                whole += 4 * f.p
                            }
                            while m < first + n {
                                let offset = whole - h + 1 - inStart + inHead
                                let i = m - first
                                for c in 0..<ch {
                                    dst[c * outCap + outAt + i] = Self.dot(src.baseAddress! + c * inCap + offset, row, taps)
                                }
                                m += f.q
                                whole += f.p
                            }
                        }
                    } else {
                        for i in 0..<n {
                            let x = Double(first + i) * st
                            var xi = Int(x)
                            if Double(xi) > x { xi -= 1 }
                            let pf = (x - Double(xi)) * Double(ph)
                            let p = min(Int(pf), ph - 1)
                            let u = Float(pf - Double(p))
                            let row = tb.baseAddress! + p * 2 * taps
                            let offset = xi - h + 1 - inStart + inHead
                            for c in 0..<ch {
                                let s = src.baseAddress! + c * inCap + offset
                                dst[c * outCap + outAt + i] = Self.dot(s, row, taps) + u * Self.dot(s, row + taps, taps)
                            }
                        }
                    }
                }
            }
        }
        output.commit(n)
        next = last
        input.discard(before: firstInput(for: next))
    }

    /// Σ s[k]·row[k] over `taps` (a multiple of 4) taps: four lanes of partial sums (lane l
    /// takes the taps ≡ l mod 4), added as (l0 + l1) + (l2 + l3). `dot4` computes exactly this,
    /// so an output's value does not depend on whether it was computed alone or in a group.
    @inline(__always)
    private static func dot(_ s: UnsafePointer<Float>, _ row: UnsafePointer<Float>, _ taps: Int) -> Float {
        typealias V = SIMD4<Float>
        var a = V()
        let raw = UnsafeRawPointer(s), rr = UnsafeRawPointer(row)
        var k = 0
        while k < taps {
            a += raw.loadUnaligned(fromByteOffset: 4 * k, as: V.self) * rr.loadUnaligned(fromByteOffset: 4 * k, as: V.self)
            k += 4
        }
        return (a[0] + a[1]) + (a[2] + a[3])
    }

    /// `dot` for the four inputs `s`, `s + stride`, `s + 2·stride`, `s + 3·stride` against one
    /// row, lane for lane the same arithmetic.
    @inline(__always)
    private static func dot4(
        _ s: UnsafePointer<Float>, _ stride: Int, _ row: UnsafePointer<Float>, _ taps: Int
    ) -> SIMD4<Float> {
        typealias V = SIMD4<Float>
        var a0 = V(), a1 = V(), a2 = V(), a3 = V()
        let r0 = UnsafeRawPointer(s), r1 = UnsafeRawPointer(s + stride)
        let r2 = UnsafeRawPointer(s + 2 * stride), r3 = UnsafeRawPointer(s + 3 * stride)
        let rr = UnsafeRawPointer(row)
        var k = 0
        while k < taps {
            let w = rr.loadUnaligned(fromByteOffset: 4 * k, as: V.self)
            a0 += r0.loadUnaligned(fromByteOffset: 4 * k, as: V.self) * w
            a1 += r1.loadUnaligned(fromByteOffset: 4 * k, as: V.self) * w
            a2 += r2.loadUnaligned(fromByteOffset: 4 * k, as: V.self) * w
            a3 += r3.loadUnaligned(fromByteOffset: 4 * k, as: V.self) * w
            k += 4
        }
        // Transpose, so that lane j of each sum below is lane l of a_j.
        let c0 = V(a0[0], a1[0], a2[0], a3[0]), c1 = V(a0[1], a1[1], a2[1], a3[1])
        let c2 = V(a0[2], a1[2], a2[2], a3[2]), c3 = V(a0[3], a1[3], a2[3], a3[3])
        return (c0 + c1) + (c2 + c3)
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
