import Foundation
import SegnoCore
import SegnoDSP

/// `denoise`'s engines over a recording in chunks (decision 0099): the 48 kHz stream, each channel
/// on its own, is cut into chunks of `chunkFrames` engine frames (10 s); each chunk is denoised by
/// one of `lanes` engines in turn, which first hears the `warmFrames` before the chunk (0.5 s),
/// and fades in over the chunk before's continuation for `fadeFrames`. The chunks, lanes and
/// fades depend on the stream only, so the output is the same whether the chunks run one after
/// the other (one core) or two at a time (`overlap`, a split recording). A recording of one chunk
/// is denoised exactly as by one engine over the whole.
///
/// `append` once per block (48 kHz, interleaved), `emit` after it, `finish` once at the end. The
/// output lags the input by about a chunk; memory holds about five chunks per channel (9.6 MB).
package final class DenoiseChunks {
    /// Engine frames per chunk: 10 s at 48 kHz.
    static package let chunkFrames = 1000
    /// Engine frames a lane hears before its chunk: 0.5 s (PESQ-WB within 0.003 of one engine over
    /// the whole on 2 minutes of speech in pink noise; decision 0099).
    static package let warmFrames = 50
    /// Engine frames over which a chunk fades in over the chunk before's continuation (20 ms).
    static package let fadeFrames = 2
    /// Engines per channel, taking the chunks in turn: fixed, so the output does not depend on
    /// the cores.
    static package let lanes = 2

    private let frame = DenoiseEngine.frame
    /// Engine frames per chunk: `chunkFrames` (tests make one chunk of a whole recording).
    private let perChunk: Int
    private let channels: Int
    private let delay: Int
    private let fade: Int
    private let make: () throws -> [any FrameDenoiser]
    /// One reused job per lane; lane 1's engines are made when the second chunk is.
    private var jobs: [Job] = []
    private var overlapping = false
    /// The input per channel from sample `inputBase` on.
    private var input: [[Float]]
    private var inputBase = 0
    /// Samples per channel appended so far.
    package private(set) var fed = 0
    private var nextChunk = 0
    /// The job submitted and not yet collected.
    private var running: Job?
    /// The collected chunk's continuation past its end, per channel: the next chunk fades in over it.
    private var tail: [[Float]]
    /// Denoised samples per channel, ready to be given out from `readyStart`.
    private var ready: [[Float]]
    private var readyStart = 0
    private var emitted = 0
    private let weights: [Float]

    /// `make` gives one lane's engines, one per channel (called once per lane used).
    /// `delay` is the engines' delay in samples (a multiple of the frame).
    package init(channels: Int, delay: Int, chunkFrames: Int = DenoiseChunks.chunkFrames,
                 make: @escaping () throws -> [any FrameDenoiser]) throws {
        precondition(delay % DenoiseEngine.frame == 0 && chunkFrames > Self.warmFrames)
        perChunk = chunkFrames * DenoiseEngine.frame
        self.channels = channels
        self.delay = delay
        self.make = make
        let fade = Self.fadeFrames * DenoiseEngine.frame
        self.fade = fade
        input = Array(repeating: [], count: channels)
        tail = Array(repeating: [], count: channels)
        ready = Array(repeating: [], count: channels)
        weights = (0..<fade).map { m in Float(0.5 - 0.5 * cos(Double.pi * (Double(m) + 0.5) / Double(fade))) }
        jobs = [try Job(engines: make(), channels: channels)]
    }

    /// From now on two chunks are denoised at once, on threads of their own. Called at most once,
    /// before the first `append`.
    package func overlap() { overlapping = true }

    /// Takes `frames` interleaved 48 kHz frames; denoises every chunk whose input is complete.
    package func append(_ samples: UnsafePointer<Float>?, frames: Int) throws {
        guard frames > 0, let samples else { return }
        let ch = channels
        for c in 0..<ch {
            for f in 0..<frames { input[c].append(samples[f * ch + c]) }
        }
        fed += frames
        // A chunk is complete once the engine's delay and the fade past its end have arrived.
        while fed >= (nextChunk + 1) * perChunk + delay + fade {
            try schedule(end: nil)
        }
    }

    /// Called once after the last `append`: denoises the chunks left and waits for them.
    package func finish() throws {
        let end = (fed + frame - 1) / frame * frame
        while nextChunk * perChunk < end { try schedule(end: end) }
        if let r = running { collect(r) }
        running = nil
    }

    /// Moves up to `maxFrames` denoised frames (all when nil) to the end of `out`, interleaved;
    /// never more than were appended. Called after each `append` and after `finish`.
    package func emit(maxFrames: Int?, into out: inout AudioBlock) {
        var n = min(ready[0].count - readyStart, fed - emitted)
        if let maxFrames { n = min(n, maxFrames) }
        guard n > 0 else { return }
        out.reserve(frames: out.frames + n)
        let ch = channels, base = out.frames, from = readyStart
        out.samples.withUnsafeMutableBufferPointer { dst in
            for c in 0..<ch {
                ready[c].withUnsafeBufferPointer { r in
                    for i in 0..<n { dst[(base + i) * ch + c] = r[from + i] }
                }
            }
        }
        out.frames += n
        readyStart += n
        emitted += n
        if readyStart >= perChunk {
            for c in 0..<ch { ready[c].removeSubrange(0..<readyStart) }
            readyStart = 0
        }
    }

    /// Denoises chunk `nextChunk` (on its lane; on a thread when overlapping), then collects the
    /// chunk before it. `end`: the stream's frame-rounded end at `finish`, nil before it.
    private func schedule(end: Int?) throws {
        let j = nextChunk
        let a = j * perChunk
        let b = min((j + 1) * perChunk, end ?? Int.max)
        let last = end.map { b >= $0 } ?? false
        let s = max(0, a - Self.warmFrames * frame)
        let e = b + delay + (last ? 0 : fade)
        let lane = j % Self.lanes
        if lane >= jobs.count { jobs.append(try Job(engines: make(), channels: channels)) }
        let job = jobs[lane]
        job.prepare(from: s, keep: a..<(b + (last ? 0 : fade)), delay: delay)
        for c in 0..<channels {
            let lo = s - inputBase, hi = min(e, fed) - inputBase
            job.input[c].append(contentsOf: input[c][lo..<max(lo, hi)])
            job.input[c].append(contentsOf: repeatElement(0, count: e - s - max(0, hi - lo)))
        }
        job.chunkSamples = b - a
        nextChunk += 1
        // The next chunk's warm-up is all that is needed of what came before it.
        let keepFrom = min(fed, max(0, nextChunk * perChunk - Self.warmFrames * frame))
        if keepFrom > inputBase {
            for c in 0..<channels { input[c].removeSubrange(0..<(keepFrom - inputBase)) }
            inputBase = keepFrom
        }
        if overlapping {
            job.start()
            DispatchQueue.global(qos: .userInitiated).async { [job] in job.run() }
        } else {
            job.runHere()
        }
        if let r = running { collect(r) }
        running = job
    }

    /// Waits for `job`, fades it in over the chunk before's continuation and queues its samples.
    private func collect(_ job: Job) {
        job.wait()
        for c in 0..<channels {
            job.output[c].withUnsafeMutableBufferPointer { o in
                if tail[c].count == fade {
                    for m in 0..<fade { o[m] = tail[c][m] * (1 - weights[m]) + o[m] * weights[m] }
                }
            }
            ready[c].append(contentsOf: job.output[c][0..<job.chunkSamples])
            tail[c].removeAll(keepingCapacity: true)
            tail[c].append(contentsOf: job.output[c][job.chunkSamples...])
        }
    }

    /// One lane: its engines and the buffers of the chunk it denoises, reused chunk after chunk.
    /// Touched by one thread at a time: the transform's until `start`, the job's thread until
    /// `run` returns, the transform's again after `wait`.
    private final class Job: @unchecked Sendable {
        let engines: [any FrameDenoiser]
        var input: [[Float]]
        var output: [[Float]]
        /// The chunk's own samples per channel (what `output` holds past them is the fade's overlap).
        var chunkSamples = 0
        private var from = 0
        private var keep = 0..<0
        private var delay = 0
        private var frameOut = [Float](repeating: 0, count: DenoiseEngine.frame)
        private let done = NSCondition()
        private var busy = false

        init(engines: [any FrameDenoiser], channels: Int) {
            self.engines = engines
            input = Array(repeating: [], count: channels)
            output = Array(repeating: [], count: channels)
        }

        /// The chunk's input will start at sample `from`; the output kept is the samples `keep`.
        func prepare(from: Int, keep: Range<Int>, delay: Int) {
            self.from = from
            self.keep = keep
            self.delay = delay
            for c in input.indices {
                input[c].removeAll(keepingCapacity: true)
                output[c].removeAll(keepingCapacity: true)
            }
        }

        func start() {
            done.lock()
            busy = true
            done.unlock()
        }

        /// Denoises the chunk on the calling thread (a thread of its own when overlapping).
        func run() {
            runHere()
            done.lock()
            busy = false
            done.broadcast()
            done.unlock()
        }

        func wait() {
            done.lock()
            while busy { done.wait() }
            done.unlock()
        }

        /// Each channel through its engine, frame by frame, keeping the output of the samples `keep`.
        func runHere() {
            let n = DenoiseEngine.frame
            for c in input.indices {
                output[c].reserveCapacity(keep.count)
                let frames = input[c].count / n
                input[c].withUnsafeBufferPointer { x in
                    frameOut.withUnsafeMutableBufferPointer { o in
                        for i in 0..<frames {
                            engines[c].process(x.baseAddress! + i * n, o.baseAddress!)
                            // Output sample m of this frame is the input sample from + i·n + m − delay, denoised.
                            let first = from + i * n - delay
                            let lo = max(0, keep.lowerBound - first), hi = min(n, keep.upperBound - first)
                            if lo < hi { output[c].append(contentsOf: o[lo..<hi]) }
                        }
                    }
                }
            }
        }
    }
}
