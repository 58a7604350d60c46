import SegnoCore
import SegnoDSP

/// `mix: mono` averages the channels; `mix: stereo` duplicates mono and folds 3–8 channels
/// with the ITU-R BS.775 weights: a front or back centre at −3 dB into both sides, each
/// surround at −3 dB into its own side, LFE dropped, normalised so full scale stays full scale.
/// Layouts are taken in WAV/ffmpeg channel order: 3 = L R C, 4 = L R Ls Rs, 5 = L R C Ls Rs,
/// 6 = 5.1 (L R C LFE Ls Rs), 7 = 6.1 (L R C LFE Cs Ls Rs), 8 = 7.1 (L R C LFE Lb Rb Ls Rs).
/// More than 8 channels have no standard layout: even channels (0, 2, …) fold left and odd
/// channels right, each side averaged.
public struct MixConfig: TransformConfig {
    public var savesState: Bool { true }
    public enum Target: String, Sendable, CaseIterable { case mono, stereo }
    public static let declaration = StageDeclaration(
        key: "mix", kind: .transform, summary: "Mixes the channels down to mono or to stereo (ITU-R BS.775 fold-down of 3–8 channels).",
        options: [.init("to", .choice, default: nil, .oneOf(Target.self),
                        help: "mono: the mean of all channels; stereo: mono duplicated, 3–8 channels folded with the BS.775 weights (LFE dropped).")],
        shorthand: "`mix: mono` is `{ to: mono }`", example: "mix: { to: mono }")
    public let target: Target
    public var name: String { "mix" }
    public var version: Int { 1 }
    public var options: [(String, String)] { [("to", target.rawValue)] }
    public init(target: Target) { self.target = target }
    public func makeTransform() throws -> any Transform { MixTransform(target: target) }
}

final package class MixTransform: CheckpointingTransform {
    package let target: MixConfig.Target
    package var inChannels = 1
    package var outChannels = 1
    /// weights[out][in]
    package var weights: [[Float]] = []
    package var buffer: [Float] = []

    package init(target: MixConfig.Target) { self.target = target }

    package func start(_ input: AudioFormat) throws -> AudioFormat {
        inChannels = input.channels
        outChannels = target == .mono ? 1 : 2
        weights = Self.weights(from: inChannels, to: target)
        return AudioFormat(sampleRate: input.sampleRate, channels: outChannels)
    }

    static package func weights(from n: Int, to target: MixConfig.Target) -> [[Float]] {
        if target == .mono { return [[Float](repeating: 1 / Float(n), count: n)] }
        let c: Float = 0.70710678
        var l = [Float](repeating: 0, count: n), r = l
        switch n {
        case 1: l = [1]; r = [1]
        case 2: l = [1, 0]; r = [0, 1]
        case 3: l = [1, 0, c]; r = [0, 1, c]                     // L R C
        case 4: l = [1, 0, c, 0]; r = [0, 1, 0, c]               // L R Ls Rs
        case 5: l = [1, 0, c, c, 0]; r = [0, 1, c, 0, c]         // L R C Ls Rs
        case 6: l = [1, 0, c, 0, c, 0]; r = [0, 1, c, 0, 0, c]   // L R C LFE Ls Rs
        case 7: l = [1, 0, c, 0, c, c, 0]; r = [0, 1, c, 0, c, 0, c]             // L R C LFE Cs Ls Rs
        case 8: l = [1, 0, c, 0, c, 0, c, 0]; r = [0, 1, c, 0, 0, c, 0, c]       // L R C LFE Lb Rb Ls Rs
        default:
            for i in 0..<n { if i % 2 == 0 { l[i] = 1 } else { r[i] = 1 } }
        }
        let ls = l.reduce(0, +), rs = r.reduce(0, +)
        return [l.map { $0 / ls }, r.map { $0 / rs }]
    }

    package func process(_ block: inout AudioBlock) throws {
        if inChannels == outChannels && (inChannels == 1 || target == .stereo && inChannels == 2) { return }
        let frames = block.frames
        if buffer.count < frames * outChannels { buffer = [Float](repeating: 0, count: max(frames, 4096) * outChannels) }
        let inC = inChannels, outC = outChannels
        block.samples.withUnsafeBufferPointer { src in
            buffer.withUnsafeMutableBufferPointer { dst in
                for o in 0..<outC {
                    let w = weights[o]
                    w.withUnsafeBufferPointer { w in
                        for f in 0..<frames {
                            var acc: Float = 0
                            let base = f * inC
                            for ch in 0..<inC { acc += src[base + ch] * w[ch] }
                            dst[f * outC + o] = acc
                        }
                    }
                }
            }
        }
        swap(&block.samples, &buffer)
        block.channels = outC
        block.frames = frames
    }

    /// A mix keeps no state between blocks.
    package func save(into w: inout StateBytes.Writer) {}
    package func restore(from r: inout StateBytes.Reader) throws {}
}

extension MixConfig {
    /// The spec\'s options for this stage: every check, before any audio flows (SoX\'s getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        if v.isScalar { return MixConfig(target: try v.choice(MixConfig.Target.self)) }
        let o = try v.options(declaredBy: declaration)
        return MixConfig(target: try o["to"]!.choice(MixConfig.Target.self))
    }
}
