import Foundation
import SegnoAudioTestSupport
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Shared folders are not trusted blindly (issue 33 item 4), and the smaller holes of item 6:
/// the state folder, database and lock are segno's or refused; prune deletes only what it proves
/// it wrote; a 0-byte database is damaged; FIFOs are refused; links are resolved or not followed;
/// helpers die with segno. Every case with real files and real processes.
@Suite struct SharedFolderTests {
    static func spec(state: String? = nil, input: String = "root: in, settle: 0s", stages: [String]) -> String {
        "version: 1\ninput: { \(input) }\noutput: { root: out }\n" + (state.map { "state: \($0)\n" } ?? "")
            + "parallel: 1\nstages:\n" + stages.map { "  - \($0)\n" }.joined()
    }

    static let encode = "encode: { path: \"{dir}/{stem}.flac\" }"

    static func text(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    /// Changes the state as someone with write access to it could: `recording`'s step of `stage`
    /// now lists `output` alone.
    static func craft(_ db: String, _ recording: String, _ stage: String, _ output: String) throws {
        let sql = "UPDATE step SET output = '[\"\(output)\"]' WHERE stage LIKE '\(stage)%' AND recording_id = (SELECT id FROM recording WHERE path = '\(recording)')"
        let r = try CLI.tool("sqlite3", [db, sql])
        #expect(r.status == 0, "\(r.stderr)")
    }

    // MARK: the state folder

    @Test func aLockFileLinkedToAnotherFileIsRefusedAndTheFileUntouched() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], seconds: 0.3)
        try ws.writeSpec(Self.spec(stages: [Self.encode]))
        try FileManager.default.createDirectory(atPath: ws["out/.segno"], withIntermediateDirectories: true)
        try "precious\n".write(toFile: ws["victim.txt"], atomically: false, encoding: .utf8)
        #expect(symlink(ws["victim.txt"], ws["out/.segno/state.sqlite.lock"]) == 0)
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(1), "\(run.status) \(run.stderr)")
        #expect(run.stderr.contains("lock file is a symbolic link"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "one line: \(run.stderr)")
        #expect(Self.text(ws["victim.txt"]) == "precious\n", "the link's target is untouched")
        #expect(access(ws["out/a.flac"], F_OK) != 0, "nothing was processed")
        // A database planted as a link is refused the same way.
        unlink(ws["out/.segno/state.sqlite.lock"])
        #expect(symlink(ws["victim.txt"], ws["out/.segno/state.sqlite"]) == 0)
        let db = try ws.segno(["run", "spec.yaml"])
        #expect(db.exited(1), "\(db.status) \(db.stderr)")
        #expect(db.stderr.contains("state database is a symbolic link"), "\(db.stderr)")
        #expect(Self.text(ws["victim.txt"]) == "precious\n")
    }

    @Test func aStateFolderOthersCanWriteIsRefusedUnlessTheSpecSharesIt() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], seconds: 0.3)
        try ws.writeSpec(Self.spec(stages: [Self.encode]))
        try FileManager.default.createDirectory(atPath: ws["out/.segno"], withIntermediateDirectories: true)
        chmod(ws["out/.segno"], 0o777)
        let open = try ws.segno(["run", "spec.yaml"])
        #expect(open.exited(1), "\(open.status) \(open.stderr)")
        #expect(open.stderr.contains("out/.segno") && open.stderr.contains("writable by every user")
                && open.stderr.contains("mode 0777") && open.stderr.contains("shared_folder"), "\(open.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: ws["out/.segno"]).isEmpty, "nothing created in it")
        // Group-writable: refused by default, taken with `shared_folder: true`; world-writable never.
        chmod(ws["out/.segno"], 0o775)
        let group = try ws.segno(["run", "spec.yaml"])
        #expect(group.exited(1) && group.stderr.contains("writable by its group"), "\(group.stderr)")
        try ws.writeSpec(Self.spec(state: "{ path: out/.segno/state.sqlite, shared_folder: true }", stages: [Self.encode]))
        let shared = try ws.segno(["run", "spec.yaml"])
        #expect(shared.exited(0), "\(shared.stderr)")
        #expect(access(ws["out/a.flac"], F_OK) == 0)
        chmod(ws["out/.segno"], 0o777)
        let world = try ws.segno(["run", "spec.yaml"])
        #expect(world.exited(1) && world.stderr.contains("writable by every user"), "\(world.stderr)")
        // The opt-in is for SQLite files only.
        try ws.writeSpec(Self.spec(state: "{ path: \"postgres://u@h/db\", shared_folder: true }", stages: [Self.encode]))
        let pg = try ws.segno(["validate", "spec.yaml"])
        #expect(pg.exited(2) && pg.stderr.contains("PostgreSQL state is shared already"), "\(pg.stderr)")
    }

    @Test(.enabled(if: getuid() == 0, "chown needs root"))
    func aStateFolderAnotherUserOwnsIsRefused() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], seconds: 0.3)
        try ws.writeSpec(Self.spec(stages: [Self.encode]))
        try FileManager.default.createDirectory(atPath: ws["out/.segno"], withIntermediateDirectories: true)
        #expect(chown(ws["out/.segno"], 65534, 65534) == 0)
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(1), "\(run.status) \(run.stderr)")
        #expect(run.stderr.contains("belongs to another user") && run.stderr.contains("uid 65534"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: ws["out/.segno"]).isEmpty, "nothing created in it")
        // The same for a state folder that is another user's link to a root-only folder.
        try FileManager.default.removeItem(atPath: ws["out/.segno"])
        try FileManager.default.createDirectory(atPath: ws["rootonly"], withIntermediateDirectories: true)
        chmod(ws["rootonly"], 0o700)
        #expect(symlink(ws["rootonly"], ws["out/.segno"]) == 0)
        #expect(lchown(ws["out/.segno"], 65534, 65534) == 0)
        let link = try ws.segno(["run", "spec.yaml"])
        #expect(link.exited(1) && link.stderr.contains("symbolic link another user made"), "\(link.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: ws["rootonly"]).isEmpty, "nothing created in the root-only folder")
    }

    // MARK: the database

    @Test func anEmptyDatabaseWithItsMarkerIsDamagedNotNew() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], seconds: 0.3)
        try ws.writeSpec(Self.spec(stages: [Self.encode]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        let db = ws["out/.segno/state.sqlite"]
        #expect(truncate(db, 0) == 0)
        for suffix in ["-wal", "-shm"] { unlink(db + suffix) }
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(65), "\(run.status) \(run.stderr)")
        #expect(run.stderr.contains("is damaged (empty file)") && run.stderr.contains("segno state rebuild"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: ws["out/.segno"]).contains { $0.hasPrefix("state.sqlite.damaged-") })
    }

    // MARK: prune

    @Test func pruneDeletesOnlyWhatItProvesItWrote() throws {
        let ws = try RunWorkspace()
        for name in ["a", "b", "c", "d"] { try RunWorkspace.writeTone(to: ws["in/\(name).wav"], seconds: 0.3) }
        try ws.writeSpec(Self.spec(stages: [Self.encode, "upload: { to: \"file://\(ws["archive"])/\", prune: true, prune_limit: 100% }"]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        // Files segno must never delete: a root-only file outside everything, and a user's file
        // inside output.root that the state now claims.
        try FileManager.default.createDirectory(atPath: ws["rootonly"], withIntermediateDirectories: true)
        try "precious\n".write(toFile: ws["rootonly/precious.txt"], atomically: false, encoding: .utf8)
        chmod(ws["rootonly/precious.txt"], 0o600)
        chmod(ws["rootonly"], 0o700)
        try "notes\n".write(toFile: ws["out/notes.txt"], atomically: false, encoding: .utf8)
        let db = ws["out/.segno/state.sqlite"]
        try Self.craft(db, "a.wav", "encode", "../rootonly/precious.txt")
        try Self.craft(db, "b.wav", "upload", "file://\(ws["rootonly/precious.txt"])")
        try Self.craft(db, "c.wav", "encode", "notes.txt")
        let archived = try FileManager.default.contentsOfDirectory(atPath: ws["archive"]).sorted()
        #expect(archived == ["a.flac", "b.flac", "c.flac", "d.flac"])
        for name in ["a", "b", "c", "d"] { unlink(ws["in/\(name).wav"]) }
        try RunWorkspace.writeTone(to: ws["in/e.wav"], seconds: 0.3)   // an input is there: not an unmounted folder
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.status) \(run.stderr)")
        #expect(Self.text(ws["rootonly/precious.txt"]) == "precious\n", "outside output.root and the upload folder: kept")
        #expect(Self.text(ws["out/notes.txt"]) == "notes\n", "inside output.root but not segno's: kept")
        let said = run.stderr.split(separator: "\n").filter { $0.contains("prune: kept") }
        #expect(said.count == 1, "said once per run: \(run.stderr)")
        #expect(said.first?.contains("3 files or objects") == true, "\(run.stderr)")
        // What segno did write and the state records truly is deleted.
        #expect(access(ws["out/b.flac"], F_OK) != 0 && access(ws["out/d.flac"], F_OK) != 0)
        // b's upload step names the root-only file, so its archived copy is not the state's any more.
        #expect(try FileManager.default.contentsOfDirectory(atPath: ws["archive"]).sorted() == ["b.flac", "e.flac"])
        #expect(access(ws["out/a.flac"], F_OK) == 0 && access(ws["out/c.flac"], F_OK) == 0, "its steps named other files: left in place")
    }

    @Test func pruneNeverDeletesThroughALinkedFolderOrAChangedFile() throws {
        let ws = try RunWorkspace()
        for name in ["x/a", "y/b", "c"] { try RunWorkspace.writeTone(to: ws["in/\(name).wav"], seconds: 0.3) }
        try ws.writeSpec(Self.spec(stages: [Self.encode, "upload: { to: \"file://\(ws["archive"])/{dir}/\", prune: true, prune_limit: 100% }"]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        // out/x is swapped for a link to a folder holding a file of the same name and mark.
        try FileManager.default.moveItem(atPath: ws["out/x"], toPath: ws["elsewhere"])
        #expect(symlink(ws["elsewhere"], ws["out/x"]) == 0)
        // out/y/b.flac keeps its mark but not its bytes.
        let fd = open(ws["out/y/b.flac"], O_WRONLY | O_APPEND)
        #expect(fd >= 0 && write(fd, "x", 1) == 1)
        close(fd)
        for name in ["x/a", "y/b", "c"] { unlink(ws["in/\(name).wav"]) }
        try RunWorkspace.writeTone(to: ws["in/e.wav"], seconds: 0.3)
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.status) \(run.stderr)")
        #expect(access(ws["elsewhere/a.flac"], F_OK) == 0, "never through a linked folder")
        #expect(access(ws["out/y/b.flac"], F_OK) == 0, "another size: not the file segno recorded")
        #expect(access(ws["out/c.flac"], F_OK) != 0, "proven: deleted")
        #expect(run.stderr.split(separator: "\n").filter { $0.contains("prune: kept 2 files") }.count == 1, "\(run.stderr)")
    }

    // MARK: input links and FIFOs

    @Test func followLinksFalseSkipsLinkedFilesAsItSkipsLinkedFolders() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/real.wav"], seconds: 0.3)
        try RunWorkspace.writeTone(to: ws["elsewhere/secret.wav"], seconds: 0.3)
        #expect(symlink(ws["elsewhere/secret.wav"], ws["in/link.wav"]) == 0)
        try ws.writeSpec(Self.spec(stages: [Self.encode]))
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        #expect(access(ws["out/real.flac"], F_OK) == 0)
        #expect(access(ws["out/link.flac"], F_OK) != 0, "follow_links: false")
        // Asked for, the link is followed.
        try ws.writeSpec(Self.spec(input: "root: in, settle: 0s, follow_links: true", stages: [Self.encode]))
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        #expect(access(ws["out/link.flac"], F_OK) == 0)
    }

    @Test func anOutputRootLinkedToTheInputRootFailsTheOverlapCheck() throws {
        let ws = try RunWorkspace()
        try RunWorkspace.writeTone(to: ws["in/a.wav"], seconds: 0.3)
        #expect(symlink(ws["in"], ws["out"]) == 0)
        try ws.writeSpec(Self.spec(input: "root: in, settle: 0s, include: [\"**/*.{wav,flac}\"]", stages: [Self.encode]))
        let check = try ws.segno(["validate", "spec.yaml"])
        #expect(check.exited(2), "\(check.status) \(check.stdout) \(check.stderr)")
        #expect(check.stderr.contains("inside input.root"), "\(check.stderr)")
    }

    @Test(.timeLimit(.minutes(20)))
    func infoAndRepairRefuseAFIFOInsteadOfWaiting() throws {
        let ws = try RunWorkspace()
        #expect(mkfifo(ws["pipe.m4a"], 0o644) == 0)
        let info = try ws.segno(["info", "pipe.m4a"], timeout: 30)
        #expect(info.exited(1) && info.stderr.contains("not a regular file"), "\(info.status) \(info.stderr)")
        let repair = try ws.segno(["repair", "pipe.m4a"], timeout: 30)
        #expect(repair.exited(1) && repair.stderr.contains("not a regular file"), "\(repair.status) \(repair.stderr)")
        try RunWorkspace.writeTone(to: ws["bad.wav"], seconds: 0.3)
        #expect(rename(ws["bad.wav"], ws["bad.m4a"]) == 0)   // not an MP4: repair would look for its frames
        let reference = try ws.segno(["repair", "bad.m4a", "--reference", "pipe.m4a"], timeout: 30)
        #expect(reference.exited(1) && reference.stderr.contains("not a regular file"), "\(reference.status) \(reference.stderr)")
    }

    // MARK: helpers die with segno

    /// The helper's stdin is a FIFO this test holds open, so it never reads end-of-file: only its
    /// watch on the parent process can end it when that parent is killed.
    @Test(.timeLimit(.minutes(20)))
    func aHelperDiesWithTheProcessThatStartedIt() throws {
        let ws = try RunWorkspace()
        let helper = (try CLI.segnoPath() as NSString).deletingLastPathComponent + "/segno-decode"
        #expect(mkfifo(ws["requests"], 0o600) == 0)
        let hold = open(ws["requests"], O_RDWR)   // a writer that outlives the parent
        #expect(hold >= 0)
        defer { close(hold) }
        let parent = Process()
        parent.executableURL = URL(fileURLWithPath: "/bin/sh")
        parent.arguments = ["-c", "'\(helper)' --parent $$ < '\(ws["requests"])' > /dev/null & echo $! > '\(ws["helper.pid"])'; wait"]
        let ended = DispatchSemaphore(value: 0)
        parent.terminationHandler = { _ in ended.signal() }
        try parent.run()
        var pid: pid_t = 0
        #expect(Wait.until(timeout: 20) {
            pid = pid_t((Self.text(ws["helper.pid"]) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            return pid > 0 && Self.isHelper(pid)
        })
        try #require(pid > 0)
        kill(parent.processIdentifier, SIGKILL)
        let gone = Wait.until(timeout: 5) { !Self.isAlive(pid) }
        if !gone { kill(pid, SIGKILL) }
        #expect(ended.wait(timeout: .now() + 10) == .success)
        #expect(gone, "segno-decode \(pid) outlived the process that started it")
    }

    /// True while `pid` runs (a zombie waiting for a reaper has ended).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = text("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(close, offsetBy: 2)...].prefix(1)
        return state != "Z" && state != "X"
    }

    static func isHelper(_ pid: pid_t) -> Bool {
        isAlive(pid) && (text("/proc/\(pid)/comm") ?? "").hasPrefix("segno-decode")
    }
}

/// Prune on an object store (issue 33 item 4): a crafted state row naming an object outside the
/// upload's prefix, or one segno did not send, deletes nothing.
extension UploadRunTests {
    @Test func pruneDeletesOnlyObjectsItProvesItSent() throws {
        let dir = try TempDir()
        let bucket = try freshBucket("prove")
        let spec = try oneRecording(dir, upload: "{ to: \"s3://\(bucket)/memos/\", endpoint: \"${S3_TEST_ENDPOINT}\", prune: true, prune_limit: 100% }")
        for (i, name) in ["a", "b", "c"].enumerated() { try Fixtures.writeSine(to: dir["in/\(name).wav"], frequency: 300 + Double(i) * 100, frames: 8000) }
        let s3 = try client()
        _ = try s3.putObject(bucket: bucket, key: "other/precious", data: Data("precious".utf8))
        _ = try s3.putObject(bucket: bucket, key: "memos/foreign.flac", data: Data("not segno's".utf8))
        #expect(try segno(["run", spec]).status == 0)
        try SharedFolderTests.craft(dir["out/.segno/state.sqlite"], "a.wav", "upload", "s3://\(bucket)/other/precious")
        try SharedFolderTests.craft(dir["out/.segno/state.sqlite"], "b.wav", "upload", "s3://\(bucket)/memos/foreign.flac")
        for name in ["a", "b", "c"] { try FileManager.default.removeItem(atPath: dir["in/\(name).wav"]) }
        let run = try segno(["run", spec])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try s3.headObject(bucket: bucket, key: "other/precious") != nil, "outside the upload's prefix: kept")
        #expect(try s3.headObject(bucket: bucket, key: "memos/foreign.flac") != nil, "not sent by segno: kept")
        #expect(try s3.headObject(bucket: bucket, key: "memos/c.flac") == nil, "proven: deleted")
        #expect(run.stderr.split(separator: "\n").filter { $0.contains("prune: kept 2 files or objects") }.count == 1, "\(run.stderr)")
    }
}
