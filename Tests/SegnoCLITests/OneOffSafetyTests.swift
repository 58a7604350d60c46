import Foundation
import SegnoTestSupport
import Testing

/// `segno waveform` and `segno convert` never lose a file (issue 22): two inputs mapping to one
/// output are refused naming both, a file segno did not write (no `user.segno` mark) is not
/// replaced without --overwrite, and no missing folder is created for an output.
@Suite struct OneOffSafetyTests {
    static func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    @Test func twoInputsForOneOutputAreRefusedNamingBoth() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/b.wav"], rate: 16000, seconds: 1, frequency: 440)
        try RunWorkspace.writeTone(to: ws["src.wav"], rate: 16000, seconds: 2, frequency: 880)
        #expect(try CLI.tool("ffmpeg", ["-v", "error", "-nostdin", "-i", ws["src.wav"], "-c:a", "libmp3lame", ws["in/b.mp3"]]).status == 0)
        let r = try ws.segno(["waveform", ws["in"]])
        #expect(r.exited(1), "\(r.stderr)")
        #expect(r.stderr.contains("b.wav") && r.stderr.contains("b.mp3") && r.stderr.contains("b.json"), "\(r.stderr)")
        // The first in path order (b.mp3) keeps the name; b.wav's data is not written anywhere.
        #expect(try ws.segno(["waveform", ws["in/b.mp3"], "-o", ws["ref.json"]]).exited(0))
        #expect(try Self.bytes(ws["in/b.json"]) == Self.bytes(ws["ref.json"]))
        #expect(try FileManager.default.contentsOfDirectory(atPath: ws["in"]).sorted() == ["b.json", "b.mp3", "b.wav"])
    }

    @Test(arguments: ["json", "dat", "png"])
    func aFileSegnoDidNotWriteIsKeptUnlessOverwrite(ext: String) throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["a.wav"], rate: 16000, seconds: 1)
        try RunWorkspace.writeTone(to: ws["b.wav"], rate: 16000, seconds: 2, frequency: 300)
        #expect(try ws.segno(["waveform", ws["b.wav"], "-o", ws["b.\(ext)"]]).exited(0))
        // A copy by cp carries no user.segno mark: valid waveform data segno did not write.
        #expect(try CLI.tool("cp", [ws["b.\(ext)"], ws["a.\(ext)"]]).status == 0)
        let theirs = try Self.bytes(ws["a.\(ext)"])
        let refused = try ws.segno(["waveform", ws["a.wav"], "-o", ws["a.\(ext)"]])
        #expect(refused.exited(1) && refused.stderr.contains("--overwrite"), "\(refused.stderr)")
        #expect(try Self.bytes(ws["a.\(ext)"]) == theirs)
        let beside = try ws.segno(["waveform", ws["a.wav"], "--format", ext])
        #expect(beside.exited(1), "\(beside.stderr)")
        #expect(try Self.bytes(ws["a.\(ext)"]) == theirs)
        // Its own output (marked) is replaced by a rerun; --overwrite replaces the copy.
        #expect(try ws.segno(["waveform", ws["b.wav"], "-o", ws["b.\(ext)"], "-z", "128"]).exited(0))
        #expect(try ws.segno(["waveform", ws["a.wav"], "-o", ws["a.\(ext)"], "--overwrite"]).exited(0))
        #expect(try Self.bytes(ws["a.\(ext)"]) != theirs)
    }

    @Test func noMissingFolderIsCreated() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["a.wav"], rate: 16000, seconds: 1)
        #expect(try CLI.tool("sox", [ws["a.wav"], ws["a.flac"]]).status == 0)
        // A usage error (exit 2), as for every command; audiowaveform's form (-i) fails every way with 1.
        let cases: [([String], Int32)] = [
            (["waveform", ws["a.wav"], "-o", ws["typo/a.json"]], 2),
            (["waveform", "-i", ws["a.wav"], "-o", ws["typo/a.png"]], 1),
            (["waveform", "-i", ws["a.flac"], "-o", ws["typo/a.wav"]], 1),
            (["convert", ws["a.wav"], ws["typo/a.flac"]], 2),
        ]
        for (args, code) in cases {
            let r = try ws.segno(args)
            #expect(r.exited(code) && r.stderr.contains("typo"), "\(args): \(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: ws["typo"]), "\(args)")
        }
        let outDir = try ws.segno(["waveform", ws["a.wav"], "--out-dir", ws["typo"]])
        #expect(outDir.exited(2) && outDir.stderr.contains("--out-dir"), "\(outDir.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws["typo"]))
        // SoX agrees that a missing folder is an error.
        #expect(try CLI.tool("sox", [ws["a.wav"], ws["typo/a.flac"]]).status != 0)
    }
}
