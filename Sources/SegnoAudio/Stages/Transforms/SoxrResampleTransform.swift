import CSoxr
import SegnoCore
import SegnoDSP

/// `quality: soxr-vhq | soxr-hq`: libsoxr's streaming converter (linked dynamically), linear phase.
///
/// Alignment: soxr discards its own filter delay, so its first output frame is the input at
/// time 0 and an impulse comes out at the same time. `soxr_delay` counts the frames still held
/// inside (about 280 at 44.1 → 16 kHz after the first block); they come out when the input ends
/// (`soxr_process` with no input), and the total is then cut or padded to exactly
/// `round(inputFrames × rate / inputRate)` frames, as the other converters do.
/// Values depend only on the stream, not on the block sizes: soxr queues its input and filters
/// it in fixed-size pieces.
///
/// Checkpoints (decision 0100): libsoxr hands out no state, but a fresh converter restarted on its
/// grid (`SoxrRestartGrid`) and fed the same stream arrives at the very state of the unbroken pass;
/// the arrival is checked by the frames in and out and the last `arrivalFrames` output frames.
final package class SoxrResampleTransform: RestartingTransform {
    package let rate: Int
    package var name: String { "resample" }
    /// soxr's quality recipe: `SOXR_VHQ` (28-bit) or `SOXR_HQ` (20-bit).
    package let recipe: UInt
    /// `SOXR_HQ` (20-bit), for modules that do not link libsoxr themselves (the speech engines' input).
    package static let highQuality = UInt(SOXR_HQ)
    private var soxr: soxr_t?
    private var ratio = 1.0
    private var channels = 1
    private var inputFrames = 0
    private var outputFrames = 0
    /// Output storage, swapped with the block's after each call (both keep their capacity).
    private var buffer: [Float] = []
    /// Input frames handed to soxr per call, so the output per call is bounded.
    private static let chunk = 4096
    /// Output frames kept for the arrival check (decision 0100).
    static let arrivalFrames = 1024
    private var inputRate = 0
    /// The last `arrivalFrames` output frames, a ring (`tailAt`: the oldest), once a checkpoint asks.
    private var tail: [Float] = []
    private var tailAt = 0
    private var tailFrames = 0
    /// Where a restarted pass must arrive: frames in, frames out, the last output frames.
    private var arrival: (input: Int, output: Int, tail: [Float])?

    /// Where `restartGrid` looks first (the stage's, shared by its recordings); nil: search each time.
    private let grids: SoxrRestartGrid.Cache?

    package init(rate: Int, recipe: UInt, grids: SoxrRestartGrid.Cache? = nil) {
        self.rate = rate
        self.recipe = recipe
        self.grids = grids
    }

    deinit { if let s = soxr { soxr_delete(s) } }

    package func start(_ input: AudioFormat) throws -> AudioFormat {
        channels = input.channels
        inputRate = input.sampleRate
        ratio = Double(rate) / Double(input.sampleRate)
        guard ratio >= 1.0 / 256, ratio <= 256 else {
            throw StageStartError(stage: "resample", "\(input.sampleRate) Hz → \(rate) Hz is beyond the 256:1 limit")
        }
        if input.sampleRate != rate {
            var quality = soxr_quality_spec(recipe, 0)
            var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
            var runtime = soxr_runtime_spec(1)
            var error: soxr_error_t?
            soxr = soxr_create(Double(input.sampleRate), Double(rate), UInt32(channels), &error, &io, &quality, &runtime)
            if soxr == nil || error != nil {
                throw StageStartError(stage: "resample", "libsoxr: \(error.map { String(cString: $0) } ?? "cannot start")")
            }
        }
        return AudioFormat(sampleRate: rate, channels: channels)
    }

    /// The exact output length for the input seen so far.
    private var expectedOutput: Int { Int((Double(inputFrames) * ratio).rounded()) }

    package func process(_ block: inout AudioBlock) throws {
        guard soxr != nil else { return }
        inputFrames += block.frames
        try convert(&block, endOfInput: false)
    }

    package func finish(_ block: inout AudioBlock) throws {
        block.frames = 0
        guard soxr != nil else { return }
        try convert(&block, endOfInput: true)
        // soxr ends on the same frame count give or take one; make it exact.
        block.trimOrPad(toFrames: expectedOutput - (outputFrames - block.frames), channels: channels)
        outputFrames = expectedOutput
    }

    /// Feeds `block` to soxr (or, at the end, flushes it), leaving the output in `block`.
    private func convert(_ block: inout AudioBlock, endOfInput: Bool) throws {
        let ch = channels
        let inFrames = block.frames
        if inFrames == 0 && !endOfInput { return }
        // Room for one call's output: what soxr holds plus what one chunk adds.
        let perCall = Int(soxr_delay(soxr).rounded(.up)) + Int((Double(Self.chunk) * ratio).rounded(.up)) + 64
        var used = 0, produced = 0
        repeat {
            if buffer.count < (produced + perCall) * ch {
                buffer.append(contentsOf: repeatElement(0, count: max((produced + perCall) * ch - buffer.count, buffer.count)))
            }
            let n = endOfInput ? 0 : min(Self.chunk, inFrames - used)
            let room = buffer.count / ch - produced
            var idone = 0, odone = 0
            let failure = block.samples.withUnsafeBufferPointer { src in
                buffer.withUnsafeMutableBufferPointer { dst in
                    soxr_process(soxr, endOfInput ? nil : UnsafeRawPointer(src.baseAddress! + used * ch), n, &idone,
                                 UnsafeMutableRawPointer(dst.baseAddress! + produced * ch), room, &odone)
                }
            }
            if let failure { throw StageStartError(stage: "resample", "libsoxr: \(String(cString: failure))") }
            used += idone
            produced += odone
            // Done when every input frame is taken and soxr left room unused (it has no more to give).
            if used >= inFrames && odone < room { break }
        } while true
        swap(&block.samples, &buffer)
        block.frames = produced
        outputFrames += produced
        if !tail.isEmpty { keepTail(block) }
    }

    /// Copies the block's last frames into the ring (at most two runs of samples).
    private func keepTail(_ block: AudioBlock) {
        let ch = channels, size = Self.arrivalFrames
        var from = max(0, block.frames - size)
        tail.withUnsafeMutableBufferPointer { ring in
            block.samples.withUnsafeBufferPointer { src in
                while from < block.frames {
                    let run = min(block.frames - from, size - tailAt)
                    (ring.baseAddress! + tailAt * ch).update(from: src.baseAddress! + from * ch, count: run * ch)
                    from += run
                    tailAt = (tailAt + run) % size
                }
            }
        }
        tailFrames = min(size, tailFrames + block.frames)
    }

    /// The ring's frames, oldest first.
    private var tailInOrder: [Float] {
        let ch = channels, size = Self.arrivalFrames
        let first = (tailAt - tailFrames + size) % size
        return (0..<tailFrames).flatMap { k in tail[((first + k) % size) * ch..<((first + k) % size) * ch + ch] }
    }

    package func restartGrid(sourceRate: Int) -> RestartGrid? {
        guard inputRate == sourceRate, inputRate > 0 else { return nil }
        tail = [Float](repeating: 0, count: Self.arrivalFrames * channels)
        return grids?.grid(inputRate: inputRate, outputRate: rate, recipe: recipe, tail: Self.arrivalFrames)
            ?? SoxrRestartGrid.find(inputRate: inputRate, outputRate: rate, recipe: recipe, tail: Self.arrivalFrames)
    }

    package func saveArrival(into w: inout StateBytes.Writer) {
        w.int(inputFrames)
        w.int(outputFrames)
        w.floats(tailInOrder)
    }

    package func restart(at frame: Int, arrival r: inout StateBytes.Reader) throws {
        let input = try r.int("frames in"), output = try r.int("frames out")
        let last = try r.floats("last frames")
        guard soxr == nil || (input >= frame && (frame * rate) % max(1, inputRate) == 0) else { throw StateBytes.Mismatch("resample cannot start at frame \(frame)") }
        arrival = (input, output, last)
        if soxr != nil { inputFrames = frame }
        outputFrames = soxr != nil ? frame * rate / inputRate : 0
        tail = [Float](repeating: 0, count: Self.arrivalFrames * channels)
        tailAt = 0
        tailFrames = 0
    }

    package func checkArrival() throws {
        guard let a = arrival else { return }
        arrival = nil
        guard a.input == inputFrames, a.output == outputFrames, a.tail.map(\.bitPattern) == tailInOrder.map(\.bitPattern) else {
            throw StateBytes.Mismatch("resample did not arrive where its checkpoint stood (\(inputFrames) frames in, \(outputFrames) out; the checkpoint: \(a.input), \(a.output))")
        }
    }
}
