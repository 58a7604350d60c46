import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Decision 0096: `segno find` prints a matching chapter's or marker's time from the state alone
/// (the catalogue keeps each recording's chapters and markers when a run catalogues it), so the
/// source's bytes may change or vanish after the run. A database from before the column upgrades;
/// its recordings' chapters are read from their files until a run catalogues them again.
@Suite(.serialized) struct FindChaptersFromStateTests {
    /// ff.mp3 (chapters by ffmpeg: "Zoë = talks; #2" at 2.5 s) and bwf.wav (cue markers: "door"
    /// at 400,000 / 48,000 s), from Tests/support/chapters.py.
    func workspace(state: String?) throws -> RunWorkspace {
        let ws = try RunWorkspace()
        for d in ["in", "out"] { try FileManager.default.createDirectory(atPath: ws[d], withIntermediateDirectories: true) }
        _ = try ChaptersTests.python(["make", ws["in"]])
        for n in ["ff.m4a", "mutagen.mp3", "mutagen.flac", "mutagen.ogg", "tone.wav", "chapters.txt"] { try FileManager.default.removeItem(atPath: ws["in/\(n)"]) }
        _ = try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nretries: 0\n"
                             + (state.map { "state: \"\($0)\"\n" } ?? "") + "stages:\n  - encode: \"{stem}.flac\"\n")
        return ws
    }

    func find(_ ws: RunWorkspace, _ words: [String]) throws -> String {
        let r = try ws.segno(["find", "spec.yaml"] + words)
        #expect(r.exited(0), "\(r.stderr)")
        return r.stdout
    }

    static let talks = "ff.mp3 00:00:02.500 chapter \"Zoë = talks; #2\""
    static let door = "bwf.wav 00:00:08.333 chapter \"door\""

    /// The sources' bytes change after the run: ff.mp3 is no longer audio, bwf.wav is gone.
    func spoil(_ ws: RunWorkspace) throws {
        try Data("not audio any more".utf8).write(to: URL(fileURLWithPath: ws["in/ff.mp3"]))
        try FileManager.default.removeItem(atPath: ws["in/bwf.wav"])
    }

    /// After the sources changed, `find` still prints the times it stored, as text and JSON.
    func answersFromTheState(_ ws: RunWorkspace) throws {
        let talks = try find(ws, ["talks"])
        #expect(talks.contains(Self.talks), "\(talks)")
        let door = try find(ws, ["door"])
        #expect(door.contains(Self.door), "a marker: \(door)")
        let json = try RunWorkspace.json(try find(ws, ["talks", "--json"]))
        let chapters = (json["results"] as? [[String: Any]])?.first?["chapters"] as? [[String: Any]] ?? []
        #expect(chapters.count == 1 && (chapters.first?["time"] as? NSNumber)?.doubleValue == 2.5
                && chapters.first?["title"] as? String == "Zoë = talks; #2", "\(json)")
    }

    @Test func sqliteAnswersFromTheStateAndUpgradesOlderDatabases() throws {
        let ws = try workspace(state: nil)
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        // A database from before the column: the column dropped and its migration forgotten.
        let db = ws["out/.segno/state.sqlite"]
        let old = try CLI.tool("sqlite3", [db, "ALTER TABLE catalog DROP COLUMN chapters; DELETE FROM grdb_migrations WHERE identifier LIKE 'v11:%';"])
        #expect(old.status == 0, "\(old.stderr)")
        // find reads it (migrated in memory): no chapters stored, so they are read from the file.
        #expect(try find(ws, ["talks"]).contains(Self.talks))
        // A run with nothing to do upgrades the file; its rows still have no chapters.
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        let column = try CLI.tool("sqlite3", [db, "SELECT count(*) FROM catalog WHERE chapters IS NULL"])
        #expect(column.status == 0 && column.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "2", "\(column.stdout)\(column.stderr)")
        // A run that decodes them catalogues their chapters; then the files may change.
        #expect(try ws.segno(["run", "spec.yaml", "--force"]).exited(0))
        try spoil(ws)
        try answersFromTheState(ws)
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["SEGNO_TEST_PG"] != nil,
                   "SEGNO_TEST_PG is not set: `make test` starts PostgreSQL (Tests/support/postgres.sh) and sets it"))
    func postgresAnswersFromTheStateAndUpgradesOlderDatabases() throws {
        guard let url = try ManyWorkersTests.database() else { return }
        let ws = try workspace(state: url)
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        // A database from before the column; the next run migrates it, and its rows read their files.
        let old = try CLI.run("/usr/bin/psql", [url, "-q", "-c", "ALTER TABLE catalog DROP COLUMN chapters; DELETE FROM segno_migrations WHERE name LIKE 'pg8:%'"])
        #expect(old.status == 0, "\(old.stderr)")
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        #expect(try find(ws, ["talks"]).contains(Self.talks))
        #expect(try ws.segno(["run", "spec.yaml", "--force"]).exited(0))
        try spoil(ws)
        try answersFromTheState(ws)
    }
}
