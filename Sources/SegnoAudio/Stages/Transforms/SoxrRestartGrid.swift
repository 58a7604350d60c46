import CSoxr
import SegnoCore
import Synchronization

/// Finds where libsoxr can start afresh (decision 0100). libsoxr hands out no state, but it is a
/// chain of FIR stages with exact integer clocks: a fresh converter started at input frame `P` and
/// fed the same stream gives, after its filters fill, the unbroken pass's very samples — when `P`
/// is on the grid of every stage (its FFT blocks, its polyphase clock). The grid is not in the API,
/// so it is found by trying: one converter runs over noise from frame 0, and fresh ones from each
/// multiple of the smallest step that lands on a whole output frame, until one gives the same
/// samples bit for bit. The probe converts to Float64, so a grid one FFT block off (which would
/// change a Float32 sample only now and then) shows at once.
package enum SoxrRestartGrid {
    /// The longest grid period tried, in seconds of input; longer means no checkpoint.
    package static let maxPeriodSeconds = 30.0
    /// Output frames a fresh converter is given to fill its filters before it is compared, per
    /// output frame for each input frame when upsampling.
    static let warmUpOutputs = 8192
    /// Output frames compared after the warm-up.
    static let comparedOutputs = 8192
    /// A first, cheaper look at each candidate: most are off the grid and differ at once.
    static let quickWarmUpOutputs = 2048
    static let quickComparedOutputs = 256
    /// Candidates tried at most.
    static let maxCandidates = 20_000

    /// The grid for `inputRate` → `outputRate` with `recipe`, with room for the last `tail` output
    /// frames to be compared on arrival too; nil when none was found within `maxPeriodSeconds`.
    /// Takes up to about a second of CPU (the default 44.1 → 16 kHz: 11.1 s period).
    /// `maxPeriodSeconds` (tests lower it) bounds the search.
    package static func find(inputRate: Int, outputRate: Int, recipe: UInt, tail: Int,
                     maxPeriodSeconds: Double = SoxrRestartGrid.maxPeriodSeconds) -> RestartGrid? {
        // Equal rates: libsoxr is not used; the transform passes the stream through.
        if inputRate == outputRate { return RestartGrid(period: 1, warmUp: 1) }
        let ratio = Double(outputRate) / Double(inputRate)
        let step = inputRate / gcd(inputRate, outputRate)
        let outStep = outputRate / gcd(inputRate, outputRate)
        let scale = max(1, ratio)
        let warm = Int(Double(warmUpOutputs) * scale)
        let quick = Int(Double(quickWarmUpOutputs) * scale)
        let maxPeriod = min(Int(maxPeriodSeconds * Double(inputRate)), step * maxCandidates)
        guard let reference = Converter(inputRate, outputRate, recipe) else { return nil }
        var trial = [Double](repeating: 0, count: warm + comparedOutputs)
        // Output frames a fresh converter still held when it had given `need` (its latency, and
        // at most one chunk of input beyond): a resume's warm-up covers them too.
        var held = 0.0
        /// True when a fresh converter from `p` gives the reference's output from `warm` on, `compared` frames.
        func matches(_ p: Int, warm: Int, compared: Int) -> Bool {
            guard let fresh = Converter(inputRate, outputRate, recipe) else { return false }
            let need = warm + compared
            let got = fresh.run(from: p, into: &trial, count: need)
            held = max(held, fresh.held)
            let o = p / step * outStep
            guard got == need, reference.produce(upTo: o + need) else { return false }
            return reference.same(trial, from: warm, count: compared, at: o + warm)
        }
        var p = step
        while p <= maxPeriod {
            reference.forget(before: p / step * outStep)
            if matches(p, warm: quick, compared: quickComparedOutputs), matches(p, warm: warm, compared: comparedOutputs),
               matches(2 * p, warm: warm, compared: comparedOutputs) {
                return RestartGrid(period: p, warmUp: Int(((Double(warm + tail) + held) / ratio).rounded(.up)) + 1)
            }
            p += step
        }
        return nil
    }

    private static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }

    /// Grids found so far, by conversion (nil: none found), shared by the transforms of one
    /// `resample` stage: each long recording of a run would otherwise search again.
    package final class Cache: Sendable {
        private let grids = Mutex<[[Int]: RestartGrid?]>([:])
        package init() {}

        /// The grid for the conversion, searched for on first use (outside the lock: two workers
        /// may search at once and agree).
        func grid(inputRate: Int, outputRate: Int, recipe: UInt, tail: Int) -> RestartGrid? {
            let key = [inputRate, outputRate, Int(recipe), tail]
            if let known = grids.withLock({ $0[key] }) { return known }
            let found = SoxrRestartGrid.find(inputRate: inputRate, outputRate: outputRate, recipe: recipe, tail: tail)
            grids.withLock { $0[key] = .some(found) }
            return found
        }
    }

    /// The probe's noise: a hash of the frame's index, so any stretch can be made without the rest.
    static func noise(_ i: Int) -> Double {
        var x = UInt64(truncatingIfNeeded: i) &+ 0x9E37_79B9_7F4A_7C15
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        x ^= x >> 31
        return Double(x >> 11) / Double(1 << 53) - 0.5
    }

    /// One mono converter to Float64 over the noise.
    private final class Converter {
        private let soxr: soxr_t
        private var fed = 0
        private var input = [Double](repeating: 0, count: 4096)
        /// The reference's kept output: frames `base ..< base + kept.count`.
        private var kept: [Double] = []
        private var base = 0

        init?(_ inputRate: Int, _ outputRate: Int, _ recipe: UInt) {
            var quality = soxr_quality_spec(recipe, 0)
            var io = soxr_io_spec(SOXR_FLOAT64_I, SOXR_FLOAT64_I)
            var runtime = soxr_runtime_spec(1)
            var error: soxr_error_t?
            guard let s = soxr_create(Double(inputRate), Double(outputRate), 1, &error, &io, &quality, &runtime), error == nil else { return nil }
            soxr = s
        }
        deinit { soxr_delete(soxr) }

        /// Output frames fed for but not yet given out.
        var held: Double { soxr_delay(soxr) }

        /// Feeds the noise from frame `start` (on the first call) until `count` frames came out into `out`.
        func run(from start: Int, into out: inout [Double], count: Int) -> Int {
            if fed == 0 { fed = start }
            var got = 0
            var rounds = 0
            while got < count && rounds < 1 << 20 {
                rounds += 1
                for k in 0..<input.count { input[k] = SoxrRestartGrid.noise(fed + k) }
                var idone = 0, odone = 0
                let failure = input.withUnsafeBufferPointer { src in
                    out.withUnsafeMutableBufferPointer { dst in
                        soxr_process(soxr, src.baseAddress, input.count, &idone, dst.baseAddress! + got, count - got, &odone)
                    }
                }
                if failure != nil { return got }
                fed += idone
                got += odone
            }
            return got
        }

        /// Runs the reference until its output reaches frame `end`.
        func produce(upTo end: Int) -> Bool {
            let have = base + kept.count
            guard end > have else { return true }
            var more = [Double](repeating: 0, count: end - have)
            let got = run(from: 0, into: &more, count: more.count)
            kept.append(contentsOf: more[0..<got])
            return got == more.count
        }

        /// Drops the reference's output before frame `frame` (no later candidate needs it).
        func forget(before frame: Int) {
            let drop = min(kept.count, frame - base)
            guard drop > 1 << 16 else { return }
            kept.removeFirst(drop)
            base += drop
        }

        /// True when `trial[from ..< from + count]` is bit for bit the reference's output from frame `at`.
        func same(_ trial: [Double], from: Int, count: Int, at: Int) -> Bool {
            guard at >= base, at - base + count <= kept.count else { return false }
            for k in 0..<count where trial[from + k].bitPattern != kept[at - base + k].bitPattern { return false }
            return true
        }
    }
}
