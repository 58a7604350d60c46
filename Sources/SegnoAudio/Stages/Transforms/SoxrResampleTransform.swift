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
final package class SoxrResampleTransform: Transform {
    package let rate: Int
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

    package init(rate: Int, recipe: UInt) {
        self.rate = rate
        self.recipe = recipe
    }

    deinit { if let s = soxr { soxr_delete(s) } }

    package func start(_ input: AudioFormat) throws -> AudioFormat {
        channels = input.channels
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
    }
}
