import Foundation
import SegnoTestSupport
import Testing

/// Recordings of real voices for `segno speakers` (decision 0075), made with sox: Asterisk's
/// Allison (`asterisk-core-sounds-en-wav`; enrolled from prompts the meetings never use), the
/// LibriVox reader of `pocketsphinx-testdata` and the ALSA channel prompts (`alsa-utils`), never
/// enrolled.
enum NamedVoices {
    static let allison = "/usr/share/asterisk/sounds/en_US_f_Allison/"
    static let librivox = "/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0"
    static let alsa = "/usr/share/sounds/alsa/"
    /// Enrolled: never in a meeting.
    static let enrollment = ["call-forwarding", "call-waiting", "cannot-complete-as-dialed", "check-number-dial-again",
                             "conf-adminmenu", "conf-errormenu", "conf-getchannel", "conf-getpin"].map { allison + $0 + ".wav" }
    static let allisonInMeeting = ["activated", "added", "agent-alreadyon", "agent-incorrect", "agent-loggedoff", "agent-loginok",
                                   "agent-newlocation", "agent-pass"].map { allison + $0 + ".wav" }
    static let reader = ["870", "890", "920", "880"].map { librivox + $0 + ".wav" }
    static let channels = ["Front_Center", "Front_Left", "Front_Right", "Rear_Center"].map { alsa + $0 + ".wav" }

    /// Writes `clips` one after another (16 kHz mono, 0.4 s of silence after each) to `path`.
    static func write(_ clips: [String], to path: String) throws {
        for c in clips where !FileManager.default.fileExists(atPath: c) {
            throw CLITestError("\(c) is missing: `make test-deps` installs pocketsphinx-testdata, alsa-utils and asterisk-core-sounds-en-wav")
        }
        let dir = (path as NSString).deletingLastPathComponent
        var parts: [String] = []
        for (i, c) in clips.enumerated() {
            let p = dir + "/.part-\(i).wav"
            let r = try CLI.tool("sox", [c, "-r", "16000", "-c", "1", "-b", "16", p, "pad", "0", "0.4"])
            guard r.status == 0 else { throw CLITestError("sox \(c): \(r.stderr)") }
            parts.append(p)
        }
        let r = try CLI.tool("sox", parts + [path])
        for p in parts { unlink(p) }
        guard r.status == 0 else { throw CLITestError("sox: \(r.stderr)") }
    }

    /// A meeting: Allison and the reader take turns.
    static func meeting(to path: String) throws {
        let a = allisonInMeeting
        try write(Array(a[0..<4]) + [reader[0]] + Array(a[4..<8]) + [reader[1]], to: path)
    }
}

/// One turn of a `{stem}.speakers.json`.
struct NamedTurn: Decodable {
    var start: Double
    var end: Double
    var speaker: String
    var name: String?
}

/// `segno speakers enroll|list|forget` and the names and labels a run gives, on one state store.
struct SpeakersCommandFlow {
    let ws: RunWorkspace
    let state: String?

    func spec() throws {
        let lines = ["version: 1", "name: voices", "input: { root: in, settle: 0s }", "output: { root: out }"]
            + (state.map { ["state: \"\($0)\""] } ?? []) + ["parallel: 1", "retries: 0", "stages:", "  - speakers: true"]
        try ws.writeSpec(lines.joined(separator: "\n") + "\n")
    }

    func turns(_ stem: String) throws -> [NamedTurn] {
        try JSONDecoder().decode([NamedTurn].self, from: Data(contentsOf: URL(fileURLWithPath: ws["out/\(stem).speakers.json"])))
    }

    /// The seconds of each speaker (name, else label) in the true turns of `clips`, by overlap.
    static func seconds(_ turns: [NamedTurn], named: Bool) -> [String: Double] {
        var out: [String: Double] = [:]
        for t in turns { out[named ? (t.name ?? t.speaker) : t.speaker, default: 0] += t.end - t.start }
        return out
    }

    func enrollListForget() throws {
        try spec()
        try NamedVoices.write(NamedVoices.enrollment, to: ws["allison.wav"])
        let enrolled = try ws.segno(["speakers", "enroll", "spec.yaml", "Allison", "allison.wav"])
        #expect(enrolled.exited(0), "\(enrolled.stderr)")
        #expect(enrolled.stdout.contains("enrolled Allison: 1 file"), "\(enrolled.stdout)")
        let list = try ws.segno(["speakers", "list", "spec.yaml"])
        #expect(list.exited(0) && list.stdoutLines.count == 1, "\(list.stdout) \(list.stderr)")
        let fields = list.stdoutLines.first?.components(separatedBy: "  ") ?? []
        #expect(fields.count == 4 && fields[0] == "Allison" && fields[1] == "1 file", "\(fields)")
        let seconds = Double(fields.count > 2 ? fields[2].replacingOccurrences(of: " s", with: "") : "") ?? 0
        #expect(seconds > 8 && seconds < 40, "\(fields)")
        let json = try ws.segno(["speakers", "list", "--json", "spec.yaml"])
        let o = try RunWorkspace.json(json.stdout)
        #expect(o["name"] as? String == "Allison" && o["files"] as? Int == 1)
        let forget = try ws.segno(["speakers", "forget", "spec.yaml", "Allison"])
        #expect(forget.exited(0), "\(forget.stderr)")
        let after = try ws.segno(["speakers", "list", "spec.yaml"])
        #expect(after.stdout.contains("no voices enrolled"), "\(after.stdout)")
        let again = try ws.segno(["speakers", "forget", "spec.yaml", "Allison"])
        #expect(again.exited(1) && again.stderr.contains("no voice named \"Allison\" is enrolled (none is enrolled)"), "\(again.stderr)")
    }

    /// A run names nobody; enrolling Allison, then a run over a source whose bytes are now zeros
    /// (same size, time and inode: the plan leaves it alone) names her turns, not the reader's:
    /// the files were written again from the state, without decoding. A second recording of the
    /// reader gets the reader's label from the first.
    func namesWithoutDecodingAndStableLabels() throws {
        try spec()
        try NamedVoices.meeting(to: ws["in/meeting.wav"])
        let first = try ws.segno(["run", "spec.yaml", "--quiet"])
        #expect(first.exited(0), "\(first.stderr)")
        let before = try turns("meeting")
        #expect(before.allSatisfy { $0.name == nil }, "\(before)")
        #expect(Set(before.map(\.speaker)).count == 2, "\(before)")
        // The reader's label: the speaker of the turn over the reader's first clip (at about 12 s).
        let readerLabel = try #require(before.max { overlapReader($0) < overlapReader($1) }?.speaker)

        try NamedVoices.write(NamedVoices.enrollment, to: ws["allison.wav"])
        #expect(try ws.segno(["speakers", "enroll", "spec.yaml", "Allison", "allison.wav"]).exited(0))
        try Meetings.zeroInPlace(ws["in/meeting.wav"])
        let second = try ws.segno(["run", "spec.yaml", "--quiet"])
        #expect(second.exited(0), "\(second.stderr)")
        let after = try turns("meeting")
        #expect(after.map(\.start) == before.map(\.start) && after.map(\.speaker) == before.map(\.speaker), "\(after)")
        let named = after.filter { $0.name == "Allison" }
        #expect(!named.isEmpty && named.allSatisfy { $0.speaker != readerLabel }, "\(after)")
        #expect(after.filter { $0.speaker == readerLabel }.allSatisfy { $0.name == nil }, "\(after)")
        let rttm = try String(contentsOfFile: ws["out/meeting.rttm"], encoding: .utf8)
        #expect(rttm.contains(" Allison <NA> <NA>") && rttm.contains(" \(readerLabel) <NA> <NA>"), "\(rttm)")

        // The reader again, with the ALSA voice: the reader keeps the label; the ALSA voice gets a new one.
        try NamedVoices.write([NamedVoices.reader[2]] + Array(NamedVoices.channels[0..<3]) + [NamedVoices.reader[3]], to: ws["in/later.wav"])
        let third = try ws.segno(["run", "spec.yaml", "--quiet"])
        #expect(third.exited(0), "\(third.stderr)")
        let later = try turns("later")
        let labels = Set(later.map(\.speaker))
        #expect(labels.contains(readerLabel) && labels.count == 2, "\(later)")
        #expect(!labels.contains(where: { l in before.contains { $0.speaker == l && l != readerLabel } }), "\(later)")
        #expect(later.allSatisfy { $0.name == nil }, "\(later)")
    }

    /// Seconds a turn overlaps the reader's first clip in the meeting (after Allison's four prompts).
    private func overlapReader(_ t: NamedTurn) -> Double {
        // The reader speaks from the end of Allison's four prompts; find it from the sox lengths.
        let a = NamedVoices.allisonInMeeting[0..<4].map { soxLength($0) + 0.4 }.reduce(0, +)
        let b = a + soxLength(NamedVoices.reader[0])
        return max(0, min(t.end, b) - max(t.start, a))
    }

    private func soxLength(_ path: String) -> Double {
        Double((try? CLI.tool("soxi", ["-D", path]))?.stdout.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
    }
}

@Suite(.serialized) struct SpeakersCommandTests {
    @Test func enrollListAndForgetOnSQLite() throws {
        try SpeakersCommandFlow(ws: try RunWorkspace(), state: nil).enrollListForget()
    }

    @Test func aRunNamesEnrolledVoicesWithoutDecodingAndKeepsLabelsAcrossRecordings() throws {
        try SpeakersCommandFlow(ws: try RunWorkspace(), state: nil).namesWithoutDecodingAndStableLabels()
    }

    @Test func badInputIsAClearError() throws {
        let ws = try RunWorkspace()
        try SpeakersCommandFlow(ws: ws, state: nil).spec()
        try NamedVoices.write(NamedVoices.enrollment[0..<2].map { $0 }, to: ws["voice.wav"])
        let missing = try ws.segno(["speakers", "enroll", "spec.yaml", "Ann", "voice.wav", "nowhere.wav"])
        #expect(missing.exited(1) && missing.stderr.contains("nowhere.wav") && missing.stderr.contains("no such file"), "\(missing.stderr)")
        let silence = try CLI.tool("sox", ["-n", "-r", "16000", "-c", "1", "-b", "16", ws["silence.wav"], "trim", "0", "5"])
        #expect(silence.status == 0)
        let quiet = try ws.segno(["speakers", "enroll", "spec.yaml", "Ann", "silence.wav"])
        #expect(quiet.exited(1) && quiet.stderr.contains("silence.wav") && quiet.stderr.contains("no speech found"), "\(quiet.stderr)")
        try Data("not audio at all".utf8).write(to: URL(fileURLWithPath: ws["junk.wav"]))
        let junk = try ws.segno(["speakers", "enroll", "spec.yaml", "Ann", "junk.wav"])
        #expect(junk.exited(1) && junk.stderr.contains("junk.wav"), "\(junk.stderr)")
        for (name, why) in [("Ann/../x", "U+002F"), ("Ann\nBob", "U+000A"), ("-rf", "begins with a letter or a digit"),
                            ("speaker-3", "speaker-N is the label"), ("", "empty"), (String(repeating: "a", count: 65), "at most 64")] {
            let r = try ws.segno(["speakers", "enroll", "spec.yaml", "--", name, "voice.wav"])
            #expect(r.exited(2) && r.stderr.contains(why) && r.stderrLines.count == 1, "\(name): \(r.stderr)")
        }
        let list = try ws.segno(["speakers", "list", "spec.yaml"])
        #expect(!list.stdout.contains("Ann"), "nothing was enrolled: \(list.stdout)")
        let unknown = try ws.segno(["speakers", "forget", "spec.yaml", "Nobody"])
        #expect(unknown.exited(1) && unknown.stderr.contains("no voice named \"Nobody\""), "\(unknown.stderr)")
        // A name of letters in other scripts, digits, spaces and . - _ ' is allowed.
        let ok = try ws.segno(["speakers", "enroll", "spec.yaml", "Dr. O'Neil-서울_2", "voice.wav"])
        #expect(ok.exited(0), "\(ok.stderr)")
    }
}

@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["SEGNO_TEST_PG"] != nil,
                             "SEGNO_TEST_PG is not set: `make test` starts PostgreSQL (Tests/support/postgres.sh) and sets it"))
struct SpeakersCommandPostgresTests {
    @Test func enrollListAndForgetOnPostgreSQL() throws {
        let url = try #require(try ManyWorkersTests.database())
        try SpeakersCommandFlow(ws: try RunWorkspace(), state: url).enrollListForget()
    }

    @Test func namesWithoutDecodingAndStableLabelsOnPostgreSQL() throws {
        let url = try #require(try ManyWorkersTests.database())
        try SpeakersCommandFlow(ws: try RunWorkspace(), state: url).namesWithoutDecodingAndStableLabels()
    }
}
