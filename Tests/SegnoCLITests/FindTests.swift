import Foundation
import SegnoTestSupport
import Testing

/// `segno find`: words in Korean, with accents and punctuation, date ranges and places from
/// ISO 6709 `location` tags that ffmpeg writes into .m4a files.
@Suite(.serialized) struct FindTests {
    struct Memo { var file: String; var title: String; var date: String; var location: String? }
    static let memos = [
        Memo(file: "seoul.m4a", title: "서울에서 주간 회의", date: "2024-05-01T09:30:00Z", location: "+37.5665+126.9780/"),
        Memo(file: "busan.m4a", title: "부산 회의 메모", date: "2024-06-15T14:00:00Z", location: "+35.1796+129.0756/"),
        Memo(file: "cafe.m4a", title: "Café Müller — répétition", date: "2023-11-20T18:45:00Z", location: "+48.8566+002.3522/"),
        Memo(file: "rock.m4a", title: "Rock'n'Roll! (take 2)", date: "2024-05-20T20:00:00Z", location: "+37.5512+126.9882/"),
        Memo(file: "plain.m4a", title: "weekly meeting notes", date: "2024-01-02T08:00:00Z", location: nil),
    ]

    func makeArchive() throws -> RunWorkspace {
        let ws = try RunWorkspace()
        try Pieces.write(Pieces.chords(seed: 5, seconds: 4, rate: 16000), rate: 16000, to: ws["src.wav"])
        for m in Self.memos {
            var args = ["-loglevel", "error", "-y", "-i", ws["src.wav"], "-c:a", "aac", "-metadata", "title=\(m.title)", "-metadata", "date=\(m.date)"]
            if let l = m.location { args += ["-metadata", "location=\(l)"] }
            let r = try CLI.tool("ffmpeg", args + [ws["in/\(m.file)"]])
            #expect(r.status == 0, "\(r.stderr)")
        }
        try ws.writeSpec(RunTests.spec(stages: ["encode: { path: \"{stem}.flac\" }"]))
        let run = try ws.segno(["run", "spec.yaml"])
        #expect(run.exited(0), "\(run.stderr)")
        return ws
    }

    func paths(_ ws: RunWorkspace, _ args: [String]) throws -> [String] {
        let r = try ws.segno(["find", "spec.yaml"] + args + ["--json"])
        #expect(r.exited(0), "\(r.stderr)")
        return (try RunWorkspace.json(r.stdout)["results"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
    }

    @Test func findsByWordsDatesAndPlaces() throws {
        let ws = try makeArchive()
        // Korean: a word, and a word with a particle found by its stem (prefix).
        #expect(try paths(ws, ["회의"]).sorted() == ["busan.m4a", "seoul.m4a"])
        #expect(try paths(ws, ["서울"]) == ["seoul.m4a"])
        #expect(try paths(ws, ["부산", "메모"]) == ["busan.m4a"])
        // Accents either way, and punctuation.
        #expect(try paths(ws, ["cafe", "muller"]) == ["cafe.m4a"])
        #expect(try paths(ws, ["RÉPÉTITION"]) == ["cafe.m4a"])
        #expect(try paths(ws, ["rock'n'roll"]) == ["rock.m4a"])
        #expect(try paths(ws, ["roll!", "take"]) == ["rock.m4a"])
        // Prefixes and file names.
        #expect(try paths(ws, ["meet"]) == ["plain.m4a"])
        #expect(try paths(ws, ["plain"]) == ["plain.m4a"])
        // Dates: inclusive days, newest first without words.
        #expect(try paths(ws, ["--from", "2024-05-01", "--to", "2024-05-31"]) == ["rock.m4a", "seoul.m4a"])
        #expect(try paths(ws, ["--to", "2023-12-31"]) == ["cafe.m4a"])
        #expect(try paths(ws, ["회의", "--from", "2024-06-01"]) == ["busan.m4a"])
        // Places: within 5 km of Seoul City Hall, nearest first; Paris; nothing in the sea.
        #expect(try paths(ws, ["--near", "37.5665,126.9780,5"]) == ["seoul.m4a", "rock.m4a"])
        #expect(try paths(ws, ["--near", "48.85,2.35"]) == ["cafe.m4a"])
        #expect(try paths(ws, ["--near", "0,0,100"]) == [])
    }

    @Test func ranksTitlesFirstAndPrintsOutputs() throws {
        let ws = try makeArchive()
        // "notes" is in plain.m4a's title; rank puts the title match above a name-only match.
        #expect(try CLI.tool("cp", [ws["in/busan.m4a"], ws["in/notes.m4a"]]).status == 0)
        #expect(try ws.segno(["run", "spec.yaml"]).exited(0))
        #expect(try paths(ws, ["notes"]) == ["plain.m4a", "notes.m4a"])
        let text = try ws.segno(["find", "spec.yaml", "서울"])
        #expect(text.exited(0))
        #expect(text.stdout.contains("seoul.m4a") && text.stdout.contains(ws["out/seoul.flac"]), "\(text.stdout)")
        #expect(text.stdout.contains("37.5665,126.9780"))
    }

    @Test func emptyResultExitsZero() throws {
        let ws = try makeArchive()
        let r = try ws.segno(["find", "spec.yaml", "nowhere-to-be-found"])
        #expect(r.exited(0))
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "no recordings match")
        #expect(try ws.segno(["find", "spec.yaml", "--near", "91,0"]).exited(2))
        #expect(try ws.segno(["find", "spec.yaml", "--from", "May"]).exited(2))
    }
}
