import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP

/// `denoise: { amount_db: 24, engine: deepfilter }` (or `denoise: true`): speech noise reduction.
/// `amount_db` is the most the noise is lowered (1…100 dB); `engine` is `deepfilter`
/// (DeepFilterNet3, the default), `rnnoise` or `speex` (no model, always installed).
/// Any rate and channel count: the stage resamples to the engines' 48 kHz and back (libsoxr),
/// denoises each channel on its own, and removes the engine's delay, so the output has exactly
/// the input's frames, lined up with it. The engines work in 10 s chunks over two lanes
/// (`DenoiseChunks`, decision 0099); a split recording denoises two chunks at once.
public struct DenoiseConfig: TransformConfig {
    public static let amountRange: ClosedRange<Double> = 1...100
    /// 24 dB: on speech in pink noise at 5 dB SNR, DeepFilterNet's PESQ-WB is 1.38 limited to
    /// 12 dB, 1.86 at 24 and 1.97 unlimited (`tools/speech_quality.py`), while a floor 24 dB
    /// down keeps pauses from falling to dead silence.
    public static let defaultAmount = 24.0
    public let amountDB: Double
    public let engine: DenoiseEngine
    package let locator: SpeechLocator
    public var name: String { "denoise" }
    public var version: Int { 1 }
    public var options: [(String, String)] { [("amount_db", canonicalNumber(amountDB)), ("engine", engine.rawValue)] }
    /// Lowering the noise lowers the level: `validate` warns when denoise follows normalize.
    public var changesLevel: Bool { true }

    public init(amountDB: Double = DenoiseConfig.defaultAmount, engine: DenoiseEngine = .standard, locator: SpeechLocator = .standard) {
        self.amountDB = amountDB
        self.engine = engine
        self.locator = locator
    }

    public func makeTransform() throws -> any Transform { DenoiseTransform(config: self) }
}

/// One recording's denoiser: 48 kHz in, 10 ms frames per channel through the engines in chunks
/// (`DenoiseChunks`, decision 0099), back out.
final package class DenoiseTransform: Transform, OverlappingStage {
    package let config: DenoiseConfig
    private var up = SoxrResampleTransform(rate: DenoiseEngine.rate, recipe: 0)
    private var down = SoxrResampleTransform(rate: DenoiseEngine.rate, recipe: 0)
    private var chunks: DenoiseChunks?
    private var overlapping = false
    private var channels = 1
    /// Input frames seen and output frames given, at the stream's rate: the output is made exactly as long.
    private var inputFrames = 0
    private var outputFrames = 0
    /// The engines' output, interleaved at 48 kHz; swapped with the block (no allocation per block).
    private var out = AudioBlock(channels: 1)

    /// Engine frames per chunk (`DenoiseChunks.chunkFrames`; tests make one chunk of a whole recording).
    private let chunkFrames: Int

    package init(config: DenoiseConfig, chunkFrames: Int = DenoiseChunks.chunkFrames) {
        self.config = config
        self.chunkFrames = chunkFrames
    }

    /// In a split recording two chunks are denoised at once (the output is the same).
    package func overlap() { overlapping = true }

    package func start(_ input: AudioFormat) throws -> AudioFormat {
        channels = input.channels
        let recipe = SoxrResampleTransform.highQuality
        up = SoxrResampleTransform(rate: DenoiseEngine.rate, recipe: recipe)
        down = SoxrResampleTransform(rate: input.sampleRate, recipe: recipe)
        _ = try up.start(input)
        _ = try down.start(AudioFormat(sampleRate: DenoiseEngine.rate, channels: channels))
        let config = config, channels = channels
        chunks = try DenoiseChunks(channels: channels, delay: config.engine.delay, chunkFrames: chunkFrames) {
            try (0..<channels).map { _ in try config.engine.make(amountDB: config.amountDB, locator: config.locator) }
        }
        if overlapping { chunks!.overlap() }
        out = AudioBlock(channels: channels, capacity: 8192)
        return input
    }

    package func process(_ block: inout AudioBlock) throws {
        inputFrames += block.frames
        try up.process(&block)
        out.frames = 0
        try block.samples.withUnsafeBufferPointer { try chunks!.append($0.baseAddress, frames: block.frames) }
        chunks!.emit(maxFrames: block.frames, into: &out)
        swap(&block, &out)
        try down.process(&block)
        outputFrames += block.frames
    }

    package func finish(_ block: inout AudioBlock) throws {
        var tail = AudioBlock(channels: channels, capacity: 0)
        try up.finish(&tail)
        out.frames = 0
        try tail.samples.withUnsafeBufferPointer { try chunks!.append($0.baseAddress, frames: tail.frames) }
        try chunks!.finish()
        chunks!.emit(maxFrames: nil, into: &out)
        swap(&block, &out)
        try down.process(&block)
        var rest = AudioBlock(channels: channels, capacity: 0)
        try down.finish(&rest)
        if rest.frames > 0 {
            block.reserve(frames: block.frames + rest.frames)
            let at = block.frames * channels, n = rest.frames * channels
            block.samples.withUnsafeMutableBufferPointer { dst in
                rest.samples.withUnsafeBufferPointer { dst.baseAddress!.advanced(by: at).update(from: $0.baseAddress!, count: n) }
            }
            block.frames += rest.frames
        }
        block.trimOrPad(toFrames: inputFrames - outputFrames, channels: channels)
        outputFrames = inputFrames
    }
}

extension DenoiseConfig {
    /// The spec's options for this stage: every check, before any audio flows (SoX's getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        if v.isScalar {
            guard try v.bool() else { throw v.error("denoise: false does nothing; remove the stage instead") }
            return DenoiseConfig()
        }
        let o = try v.options(declaredBy: declaration)
        return DenoiseConfig(amountDB: try o["amount_db"]?.double(in: amountRange, unit: "dB") ?? defaultAmount,
                             engine: try o["engine"]?.choice(DenoiseEngine.self) ?? .standard)
    }
}

extension DenoiseConfig {
    public static let declaration = StageDeclaration(
        key: "denoise", kind: .transform, summary: "Speech noise reduction (DeepFilterNet3, RNNoise or Speex), aligned with the input.",
        options: [
            .init("amount_db", .number, unit: "dB", default: canonicalNumber(defaultAmount), .within(amountRange), help: "The most the noise is lowered."),
            .init("engine", .choice, default: DenoiseEngine.standard.rawValue, .oneOf(DenoiseEngine.self),
                  help: "deepfilter (DeepFilterNet3), rnnoise, or speex (no model, always installed)."),
        ],
        shorthand: "`denoise: true` takes the defaults", example: "denoise: { amount_db: 24, engine: speex }", capabilities: [.changesLevel, .usesHelper])
}
