import Foundation

/// The time-stretch half of the pitch shifter: a phase vocoder with identity phase locking
/// (Laroche & Dolson, 1999) and phase reset on transients.
///
/// Analysis frame `j` is centred on input frame `round(j · analysisHop)` and its
/// resynthesis on output frame `j · hop`, so the output is the input stretched by
/// `hop / analysisHop` with input time `t` landing at output time `t · hop / analysisHop`.
/// Frames use a periodic Hann window of `size` points for both analysis and synthesis;
/// `hop` is `size / 4`, for which the squared window overlap-adds to a constant.
///
/// Phase locking: each spectral peak (a bin larger than its two neighbours on each side)
/// gets its instantaneous frequency from the phase advance since the previous frame, and
/// its synthesis phase advances by that frequency times `hop`; every bin in the peak's
/// region (up to the lowest bin between it and the next peak) is rotated by the same angle,
/// which keeps each partial's spectral shape, and so its waveform, intact. All channels
/// share one set of peaks and rotations (taken from their summed power and cross-spectra),
/// so the phase differences between channels, and with them the stereo image, are kept.
struct PhaseVocoder: Sendable {
    /// Frame length in frames (a power of two).
    let size: Int
    /// Synthesis hop in output frames (`size / 4`).
    let hop: Int
    /// Analysis hop in input frames (`hop` divided by the stretch factor).
    let analysisHop: Double
    /// Channels per frame.
    let channels: Int
    private let fft: RealFFT
    /// Analysis window, then synthesis window (scaled for the inverse FFT and the overlap).
    private let windows: [Float]
    /// Per-channel spectra, previous spectra, magnitudes, frame buffer, scratch, overlap-add.
    private var work: [Float]
    /// Rotation (synthesis minus analysis phase) of every bin in the last frame, in radians.
    private var rotation: [Double]
    /// Peak bins of the current frame (first `peakCount` valid), then region starts.
    private var peaks: [Int]
    /// Index of the next frame to make.
    private(set) var frame: Int
    /// Centre (input frame) of the previous frame, when there was one.
    private var previousCenter: Int?
    /// The transient detector's value for the previous frame.
    private var previousOnset: Float = 0

    private var bins: Int { size / 2 + 1 }

    init(size: Int, stretch: Double, channels: Int) {
        self.size = size
        self.hop = size / 4
        self.analysisHop = Double(size / 4) / stretch
        self.channels = channels
        self.fft = RealFFT(size: size)
        var w = [Float](repeating: 0, count: 2 * size)
        // Σ w² over frames `hop` apart is 3/8 · size/hop for a periodic Hann window.
        let overlapGain = 0.375 * Double(size) / Double(size / 4)
        for t in 0..<size {
            let v = 0.5 - 0.5 * cos(2 * Double.pi * Double(t) / Double(size))
            w[t] = Float(v)
            w[size + t] = Float(v / (Double(size) * overlapGain))
        }
        self.windows = w
        let b = size / 2 + 1
        self.work = [Float](repeating: 0, count: channels * 4 * b + 2 * b + 3 * size + channels * size)
        self.rotation = [Double](repeating: 0, count: b)
        self.peaks = [Int](repeating: 0, count: 2 * b + 2)
        self.frame = 1 - size / (2 * (size / 4))
    }

    /// Centre (absolute input frame) of analysis frame `j`.
    func center(_ j: Int) -> Int { Int((Double(j) * analysisHop).rounded()) }

    /// The first input frame the first analysis frame reads.
    var firstInput: Int { center(frame) - size / 2 }
    /// Absolute index of the first output frame.
    var firstOutput: Int { frame * hop - size / 2 }

    /// Makes every frame the held input allows, appends `hop` finished output frames per
    /// frame to `output`, and discards input no later frame needs.
    mutating func run(_ input: inout PlanarFIFO, _ output: inout PlanarFIFO) {
        while center(frame) + size / 2 <= input.end {
            processFrame(input, &output)
            frame += 1
            input.discard(before: center(frame) - size / 2)
        }
    }

    private mutating func processFrame(_ input: PlanarFIFO, _ output: inout PlanarFIFO) {
        let n = size, b = bins, ch = channels, hs = hop
        let c = center(frame)
        let h = previousCenter.map { c - $0 }
        previousCenter = c
        let fft = self.fft
        let inOffset = input.head + (c - n / 2 - input.start)
        let inCap = input.capacity
        var onset: Float = 0
        var reset = h == nil
        let lastOnset = previousOnset
        let outIndex = frame * hs - n / 2
        work.withUnsafeMutableBufferPointer { wp in
            let base = wp.baseAddress!
            let spec = base  // channel k: re at k*2b, im at k*2b + b
            let prev = base + ch * 2 * b
            let mag = base + ch * 4 * b
            let prevMag = mag + b
            let buf = prevMag + b
            let scratch = buf + n
            let ola = scratch + 2 * n
            windows.withUnsafeBufferPointer { winp in
                let win = winp.baseAddress!, syn = win + n
                input.storage.withUnsafeBufferPointer { ip in
                    for k in 0..<ch {
                        let src = ip.baseAddress! + k * inCap + inOffset
                        for t in 0..<n { buf[t] = src[t] * win[t] }
                        fft.forward(buf, real: spec + k * 2 * b, imag: spec + k * 2 * b + b, scratch: scratch)
                    }
                }
                // Power summed over channels; onset = share of bins that rose by more than 3 dB.
                for i in 0..<b { mag[i] = 0 }
                for k in 0..<ch {
                    let re = spec + k * 2 * b, im = re + b
                    for i in 0..<b { mag[i] += re[i] * re[i] + im[i] * im[i] }
                }
                // Onset: the share of this frame's power in bins that rose by more than 3 dB,
                // counted only when the frame as a whole got at least 3 dB louder.
                var total: Float = 0, previousTotal: Float = 0, risen: Float = 0
                var peakMag: Float = 0
                for i in 0..<b {
                    let m = mag[i]
                    total += m
                    previousTotal += prevMag[i]
                    peakMag = max(peakMag, m)
                    if m > 2 * prevMag[i] { risen += m }
                }
                let floor = max(peakMag * 1e-10, 1e-24)
                onset = total > 2 * previousTotal && total > 1e-20 ? risen / total : 0
                if onset > 0.5 && onset > lastOnset { reset = true }

                rotation.withUnsafeMutableBufferPointer { rp in
                    let rot = rp.baseAddress!
                    if reset {
                        for i in 0..<b { rot[i] = 0 }
                        prev.update(from: spec, count: ch * 2 * b)
                        prevMag.update(from: mag, count: b)
                        return
                    }
                    peaks.withUnsafeMutableBufferPointer { pp in
                        let count = Self.findPeaks(
                            spec: spec, prev: prev, mag: mag, rot: rot, peaks: pp.baseAddress!,
                            bins: b, channels: ch, size: n, hop: hs, analysisHop: h!, floor: floor)
                        // Keep this frame's analysis for the next one, then rotate it.
                        prev.update(from: spec, count: ch * 2 * b)
                        prevMag.update(from: mag, count: b)
                        Self.rotateRegions(spec: spec, rot: rot, peaks: pp.baseAddress!, count: count, bins: b, channels: ch)
                    }
                }
                for k in 0..<ch {
                    let o = ola + k * n
                    fft.inverse(real: spec + k * 2 * b, imag: spec + k * 2 * b + b, output: buf, scratch: scratch)
                    for t in 0..<n { o[t] += buf[t] * syn[t] }
                }
            }
            output.appendPlanar(ola, stride: n, frames: hs, at: outIndex)
            for k in 0..<ch {
                let o = ola + k * n
                o.update(from: o + hs, count: n - hs)
                (o + n - hs).update(repeating: 0, count: hs)
            }
        }
        previousOnset = onset
    }

    /// Identity phase locking, first half: finds the peaks of `mag` and their regions, and
    /// works out each peak's new rotation from its phase advance since `prev`. Writes the
    /// peak bins to `peaks[0..<count]`, the region starts to `peaks[b + 1 ..< b + 1 + count]`
    /// and each peak's rotation to `rot[peak]`; returns `count`.
    @inline(__always)
    private static func findPeaks(
        spec: UnsafeMutablePointer<Float>, prev: UnsafeMutablePointer<Float>,
        mag: UnsafeMutablePointer<Float>, rot: UnsafeMutablePointer<Double>,
        peaks: UnsafeMutablePointer<Int>, bins b: Int, channels ch: Int, size n: Int,
        hop hs: Int, analysisHop h: Int, floor: Float
    ) -> Int {
        // Peaks: larger than both neighbours on each side.
        var count = 0
        let last = b - 1
        for i in 0...last where mag[i] > floor {
            let m = mag[i]
            if i >= 1 && !(m > mag[i - 1]) { continue }
            if i >= 2 && !(m > mag[i - 2]) { continue }
            if i + 1 <= last && !(m >= mag[i + 1]) { continue }
            if i + 2 <= last && !(m >= mag[i + 2]) { continue }
            peaks[count] = i
            count += 1
        }
        let starts = peaks + (b + 1)
        let twoPi = 2 * Double.pi
        for q in 0..<count {
            let p = peaks[q]
            // Region start: the lowest bin between the previous peak and this one.
            var start = 0
            if q > 0 {
                var low = peaks[q - 1] + 1
                for i in low..<p where mag[i] < mag[low] { low = i }
                start = low
            }
            starts[q] = start
            // Phase advance of the peak since the previous frame, summed over channels.
            var dot: Float = 0, cross: Float = 0
            for k in 0..<ch {
                let re = spec + k * 2 * b, im = re + b
                let pr = prev + k * 2 * b, pi = pr + b
                dot += re[p] * pr[p] + im[p] * pi[p]
                cross += im[p] * pr[p] - re[p] * pi[p]
            }
            let advance = Double(atan2(cross, dot))
            let expected = twoPi * Double((p * h) % n) / Double(n)
            var deviation = (advance - expected).remainder(dividingBy: twoPi)
            if deviation.isNaN { deviation = 0 }
            // ω·(hs − h) with ω = 2πp/n + deviation/h; the bin part reduced mod 2π exactly.
            let binPart = twoPi * Double(((p * (hs - h)) % n + n) % n) / Double(n)
            rot[p] = (rot[p] + binPart + deviation * Double(hs - h) / Double(h)).remainder(dividingBy: twoPi)
        }
        return count
    }

    /// Identity phase locking, second half: rotates every bin of each peak's region by the
    /// peak's rotation and records it as the bin's rotation.
    @inline(__always)
    private static func rotateRegions(
        spec: UnsafeMutablePointer<Float>, rot: UnsafeMutablePointer<Double>,
        peaks: UnsafeMutablePointer<Int>, count: Int, bins b: Int, channels ch: Int
    ) {
        let starts = peaks + (b + 1)
        for q in 0..<count {
            let p = peaks[q]
            let start = starts[q]
            let end = q + 1 < count ? starts[q + 1] : b
            let r = rot[p]
            let cr = Float(cos(r)), ci = Float(sin(r))
            for k in 0..<ch {
                let re = spec + k * 2 * b, im = re + b
                for i in start..<end {
                    let xr = re[i], xi = im[i]
                    re[i] = xr * cr - xi * ci
                    im[i] = xr * ci + xi * cr
                }
            }
            for i in start..<end { rot[i] = r }
        }
    }
}
