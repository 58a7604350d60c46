import Foundation
import SegnoAudio
import SegnoCore
import SegnoSources
import SegnoSpeech
import SegnoState

/// `segno convert`: one file through a chain of transforms into one encode tap, with the same
/// stages a spec uses.
public enum Convert {
    /// What a conversion did.
    public struct Result: Sendable {
        public var source: SourceInfo
        public var output: String
        public var sourceFrames: Int
        /// Warnings from the chain (normalize missing its target), for stderr.
        public var notes: [String] = []
        /// What salvage recovered and lost (`damaged: .salvage` on a damaged input); nil when read whole.
        public var salvaged: SalvageReport? = nil
        /// True when the recording ran split (`SplitRule`).
        public var split = false
    }

    /// Converts `input` to `output`. The output appears only when complete (temporary name,
    /// renamed). A long recording runs split when `split` says so for one pending recording. `reference` is a healthy recording from the same recorder, for a damaged MP4
    /// without its index (with `damaged: .salvage`). Throws `AudioError` or `StageStartError` naming the file.
    public static func run(input: String, output: String, tools: AudioTools, transforms: [any TransformConfig], encode: EncodeConfig,
                           damaged: DamagedPolicy = .fail, reference: String? = nil, split: SplitRule = SplitRule(mode: .auto),
                           isCancelled: @escaping () -> Bool = { false }) throws -> Result {
        let inAbs = URL(fileURLWithPath: input).standardizedFileURL.path
        let outAbs = URL(fileURLWithPath: output).standardizedFileURL.path
        if inAbs == outAbs {
            throw AudioError.unsupportedOutput(path: output, detail: "is the input file; choose another output name")
        }
        let source = FileSource(path: input, tools: tools, damaged: damaged, reference: reference)
        let decoder = try source.open(source.file)
        var context = RecordingContext(sourcePath: inAbs, relativePath: (inAbs as NSString).lastPathComponent,
                                       modified: Date(), source: decoder.info,
                                       outputRoot: (outAbs as NSString).deletingLastPathComponent)
        context.source = decoder.info
        let carried = source.metadata(source.file, pictures: encode.tags.keep)
        context.carry(carried)
        var notes: [String] = carried.warnings.map { "tags: \($0)" }
        var items: [ChainRecipe.Item] = transforms.map { .transform($0) }
        items.append(.tap(encode, paths: [outAbs]))
        var frames = 0
        var recipe = ChainRecipe(items: items)
        recipe.notes = { notes.append($0) }
        // One recording and idle cores: split as `segno run` would (decision 0085; the same bytes).
        let info = decoder.info
        let seconds: Double? = info.sampleRate > 0 && info.frames > 0 ? Double(info.frames) / Double(info.sampleRate) : nil
        recipe.pipelined = split.decide(seconds: seconds, pending: 1, hasTransform: !transforms.isEmpty).split
        _ = try recipe.run(open: source.passes(of: source.file, first: decoder), context: context,
                                              isCancelled: isCancelled) { frames = $0 }
        return Result(source: decoder.info, output: outAbs, sourceFrames: frames, notes: notes, salvaged: decoder.salvage, split: recipe.pipelined)
    }
}
