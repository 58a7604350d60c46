import Foundation
import SegnoCore
import SegnoTestSupport
import Testing

/// "Never write over a file segno did not write": every file segno writes carries its mark
/// (the `user.segno` extended attribute); a run's tap and `convert` replace only marked files or,
/// for a run, files the state records for that recording.
@Suite struct ForeignFileTests {
    static let spec = "version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nparallel: 2\nretries: 0\nstages:\n"
        + "  - encode: { path: \"{stem}.flac\" }\n  - waveform: { path: \"{stem}.json\" }\n"

    @Test func aRunLeavesAUsersFileAtAnOutputPathAndRecoversOnceItIsMoved() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], seconds: 0.5)
        try RunWorkspace.writeTone(to: ws["in/b.wav"], seconds: 0.5, frequency: 660)
        try FileManager.default.createDirectory(atPath: ws["out"], withIntermediateDirectories: true)
        let precious = Data("my own notes, not audio\n".utf8)
        try precious.write(to: URL(fileURLWithPath: ws["out/a.flac"]))
        try ws.writeSpec(Self.spec)
        let first = try ws.segno(["run", "spec.yaml"])
        #expect(first.exited(1), "\(first.stderr)")
        #expect(first.stderr.contains("a.flac") && first.stderr.contains("a file segno did not write is in the way"), "\(first.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: ws["out/a.flac"])) == precious, "the user's file is untouched")
        // The other tap of that recording and the other recording are done; segno's files are marked.
        #expect(FileManager.default.fileExists(atPath: ws["out/a.json"]))
        #expect(FileManager.default.fileExists(atPath: ws["out/b.flac"]))
        #expect(OutputFile.isMarked(ws["out/b.flac"]) && OutputFile.isMarked(ws["out/a.json"]))
        #expect(!OutputFile.isMarked(ws["out/a.flac"]))
        let failures = try ws.status("spec.yaml", failed: true)["failures"] as? [[String: Any]] ?? []
        #expect(failures.count == 1 && failures.first?["class"] as? String == "environment", "\(failures)")
        // Still there: the next plain run tries again (not parked) and leaves it again.
        let again = try ws.segno(["run", "spec.yaml"])
        #expect(again.exited(1), "\(again.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: ws["out/a.flac"])) == precious)
        // Moved away: the next plain run writes the output, decoding only for the missing tap.
        try FileManager.default.moveItem(atPath: ws["out/a.flac"], toPath: ws["a.flac.mine"])
        let fixed = try ws.segno(["run", "spec.yaml"])
        #expect(fixed.exited(0), "\(fixed.stderr)")
        #expect(OutputFile.isMarked(ws["out/a.flac"]))
        #expect(try ws.segno(["run", "spec.yaml"]).stdout.contains("nothing to do"))
    }

    @Test func marksTellSegnosOwnFilesWhenTheStateDoesNotKnowThem() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], seconds: 0.5)
        try ws.writeSpec(Self.spec)
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        // A recorded output made by an older segno (no mark) is still replaced: the state records it.
        let unmark = try CLI.tool("python3", ["-c", "import os,sys; os.removexattr(sys.argv[1], sys.argv[2])", ws["out/a.json"], OutputFile.markAttribute])
        #expect(unmark.status == 0 && !OutputFile.isMarked(ws["out/a.json"]), "\(unmark.stderr)")
        #expect(try ws.segno(["run", "spec.yaml", "--force=waveform"]).exited(0))
        #expect(OutputFile.isMarked(ws["out/a.json"]))
        // Without any state (a crash between the rename and the state write, simulated by a new
        // state folder): marked files are segno's and are replaced; nothing is refused.
        let moved = ws.root + "/old-state"
        try FileManager.default.moveItem(atPath: ws["out/.segno"], toPath: moved)
        let fresh = try ws.segno(["run", "spec.yaml"])
        #expect(fresh.exited(0), "\(fresh.stderr)")
        #expect(!fresh.stderr.contains("in the way"), "\(fresh.stderr)")
    }

    @Test func convertReplacesOnlyItsOwnFilesUnlessToldTo() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["a.wav"], seconds: 0.5)
        let precious = Data("fLaC but really my notes\n".utf8)
        try precious.write(to: URL(fileURLWithPath: ws["mine.flac"]))
        let refused = try ws.segno(["convert", "a.wav", "mine.flac"])
        #expect(refused.exited(1), "\(refused.stderr)")
        #expect(refused.stderr.contains("mine.flac") && refused.stderr.contains("--overwrite"), "\(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: ws["mine.flac"])) == precious)
        // segno's own output is replaced on a second convert, as SoX users expect.
        #expect(try ws.segno(["convert", "a.wav", "out.flac"]).exited(0))
        let second = try ws.segno(["convert", "a.wav", "out.flac", "--rate", "8000"])
        #expect(second.exited(0), "\(second.stderr)")
        #expect(try ws.segno(["info", "--json", "out.flac"]).stdout.contains("\"sample_rate\":8000"))
        // --overwrite replaces the user's file.
        let forced = try ws.segno(["convert", "a.wav", "mine.flac", "--overwrite"])
        #expect(forced.exited(0), "\(forced.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: ws["mine.flac"])).prefix(4) == Data("fLaC".utf8))
    }
}
