import Foundation
import SegnoAudio
import SegnoCore
import SegnoDSP
import SegnoCoreTestSupport
import SegnoAudioTestSupport
import Testing

/// A tap that measures offers its figures (`ProducedFile.measures`) to the taps after it; the
/// metadata tap gathers them into its sidecar's `measures`, keyed by the measuring tap's kind.
@Suite struct GatheringTapTests {
    let dir: TempDir
    init() throws { dir = try TempDir() }

    /// A tap that measures nothing real: it offers fixed figures under the kind `probe`.
    final class ProbeTap: Tap {
        let figures: [String: String]
        init(_ figures: [String: String]) { self.figures = figures }
        func start(_ format: AudioFormat) throws {}
        func observe(_ block: AudioBlock) throws {}
        func finish() throws -> [ProducedFile] {
            var f = ProducedFile(stage: "probe", path: "", values: figures)
            f.measures = figures
            return [f]
        }
        func abandon() {}
    }

    func sidecar(after taps: [any Tap]) throws -> [String: Any] {
        let context = RecordingContext(sourcePath: "/in/m.wav", relativePath: "m.wav", modified: Date(), outputRoot: dir.path)
        let meta = try MetadataConfig(path: PathTemplate("{stem}.meta.json"), levels: 0).makeTap(paths: [dir["m.meta.json"]], context: context)
        _ = try StageChain(elements: taps.map { .tap($0) } + [.tap(meta)], blockFrames: 1000)
            .run(decoder: MemoryDecoder(Signal.sine(frames: 4410, amplitude: 0.5), channels: 1, rate: 44100))
        let data = try #require(FileManager.default.contents(atPath: dir["m.meta.json"]))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func theMetadataSidecarGathersTheMeasuresOfTheTapsBeforeIt() throws {
        let json = try sidecar(after: [ProbeTap(["peak_dbfs": "-6.02", "clipped": "3"])])
        let measures = try #require(json["measures"] as? [String: [String: Any]])
        #expect((measures["probe"]?["peak_dbfs"] as? NSNumber)?.doubleValue == -6.02)
        #expect((measures["probe"]?["clipped"] as? NSNumber)?.intValue == 3)
    }

    @Test func withoutAMeasuringTapTheSidecarIsAsBefore() throws {
        #expect(try sidecar(after: [])["measures"] == nil)
    }
}
