import Foundation
import SegnoAudioTestSupport
import SegnoCore
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Issue 33: files crafted to crash, exhaust or slow segno fail alone; two recordings never share
/// an output; a recording that killed the process is parked after the second death. The hostile
/// files come from Tests/support/hostile.py (struct packing, zlib, mutagen, ffmpeg: not segno);
/// outputs are checked with `flac -t`, ffprobe and mutagen.
@Suite struct HostileInputTests {
    static let generator = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("support/hostile.py").path

    static func makeHostile(in dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let made = try CLI.tool("python3", [generator, "make", dir])
        #expect(made.status == 0, "\(made.stderr)")
    }

    /// Mutagen's count of a Vorbis comment's values in a FLAC.
    static func flacValues(_ path: String, _ key: String) throws -> Int {
        let r = try CLI.tool("python3", ["-c", "import sys; from mutagen.flac import FLAC; print(len(FLAC(sys.argv[1]).get(sys.argv[2], [])))", path, key])
        return Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @Test func craftedTagsFailTheirOwnTagsNotTheProcessAndEveryOutputIsValid() throws {
        let ws = try RunWorkspace()
        try Self.makeHostile(in: ws["in"])
        try FileManager.default.removeItem(atPath: ws["in/tone.mp3"])
        // One-off commands first: TagLib 1.13 overflowed its stack on these and took segno with it.
        for name in ["nested-chap.mp3", "nested-ctoc.wav", "zbomb.mp3"] {
            let info = try ws.segno(["info", "in/" + name])
            #expect(!info.signalled && info.exited(0), "\(name): \(info.status) \(info.stderr)")
            let convert = try ws.segno(["convert", "in/" + name, name + ".flac"])
            #expect(!convert.signalled && convert.exited(0), "\(name): \(convert.stderr)")
            #expect(convert.stderr.contains(name) && convert.stderr.contains("tag"), "a warning names the file and its tags: \(convert.stderr)")
            #expect(try CLI.tool("flac", ["-t", "-s", ws[name + ".flac"]]).status == 0)
        }
        try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nparallel: 2\nretries: 0\nstages:\n"
                         + "  - encode: { path: \"{dir}/{stem}.flac\" }\n")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        for name in ["nested-chap", "nested-ctoc", "zbomb", "many-titles", "wide-comment", "fine"] {
            let out = ws["out/\(name).flac"]
            #expect(try CLI.tool("flac", ["-t", "-s", out]).status == 0, "\(name).flac decodes whole")
            #expect(try CLI.tool("ffprobe", ["-v", "error", out]).status == 0, "ffprobe reads \(name).flac")
        }
        // Good tags still travel; bounded ones say what was left out.
        #expect(try Self.flacValues(ws["out/fine.flac"], "title") == 1)
        let titles = try Self.flacValues(ws["out/many-titles.flac"], "title")
        #expect(titles > TagLimits.values - 10 && titles <= TagLimits.values, "\(titles) titles")
        #expect(run.stderr.contains("many-titles.flac") && run.stderr.contains("more than \(TagLimits.values) tag values"), "\(run.stderr)")
        // 17 values of 1,000,000 bytes (keys w0…w16): as many as fit TagLimits.totalBytes travel, the rest
        // are dropped with one warning, never written past the FLAC block's 24-bit length (TagPlanTests).
        let wide = try CLI.tool("python3", ["-c", "import sys; from mutagen.flac import FLAC; print(sum(1 for k, _ in FLAC(sys.argv[1]).tags if k.lower().startswith('w')))",
                                            ws["out/wide-comment.flac"]])
        let fit = TagLimits.totalBytes / (1_000_000 + 3)
        #expect(wide.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == String(fit), "\(wide.stdout) \(wide.stderr)")
        #expect(run.stderr.contains("wide-comment.mp3") && run.stderr.contains("tag values past \(TagLimits.totalBytes) bytes of text in all are dropped"),
                "\(run.stderr)")
        #expect(run.stderr.contains("nested-chap.mp3") && run.stderr.contains("tags not read"), "\(run.stderr)")
    }

    /// One worker, so the first in path order is the first to claim the name (with several, the
    /// first to get there keeps it: either way one recording keeps it, the other fails).
    static let titled = "version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nparallel: 1\nretries: 0\nstages:\n"
        + "  - encode: { path: \"{title}.flac\" }\n"

    @Test func memosWithOneTitleNeverShareAnOutput() throws {
        let ws = try RunWorkspace()
        for (name, hz) in [("a.wav", 440.0), ("b.wav", 660.0)] {
            try RunWorkspace.writeTone(to: ws["tone.wav"], seconds: 0.5, frequency: hz)
            let tagged = try CLI.tool("ffmpeg", ["-v", "error", "-nostdin", "-y", "-i", ws["tone.wav"], "-metadata", "title=New Recording",
                                                 "-c", "copy", ws["in/" + name]])
            #expect(tagged.status == 0, "\(tagged.stderr)")
        }
        try ws.writeSpec(Self.titled)
        let validate = try ws.segno(["validate", "spec.yaml"])
        #expect(validate.stderr.contains("names no recording"), "validate warns: \(validate.stderr)")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(1), "\(run.stderr)")
        #expect(run.stderr.contains("b.wav would write New Recording.flac, which is the output of a.wav"), "\(run.stderr)")
        // The output is a.wav's audio, whole; b.wav's failure is recorded, not "done".
        let a = try CLI.tool("ffprobe", ["-v", "error", "-show_entries", "stream=sample_rate", "-of", "csv=p=0", ws["out/New Recording.flac"]])
        #expect(a.status == 0)
        let failures = try ws.status("spec.yaml", failed: true)["failures"] as? [[String: Any]] ?? []
        #expect(failures.count == 1 && failures.first?["path"] as? String == "b.wav" && failures.first?["class"] as? String == "spec", "\(failures)")
        // The audio in the output is a.wav's (440 Hz), not b.wav's.
        let samples = try Fixtures.soxDecode(ws["out/New Recording.flac"])
        var crossings = 0
        for i in 1..<samples.count where (samples[i - 1] < 0) != (samples[i] < 0) { crossings += 1 }
        #expect(abs(Double(crossings) / 2 / 0.5 - 440) < 10, "\(crossings) zero crossings")
    }

    @Test func twoRecordingsNeverUploadToOneKey() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/x/memo.wav"], seconds: 0.5)
        try RunWorkspace.writeTone(to: ws["in/y/memo.wav"], seconds: 0.5, frequency: 660)
        try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nparallel: 1\nretries: 0\nstages:\n"
                         + "  - encode: { path: \"{dir}/{stem}.flac\" }\n  - upload: { to: \"file://\(ws["archive"])/\" }\n")
        let validate = try ws.segno(["validate", "spec.yaml"])
        #expect(validate.stderr.contains("has no {dir}"), "\(validate.stderr)")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(1), "\(run.stderr)")
        #expect(run.stderr.contains("y/memo.wav would write file://\(ws["archive"])/memo.flac, which is the output of x/memo.wav"), "\(run.stderr)")
        let failures = try ws.status("spec.yaml", failed: true)["failures"] as? [[String: Any]] ?? []
        #expect(failures.map { $0["path"] as? String } == ["y/memo.wav"], "\(failures)")
    }

    /// The journal record `CrashJournal` appends, for a test's fake journal of a dead process.
    static func record(_ op: Character, _ path: String) -> [UInt8] {
        let bytes = Array(path.utf8)
        return [op.asciiValue!] + withUnsafeBytes(of: UInt32(bytes.count).littleEndian) { Array($0) } + bytes
    }

    @Test func aRecordingInHandWhenTheProcessCrashedRunsAloneFirstAndIsDoneNextTime() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], seconds: 0.5)
        try RunWorkspace.writeTone(to: ws["in/b.wav"], seconds: 0.5)
        try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nretries: 0\nstages:\n  - encode: { path: \"{stem}.flac\" }\n")
        // A journal a crashed process of this host left: it had a.wav in hand (begun, not ended)
        // and b.wav finished; c.wav was in hand in a process killed from outside (no crash mark).
        try FileManager.default.createDirectory(atPath: ws["out/.segno"], withIntermediateDirectories: true)
        let host = OutputFile.owner.split(separator: "-")[0]
        var dead: Int32 = 4_000_000
        while kill(dead, 0) == 0 || errno != ESRCH || kill(dead - 1, 0) == 0 || errno != ESRCH { dead -= 2 }
        try RunWorkspace.writeTone(to: ws["in/c.wav"], seconds: 0.5)
        let journal = Self.record("+", "a.wav") + Self.record("+", "b.wav") + Self.record("-", "b.wav") + CrashJournal.crashMark
        try Data(journal).write(to: URL(fileURLWithPath: ws["out/.segno/running-\(host)-\(dead).journal"]))
        try Data(Self.record("+", "c.wav")).write(to: URL(fileURLWithPath: ws["out/.segno/running-\(host)-\(dead - 1).journal"]))
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        #expect(run.stderr.contains("a.wav: \(CrashJournal.stoppedMessage)"), "\(run.stderr)")
        #expect(!run.stderr.contains("b.wav: \(CrashJournal.stoppedMessage)") && !run.stderr.contains("c.wav: \(CrashJournal.stoppedMessage)"),
                "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: ws["out/a.flac"]))
        #expect(!FileManager.default.fileExists(atPath: ws["out/.segno/running-\(host)-\(dead).journal"]), "the journal is read once")
        #expect((try FileManager.default.contentsOfDirectory(atPath: ws["out/.segno"])).allSatisfy { !$0.hasSuffix(".journal") },
                "a run that ends removes its own journal")
    }

    /// A crash is simulated by sending SIGSEGV: segno's handler marks the journal and the process
    /// dies of the signal, as it would of a bad pointer in a library. SIGKILL (tested in RunTests'
    /// random kills) leaves no mark and strikes nothing.
    @Test func aRecordingInHandAtTwoCrashesIsParkedAndTheRestIsDone() throws {
        let ws = try RunWorkspace()
        // Long enough (60 s at 48 kHz through pitch) to be in hand when the process is killed.
        try RunWorkspace.writeTone(to: ws["in/long.wav"], rate: 48000, seconds: 60)
        try RunWorkspace.writeTone(to: ws["in/short.wav"], seconds: 0.5)
        try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nparallel: 1\nretries: 0\nstages:\n"
                         + "  - pitch: { semitones: 3 }\n  - encode: { path: \"{stem}.flac\" }\n")
        func killWhileInHand() throws {
            let child = try ws.start(["run", "spec.yaml"])
            let inHand = Wait.until(timeout: 60) {
                let journals = (try? FileManager.default.contentsOfDirectory(atPath: ws["out/.segno"])) ?? []
                return journals.contains { $0.hasSuffix("-\(child.pid).journal")
                    && CrashJournal.unfinished(ws["out/.segno/" + $0]).paths.contains("long.wav") }
            }
            #expect(inHand, "long.wav was begun")
            child.send(SIGSEGV)
            #expect(child.wait().signalled)
        }
        try killWhileInHand()
        try killWhileInHand()  // the second run takes long.wav first, alone
        let third = try ws.segno(["run", "spec.yaml"])
        #expect(third.exited(1), "\(third.stderr)")
        #expect(third.stderr.contains("long.wav") && third.stderr.contains("crashed 2 times"), "\(third.stderr)")
        #expect(FileManager.default.fileExists(atPath: ws["out/short.flac"]))
        #expect(!FileManager.default.fileExists(atPath: ws["out/long.flac"]))
        let failures = try ws.status("spec.yaml", failed: true)["failures"] as? [[String: Any]] ?? []
        #expect(failures.count == 1 && failures.first?["class"] as? String == "input", "\(failures)")
        // Parked until the file changes: the next plain run leaves it alone.
        let fourth = try ws.segno(["run", "spec.yaml"])
        #expect(fourth.exited(0) && fourth.stdout.contains("nothing to do"), "\(fourth.stdout) \(fourth.stderr)")
    }

    @Test func textARecordingCarriesCannotSteerTheTerminalOrForgeALine() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["tone.wav"], seconds: 0.5)
        let evil = "budget \u{1B}[2J\u{1B}]0;pwned\u{07}\r\nsegno: all done"
        let tagged = try CLI.tool("ffmpeg", ["-v", "error", "-nostdin", "-y", "-i", ws["tone.wav"], "-metadata", "title=\(evil)",
                                             "-metadata", "artist=a\u{1B}b", "-c", "copy", ws["in/memo.wav"]])
        #expect(tagged.status == 0, "\(tagged.stderr)")
        try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nretries: 0\nstages:\n"
                         + "  - encode: { path: \"{stem}.flac\" }\n  - upload: { to: \"file://\(ws["archive"])/{tag:artist}/{dir}\" }\n")
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        let find = try ws.segno(["find", "spec.yaml", "budget"])
        #expect(find.exited(0) && find.stdout.contains("memo.wav"), "\(find.stdout) \(find.stderr)")
        for text in [find.stdout, find.stderr, run.stdout, run.stderr] {
            #expect(!text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0 == "\r" }, "raw control characters: \(text.debugDescription)")
            #expect(!text.split(separator: "\n").contains { $0.hasPrefix("segno: all done") }, "a forged line: \(text)")
        }
        // The upload's folder from {tag:artist} holds no control character.
        let folders = try FileManager.default.contentsOfDirectory(atPath: ws["archive"])
        #expect(folders == ["a b"], "\(folders)")
    }

    @Test func secretsAreNeverExpandedIntoASpec() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], seconds: 0.5)
        try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nstages:\n  - encode: { path: \"{stem}.flac\" }\n"
                         + "  - upload: { to: \"file://\(ws["archive"])/{dir}/\", metadata: { note: \"${AWS_SECRET_ACCESS_KEY}\" } }\n")
        let v = try ws.segno(["validate", "spec.yaml"], environment: ["AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-not-a-real-key"])
        #expect(v.exited(2), "\(v.stderr)")
        #expect(v.stderr.contains("${AWS_SECRET_ACCESS_KEY} looks like a secret") && !v.stderr.contains("wJalrXUtnFEMI"), "\(v.stderr)")
    }
}
