import Foundation
import SegnoTestSupport
import Testing

/// The same spec over the same recordings, once with SQLite state and once with PostgreSQL state
/// (a real server, started by `make test`): every command that reads the state — `find` (Korean,
/// accents, punctuation, dates, places), `duplicates`, `outputs`, `status`, `report` — answers the
/// same, before and after `state rebuild` from the outputs alone. The titles, dates and places
/// come from tags ffmpeg writes; the shared audio is made by ffmpeg re-encoding one source.
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["SEGNO_TEST_PG"] != nil,
                             "SEGNO_TEST_PG is not set: `make test` starts PostgreSQL (Tests/support/postgres.sh) and sets it"))
struct StateBackendsAgreeTests {
    static let stages = ["encode: { path: \"{stem}.flac\" }", "metadata: { path: \"{stem}.meta.json\" }", "fingerprint: {}"]

    func spec(output: String, state: String?) -> String {
        var lines = ["version: 1", "name: agree", "input:", "  root: in", "  settle: 0s", "output:", "  root: \(output)"]
        if let state { lines.append("state: \"\(state)\"") }
        lines += ["parallel: 2", "retries: 0", "stages:"] + Self.stages.map { "  - " + $0 }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The workspace: FindTests' memos (titles in Korean, with accents and punctuation; dates;
    /// places), an MP3 of their source (shared audio), and one file that is not audio.
    func makeWorkspace() throws -> RunWorkspace {
        let ws = try RunWorkspace()
        try Pieces.write(Pieces.chords(seed: 5, seconds: 9, rate: 16000), rate: 16000, to: ws["src.wav"])
        for m in FindTests.memos {
            var args = ["-loglevel", "error", "-y", "-i", ws["src.wav"], "-c:a", "aac", "-metadata", "title=\(m.title)", "-metadata", "date=\(m.date)"]
            if let l = m.location { args += ["-metadata", "location=\(l)"] }
            let r = try CLI.tool("ffmpeg", args + [ws["in/\(m.file)"]])
            #expect(r.status == 0, "\(r.stderr)")
        }
        let mp3 = try CLI.tool("ffmpeg", ["-loglevel", "error", "-y", "-i", ws["src.wav"], "-b:a", "96k", ws["in/radio copy.mp3"]])
        #expect(mp3.status == 0, "\(mp3.stderr)")
        try Data("RIFF\u{0}\u{0}\u{0}\u{0}WAVEjunk, not audio at all".utf8).write(to: URL(fileURLWithPath: ws["in/broken.wav"]))
        return ws
    }

    /// A command's JSON with what legitimately differs between the two stores taken out: times,
    /// the state's location, the spec's and output root's names.
    func normalized(_ ws: RunWorkspace, _ text: String, output: String, spec: String) throws -> String {
        let volatile: Set<String> = ["state", "generated", "started", "finished", "seconds", "at", "realtime", "audio_seconds", "segno_version", "spec"]
        func strip(_ v: Any) -> Any {
            if let o = v as? [String: Any] { return o.filter { !volatile.contains($0.key) }.mapValues(strip) }
            if let a = v as? [Any] { return a.map(strip) }
            return v
        }
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        let data = try JSONSerialization.data(withJSONObject: strip(object), options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
            .replacingOccurrences(of: ws[output], with: "OUT").replacingOccurrences(of: output + "/", with: "OUT/")
            .replacingOccurrences(of: ws[spec], with: "SPEC")
    }

    /// Every reading command's answer for one spec, by command line.
    func answers(_ ws: RunWorkspace, spec: String, output: String) throws -> [String: String] {
        let commands: [[String]] = [
            ["duplicates", "--json"], ["outputs", "--json"], ["status", "--json", "--failed"], ["report", "--json"],
            ["find", "--json"], ["find", "--json", "회의"], ["find", "--json", "서울"], ["find", "--json", "부산", "메모"],
            ["find", "--json", "cafe", "muller"], ["find", "--json", "RÉPÉTITION"], ["find", "--json", "rock'n'roll"],
            ["find", "--json", "roll!", "take"], ["find", "--json", "meet"], ["find", "--json", "copy"], ["find", "--json", "서"],
            ["find", "--json", "--from", "2024-05-01", "--to", "2024-05-31"], ["find", "--json", "회의", "--from", "2024-06-01"],
            ["find", "--json", "--near", "37.5665,126.9780,5"], ["find", "--json", "--near", "48.85,2.35"], ["find", "--json", "!!"],
        ]
        var out: [String: String] = [:]
        for c in commands {
            let r = try ws.segno([c[0], spec] + c.dropFirst())
            #expect(r.exited(0), "\(c): \(r.stderr)")
            out[c.joined(separator: " ")] = try normalized(ws, r.stdout, output: output, spec: spec)
        }
        return out
    }

    @Test func sqliteAndPostgresGiveTheSameAnswers() throws {
        guard let url = try ManyWorkersTests.database() else { return }
        let ws = try makeWorkspace()
        try ws.writeSpec(spec(output: "out-a", state: nil), name: "a.yaml")
        try ws.writeSpec(spec(output: "out-b", state: url), name: "b.yaml")
        for s in ["a.yaml", "b.yaml"] {
            let run = try ws.segno(["run", s])
            #expect(run.exited(1), "one file is not audio: \(run.stderr)")
        }
        let a = try answers(ws, spec: "a.yaml", output: "out-a")
        let b = try answers(ws, spec: "b.yaml", output: "out-b")
        for key in a.keys.sorted() { #expect(a[key] == b[key], "\(key)") }

        // The answers are about something: the Korean, accented and punctuated titles are found,
        // the copies are one group of shared audio, the broken file is a failure.
        func results(_ key: String) throws -> [String] {
            ((try RunWorkspace.json(a[key] ?? "{}"))["results"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
        }
        #expect(try results("find --json 서울") == ["seoul.m4a"])
        #expect(try results("find --json 회의").sorted() == ["busan.m4a", "seoul.m4a"])
        #expect(try results("find --json cafe muller") == ["cafe.m4a"])
        #expect(try results("find --json rock'n'roll") == ["rock.m4a"])
        #expect(try results("find --json 서").isEmpty == false)
        #expect(try results("find --json !!").isEmpty)
        let groups = try RunWorkspace.json(a["duplicates --json"] ?? "{}")["groups"] as? [[String: Any]] ?? []
        #expect(groups.count == 1 && (groups.first?["recordings"] as? [String])?.count == FindTests.memos.count + 1)
        #expect(try RunWorkspace.json(a["status --json --failed"] ?? "{}").int("failed") == 1)

        // State rebuilt from the outputs alone agrees too (SQLite: the file deleted; PostgreSQL:
        // an empty database).
        try FileManager.default.removeItem(atPath: ws["out-a/.segno/state.sqlite"])
        guard let fresh = try ManyWorkersTests.database() else { return }
        try ws.writeSpec(spec(output: "out-b", state: fresh), name: "b.yaml")
        for s in ["a.yaml", "b.yaml"] {
            let r = try ws.segno(["state", "rebuild", s])
            #expect(r.exited(0), "\(s): \(r.stderr)")
            #expect(r.stdout.contains("6 of 7 recordings adopted"), "\(r.stdout)")
        }
        let ra = try answers(ws, spec: "a.yaml", output: "out-a")
        let rb = try answers(ws, spec: "b.yaml", output: "out-b")
        for key in ["outputs --json", "status --json --failed", "report --json"] { #expect(ra[key] == rb[key], "after rebuild: \(key)") }
    }
}
