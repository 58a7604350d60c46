import CSampleRate
import CSoxr
import SegnoCore
import SegnoDSP

/// `resample: { rate: 16000, quality: soxr-vhq }`: a streaming sample-rate converter.
/// The output has exactly `round(inputFrames × rate / inputRate)` frames, time-aligned with the input.
public struct ResampleConfig: TransformConfig {
    public var fixedRate: Int? { rate }
    /// segno's own polyphase resampler saves its state; libsoxr's converter restarts on its grid
    /// (decision 0100); libsamplerate's can do neither.
    public var savesState: Bool { quality == .polyphase || restartsOnGrid }
    public var restartsOnGrid: Bool { quality == .soxrVHQ || quality == .soxrHQ }
    /// It changes the rate: a converter after it does not see the source's frames.
    public var holdsFrames: Bool { true }
    /// libsoxr's very-high (the default: flat to 0.01 dB up to 91 % of the lower Nyquist, aliases
    /// and images below −150 dB) or high preset; libsamplerate's sinc converters (best / medium /
    /// fastest); or segno's own polyphase Kaiser-windowed sinc (96 dB stopband).
    public enum Quality: String, Sendable, CaseIterable {
        case soxrVHQ = "soxr-vhq"
        case soxrHQ = "soxr-hq"
        case best, medium, fast, polyphase

        /// The default when a spec or the command line names none.
        public static let standard = Quality.soxrVHQ
    }
    public let rate: Int
    public let quality: Quality
    public var name: String { "resample" }
    public var version: Int { 1 }
    public var options: [(String, String)] { [("rate", String(rate)), ("quality", quality.rawValue)] }
    /// Valid output rates, in Hz.
    public static let rateRange = 1000...384_000

    public static let declaration = StageDeclaration(
        key: "resample", kind: .transform, summary: "Converts the sample rate, time-aligned, to exactly round(frames × rate / input rate) frames.",
        options: [
            .init("rate", .wholeNumber, unit: "Hz", default: nil, .within(rateRange), help: "The output sample rate."),
            .init("quality", .choice, default: Quality.standard.rawValue, .oneOf(Quality.self),
                  help: "soxr-vhq/soxr-hq: libsoxr presets; best/medium/fast: libsamplerate's sinc converters; polyphase: segno's own."),
        ],
        shorthand: "`resample: 16000` is `{ rate: 16000 }`", example: "resample: { rate: 16000, quality: soxr-vhq }", capabilities: [.fixesRate])

    /// libsoxr's restart grids found for this stage's recordings (decision 0100).
    private let grids = SoxrRestartGrid.Cache()

    public init(rate: Int, quality: Quality = .standard) {
        self.rate = rate
        self.quality = quality
    }
    public func makeTransform() throws -> any Transform {
        switch quality {
        case .soxrVHQ: return SoxrResampleTransform(rate: rate, recipe: UInt(SOXR_VHQ), grids: grids)
        case .soxrHQ: return SoxrResampleTransform(rate: rate, recipe: UInt(SOXR_HQ), grids: grids)
        case .best: return ResampleTransform(rate: rate, converter: Int32(SRC_SINC_BEST_QUALITY))
        case .medium: return ResampleTransform(rate: rate, converter: Int32(SRC_SINC_MEDIUM_QUALITY))
        case .fast: return ResampleTransform(rate: rate, converter: Int32(SRC_SINC_FASTEST))
        case .polyphase: return PolyphaseResampleTransform(rate: rate)
        }
    }
}


/// `quality: best | medium | fast`: libsamplerate's streaming API.
final package class ResampleTransform: Transform {
    package let rate: Int
    /// libsamplerate's converter (`SRC_SINC_BEST_QUALITY` …).
    package let converter: Int32
    package var state: OpaquePointer?
    package var ratio = 1.0
    package var channels = 1
    package var passthrough = false
    package var inputFrames = 0
    package var outputFrames = 0
    package var buffer: [Float] = []

    package init(rate: Int, converter: Int32) {
        self.rate = rate
        self.converter = converter
    }

    deinit { if let s = state { src_delete(s) } }

    package func start(_ input: AudioFormat) throws -> AudioFormat {
        channels = input.channels
        passthrough = input.sampleRate == rate
        ratio = Double(rate) / Double(input.sampleRate)
        if !passthrough {
            guard ratio >= 1.0 / 256, ratio <= 256 else {
                throw StageStartError(stage: "resample", "\(input.sampleRate) Hz → \(rate) Hz is beyond libsamplerate's 256:1 limit")
            }
            var err: Int32 = 0
            state = src_new(converter, Int32(channels), &err)
            if state == nil { throw StageStartError(stage: "resample", String(cString: src_strerror(err))) }
        }
        return AudioFormat(sampleRate: rate, channels: channels)
    }

    /// The exact output length for the input seen so far.
    package var expectedOutput: Int { Int((Double(inputFrames) * ratio).rounded()) }

    package func process(_ block: inout AudioBlock) throws {
        if passthrough { return }
        inputFrames += block.frames
        try convert(&block, endOfInput: false)
    }

    package func finish(_ block: inout AudioBlock) throws {
        if passthrough { block.frames = 0; return }
        block.frames = 0
        try convert(&block, endOfInput: true)
        // Trim or pad to the exact length the input implies.
        block.trimOrPad(toFrames: expectedOutput - (outputFrames - block.frames), channels: channels)
        outputFrames = expectedOutput
    }

    /// Feeds `block` to libsamplerate until it is consumed, leaving the output in `block`.
    private func convert(_ block: inout AudioBlock, endOfInput: Bool) throws {
        let inFrames = block.frames
        let capacity = Int((Double(inFrames) * ratio).rounded(.up)) + 64
        let needed = (endOfInput ? max(capacity, 4096 + Int(ratio * 4096)) : capacity) * channels
        if buffer.count < needed { buffer = [Float](repeating: 0, count: needed) }
        var used = 0, produced = 0
        var err: Int32 = 0
        let ch = channels
        repeat {
            var data = SRC_DATA()
            let cap = buffer.count / ch - produced
            if cap <= 0 {
                buffer.append(contentsOf: repeatElement(0, count: buffer.count))
                continue
            }
            block.samples.withUnsafeBufferPointer { src in
                buffer.withUnsafeMutableBufferPointer { dst in
                    data.data_in = src.baseAddress.map { $0 + used * ch }
                    data.input_frames = inFrames - used
                    data.data_out = dst.baseAddress! + produced * ch
                    data.output_frames = cap
                    data.end_of_input = endOfInput ? 1 : 0
                    data.src_ratio = ratio
                    err = src_process(state, &data)
                }
            }
            if err != 0 { throw StageStartError(stage: "resample", String(cString: src_strerror(err))) }
            used += Int(data.input_frames_used)
            produced += Int(data.output_frames_gen)
            if endOfInput && data.output_frames_gen == 0 && used >= inFrames { break }
            if !endOfInput && used >= inFrames && data.output_frames_gen == 0 { break }
            if !endOfInput && used >= inFrames { break }
        } while true
        swap(&block.samples, &buffer)
        block.frames = produced
        outputFrames += produced
    }
}

/// `quality: polyphase`: SegnoDSP's `PolyphaseResampler`.
final package class PolyphaseResampleTransform: CheckpointingTransform {
    package let rate: Int
    package var resampler: PolyphaseResampler?
    package var output = AudioBlock(channels: 1)

    package init(rate: Int) { self.rate = rate }

    package func start(_ input: AudioFormat) throws -> AudioFormat {
        let ratio = Double(rate) / Double(input.sampleRate)
        guard ratio >= 1.0 / 256, ratio <= 256 else {
            throw StageStartError(stage: "resample", "\(input.sampleRate) Hz → \(rate) Hz is beyond the 256:1 limit")
        }
        if input.sampleRate != rate {
            resampler = PolyphaseResampler(inputRate: input.sampleRate, outputRate: rate, channels: input.channels)
            output = AudioBlock(channels: input.channels, capacity: 8192)
        }
        return AudioFormat(sampleRate: rate, channels: input.channels)
    }

    package func process(_ block: inout AudioBlock) throws {
        guard resampler != nil else { return }
        let frames = block.frames
        block.samples.withUnsafeBufferPointer { resampler!.process($0.baseAddress!, frames: frames, into: &output) }
        swap(&block, &output)
    }

    package func finish(_ block: inout AudioBlock) throws {
        resampler?.finish(into: &block)
    }

    package func save(into w: inout StateBytes.Writer) { resampler?.save(into: &w) }
    package func restore(from r: inout StateBytes.Reader) throws { try resampler?.restore(from: &r) }
}

extension ResampleConfig {
    /// The spec\'s options for this stage: every check, before any audio flows (SoX\'s getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let range = ResampleConfig.rateRange
        if v.isScalar { return ResampleConfig(rate: try v.int(in: range, unit: "Hz")) }
        let o = try v.options(declaredBy: declaration)
        return ResampleConfig(rate: try o["rate"]!.int(in: range, unit: "Hz"),
                              quality: try o["quality"]?.choice(ResampleConfig.Quality.self) ?? .standard)
    }
}

extension AudioBlock {
    /// A converter's last block, cut or padded with silence to `want` frames so the output has
    /// exactly the length the input implies. Called once, in `finish`.
    mutating package func trimOrPad(toFrames want: Int, channels: Int) {
        let have = frames
        if want < have { frames = max(0, want); return }
        guard want > have else { return }
        reserve(frames: want)
        samples.withUnsafeMutableBufferPointer { p in
            for i in (have * channels)..<(want * channels) { p[i] = 0 }
        }
        frames = want
    }
}
