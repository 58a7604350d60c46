import SegnoDSP

/// `pitch: { semitones: 3 }` or `{ cents: 300 }` (−2400…+2400 cents), optional `tempo`
/// (0.25…4, AVAudioUnitTimePitch's `rate`: speed without pitch). Shorthand `pitch: 3`.
/// A phase vocoder with phase locking and transient handling (SegnoDSP `PitchShifter`);
/// latency-compensated, so the output is aligned with the input and lasts exactly
/// `round(frames / tempo)` frames.
public struct PitchConfig: TransformConfig {
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
    public static let centsRange: ClosedRange<Double> = -2400...2400
    public static let tempoRange: ClosedRange<Double> = 0.25...4

    public init(semitones: Double, tempo: Double = 1) {
        self.semitones = semitones
        self.tempo = tempo
    }

    public func makeTransform() throws -> any Transform { PitchTransform(semitones: semitones, tempo: tempo) }
}

final class PitchTransform: Transform {
    let semitones: Double
    let tempo: Double
    var shifter: PitchShifter?
    var output = AudioBlock(channels: 1)

    init(semitones: Double, tempo: Double) {
        self.semitones = semitones
        self.tempo = tempo
    }

    func start(_ input: AudioFormat) throws -> AudioFormat {
        do {
            shifter = try PitchShifter(sampleRate: input.sampleRate, channels: input.channels, semitones: semitones, tempo: tempo)
        } catch {
            throw StageStartError(stage: "pitch", "\(error)")
        }
        output = AudioBlock(channels: input.channels, capacity: 8192)
        return input
    }

    func process(_ block: inout AudioBlock) throws {
        guard shifter != nil else { return }
        let frames = block.frames
        block.samples.withUnsafeBufferPointer { p in
            shifter!.process(p.baseAddress!, frames: frames, into: &output)
        }
        swap(&block, &output)
    }

    func finish(_ block: inout AudioBlock) throws {
        shifter?.finish(into: &block)
    }
}
