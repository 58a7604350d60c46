import Foundation

/// The time-stretch half of the pitch shifter: a phase vocoder with identity phase locking
/// (Laroche & Dolson, 1999) and transients copied rather than stretched.
///
/// Analysis frame `j` is centred on input frame `round(j · analysisHop)` and its
/// resynthesis on output frame `j · hop`, so the output is the input stretched by
/// `hop / analysisHop` with input time `t` landing at output time `t · hop / analysisHop`.
/// Frames use a periodic Hann window of `size` points for both analysis and synthesis;
/// `hop` is `size / 4`, for which the squared window overlap-adds to a constant.
///
/// Phase locking: each spectral peak (a bin larger than its two neighbours on each side)
/// gets its instantaneous frequency from its phase advance since the previous frame, and
/// its synthesis phase advances by that frequency times `hop`; every bin in the peak's
/// region (the bins nearer to it than to the next peaks) is rotated by the same angle,
/// which keeps each partial's spectral shape, and so its waveform, intact. All channels
/// share one set of peaks and rotations (taken from their summed power and cross-spectra),
/// so the phase differences between channels, and with them the stereo image, are kept.
/// When the analysis hop exceeds half a frame (stretch below 0.5) the phase advance would be
/// ambiguous, so it is measured against an extra frame `hop` frames earlier instead.
///
/// Transients: a frame that got louder and in which more than 40 % of the bins (those within
/// 90 dB of the largest) rose by 6 dB or more, a larger share than in the frame before, holds
/// a new transient. Its position in the frame comes from the phase slope across the bins that rose,
/// and is mapped to its output time. In every frame that still holds it, the bins it
/// dominates (3 dB above their power before it) get the linear phase that moves it from where
/// it sits in the analysis frame to where it belongs in the synthesis frame (or are left out
/// when that is outside the frame), so all overlapping frames rebuild the attack at one
/// place instead of smearing it; steady partials under it stay phase-locked, undisturbed.
struct PhaseVocoder: Sendable {
    /// Frame length in frames (a power of two).
    let size: Int
    /// Synthesis hop in output frames (`size / 4`).
    let hop: Int
    /// Analysis hop in input frames (`hop` divided by the stretch factor).
    let analysisHop: Double
    /// Channels per frame.
    let channels: Int
    /// Offset back to the extra frame used to measure phase advances, when the analysis hop
    /// is too long for that (more than half a frame).
    private let referenceOffset: Int?
    private let fft: RealFFT
    /// Analysis window, synthesis window (scaled for the inverse FFT and the overlap), then
    /// cos and sin of 2π·t/size.
    private let windows: [Float]
    /// Spectra, reference spectra, magnitudes, rotations, per-peak values, the rotated
    /// spectra, FFT scratch and the overlap-add accumulators; offsets in `Layout`.
    private var work: [Float]
    /// Peak bins of the current frame.
    private var peaks: [Int]
    /// Index of the next frame to make.
    private(set) var frame: Int
    /// Centre (input frame) of the previous frame, when there was one.
    private var previousCenter: Int?
    /// The transient detector's value for the previous frame.
    private var previousOnset: Float = 0
    /// The last transient found, while frames still copy it.
    private var transient: Transient?

    private struct Transient {
        /// Input frame (absolute) of the transient.
        var input: Int
        /// Output frame it maps to.
        var output: Int
        /// Whether a frame has copied it yet.
        var copying: Bool
    }

    /// Offsets into `work`.
    private struct Layout {
        let spec, ref, alt, mag, prevMag, baseline, rot, peakA, peakB, peakC, peakD, peakE, out, scratch, ola, total: Int
        /// Floats per channel of the overlap-add accumulator: a frame plus `olaSpare` hops, so
        /// that finished output is moved to the front only every few frames.
        let olaLength: Int
        /// Spare floats after each per-bin slot.
        static let pad = 8
        init(size n: Int, channels ch: Int) {
            let b = n / 2 + 1
            spec = 0
            ref = spec + ch * 2 * b
            alt = ref + ch * 2 * b
            // Per-bin slots have room for `pad` more floats (`fillRegions` writes past the end).
            let slot = b + Layout.pad
            mag = alt + ch * 2 * b
            prevMag = mag + slot
            baseline = prevMag + slot
            rot = baseline + slot
            peakA = rot + slot
            peakB = peakA + slot
            peakC = peakB + slot
            peakD = peakC + slot
            peakE = peakD + slot
            out = peakE + slot
            scratch = out + ch * 2 * b
            ola = scratch + 2 * n
            olaLength = n + PhaseVocoder.olaSpare * (n / 4)
            total = ola + ch * olaLength
        }
    }

    private let layout: Layout
    /// Whether the spectrum and reference slots of `work` are swapped (the frame just analysed
    /// becomes the next frame's reference without a copy), and likewise `mag` and `prevMag`.
    private var specSwapped = false
    private var magSwapped = false
    /// Offset in each channel's accumulator of the current synthesis frame.
    private var olaPosition = 0
    /// Hops of finished output the accumulators hold before they are moved to the front.
    fileprivate static let olaSpare = 8

    init(size: Int, stretch: Double, channels: Int) {
        self.size = size
        self.hop = size / 4
        self.analysisHop = Double(size / 4) / stretch
        self.channels = channels
        self.referenceOffset = analysisHop > Double(size / 2) ? size / 4 : nil
        self.fft = RealFFT(size: size)
        var w = [Float](repeating: 0, count: 4 * size)
        // Σ w² over frames `hop` apart is 3/8 · size/hop for a periodic Hann window.
        let overlapGain = 0.375 * Double(size) / Double(size / 4)
        for t in 0..<size {
            let v = 0.5 - 0.5 * cos(2 * Double.pi * Double(t) / Double(size))
            w[t] = Float(v)
            w[size + t] = Float(v / (Double(size) * overlapGain))
            w[2 * size + t] = Float(cos(2 * Double.pi * Double(t) / Double(size)))
            w[3 * size + t] = Float(sin(2 * Double.pi * Double(t) / Double(size)))
        }
        self.windows = w
        self.layout = Layout(size: size, channels: channels)
        self.work = [Float](repeating: 0, count: layout.total)
        self.peaks = [Int](repeating: 0, count: size / 2 + 1)
        self.frame = 1 - size / (2 * (size / 4))
    }

    /// Writes the running state for a checkpoint (decision 0095): the frame counter, the
    /// previous frame's centre and onset, the transient being copied, which slots are swapped,
    /// and the whole work area (spectra, magnitudes, phases and the overlap-add accumulators;
    /// its scratch too, so a restored vocoder is the same bit for bit). Called between two blocks.
    func save(into w: inout StateBytes.Writer) {
        w.int(frame)
        w.int(previousCenter == nil ? 0 : 1)
        w.int(previousCenter ?? 0)
        w.floats([previousOnset])
        w.int(transient == nil ? 0 : 1)
        w.int(transient?.input ?? 0)
        w.int(transient?.output ?? 0)
        w.int(transient?.copying == true ? 1 : 0)
        w.int(specSwapped ? 1 : 0)
        w.int(magSwapped ? 1 : 0)
        w.int(olaPosition)
        w.floats(work)
        w.int(peaks.count)
        for p in peaks { w.int(p) }
    }

    /// Takes the state `save` wrote from a vocoder of the same size, stretch and channels.
    /// Called on a fresh vocoder before its first frame.
    mutating func restore(from r: inout StateBytes.Reader) throws(StateBytes.Mismatch) {
        let frame = try r.int("vocoder frame")
        let hasCenter = try r.int("vocoder centre flag") != 0
        let center = try r.int("vocoder centre")
        let onset = try r.floats("vocoder onset", count: 1)[0]
        let hasTransient = try r.int("transient flag") != 0
        let tInput = try r.int("transient input")
        let tOutput = try r.int("transient output")
        let tCopying = try r.int("transient copying") != 0
        let spec = try r.int("spectrum slots") != 0
        let mag = try r.int("magnitude slots") != 0
        let ola = try r.int("overlap-add position")
        guard ola >= 0, ola <= layout.olaLength else { throw StateBytes.Mismatch("overlap-add position \(ola)") }
        let work = try r.floats("vocoder work area", count: self.work.count)
        let n = try r.int("peak count")
        guard n == peaks.count else { throw StateBytes.Mismatch("\(n) peak slots, not \(peaks.count)") }
        var peaks = [Int](repeating: 0, count: n)
        for i in 0..<n { peaks[i] = try r.int("peak") }
        self.frame = frame
        previousCenter = hasCenter ? center : nil
        previousOnset = onset
        transient = hasTransient ? Transient(input: tInput, output: tOutput, copying: tCopying) : nil
        specSwapped = spec
        magSwapped = mag
        olaPosition = ola
        self.work = work
        self.peaks = peaks
    }

    /// Centre (absolute input frame) of analysis frame `j`.
    func center(_ j: Int) -> Int { Int((Double(j) * analysisHop).rounded()) }

    /// Input frames read before a frame's centre.
    private var lookBehind: Int { size / 2 + Self.copyReach * size + (referenceOffset ?? 0) }
    /// Input frames read after a frame's centre.
    private var lookAhead: Int { size / 2 + Self.copyReach * size }
    /// How far (in frame lengths) a transient's copy frame may sit from the frame's centre;
    /// enough for every stretch from 0.2 to 5.
    private static let copyReach = 2

    /// Input frames a frame needs held at once (its reach back and ahead, and one hop); the
    /// FIFO feeding the vocoder should hold several chunks more, so that it seldom compacts.
    var inputSpan: Int { lookBehind + lookAhead + Int(analysisHop.rounded(.up)) }

    /// The first input frame the first analysis frame reads.
    var firstInput: Int { center(frame) - lookBehind }
    /// Absolute index of the first output frame.
    var firstOutput: Int { frame * hop - size / 2 }

    /// Makes every frame the held input allows, appends `hop` finished output frames per
    /// frame to `output`, and discards input no later frame needs.
    mutating func run(_ input: inout PlanarFIFO, _ output: inout PlanarFIFO) {
        while center(frame) + lookAhead <= input.end {
            processFrame(input, &output)
            frame += 1
            input.discard(before: center(frame) - lookBehind)
        }
    }

    private mutating func processFrame(_ input: PlanarFIFO, _ output: inout PlanarFIFO) {
        let n = size, b = n / 2 + 1, ch = channels, hs = hop, L = layout
        let c = center(frame)
        let refOffset = referenceOffset
        // Hop over which phase advances are measured: to the reference frame, or the last frame.
        let h = refOffset ?? previousCenter.map { c - $0 } ?? 0
        let realHop = previousCenter.map { c - $0 } ?? 0
        let first = previousCenter == nil
        previousCenter = c
        let fft = self.fft
        let inOffset = input.head + (c - n / 2 - input.start)
        let inCap = input.capacity
        var onset: Float = 0
        let lastOnset = previousOnset
        let thisFrame = frame
        var current = transient
        let ha = analysisHop
        let outIndex = frame * hs - n / 2
        let olaLength = L.olaLength, olaPosition = self.olaPosition
        let specSwapped = self.specSwapped, magSwapped = self.magSwapped
        work.withUnsafeMutableBufferPointer { wp in
            let w = wp.baseAddress!
            let spec = w + (specSwapped ? L.ref : L.spec), ref = w + (specSwapped ? L.spec : L.ref)
            let mag = w + (magSwapped ? L.prevMag : L.mag), prevMag = w + (magSwapped ? L.mag : L.prevMag)
            let alt = w + L.alt, out = w + L.out
            let rot = w + L.rot, scratch = w + L.scratch, ola = w + L.ola
            var synthesis = spec
            var copyTransientNow = false
            windows.withUnsafeBufferPointer { winp in
                let win = winp.baseAddress!, syn = win + n
                input.storage.withUnsafeBufferPointer { ip in
                    for k in 0..<ch {
                        let src = ip.baseAddress! + k * inCap + inOffset
                        fft.forward(src, window: win, real: spec + k * 2 * b, imag: spec + k * 2 * b + b, scratch: scratch)
                        if let r = refOffset {
                            fft.forward(src - r, window: win, real: ref + k * 2 * b, imag: ref + k * 2 * b + b, scratch: scratch)
                        }
                    }
                }
                // Power summed over channels, then the onset measure.
                let peakMag = Self.power(spec: spec, mag: mag, bins: b, channels: ch)
                let floor = max(peakMag * 1e-9, 1e-24)
                onset = Self.onset(mag: mag, prevMag: prevMag, bins: b, floor: floor)
                // A note or sound that stops splatters too; only count frames that got louder.
                if onset > 0.4 && !Self.louder(mag: mag, prevMag: prevMag, bins: b) { onset = 0 }
                if !first && onset > 0.4 && onset > lastOnset {
                    // A transient entered this frame. Find where (the phase slope across the
                    // bins that rose is −2π·position/n), map it to its output time, and
                    // remember the power from before it.
                    let d = Self.transientOffset(spec: spec, mag: mag, prevMag: prevMag, bins: b, channels: ch, size: n)
                    let t = c + d
                    if current == nil || t > current!.input + hs / 2 {
                        let copying = current?.copying ?? false
                        current = Transient(input: t, output: Int((Double(t) * Double(hs) / ha).rounded()), copying: copying)
                        (w + L.baseline).update(from: prevMag, count: b)
                    }
                }
                if first {
                    for i in 0..<b { rot[i] = 0 }
                } else {
                    peaks.withUnsafeMutableBufferPointer { pp in
                        let count = Self.findPeaks(mag: mag, bins: b, floor: floor, peaks: pp.baseAddress!)
                        Self.advancePeaks(
                            spec: spec, ref: ref, rot: rot, peaks: pp.baseAddress!, count: count,
                            temps: (w + L.peakA, w + L.peakB, w + L.peakE, w + L.peakC, w + L.peakD),
                            bins: b, channels: ch, size: n, hop: hs, realHop: realHop, phaseHop: h)
                        let binCos = w + L.peakA, binSin = w + L.peakB
                        Self.fillRegions(
                            rot: rot, peaks: pp.baseAddress!, count: count,
                            rotations: w + L.peakE, phasors: (w + L.peakC, w + L.peakD), fill: (binCos, binSin),
                            bins: b)
                        if let tr = current {
                            let outputOffset = tr.output - thisFrame * hs
                            let base = w + L.baseline
                            let inputOffset = tr.input - c
                            if inputOffset < -n / 2 {
                                if tr.copying {
                                    // The first frame after: those bins carry on from the last
                                    // copy, each at its own frequency; phase locking takes over
                                    // from the next frame.
                                    Self.resumeBins(
                                        spec: spec, ref: ref, alt: alt, rot: rot, baseline: base,
                                        fill: (binCos, binSin), bins: b, channels: ch, size: n, hop: hs,
                                        phaseHop: h)
                                    current = nil
                                } else {
                                    current = nil
                                }
                            } else if outputOffset >= n / 2 {
                                // It belongs after this synthesis frame: the bins it dominates
                                // are left out here.
                                Self.suppressTransient(
                                    spec: spec, mag: mag, baseline: base, fill: (binCos, binSin),
                                    bins: b, channels: ch)
                            } else {
                                // While the transient is inside this analysis frame, and this
                                // synthesis frame is not wholly before it, the bins it dominates
                                // are copied from an analysis frame placed so that it sits where
                                // it belongs in the synthesis frame: around it the output is the
                                // input, moved.
                                let copyCenter = tr.input - outputOffset
                                if abs(copyCenter - c) > Self.copyReach * n {
                                    // Out of reach (extreme stretches only): leave it out.
                                    Self.suppressTransient(
                                        spec: spec, mag: mag, baseline: base, fill: (binCos, binSin),
                                        bins: b, channels: ch)
                                } else {
                                    assert(copyCenter - n / 2 >= input.start && copyCenter + n / 2 <= input.end)
                                    input.storage.withUnsafeBufferPointer { ip in
                                        for k in 0..<ch {
                                            let src = ip.baseAddress! + k * inCap + inOffset + (copyCenter - c)
                                            fft.forward(src, window: win, real: alt + k * 2 * b, imag: alt + k * 2 * b + b, scratch: scratch)
                                        }
                                    }
                                    copyTransientNow = true
                                    current!.copying = true
                                }
                            }
                        }
                        // The rotated spectra go to `out`: `spec` stays this frame's analysis,
                        // the next frame's reference. A transient's copy overrides its bins there.
                        Self.applyRotation(spec: spec, into: out, fill: (binCos, binSin), bins: b, channels: ch)
                        if copyTransientNow {
                            Self.copyTransient(
                                spec: out, alt: alt, mag: mag, baseline: w + L.baseline, rot: rot,
                                fill: (binCos, binSin), bins: b, channels: ch)
                        }
                        synthesis = out
                    }
                }
                for k in 0..<ch {
                    let o = ola + k * olaLength + olaPosition
                    fft.inverse(
                        real: synthesis + k * 2 * b, imag: synthesis + k * 2 * b + b, output: o, window: syn,
                        scratch: scratch)
                }
            }
            output.appendPlanar(ola + olaPosition, stride: olaLength, frames: hs, at: outIndex)
            // Everything past the last frame's end is still zero; when the next frame would run
            // past the accumulators' end, the partial sums move to the front.
            if olaPosition + hs + n > olaLength {
                for k in 0..<ch {
                    let o = ola + k * olaLength
                    o.update(from: o + olaPosition + hs, count: n - hs)
                    (o + n - hs).update(repeating: 0, count: olaLength - (n - hs))
                }
            }
        }
        self.olaPosition = olaPosition + hs + n > olaLength ? 0 : olaPosition + hs
        // This frame's analysis is the next frame's reference, its power the next one's
        // previous power: the slots swap instead of being copied.
        if referenceOffset == nil { self.specSwapped.toggle() }
        self.magSwapped.toggle()
        previousOnset = onset
        transient = current
    }

    /// Where a transient sits in the current frame, in frames from its centre: the phase
    /// step between neighbouring bins, summed over the bins that rose by 3 dB or more.
    @inline(__always)
    private static func transientOffset(
        spec: UnsafeMutablePointer<Float>, mag: UnsafeMutablePointer<Float>,
        prevMag: UnsafeMutablePointer<Float>, bins b: Int, channels ch: Int, size n: Int
    ) -> Int {
        var gr: Float = 0, gi: Float = 0
        for k in 0..<ch {
            let re = spec + k * 2 * b, im = re + b
            for i in 0..<(b - 1) where mag[i] > 2 * prevMag[i] {
                // X[i+1]·conj(X[i])
                gr += re[i + 1] * re[i] + im[i + 1] * im[i]
                gi += im[i + 1] * re[i] - re[i + 1] * im[i]
            }
        }
        let angle = Double(Foundation.atan2(gi, gr))  // −2π·t0/n, t0 from the frame start
        var t0 = -angle / (2 * Double.pi) * Double(n)
        if t0 < 0 { t0 += Double(n) }
        return Int(t0.rounded()) - n / 2
    }

    /// Fills `mag` with the power per bin summed over channels; returns the largest.
    @inline(__always)
    private static func power(
        spec: UnsafeMutablePointer<Float>, mag: UnsafeMutablePointer<Float>, bins b: Int, channels ch: Int
    ) -> Float {
        typealias V = SIMD4<Float>
        let vectorEnd = b & ~3
        for k in 0..<ch {
            let re = spec + k * 2 * b, im = re + b
            var i = 0
            while i < vectorEnd {
                let r = V.load(re + i), m = V.load(im + i)
                let p = r * r + m * m
                (k == 0 ? p : V.load(mag + i) + p).store(mag + i)
                i += 4
            }
            while i < b {
                let p = re[i] * re[i] + im[i] * im[i]
                mag[i] = k == 0 ? p : mag[i] + p
                i += 1
            }
        }
        var peak = V()
        var i = 0
        while i < vectorEnd {
            // A select, not `pointwiseMax` (compiled lane by lane with NaN checks).
            let m = V.load(mag + i)
            peak = peak.replacing(with: m, where: m .> peak)
            i += 4
        }
        var pk = peak.max()
        while i < b {
            pk = max(pk, mag[i])
            i += 1
        }
        return pk
    }

    /// Whether the frame's total power exceeds the previous frame's.
    @inline(__always)
    private static func louder(mag: UnsafeMutablePointer<Float>, prevMag: UnsafeMutablePointer<Float>, bins b: Int) -> Bool {
        var now: Double = 0, before: Double = 0
        for i in 0..<b {
            now += Double(mag[i])
            before += Double(prevMag[i])
        }
        return now > before
    }

    /// The transient detector: the share of bins above `floor` whose power rose by more than
    /// 6 dB since the previous frame (0…1).
    @inline(__always)
    private static func onset(
        mag: UnsafeMutablePointer<Float>, prevMag: UnsafeMutablePointer<Float>, bins b: Int, floor: Float
    ) -> Float {
        typealias V = SIMD4<Float>
        let vectorEnd = b & ~3
        let f = V(repeating: floor), one = V(repeating: 1)
        var present = V(), rising = V()
        var i = 0
        while i < vectorEnd {
            let m = V.load(mag + i), pm = V.load(prevMag + i)
            let above = m .> f
            present += V().replacing(with: one, where: above)
            rising += V().replacing(with: one, where: above .& (m .> 4 * pm))
            i += 4
        }
        var p = present.sum(), r = rising.sum()
        while i < b {
            if mag[i] > floor {
                p += 1
                if mag[i] > 4 * prevMag[i] { r += 1 }
            }
            i += 1
        }
        return p > 0 ? r / p : 0
    }

    /// Writes the bins of `mag` above `floor` that are larger than both neighbours on each
    /// side to `peaks`, in order; returns how many.
    @inline(__always)
    private static func findPeaks(
        mag: UnsafeMutablePointer<Float>, bins b: Int, floor: Float, peaks: UnsafeMutablePointer<Int>
    ) -> Int {
        typealias V = SIMD4<Float>
        var count = 0
        func isPeak(_ i: Int) -> Bool {
            let m = mag[i]
            if !(m > floor) { return false }
            if i >= 1 && !(m > mag[i - 1]) { return false }
            if i >= 2 && !(m > mag[i - 2]) { return false }
            if i + 1 < b && !(m >= mag[i + 1]) { return false }
            if i + 2 < b && !(m >= mag[i + 2]) { return false }
            return true
        }
        var i = 0
        while i < min(2, b) {
            if isPeak(i) { peaks[count] = i; count += 1 }
            i += 1
        }
        let f = V(repeating: floor)
        while i + 6 <= b {
            let m = V.load(mag + i)
            let mask = (m .> V.load(mag + i - 1)) .& (m .> V.load(mag + i - 2))
                .& (m .>= V.load(mag + i + 1)) .& (m .>= V.load(mag + i + 2)) .& (m .> f)
            // The mask's lanes as bits, then each lane written and counted without a branch
            // (reading the mask lane by lane was compiled to a branch per lane).
            let bits = Int((unsafeBitCast(mask, to: SIMD4<Int32>.self) & SIMD4<Int32>(1, 2, 4, 8)).wrappedSum())
            // No branch on `bits` either: in noise, peaks come too irregularly to predict.
            peaks[count] = i
            count &+= bits & 1
            peaks[count] = i + 1
            count &+= (bits >> 1) & 1
            peaks[count] = i + 2
            count &+= (bits >> 2) & 1
            peaks[count] = i + 3
            count &+= bits >> 3
            i += 4
        }
        while i < b {
            if isPeak(i) { peaks[count] = i; count += 1 }
            i += 1
        }
        return count
    }

    /// Identity phase locking, first half: each peak's frequency from its phase advance
    /// against `ref` over `phaseHop` frames, and its new rotation, advanced by that frequency
    /// times `hop − realHop` from its old rotation in `rot[peak]`. Leaves each peak's rotation
    /// in the third temporary and its phasor (cos, sin) in the last two, by peak number.
    @inline(__always)
    private static func advancePeaks(
        spec: UnsafeMutablePointer<Float>, ref: UnsafeMutablePointer<Float>,
        rot: UnsafeMutablePointer<Float>, peaks: UnsafeMutablePointer<Int>, count: Int,
        temps: (
            UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>,
            UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>
        ),
        bins b: Int, channels ch: Int, size n: Int, hop hs: Int, realHop h: Int, phaseHop hf: Int
    ) {
        let (dots, crosses, rotations, cosines, sines) = temps
        // Cross-spectrum at each peak, summed over channels.
        for q in 0..<count {
            let p = peaks[q]
            var dot: Float = 0, cross: Float = 0
            for k in 0..<ch {
                let re = spec + k * 2 * b, im = re + b
                let rr = ref + k * 2 * b, ri = rr + b
                dot += re[p] * rr[p] + im[p] * ri[p]
                cross += im[p] * rr[p] - re[p] * ri[p]
            }
            dots[q] = dot
            crosses[q] = cross
        }
        let binAngle = Float(2 * Double.pi / Double(n))
        let scale = Float(hs - h) / Float(hf)
        // Four peaks at a time (gathered, then scattered: peaks are distinct bins), lane for
        // lane the scalar arithmetic below.
        typealias V = SIMD4<Float>
        var q0 = 0
        while q0 + 4 <= count {
            let p0 = peaks[q0], p1 = peaks[q0 + 1], p2 = peaks[q0 + 2], p3 = peaks[q0 + 3]
            // The products reduced mod n in 32-bit lanes: wrapping keeps the low bits exact.
            let p = SIMD4<Int32>(Int32(truncatingIfNeeded: p0), Int32(truncatingIfNeeded: p1),
                                 Int32(truncatingIfNeeded: p2), Int32(truncatingIfNeeded: p3))
            let mask = SIMD4<Int32>(repeating: Int32(n - 1))
            let own = V(p &* Int32(truncatingIfNeeded: hf) & mask)
            let bin = V(p &* Int32(truncatingIfNeeded: hs - h) & mask)
            let old = V(rot[p0], rot[p1], rot[p2], rot[p3])
            let advance = FastMath.atan2(V.load(crosses + q0), V.load(dots + q0))
            let deviation = FastMath.wrap(advance - V(repeating: binAngle) * own)
            let binPart = V(repeating: binAngle) * bin
            let r = FastMath.wrap(old + FastMath.wrap(binPart) + deviation * V(repeating: scale))
            r.store(rotations + q0)
            let (sn, cs) = FastMath.sincos(r)
            cs.store(cosines + q0)
            sn.store(sines + q0)
            q0 += 4
        }
        for q in q0..<count {
            let p = peaks[q]
            let advance = FastMath.atan2(crosses[q], dots[q])
            // Deviation from the bin's own advance, 2π·p·hf/n (reduced mod n exactly).
            let deviation = FastMath.wrap(advance - binAngle * Float((p * hf) & (n - 1)))
            // ω·(hs − h) with ω = 2πp/n + deviation/hf.
            let binPart = binAngle * Float((p * (hs - h)) & (n - 1))
            let r = FastMath.wrap(rot[p] + FastMath.wrap(binPart) + deviation * scale)
            rotations[q] = r
            let (s, c) = FastMath.sincos(r)
            cosines[q] = c
            sines[q] = s
        }
    }

    /// Before a transient's output time reaches the synthesis frame: every bin whose power
    /// (`mag`) is 3 dB above `baseline` is zeroed.
    @inline(__always)
    private static func suppressTransient(
        spec: UnsafeMutablePointer<Float>, mag: UnsafeMutablePointer<Float>,
        baseline: UnsafeMutablePointer<Float>,
        fill: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>), bins b: Int, channels ch: Int
    ) {
        let (binCos, binSin) = fill
        for i in 0..<b where mag[i] > 2 * baseline[i] {
            binCos[i] = 0
            binSin[i] = 0
        }
    }

    /// For a transient's copy frame: every bin whose power here (`mag`) or in the copy (`alt`,
    /// summed over channels) is 3 dB above `baseline` takes the copy's value unrotated.
    @inline(__always)
    private static func copyTransient(
        spec: UnsafeMutablePointer<Float>, alt: UnsafeMutablePointer<Float>,
        mag: UnsafeMutablePointer<Float>,
        baseline: UnsafeMutablePointer<Float>, rot: UnsafeMutablePointer<Float>,
        fill: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>), bins b: Int, channels ch: Int
    ) {
        let (binCos, binSin) = fill
        for i in 0..<b {
            var p: Float = 0
            for k in 0..<ch {
                let re = alt + k * 2 * b, im = re + b
                p += re[i] * re[i] + im[i] * im[i]
            }
            guard max(p, mag[i]) > 2 * baseline[i] else { continue }
            for k in 0..<ch {
                spec[k * 2 * b + i] = alt[k * 2 * b + i]
                spec[k * 2 * b + b + i] = alt[k * 2 * b + b + i]
            }
            rot[i] = 0
            binCos[i] = 1
            binSin[i] = 0
        }
    }

    /// For the first frame after a transient's copy frames: each bin the last copy took
    /// (power in `alt` 3 dB above `baseline`) continues from the copy's phase at its own
    /// frequency (from its phase advance against `ref` over `phaseHop` frames):
    /// synthesis phase = phase in `alt` + ω·hop, so rotation = arg(alt·conj(spec)) + ω·hop.
    @inline(__always)
    private static func resumeBins(
        spec: UnsafeMutablePointer<Float>, ref: UnsafeMutablePointer<Float>,
        alt: UnsafeMutablePointer<Float>, rot: UnsafeMutablePointer<Float>,
        baseline: UnsafeMutablePointer<Float>,
        fill: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>),
        bins b: Int, channels ch: Int, size n: Int, hop hs: Int, phaseHop hf: Int
    ) {
        let (binCos, binSin) = fill
        let binAngle = Float(2 * Double.pi / Double(n))
        let scale = Float(hs) / Float(hf)
        for i in 0..<b {
            var p: Float = 0
            var dot: Float = 0, cross: Float = 0, adot: Float = 0, across: Float = 0
            for k in 0..<ch {
                let re = spec + k * 2 * b, im = re + b
                let rr = ref + k * 2 * b, ri = rr + b
                let ar = alt + k * 2 * b, ai = ar + b
                p += ar[i] * ar[i] + ai[i] * ai[i]
                dot += re[i] * rr[i] + im[i] * ri[i]
                cross += im[i] * rr[i] - re[i] * ri[i]
                adot += ar[i] * re[i] + ai[i] * im[i]
                across += ai[i] * re[i] - ar[i] * im[i]
            }
            guard p > 2 * baseline[i] else { continue }
            let deviation = FastMath.wrap(FastMath.atan2(cross, dot) - binAngle * Float((i * hf) & (n - 1)))
            let binPart = binAngle * Float((i * hs) & (n - 1))
            let r = FastMath.wrap(FastMath.atan2(across, adot) + binPart + deviation * scale)
            rot[i] = r
            let (sn, cs) = FastMath.sincos(r)
            binCos[i] = cs
            binSin[i] = sn
        }
    }

    /// Identity phase locking, second half: gives every bin of each peak's region (bins
    /// nearer to it than to the neighbouring peaks) the peak's phasor and rotation (`rot`,
    /// `fill`), from the per-peak values `advancePeaks` left.
    @inline(__always)
    private static func fillRegions(
        rot: UnsafeMutablePointer<Float>, peaks: UnsafeMutablePointer<Int>, count: Int,
        rotations: UnsafeMutablePointer<Float>, phasors: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>),
        fill: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>), bins b: Int
    ) {
        let (cosines, sines) = phasors
        let (binCos, binSin) = fill
        if count == 0 {
            for i in 0..<b {
                binCos[i] = 1
                binSin[i] = 0
            }
            return
        }
        // Four bins per store: a region's last store may run up to 7 bins into the next region
        // (written next, in order) or past the last bin (the slots have `Layout.pad` floats to
        // spare).
        typealias V = SIMD4<Float>
        var start = 0
        for q in 0..<count {
            let p = peaks[q]
            let end = q + 1 < count ? (p + peaks[q + 1] + 1) / 2 : b
            let rv = V(repeating: rotations[q]), cr = V(repeating: cosines[q]), ci = V(repeating: sines[q])
            // Eight bins unconditionally (most regions in noise are shorter; a loop exit that
            // depends on the region's length is mispredicted), then the rest.
            rv.store(rot + start)
            cr.store(binCos + start)
            ci.store(binSin + start)
            rv.store(rot + start + 4)
            cr.store(binCos + start + 4)
            ci.store(binSin + start + 4)
            var i = start + 8
            while i < end {
                rv.store(rot + i)
                cr.store(binCos + i)
                ci.store(binSin + i)
                i += 4
            }
            start = end
        }
    }

    /// Writes every channel's spectrum times the per-bin phasors to `out`.
    @inline(__always)
    private static func applyRotation(
        spec: UnsafeMutablePointer<Float>, into out: UnsafeMutablePointer<Float>,
        fill: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>), bins b: Int, channels ch: Int
    ) {
        typealias V = SIMD4<Float>
        let (binCos, binSin) = fill
        let vectorEnd = b & ~3
        for k in 0..<ch {
            let re = spec + k * 2 * b, im = re + b
            let oRe = out + k * 2 * b, oIm = oRe + b
            var i = 0
            while i < vectorEnd {
                let xr = V.load(re + i), xi = V.load(im + i)
                let cr = V.load(binCos + i), ci = V.load(binSin + i)
                (xr * cr - xi * ci).store(oRe + i)
                (xr * ci + xi * cr).store(oIm + i)
                i += 4
            }
            while i < b {
                let xr = re[i], xi = im[i]
                oRe[i] = xr * binCos[i] - xi * binSin[i]
                oIm[i] = xr * binSin[i] + xi * binCos[i]
                i += 1
            }
        }
    }
}

extension SIMD4<Float> {
    @inline(__always)
    static func load(_ p: UnsafeMutablePointer<Float>) -> Self {
        UnsafeRawPointer(p).loadUnaligned(as: Self.self)
    }

    @inline(__always)
    func store(_ p: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(p).storeBytes(of: self, as: Self.self)
    }
}

/// Float approximations for the vocoder's per-peak angles (errors below 4e-7 rad).
enum FastMath {
    /// Rounds to the nearest integer (ties to even) for |x| < 2^22, without a libm call.
    @inline(__always)
    static func roundNearest(_ x: Float) -> Float {
        let magic: Float = 12_582_912  // 1.5 · 2^23
        return (x + magic) - magic
    }

    /// `x` reduced to [−π, π].
    @inline(__always)
    static func wrap(_ x: Float) -> Float {
        let twoPi: Float = 6.283_185_307
        return x - twoPi * roundNearest(x * (1 / twoPi))
    }

    /// The angle of (x, y) in [−π, π].
    @inline(__always)
    static func atan2(_ y: Float, _ x: Float) -> Float {
        let ax = abs(x), ay = abs(y)
        let mx = max(ax, ay), mn = min(ax, ay)
        let a = mx > 0 ? mn / mx : 0
        let s = a * a
        var r: Float = 0.006_811_783_6
        r = r * s - 0.033_604_201
        r = r * s + 0.079_623_662
        r = r * s - 0.132_333_428
        r = r * s + 0.198_078_156
        r = r * s - 0.333_173_692
        r = r * s + 0.999_996_126
        r *= a
        r = ay > ax ? 1.570_796_327 - r : r
        r = x < 0 ? 3.141_592_654 - r : r
        return y < 0 ? -r : r
    }

    /// `roundNearest`, lane by lane.
    @inline(__always)
    static func roundNearest(_ x: SIMD4<Float>) -> SIMD4<Float> {
        let magic = SIMD4<Float>(repeating: 12_582_912)
        return (x + magic) - magic
    }

    /// `wrap`, lane by lane (the same arithmetic).
    @inline(__always)
    static func wrap(_ x: SIMD4<Float>) -> SIMD4<Float> {
        let twoPi: Float = 6.283_185_307
        return x - twoPi * roundNearest(x * (1 / twoPi))
    }

    /// `atan2`, lane by lane (the same arithmetic, branches as selects).
    @inline(__always)
    static func atan2(_ y: SIMD4<Float>, _ x: SIMD4<Float>) -> SIMD4<Float> {
        typealias V = SIMD4<Float>
        let signless = SIMD4<UInt32>(repeating: 0x7fff_ffff)
        let ax = unsafeBitCast(unsafeBitCast(x, to: SIMD4<UInt32>.self) & signless, to: V.self)
        let ay = unsafeBitCast(unsafeBitCast(y, to: SIMD4<UInt32>.self) & signless, to: V.self)
        // max and min as selects: `pointwiseMax` was left as a call.
        let yBigger = ay .> ax
        let mx = ax.replacing(with: ay, where: yBigger), mn = ay.replacing(with: ax, where: yBigger)
        let a = (mn / mx).replacing(with: 0, where: .!(mx .> 0))
        let s = a * a
        var r = V(repeating: 0.006_811_783_6)
        r = r * s - 0.033_604_201
        r = r * s + 0.079_623_662
        r = r * s - 0.132_333_428
        r = r * s + 0.198_078_156
        r = r * s - 0.333_173_692
        r = r * s + 0.999_996_126
        r *= a
        r = r.replacing(with: 1.570_796_327 - r, where: yBigger)
        r = r.replacing(with: 3.141_592_654 - r, where: x .< 0)
        return r.replacing(with: -r, where: y .< 0)
    }

    /// `sincos`, lane by lane (the same arithmetic, the quadrant as selects).
    @inline(__always)
    static func sincos(_ x: SIMD4<Float>) -> (SIMD4<Float>, SIMD4<Float>) {
        let q = roundNearest(x * 0.636_619_772)
        let r = (x - q * 1.570_796_251_3) - q * 7.549_789_415_9e-8
        let s2 = r * r
        let sn = r * (1 + s2 * (-0.166_666_374 + s2 * (0.008_331_584_7 + s2 * -0.000_194_621_19)))
        let cs = 1 + s2 * (-0.5 + s2 * (0.041_666_616 + s2 * (-0.001_388_662 + s2 * 0.000_024_379_97)))
        // The quadrant's swap and signs as bit masks on the floats' patterns (select by
        // and/or, negate by flipping the sign bit): comparisons into SIMD masks were compiled
        // lane by lane through memory.
        typealias U = SIMD4<UInt32>
        let k = unsafeBitCast(SIMD4<Int32>(Int32(q[0]), Int32(q[1]), Int32(q[2]), Int32(q[3])), to: U.self)
        let odd = U(repeating: 0) &- (k & 1)
        let sb = unsafeBitCast(sn, to: U.self), cb = unsafeBitCast(cs, to: U.self)
        let s = ((cb & odd) | (sb & ~odd)) ^ ((k & 2) &<< 30)
        let c = ((sb & odd) | (cb & ~odd)) ^ (((k &+ 1) & 2) &<< 30)
        return (unsafeBitCast(s, to: SIMD4<Float>.self), unsafeBitCast(c, to: SIMD4<Float>.self))
    }

    /// (sin x, cos x) for |x| ≤ about 2^20.
    @inline(__always)
    static func sincos(_ x: Float) -> (Float, Float) {
        let q = roundNearest(x * 0.636_619_772)
        // x − q·π/2 in two steps (Cody–Waite) to keep the reduced argument exact.
        let r = (x - q * 1.570_796_251_3) - q * 7.549_789_415_9e-8
        let s2 = r * r
        let sn = r * (1 + s2 * (-0.166_666_374 + s2 * (0.008_331_584_7 + s2 * -0.000_194_621_19)))
        let cs = 1 + s2 * (-0.5 + s2 * (0.041_666_616 + s2 * (-0.001_388_662 + s2 * 0.000_024_379_97)))
        switch Int(q) & 3 {
        case 0: return (sn, cs)
        case 1: return (cs, -sn)
        case 2: return (-sn, -cs)
        default: return (-cs, sn)
        }
    }
}
