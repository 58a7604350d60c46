import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// `tools/check-layers.py` keeps the core free of stage names and of the S3 client (issue 29):
/// a copy of Sources/ passes as it is, and fails once a stage's key as a string literal, or an
/// import of SegnoS3, is planted in one of the core's files.
@Suite struct CoreNamesNoStageTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let script = package + "/tools/check-layers.py"

    /// A copy of Sources/ with `line` put first in the core's `Report/ReportData.swift`.
    static func plant(_ line: String) throws -> (dir: TempDir, output: String, status: Int32) {
        let dir = try TempDir()
        let copy = dir.path + "/Sources"
        let cp = try CLI.tool("cp", ["-R", package + "/Sources", copy])
        #expect(cp.status == 0, "\(cp.stderr)")
        let target = copy + "/SegnoCore/Report/ReportData.swift"
        let text = try String(contentsOfFile: target, encoding: .utf8)
        try (line + "\n" + text).write(toFile: target, atomically: true, encoding: .utf8)
        let run = try CLI.tool("python3", [script, "--sources", copy])
        return (dir, run.stdout, run.status)
    }

    @Test func aStageKeyAsAStringLiteralInTheCoreIsCaught() throws {
        let planted = try Self.plant(#"let isTranscript = { (kind: String) in kind == "transcribe" }"#)
        #expect(planted.status == 1, "\(planted.output)")
        #expect(planted.output.contains(#"SegnoCore/Report/ReportData.swift:1: SegnoCore names the stage "transcribe""#), "\(planted.output)")
    }

    @Test func aStageKeyInACommentIsNotABreach() throws {
        let planted = try Self.plant(#"// the "waveform" tap's peaks are drawn (a comment may name a stage)"#)
        #expect(planted.status == 0, "\(planted.output)")
    }

    @Test func anImportOfTheS3ClientInTheCoreIsCaught() throws {
        let planted = try Self.plant("import SegnoS3")
        #expect(planted.status == 1, "\(planted.output)")
        #expect(planted.output.contains("SegnoCore/Report/ReportData.swift:1: SegnoCore imports SegnoS3"), "\(planted.output)")
    }
}
