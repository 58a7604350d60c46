import Foundation
import SegnoTestSupport
import Testing

/// Issue 31 item 2: `validate` says when a transcript's subtitles follow a stream that an
/// earlier stage moved (`pauses`, a tempo), and is quiet when the transcript hears the source.
@Suite struct TimelineWarningTests {
    static func spec(_ stages: [String]) -> String {
        "version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nstages:\n" + stages.map { "  - \($0)\n" }.joined()
    }

    @Test(arguments: [
        (["pauses: true", "transcribe: { path: \"{stem}\" }"], true),
        (["pitch: { semitones: 0, tempo: 1.5 }", "transcribe: { path: \"{stem}\" }"], true),
        (["pauses: true", "transcribe: { path: \"{stem}\", from: source }"], false),
        (["transcribe: { path: \"{stem}\" }", "pauses: true", "encode: { path: \"{stem}.flac\" }"], false),
        (["pitch: { semitones: 2 }", "transcribe: { path: \"{stem}\" }"], false),
    ])
    func validateSaysWhenSubtitlesFollowAMovedStream(stages: [String], warns: Bool) throws {
        let ws = try RunWorkspace()
        try ws.writeSpec(Self.spec(stages))
        let r = try ws.segno(["validate", "spec.yaml"])
        #expect(r.exited(0), "\(r.stderr)")
        let said = (r.stdout + r.stderr).contains("writes its WebVTT and SubRip times on the shortened stream")
        #expect(said == warns, "\(stages): \(r.stdout) \(r.stderr)")
    }
}
