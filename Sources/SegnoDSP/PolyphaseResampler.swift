/// A streaming sample-rate converter on the pitch shifter's Kaiser-windowed sinc (96 dB
/// stopband, exact polyphase when the rate ratio is a fraction with denominator ≤ 1024, as
/// 44.1 kHz → 16 kHz = 441/160 is): SegnoCore's `resample` stage with `quality: polyphase`.
///
/// Lifecycle: `init` when the stream's rate is known, `process` per block, `finish` once.
/// Output frame `m` is the input interpolated at time `m · inRate / outRate`, so the output is
/// aligned with the input, and exactly `round(inputFrames · outRate / inRate)` frames come out
/// in all. Values do not depend on how the input is split into blocks.
public struct PolyphaseResampler: Sendable {
    public let inputRate: Int
    public let outputRate: Int
    public let channels: Int
    private var resampler: SincResampler
    private var input: PlanarFIFO
    private var output: PlanarFIFO
    private var framesIn = 0
    private var framesOut = 0
    static let chunk = 4096

    /// Rates in Hz; the ratio must stay within 1/256…256.
    public init(inputRate: Int, outputRate: Int, channels: Int) {
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        let step = Double(inputRate) / Double(outputRate)
        let rs = SincResampler(step: step, sampleRate: min(inputRate, outputRate), firstOutput: 0)
        resampler = rs
        let cap = 4 * Self.chunk + Int(step * Double(Self.chunk))
        input = PlanarFIFO(channels: channels, capacity: cap, start: rs.firstInput(for: 0))
        input.appendZeros(-rs.firstInput(for: 0))
        output = PlanarFIFO(channels: channels, capacity: cap, start: 0)
    }

    /// Takes `frames` interleaved frames and replaces `block`'s contents with every output
    /// frame now ready (possibly none). Called once per block.
    public mutating func process(_ samples: UnsafePointer<Float>, frames: Int, into block: inout AudioBlock) {
        block.reset(channels: channels, capacity: 0)
        var done = 0
        while done < frames {
            let n = min(Self.chunk, frames - done)
            input.appendInterleaved(samples + done * channels, frames: n, at: framesIn)
            framesIn += n
            done += n
            resampler.run(&input, &output)
            drain(into: &block, limit: Int.max)
        }
    }

    /// Flushes the tail into `block` (replacing its contents). Called once, after the last block.
    public mutating func finish(into block: inout AudioBlock) {
        block.reset(channels: channels, capacity: 0)
        let total = Int((Double(framesIn) * Double(outputRate) / Double(inputRate)).rounded())
        while framesOut + output.count < total {
            input.appendZeros(Self.chunk)
            resampler.run(&input, &output)
        }
        drain(into: &block, limit: total - framesOut)
    }

    /// Writes the running state (the interpolator's next output, both queues, the frame counts)
    /// after the last block processed. Called between two blocks, for a checkpoint (decision 0095).
    public func save(into w: inout StateBytes.Writer) {
        w.int(resampler.next)
        input.save(into: &w)
        output.save(into: &w)
        w.int(framesIn)
        w.int(framesOut)
    }

    /// Takes the state `save` wrote from a resampler of the same rates and channels. Called on a
    /// fresh resampler before its first block.
    public mutating func restore(from r: inout StateBytes.Reader) throws(StateBytes.Mismatch) {
        let next = try r.int("resampler position")
        try input.restore(from: &r)
        try output.restore(from: &r)
        framesIn = try r.int("frames in")
        framesOut = try r.int("frames out")
        resampler.next = next
    }

    private mutating func drain(into block: inout AudioBlock, limit: Int) {
        framesOut += output.pop(into: &block, limit: limit)
    }
}
