import SegnoCore
import SegnoDSP

/// `pitch: { semitones: 3 }` or `{ cents: 300 }` (−2400…+2400 cents), optional `tempo`
/// (0.25…4, AVAudioUnitTimePitch's `rate`: speed without pitch). Shorthand `pitch: 3`.
/// A phase vocoder with phase locking and transient handling (SegnoDSP `PitchShifter`);
/// latency-compensated, so the output is aligned with the input and lasts exactly
/// `round(frames / tempo)` frames.
public struct PitchConfig: TransformConfig {
    public var changesLevel: Bool { true }
    /// The vocoder, its resampler and their queues are saved for a checkpoint (decision 0095).
    public var savesState: Bool { true }
    /// The vocoder keeps its frames' reach inside: it hands on fewer frames than it takes at first.
    public var holdsFrames: Bool { true }
    /// A tempo moves time (decision 0072).
    public var movesTime: Bool { tempo != 1 }
    /// Shift in semitones (cents / 100).
    public let semitones: Double
    public let tempo: Double
    public var name: String { "pitch" }
    public var version: Int { 1 }
    public var options: [(String, String)] {
        var o = [("cents", canonicalNumber((semitones * 100 * 1000).rounded() / 1000))]
        if tempo != 1 { o.append(("tempo", canonicalNumber(tempo))) }
        return o
    }
    /// Semitones, in specs and on the command line.
    public static let semitoneRange: ClosedRange<Double> = -24...24
    public static let centsRange: ClosedRange<Double> = -2400...2400
    public static let tempoRange: ClosedRange<Double> = 0.25...4
    /// Tempo when none is given: the speed is kept.
    public static let standardTempo = 1.0

    public static let declaration = StageDeclaration(
        key: "pitch", kind: .transform, summary: "Shifts the pitch and/or changes the speed (phase vocoder, aligned with the input).",
        options: [
            .init("semitones", .number, unit: "semitones", default: "0", .within(semitoneRange), help: "Pitch shift; give semitones or cents, not both."),
            .init("cents", .number, unit: "cents", default: "0", .within(centsRange), help: "Pitch shift in hundredths of a semitone."),
            .init("tempo", .number, default: canonicalNumber(standardTempo), .within(tempoRange),
                  help: "Speed without pitch (AVAudioUnitTimePitch's rate): the output lasts round(frames / tempo) frames."),
        ],
        shorthand: "`pitch: 3` is `{ semitones: 3 }`", example: "pitch: { semitones: 3 }", capabilities: [.changesLevel])

    public init(semitones: Double, tempo: Double = 1) {
        self.semitones = semitones
        self.tempo = tempo
    }

    public func makeTransform() throws -> any Transform { PitchTransform(semitones: semitones, tempo: tempo) }
}

final package class PitchTransform: CheckpointingTransform, TimelineChanging {
    package let semitones: Double
    package let tempo: Double
    package var shifter: PitchShifter?
    package var output = AudioBlock(channels: 1)

    package init(semitones: Double, tempo: Double) {
        self.semitones = semitones
        self.tempo = tempo
    }

    /// One stretch at `1 / tempo` (decision 0072); time kept as it is without a tempo.
    package var timeMap: TimeMap {
        tempo == 1 ? .identity : TimeMap(pieces: [.init(inputStart: 0, inputEnd: .infinity, outputStart: 0, scale: 1 / tempo)])
    }

    package func start(_ input: AudioFormat) throws -> AudioFormat {
        do {
            shifter = try PitchShifter(sampleRate: input.sampleRate, channels: input.channels, semitones: semitones, tempo: tempo)
        } catch {
            throw StageStartError(stage: "pitch", "\(error)")
        }
        output = AudioBlock(channels: input.channels, capacity: 8192)
        return input
    }

    package func process(_ block: inout AudioBlock) throws {
        guard shifter != nil else { return }
        let frames = block.frames
        block.samples.withUnsafeBufferPointer { p in
            shifter!.process(p.baseAddress!, frames: frames, into: &output)
        }
        swap(&block, &output)
    }

    package func finish(_ block: inout AudioBlock) throws {
        shifter?.finish(into: &block)
    }

    package func save(into w: inout StateBytes.Writer) { shifter?.save(into: &w) }
    package func restore(from r: inout StateBytes.Reader) throws { try shifter?.restore(from: &r) }
}

extension PitchConfig {
    /// The spec\'s options for this stage: every check, before any audio flows (SoX\'s getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        if v.isScalar { return PitchConfig(semitones: try v.double(in: PitchConfig.semitoneRange, unit: "semitones")) }
        let o = try v.options(declaredBy: declaration)
        if o["semitones"] != nil && o["cents"] != nil { throw v.error("give semitones or cents, not both") }
        var semitones = 0.0
        if let s = o["semitones"] { semitones = try s.double(in: PitchConfig.semitoneRange, unit: "semitones") }
        if let cents = o["cents"] { semitones = try cents.double(in: PitchConfig.centsRange, unit: "cents") / 100 }
        let tempo = try o["tempo"]?.double(in: PitchConfig.tempoRange) ?? PitchConfig.standardTempo
        if o["semitones"] == nil && o["cents"] == nil && o["tempo"] == nil { throw v.error("give semitones, cents or tempo") }
        return PitchConfig(semitones: semitones, tempo: tempo)
    }
}
