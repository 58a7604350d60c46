import Foundation
import SegnoDSP

/// Where a stage stands in a chain.
public enum StageKind: String, Sendable, Codable {
    /// Takes blocks and gives blocks (mix, filters, pitch, resample, normalise).
    case transform
    /// Observes the stream where it stands and writes a file (encode, waveform, metadata).
    case tap
    /// Runs after the pass, on the files the taps produced.
    case upload
}

/// The validated options of one stage, as loaded from a spec or built from `convert` flags.
/// Immutable and shared by every worker; each recording gets fresh runtime objects from it,
/// so no state carries over from one recording to the next (SoX copies `priv` per flow the same way).
public protocol StageConfig: Sendable {
    /// The spec key, e.g. "lowpass".
    var name: String { get }
    /// Transform, tap or upload.
    var kind: StageKind { get }
    /// Bumped whenever the stage's output for the same options changes; part of fingerprints.
    var version: Int { get }
    /// The resolved options as ordered key/value pairs: printed by `validate`, hashed into
    /// fingerprints, compared by `--explain`. Values are canonical strings ("3400", "true").
    var options: [(String, String)] { get }
    /// True when the stage changes the level of what passes through (gain, filters, EQ, pitch):
    /// `validate` warns when one follows a `normalize`. Default false.
    var changesLevel: Bool { get }
    /// True when the stage sets the level (normalize): a level-changing stage after it undoes it.
    /// Default false.
    var setsLevel: Bool { get }
    /// The sample rate (Hz) every recording has after this stage (resample), else nil: what the
    /// loader checks downstream options against (a lowpass must stay below half of it).
    var fixedRate: Int? { get }
    /// The local folder template this stage copies outputs into (a `file://` upload), nil for
    /// none: the loader checks that its copies are not scanned as recordings. Default nil.
    var localFolder: PathTemplate? { get }
    /// True when the stage moves time (cuts, a tempo; decision 0072). Default false.
    var movesTime: Bool { get }
    /// True when the stage writes times on the stream it hears (subtitles): `validate` says so
    /// when one follows a stage that moves time. Default false.
    var writesStreamTimes: Bool { get }
}

extension StageConfig {
    public var changesLevel: Bool { false }
    public var setsLevel: Bool { false }
    public var fixedRate: Int? { nil }
    public var localFolder: PathTemplate? { nil }
    public var movesTime: Bool { false }
    public var writesStreamTimes: Bool { false }

    /// `name` followed by the options, as one stable line: `lowpass frequency=3400 order=4`.
    public var canonical: String {
        ([name + "@v\(version)"] + options.map { "\($0.0)=\($0.1)" }).joined(separator: " ")
    }
}

/// A stage config that makes transforms.
public protocol TransformConfig: StageConfig {
    /// A fresh transform for one recording. Called once per recording, on its worker.
    func makeTransform() throws -> any Transform
    /// True when the transforms it makes save their state for a checkpoint
    /// (`CheckpointingTransform`, decision 0095): what `--explain` says before any is made.
    /// Default false.
    var savesState: Bool { get }
    /// True when its transforms keep no state but restart on a grid (`RestartingTransform`,
    /// decision 0100); such a stage also says `savesState`. Default false.
    var restartsOnGrid: Bool { get }
    /// True when its transforms hand on fewer frames than they took while they fill (a latency
    /// kept inside, as the pitch shifter's) or change the rate: a transform that restarts on a
    /// grid cannot follow it in a checkpoint's lead. Default false.
    var holdsFrames: Bool { get }
}

extension TransformConfig {
    public var savesState: Bool { false }
    public var restartsOnGrid: Bool { false }
    public var holdsFrames: Bool { false }
}

/// A stage config that makes taps.
public protocol TapConfig: StageConfig {
    /// The path template of the file this tap writes (relative to the output root).
    var pathTemplate: PathTemplate { get }
    /// The files this tap writes for a recording (absolute; several for a multi-zoom waveform).
    /// Called once per recording before the tap is made.
    func resolvePaths(_ context: RecordingContext) throws(TemplateError) -> [String]
    /// A fresh tap for one recording, writing to `paths` (from `resolvePaths`). Called once per
    /// recording, on its worker.
    func makeTap(paths: [String], context: RecordingContext) throws -> any Tap
    /// True when the tap writes the source's pictures into its file, so their bytes must be read
    /// with the tags (an encode that keeps tags).
    var carriesPictures: Bool { get }
    /// True when the tap's result is a fingerprint kept in the state (`StateBackend.fingerprints`):
    /// the planner redoes the tap when the state lacks it, and `duplicates` reads it. Default false.
    var storesFingerprints: Bool { get }
    /// True when the tap's result is what was said (`transcribe`): the runner puts its text into
    /// the catalogue (`CatalogEntry.spoken`), from the run's result or, when the tap is up to date,
    /// from the `spokenText(fromOutputs:)` of its recorded files. Default false.
    var providesSpokenText: Bool { get }
    /// The searchable words of the tap's recorded output files (absolute paths): what was said
    /// (`transcribe`), who spoke (`speakers`' labels and names); nil when unreadable or when the
    /// tap has none (the default). Called by the runner when the tap did not run this time.
    func spokenText(fromOutputs paths: [String]) -> String?
    /// The kinds of finding its taps find (`FindingTap.finds`), known before any tap is made: the
    /// planner redoes the taps that use them when this one runs again, and the runner does not
    /// keep a using tap's result when this one failed (decision 0077). Default none.
    var findsKinds: Set<Findings.Kind> { get }
    /// The kinds of finding its taps use (`FindingsUsingTap.uses`). Default none.
    var usesKinds: Set<Findings.Kind> { get }
}

extension TapConfig {
    public var storesFingerprints: Bool { false }
    public var providesSpokenText: Bool { false }
    public func spokenText(fromOutputs paths: [String]) -> String? { nil }
    public var findsKinds: Set<Findings.Kind> { [] }
    public var usesKinds: Set<Findings.Kind> { [] }
    public var carriesPictures: Bool { false }

    public func resolvePaths(_ context: RecordingContext) throws(TemplateError) -> [String] {
        [try pathTemplate.resolve(context)]
    }
}

extension TransformConfig { public var kind: StageKind { .transform } }
extension TapConfig { public var kind: StageKind { .tap } }

/// A streaming transform, owned by one worker for one recording.
/// Lifecycle: `start` once, `process` for each block, `finish` once.
public protocol Transform: AnyObject {
    /// Called once when the chain starts, with the upstream format; returns the format this
    /// transform emits. Throws for anything that depends on the real input (lowpass above Nyquist).
    func start(_ input: AudioFormat) throws -> AudioFormat
    /// Transforms one block in place. A transform that changes the frame count or format writes
    /// its result into its own buffer and swaps it with `block.samples` (no allocation per block).
    /// May leave 0 frames while it holds samples back.
    func process(_ block: inout AudioBlock) throws
    /// Called once after the last block: `block` arrives empty in the output format; the
    /// transform puts its held-back tail there (filters, pitch and resample have tails).
    func finish(_ block: inout AudioBlock) throws
}

extension Transform {
    public func finish(_ block: inout AudioBlock) throws { block.frames = 0 }
}

/// A transform that must see the whole stream before it emits anything (loudness
/// normalisation). `ChainRecipe` streams what stands before it once, feeding `analyse` while the
/// same blocks are spooled to a file without a name (`BlockSpool`); further measuring passes and
/// the pass through this transform and what follows read the spool (decision 0052). Memory stays
/// constant: the spool is on disk (4 bytes per sample at this place).
public protocol AnalysingTransform: Transform {
    /// Pass 1, called once before the first `analyse`, with the format at this stage's place.
    func startAnalysis(_ format: AudioFormat) throws
    /// Pass 1, called for each block.
    func analyse(_ block: AudioBlock) throws
    /// End of pass 1; throws when the measurement is unusable ("too short to measure loudness").
    func endAnalysis() throws
    /// True after `endAnalysis` when the transform needs one more measuring pass (normalize's
    /// limiter trials); the chain then runs `startAnalysis`, `analyse`…, `endAnalysis` again over
    /// the same blocks (the spool).
    var wantsAnotherPass: Bool { get }
    /// After the last measuring pass: something the user should know though nothing failed
    /// ("reached −12.4 LUFS, not −10"); the runner prints it as a warning. Nil for nothing.
    var note: String? { get }
}

extension AnalysingTransform {
    public var wantsAnotherPass: Bool { false }
    public var note: String? { nil }
}

/// A file a tap produced, recorded in the state store.
public struct ProducedFile: Sendable, Equatable, Codable {
    /// The tap's spec key, e.g. "encode".
    public var stage: String
    /// Absolute path of the final file; empty when the tap wrote no file (a `fingerprint` tap
    /// without `path`, whose output is its database row).
    public var path: String
    /// Values later stages may use in templates (`levels`, `duration`), e.g. upload metadata.
    public var values: [String: String]
    /// A fingerprint tap's result, stored in the state database's `fingerprint` table.
    public var fingerprint: AudioFingerprint?
    /// A transcribe tap's text, for the catalogue (`CatalogEntry.spoken`); nil from other taps.
    public var spoken: String? = nil
    /// Figures a measuring tap offers the taps after it in the chain (`GatheringTap`: the
    /// metadata sidecar's `measures`), by name; nil from taps that measure nothing.
    public var measures: [String: String]? = nil
    public init(stage: String, path: String, values: [String: String] = [:], fingerprint: AudioFingerprint? = nil) {
        self.stage = stage
        self.path = path
        self.values = values
        self.fingerprint = fingerprint
    }
}

/// An analysing transform whose measuring half only reads blocks (normalize's loudness meter,
/// after its gain and limiter in a trial). In a split recording the chain gives it a `MeterLane`
/// (`ChainPipeline`), and `analyse` hands the blocks to measure to that lane, whose thread
/// calls `meter` with them in order while `analyse` goes on with the next block; `endAnalysis`
/// waits for the lane (`MeterLane.drain`) before it reads the result. The meter sees the very
/// blocks, in the very order, of one thread, so the result is the same (decision 0097).
public protocol MeteringTransform: AnalysingTransform, AnyObject {
    /// Called once while the chain is made, when the recording is split; never otherwise.
    func measure(on lane: MeterLane)
    /// Measures one block: on the lane's thread when there is a lane, else within `analyse`.
    func meter(_ block: AudioBlock) throws
}

/// A streaming observer, owned by one worker for one recording.
/// Lifecycle: `start` once, `observe` for each block, then `finish` or `abandon` once.
public protocol Tap: AnyObject {
    /// Called once when the chain starts, with the format of the stream at the tap's place.
    func start(_ format: AudioFormat) throws
    /// Sees one block; must not change it. Called for each block.
    func observe(_ block: AudioBlock) throws
    /// Called once after the stream ended: completes and renames the outputs into place.
    /// Returns the files written: one for most taps, one per zoom for a multi-zoom waveform,
    /// none for a measuring pass.
    func finish() throws -> [ProducedFile]
    /// Called instead of `finish` when the recording fails or is interrupted: leaves nothing behind.
    func abandon()
    /// Called once after the last block and before `finish` when the source was salvaged
    /// (`damaged: salvage` and the decoder recovered a damaged file): what was lost, where, why.
    func sourceSalvaged(_ report: SalvageReport, sampleRate: Int)
    /// What the user should know though nothing failed ("tag X does not fit a FLAC tag; dropped"),
    /// one line each; read once after the real pass, printed as warnings.
    var notes: [String] { get }
}

extension Tap {
    public func sourceSalvaged(_ report: SalvageReport, sampleRate: Int) {}
    public var notes: [String] { [] }
}

/// A stage that can put another core to work on its recording: transcribe's helper on one chunk
/// while the next arrives (decision 0098), denoise's engines on two chunks at once (decision
/// 0099). It does not unless told: one recording keeps to one core, as the runner planned. The
/// chain of a split recording tells it (`ChainPipeline`); its outputs are the same either way.
public protocol OverlappingStage: AnyObject {
    /// Called at most once, while the chain is made, when the recording is split; before `start`.
    func overlap()
}

/// A tap that gathers the figures of the taps that finished before it in the chain
/// (`ProducedFile.measures`), to write them with its own output (the metadata sidecar). The
/// taps before it in finishing order: chain order unless findings reorder it (`FindingsUsingTap`).
/// Lifecycle: `gather` once, after the last block and just before `finish`.
public protocol GatheringTap: Tap {
    /// The measures of the taps before this one that finished, in chain order, each with the
    /// producing tap's kind (`ProducedFile.stage`).
    func gather(_ measures: [(stage: String, values: [String: String])])
}

/// A tap that can also observe the source's int16 samples directly (see `Int16Decoding`). When
/// every element of a chain is such a tap and the decoder reads exact int16, `StageChain` feeds
/// int16 blocks instead of Float32 ones.
public protocol Int16Tap: Tap {
    /// Whether this tap, once started, takes int16 blocks. Read after `start`.
    var acceptsInt16: Bool { get }
    /// Sees `frames` interleaved int16 frames (the source's channel count); must not keep them.
    /// Called for each block, instead of `observe(_:)`.
    func observe(int16 samples: UnsafeBufferPointer<Int16>, frames: Int) throws
}
