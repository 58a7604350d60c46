import Foundation

/// A real-input FFT of a fixed power-of-two size `n`, for the pitch shifter's phase vocoder.
///
/// The transform is a complex FFT of `n/2` points on the even/odd-packed input (Stockham
/// autosort, radix 4 with one radix-2 stage when `log2(n/2)` is odd, split real/imaginary
/// arrays), followed by the usual split into the `n/2 + 1` bins of the real spectrum.
/// Twiddles are computed once, in Double, when the value is made; `forward` and `inverse`
/// allocate nothing and never mutate the value, so one `RealFFT` can be shared freely.
///
/// Conventions: `forward` computes `X[k] = Σ x[t]·e^(−2πikt/n)` for `k = 0…n/2`;
/// `inverse` computes `x[t] = Σ X[k]·e^(+2πikt/n)` over all `n` bins (the upper half taken
/// as the conjugate mirror), unnormalised, so `inverse(forward(x)) == n·x`.
public struct RealFFT: Sendable {
    /// Real points per transform.
    public let size: Int
    /// Complex points of the inner transform (`size / 2`).
    private let half: Int
    /// Per-stage twiddles of the inner complex FFT, then the real split twiddles.
    private let twiddles: [Float]
    /// Offset in `twiddles` of the real split twiddles (`cos`, then `−sin` of `2πk/size`).
    private let splitOffset: Int

    /// Floats of scratch space `forward` and `inverse` need (`2 · size`).
    public var scratchCount: Int { 2 * size }

    /// Makes the transform for `size` real points; `size` must be a power of two, at least 4.
    public init(size: Int) {
        precondition(size >= 4 && size & (size - 1) == 0, "RealFFT size must be a power of two ≥ 4")
        self.size = size
        let m = size / 2
        self.half = m
        var table: [Float] = []
        // Radix-4 stages: n = m, m/4, … while n ≥ 4; for each, w^p, w^2p, w^3p (re, im) for p < n/4.
        var n = m
        while n >= 4 {
            let q = n / 4
            for r in 1...3 {
                for p in 0..<q {
                    let a = -2.0 * Double.pi * Double(r * p) / Double(n)
                    table.append(Float(cos(a)))
                }
                for p in 0..<q {
                    let a = -2.0 * Double.pi * Double(r * p) / Double(n)
                    table.append(Float(sin(a)))
                }
            }
            n = q
        }
        // A final radix-2 stage (n == 2) needs no twiddles (w = 1).
        self.splitOffset = table.count
        for k in 0...m {
            table.append(Float(cos(2.0 * Double.pi * Double(k) / Double(size))))
        }
        for k in 0...m {
            table.append(Float(-sin(2.0 * Double.pi * Double(k) / Double(size))))
        }
        self.twiddles = table
    }

    /// Transforms `size` real samples at `input` into `size/2 + 1` bins written to `real`
    /// and `imag` (each `size/2 + 1` long). `scratch` holds `scratchCount` floats; none of
    /// the buffers may overlap.
    public func forward(
        _ input: UnsafePointer<Float>, real: UnsafeMutablePointer<Float>,
        imag: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>
    ) {
        forward(input, window: nil, real: real, imag: imag, scratch: scratch)
    }

    /// `forward` of `input[t] · window[t]` (when `window` is given), windowing while the input
    /// is packed, so the windowed frame is never stored; the results are those of windowing
    /// first, bit for bit.
    func forward(
        _ input: UnsafePointer<Float>, window: UnsafePointer<Float>?, real: UnsafeMutablePointer<Float>,
        imag: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>
    ) {
        typealias V = SIMD4<Float>
        typealias V8 = SIMD8<Float>
        let m = half
        let ar = scratch, ai = scratch + m, br = scratch + 2 * m, bi = scratch + 3 * m
        var t = 0
        if m % 4 == 0 {
            let raw = UnsafeRawPointer(input)
            while t < m {
                var x = raw.loadUnaligned(fromByteOffset: 8 * t, as: V8.self)
                if let window { x *= UnsafeRawPointer(window).loadUnaligned(fromByteOffset: 8 * t, as: V8.self) }
                Self.store(x.evenHalf, ar + t)
                Self.store(x.oddHalf, ai + t)
                t += 4
            }
        }
        while t < m {
            ar[t] = window.map { input[2 * t] * $0[2 * t] } ?? input[2 * t]
            ai[t] = window.map { input[2 * t + 1] * $0[2 * t + 1] } ?? input[2 * t + 1]
            t += 1
        }
        twiddles.withUnsafeBufferPointer { tw in
            let inB = complexFFT(ar, ai, br, bi, tw.baseAddress!)
            let zr: UnsafeMutablePointer<Float> = inB ? br : ar
            let zi: UnsafeMutablePointer<Float> = inB ? bi : ai
            let wr = tw.baseAddress! + splitOffset
            let wi = wr + (m + 1)
            real[0] = zr[0] + zi[0]
            imag[0] = 0
            real[m] = zr[0] - zi[0]
            imag[m] = 0
            // Four bins at a time; the mirrored bins m−k are loaded forwards and reversed.
            // Lane for lane the arithmetic is the scalar loop's, so the results are the same.
            var k = 1
            let half = V(repeating: 0.5)
            while k + 3 < m {
                let a = Self.load(zr + k), b = Self.load(zi + k)
                let c = Self.reversed(Self.load(zr + (m - k - 3))), d = Self.reversed(Self.load(zi + (m - k - 3)))
                let er = half * (a + c), ei = half * (b - d)
                let orr = half * (b + d), oi = -half * (a - c)
                let cr = Self.load(wr + k), ci = Self.load(wi + k)
                Self.store(er + cr * orr - ci * oi, real + k)
                Self.store(ei + cr * oi + ci * orr, imag + k)
                k += 4
            }
            while k < m {
                let a = zr[k], b = zi[k], c = zr[m - k], d = zi[m - k]
                let er = 0.5 * (a + c), ei = 0.5 * (b - d)
                let orr = 0.5 * (b + d), oi = -0.5 * (a - c)
                let cr = wr[k], ci = wi[k]
                real[k] = er + cr * orr - ci * oi
                imag[k] = ei + cr * oi + ci * orr
                k += 1
            }
        }
    }

    /// Transforms `size/2 + 1` bins (`real`, `imag`; the imaginary parts of bins 0 and
    /// `size/2` are ignored) back into `size` real samples at `output`, scaled by `size`.
    /// `scratch` holds `scratchCount` floats; none of the buffers may overlap.
    public func inverse(
        real: UnsafePointer<Float>, imag: UnsafePointer<Float>,
        output: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>
    ) {
        inverse(real: real, imag: imag, output: output, window: nil, scratch: scratch)
    }

    /// `inverse`, or with `window` given, adds `x[t] · window[t]` to `output[t]` (overlap-add)
    /// instead of storing `x[t]`; the results are those of the separate passes, bit for bit.
    func inverse(
        real: UnsafePointer<Float>, imag: UnsafePointer<Float>,
        output: UnsafeMutablePointer<Float>, window: UnsafePointer<Float>?, scratch: UnsafeMutablePointer<Float>
    ) {
        typealias V8 = SIMD8<Float>
        let m = half
        let ar = scratch, ai = scratch + m, br = scratch + 2 * m, bi = scratch + 3 * m
        twiddles.withUnsafeBufferPointer { tw in
            let wr = tw.baseAddress! + splitOffset
            let wi = wr + (m + 1)
            // Z[k] = E + i·O with E = X[k] + conj(X[m−k]), O = (X[k] − conj(X[m−k]))·w^(−k).
            // The inverse complex FFT is the forward one with real and imaginary swapped.
            // Bin 0 alone (its imaginary parts are ignored), then four bins at a time with the
            // mirrored bins reversed, lane for lane the scalar arithmetic.
            func bin(_ k: Int) {
                let a = real[k], b = k == 0 ? 0 : imag[k]
                let c = real[m - k], d = k == 0 ? 0 : imag[m - k]
                let er = a + c, ei = b - d
                let dr = a - c, di = b + d
                let cr = wr[k], ci = wi[k]
                let orr = dr * cr + di * ci
                let oi = di * cr - dr * ci
                ar[k] = ei + orr  // imaginary part of Z, stored as "real" for the swap trick
                ai[k] = er - oi  // real part of Z
            }
            bin(0)
            var k = 1
            while k + 3 < m {
                let a = Self.load(real + k), b = Self.load(imag + k)
                let c = Self.reversed(Self.load(real + (m - k - 3)))
                let d = Self.reversed(Self.load(imag + (m - k - 3)))
                let er = a + c, ei = b - d
                let dr = a - c, di = b + d
                let cr = Self.load(wr + k), ci = Self.load(wi + k)
                let orr = dr * cr + di * ci
                let oi = di * cr - dr * ci
                Self.store(ei + orr, ar + k)
                Self.store(er - oi, ai + k)
                k += 4
            }
            while k < m {
                bin(k)
                k += 1
            }
            let inB = complexFFT(ar, ai, br, bi, tw.baseAddress!)
            let zi: UnsafeMutablePointer<Float> = inB ? br : ar
            let zr: UnsafeMutablePointer<Float> = inB ? bi : ai
            var t = 0
            if m % 4 == 0 {
                let out = UnsafeMutableRawPointer(output)
                while t < m {
                    let r = Self.load(zr + t), i = Self.load(zi + t)
                    let x = V8(r[0], i[0], r[1], i[1], r[2], i[2], r[3], i[3])
                    if let window {
                        let w = UnsafeRawPointer(window).loadUnaligned(fromByteOffset: 8 * t, as: V8.self)
                        let o = out.loadUnaligned(fromByteOffset: 8 * t, as: V8.self)
                        out.storeBytes(of: o + x * w, toByteOffset: 8 * t, as: V8.self)
                    } else {
                        out.storeBytes(of: x, toByteOffset: 8 * t, as: V8.self)
                    }
                    t += 4
                }
            }
            while t < m {
                if let window {
                    output[2 * t] += zr[t] * window[2 * t]
                    output[2 * t + 1] += zi[t] * window[2 * t + 1]
                } else {
                    output[2 * t] = zr[t]
                    output[2 * t + 1] = zi[t]
                }
                t += 1
            }
        }
    }

    /// Forward complex FFT of `half` points from (xr, xi), ping-ponging with (yr, yi).
    /// Returns true when the result ended in (yr, yi).
    @inline(__always)
    private func complexFFT(
        _ xr: UnsafeMutablePointer<Float>, _ xi: UnsafeMutablePointer<Float>,
        _ yr: UnsafeMutablePointer<Float>, _ yi: UnsafeMutablePointer<Float>,
        _ tw: UnsafePointer<Float>
    ) -> Bool {
        var sr = xr, si = xi, dr = yr, di = yi
        var n = half, s = 1
        var t = tw
        var inY = false
        while n >= 4 {
            let q = n / 4
            if s == 1 {
                Self.radix4First(sr, si, dr, di, q, t)
            } else {
                Self.radix4(sr, si, dr, di, q, s, t)
            }
            t += 6 * q
            n = q
            s *= 4
            swap(&sr, &dr)
            swap(&si, &di)
            inY.toggle()
        }
        if n == 2 {
            Self.radix2Last(sr, si, dr, di, s)
            inY.toggle()
        }
        return inY
    }

    /// First radix-4 stage (stride 1): one butterfly per p, twiddles vary with p.
    @inline(__always)
    private static func radix4First(
        _ xr: UnsafeMutablePointer<Float>, _ xi: UnsafeMutablePointer<Float>,
        _ yr: UnsafeMutablePointer<Float>, _ yi: UnsafeMutablePointer<Float>,
        _ q: Int, _ tw: UnsafePointer<Float>
    ) {
        let w1r = tw, w1i = tw + q, w2r = tw + 2 * q, w2i = tw + 3 * q, w3r = tw + 4 * q, w3i = tw + 5 * q
        if q % 4 == 0 {
            // Four butterflies at once (lanes p…p+3); their 4×4 outputs are transposed so that
            // each butterfly's four results land next to each other.
            typealias V = SIMD4<Float>
            func ld(_ b: UnsafeMutablePointer<Float>, _ i: Int) -> V { load(b + i) }
            func ldc(_ b: UnsafePointer<Float>, _ i: Int) -> V { UnsafeRawPointer(b + i).loadUnaligned(as: V.self) }
            var p = 0
            while p < q {
                let ar = ld(xr, p), ai = ld(xi, p)
                let br = ld(xr, p + q), bi = ld(xi, p + q)
                let cr = ld(xr, p + 2 * q), ci = ld(xi, p + 2 * q)
                let dr = ld(xr, p + 3 * q), di = ld(xi, p + 3 * q)
                let apcR = ar + cr, apcI = ai + ci
                let amcR = ar - cr, amcI = ai - ci
                let bpdR = br + dr, bpdI = bi + di
                let jR = bi - di, jI = dr - br
                let x1r = amcR + jR, x1i = amcI + jI
                let x2r = apcR - bpdR, x2i = apcI - bpdI
                let x3r = amcR - jR, x3i = amcI - jI
                let c1r = ldc(w1r, p), c1i = ldc(w1i, p), c2r = ldc(w2r, p), c2i = ldc(w2i, p)
                let c3r = ldc(w3r, p), c3i = ldc(w3i, p)
                transposeStore(apcR + bpdR, x1r * c1r - x1i * c1i, x2r * c2r - x2i * c2i, x3r * c3r - x3i * c3i, yr + 4 * p)
                transposeStore(apcI + bpdI, x1r * c1i + x1i * c1r, x2r * c2i + x2i * c2r, x3r * c3i + x3i * c3r, yi + 4 * p)
                p += 4
            }
            return
        }
        for p in 0..<q {
            let ar = xr[p], ai = xi[p]
            let br = xr[p + q], bi = xi[p + q]
            let cr = xr[p + 2 * q], ci = xi[p + 2 * q]
            let dr = xr[p + 3 * q], di = xi[p + 3 * q]
            let apcR = ar + cr, apcI = ai + ci
            let amcR = ar - cr, amcI = ai - ci
            let bpdR = br + dr, bpdI = bi + di
            // −i·(b − d)
            let jR = bi - di, jI = dr - br
            let o = 4 * p
            yr[o] = apcR + bpdR
            yi[o] = apcI + bpdI
            let x1r = amcR + jR, x1i = amcI + jI
            let x2r = apcR - bpdR, x2i = apcI - bpdI
            let x3r = amcR - jR, x3i = amcI - jI
            yr[o + 1] = x1r * w1r[p] - x1i * w1i[p]
            yi[o + 1] = x1r * w1i[p] + x1i * w1r[p]
            yr[o + 2] = x2r * w2r[p] - x2i * w2i[p]
            yi[o + 2] = x2r * w2i[p] + x2i * w2r[p]
            yr[o + 3] = x3r * w3r[p] - x3i * w3i[p]
            yi[o + 3] = x3r * w3i[p] + x3i * w3r[p]
        }
    }

    /// A radix-4 stage with stride `s` (a multiple of 4): the inner loop runs over 4 lanes.
    @inline(__always)
    private static func radix4(
        _ xr: UnsafeMutablePointer<Float>, _ xi: UnsafeMutablePointer<Float>,
        _ yr: UnsafeMutablePointer<Float>, _ yi: UnsafeMutablePointer<Float>,
        _ q: Int, _ s: Int, _ tw: UnsafePointer<Float>
    ) {
        typealias V = SIMD4<Float>
        let w1r = tw, w1i = tw + q, w2r = tw + 2 * q, w2i = tw + 3 * q, w3r = tw + 4 * q, w3i = tw + 5 * q
        let m = s * q
        for p in 0..<q {
            let c1r = V(repeating: w1r[p]), c1i = V(repeating: w1i[p])
            let c2r = V(repeating: w2r[p]), c2i = V(repeating: w2i[p])
            let c3r = V(repeating: w3r[p]), c3i = V(repeating: w3i[p])
            let inBase = s * p
            let outBase = 4 * s * p
            var j = 0
            while j < s {
                let i0 = inBase + j
                let ar = load(xr + i0), ai = load(xi + i0)
                let br = load(xr + i0 + m), bi = load(xi + i0 + m)
                let cr = load(xr + i0 + 2 * m), ci = load(xi + i0 + 2 * m)
                let dr = load(xr + i0 + 3 * m), di = load(xi + i0 + 3 * m)
                let apcR = ar + cr, apcI = ai + ci
                let amcR = ar - cr, amcI = ai - ci
                let bpdR = br + dr, bpdI = bi + di
                let jR = bi - di, jI = dr - br
                let o = outBase + j
                store(apcR + bpdR, yr + o)
                store(apcI + bpdI, yi + o)
                let x1r = amcR + jR, x1i = amcI + jI
                let x2r = apcR - bpdR, x2i = apcI - bpdI
                let x3r = amcR - jR, x3i = amcI - jI
                store(x1r * c1r - x1i * c1i, yr + o + s)
                store(x1r * c1i + x1i * c1r, yi + o + s)
                store(x2r * c2r - x2i * c2i, yr + o + 2 * s)
                store(x2r * c2i + x2i * c2r, yi + o + 2 * s)
                store(x3r * c3r - x3i * c3i, yr + o + 3 * s)
                store(x3r * c3i + x3i * c3r, yi + o + 3 * s)
                j += 4
            }
        }
    }

    /// The last stage when `log2(half)` is odd: radix 2 with n = 2 (no twiddles), stride `s`.
    @inline(__always)
    private static func radix2Last(
        _ xr: UnsafeMutablePointer<Float>, _ xi: UnsafeMutablePointer<Float>,
        _ yr: UnsafeMutablePointer<Float>, _ yi: UnsafeMutablePointer<Float>, _ s: Int
    ) {
        if s < 4 {
            for j in 0..<s {
                let ar = xr[j], ai = xi[j], br = xr[j + s], bi = xi[j + s]
                yr[j] = ar + br
                yi[j] = ai + bi
                yr[j + s] = ar - br
                yi[j + s] = ai - bi
            }
            return
        }
        var j = 0
        while j < s {
            let ar = load(xr + j), ai = load(xi + j), br = load(xr + j + s), bi = load(xi + j + s)
            store(ar + br, yr + j)
            store(ai + bi, yi + j)
            store(ar - br, yr + j + s)
            store(ai - bi, yi + j + s)
            j += 4
        }
    }

    /// Stores rows r0…r3 (one value per lane) transposed: lane l's four values go to
    /// `p[4l ..< 4l + 4]`.
    // Not inlined on purpose: inlined, the optimiser folds the lane moves into the butterfly
    // arithmetic and turns it into scalar code (measured: 361 instructions per 4 butterflies).
    @inline(never)
    private static func transposeStore(
        _ r0: SIMD4<Float>, _ r1: SIMD4<Float>, _ r2: SIMD4<Float>, _ r3: SIMD4<Float>,
        _ p: UnsafeMutablePointer<Float>
    ) {
        // Unpack low/high pairs, then move halves: the shuffles SSE has for a 4×4 transpose.
        let t0 = SIMD4(r0[0], r1[0], r0[1], r1[1]), t1 = SIMD4(r0[2], r1[2], r0[3], r1[3])
        let t2 = SIMD4(r2[0], r3[0], r2[1], r3[1]), t3 = SIMD4(r2[2], r3[2], r2[3], r3[3])
        store(SIMD4(t0[0], t0[1], t2[0], t2[1]), p)
        store(SIMD4(t0[2], t0[3], t2[2], t2[3]), p + 4)
        store(SIMD4(t1[0], t1[1], t3[0], t3[1]), p + 8)
        store(SIMD4(t1[2], t1[3], t3[2], t3[3]), p + 12)
    }

    @inline(__always)
    private static func reversed(_ v: SIMD4<Float>) -> SIMD4<Float> {
        SIMD4(v[3], v[2], v[1], v[0])
    }

    @inline(__always)
    private static func load(_ p: UnsafePointer<Float>) -> SIMD4<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self)
    }

    @inline(__always)
    private static func load(_ p: UnsafeMutablePointer<Float>) -> SIMD4<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self)
    }

    @inline(__always)
    private static func store(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD4<Float>.self)
    }
}
