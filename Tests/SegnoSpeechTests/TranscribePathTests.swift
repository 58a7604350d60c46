import Foundation
import SegnoCore
import SegnoSpeech
import Testing

/// Issue 31 item 19: a transcribe path that already ends in a format's extension names that file
/// (`{stem}.json` → memo.json, never memo.json.json); the other formats go beside it.
@Suite struct TranscribePathTests {
    func paths(_ stage: String) throws -> [String] {
        let spec = try SpecLoader.parse("version: 1\ninput: { root: in }\noutput: { root: out }\nstages:\n  - transcribe: \(stage)\n",
                                        file: "spec.yaml", baseDirectory: "/base", registry: .speechForTests, environment: [:])
        let config = try #require(spec.stages.first?.config as? TranscribeConfig)
        let context = RecordingContext(sourcePath: "/base/in/talks/memo.wav", relativePath: "talks/memo.wav", modified: Date(), outputRoot: "/base/out")
        return try config.resolvePaths(context).map { $0.hasPrefix("/base/out/") ? String($0.dropFirst("/base/out/".count)) : $0 }
    }

    @Test func aPathEndingInAFormatsExtensionIsUsedAsItIs() throws {
        #expect(try paths(#"{ path: "{dir}/{stem}.json", formats: [json] }"#) == ["talks/memo.json"])
        #expect(try paths(#"{ path: "{stem}.srt", formats: [srt] }"#) == ["memo.srt"])
        // Named as one file without formats: that format only.
        #expect(try paths(#"{ path: "{stem}.vtt" }"#) == ["memo.vtt"])
        // With more formats, each beside it under the same stem.
        #expect(try paths(#"{ path: "{stem}.json", formats: [vtt, json] }"#) == ["memo.vtt", "memo.json"])
        // A bare stem (or another extension) still gets each format's extension.
        #expect(try paths(#"{ path: "{dir}/{stem}" }"#) == ["talks/memo.vtt", "talks/memo.srt", "talks/memo.json"])
        #expect(try paths(#"{ path: "{stem}.words", formats: [json] }"#) == ["memo.words.json"])
    }
}
