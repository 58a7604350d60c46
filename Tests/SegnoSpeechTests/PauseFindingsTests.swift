import Foundation
@testable import SegnoAudio
@testable import SegnoCore
import SegnoCoreTestSupport
import SegnoDSP
@testable import SegnoSpeech
import Testing

/// Decision 0082: the `pauses` stage's cut-list tap finds `.pauses` (every pause between two
/// stretches of speech, source seconds), and a `chapters` tap after `pauses` makes its chapter at
/// the longest one and places it at the cut.
@Suite struct PauseFindingsTests {
    static let rate = 16000

    /// 0.8 s silence, an utterance, 3 s silence, another, 1 s silence (PausesStageTests.memo).
    static func memo() throws -> (x: [Float], gap: ClosedRange<Double>) {
        let (_, noisy) = try PausesStageTests.memo(rate: rate)
        let a = try Speech.utterance(Speech.short, rate: rate)
        let from = 0.8 + Double(a.count) / Double(rate)
        return (noisy, from...(from + 3))
    }

    @Test func theCutListTapFindsThePauseBetweenTheUtterances() throws {
        let (x, gap) = try Self.memo()
        let dir = try TempDir()
        let tap = try #require(try CutListConfig(pauses: PausesStageTests.config()).makeTap(
            paths: [dir["cuts.json"]], context: RecordingContext(sourcePath: "/m.wav", relativePath: "m.wav", modified: Date(), outputRoot: dir.path)) as? CutListTap)
        #expect(tap.finds == [.pauses])
        _ = try StageChain(elements: [.tap(tap)], blockFrames: 4096).run(decoder: MemoryDecoder(x, channels: 1, rate: Self.rate))
        let pauses = try #require(tap.findings.pauses)
        let longest = try #require(pauses.max { $0.length < $1.length })
        // The 3 s gap less the kept padding (0.25 s after speech, 0.4 s before): about 2.35 s, inside it.
        #expect(longest.start >= gap.lowerBound && longest.end <= gap.upperBound && longest.length > 2, "\(pauses) in \(gap)")
        // The silence before the first speech is not a pause.
        #expect(pauses.allSatisfy { $0.start > 0.8 }, "\(pauses)")
    }

    @Test func chapterTapsBeforeAndAfterPausesPlaceTheLongestPause() throws {
        let (x, gap) = try Self.memo()
        let dir = try TempDir()
        let context = RecordingContext(sourcePath: "/m.wav", relativePath: "m.wav", modified: Date(), outputRoot: dir.path)
        let pauses = PausesStageTests.config()
        let cutTap = try CutListConfig(pauses: pauses).makeTap(paths: [dir["cuts.json"]], context: context)
        func chapters(_ name: String) throws -> any Tap {
            try ChaptersConfig(path: PathTemplate("{stem}.json"), format: .json, from: [.pauses], min: 1).makeTap(paths: [dir[name]], context: context)
        }
        _ = try StageChain(elements: [.tap(chapters("before.json")), .tap(cutTap), .transform(pauses.makeTransform()), .tap(chapters("after.json"))],
                           blockFrames: 4096).run(decoder: MemoryDecoder(x, channels: 1, rate: Self.rate))
        func starts(_ name: String) throws -> [Double] {
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir[name]))) as? [String: Any] ?? [:]
            return (json["chapters"] as? [[String: Any]] ?? []).compactMap { ($0["startTime"] as? NSNumber)?.doubleValue }
        }
        // Before `pauses` the stream is the source: a boundary at the middle of the longest pause
        // (the gap less 0.25 s after speech and 0.4 s before: 0.075 s before the gap's middle).
        let before = try starts("before.json")
        let middle = (gap.lowerBound + gap.upperBound) / 2
        let inGap = try #require(before.first { gap.contains($0) }, "\(before) in \(gap)")
        #expect(before.first == 0 && abs(inGap - (middle - 0.075)) < 0.2, "\(before) in \(gap)")
        // After it, the same boundary sits where the cut list puts that source time.
        struct Cut: Decodable { var source_start: Double; var source_end: Double; var output_at: Double }
        struct Cuts: Decodable { var cuts: [Cut] }
        let cuts = try JSONDecoder().decode(Cuts.self, from: Data(contentsOf: URL(fileURLWithPath: dir["cuts.json"]))).cuts
        let cut = try #require(cuts.first { $0.source_start <= inGap && inGap <= $0.source_end }, "\(cuts) at \(inGap)")
        let after = try starts("after.json")
        #expect(after.contains { abs($0 - cut.output_at) < 0.001 }, "\(after) want \(cut.output_at)")
    }
}
