import Foundation
import SegnoAudioTestSupport
import SegnoCoreTestSupport

/// Short meetings of real recorded voices from packages (as tools/speakers_quality.py builds its
/// conversations): the LibriVox reader of Debian's `pocketsphinx-testdata`, the ALSA channel
/// prompts of `alsa-utils` and Asterisk's Allison (`asterisk-core-sounds-en-wav`). Each turn is
/// one speaker's clips 0.2 s apart, turns 0.4 s apart, 16 kHz mono 16-bit WAV.
enum Meetings {
    /// Overwrites the file's bytes with zeros in place and puts its modification time back (a
    /// run that decoded it again would fail or hear silence: proves a step did not decode).
    static func zeroInPlace(_ path: String) throws {
        var st = stat()
        guard stat(path, &st) == 0 else { throw CLITestError("stat \(path)") }
        let fd = Glibc.open(path, O_WRONLY)
        guard fd >= 0 else { throw CLITestError("open \(path)") }
        let zeros = [UInt8](repeating: 0, count: Int(st.st_size))
        _ = zeros.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        Glibc.close(fd)
        var times = [st.st_atim, st.st_mtim]
        guard utimensat(AT_FDCWD, path, &times, 0) == 0 else { throw CLITestError("utimensat \(path)") }
    }

    static let reader = ["870", "890", "920", "880", "930"].map { "/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0\($0).wav" }
    static let alsa = ["Front_Center", "Front_Left", "Front_Right", "Rear_Center", "Rear_Left", "Rear_Right"].map { "/usr/share/sounds/alsa/\($0).wav" }
    static let allison = ["activated", "added", "agent-alreadyon", "agent-incorrect", "agent-loggedoff", "agent-loginok"]
        .map { "/usr/share/asterisk/sounds/en_US_f_Allison/\($0).wav" }

    /// One meeting: its file name and turns (speaker index, clips).
    struct Meeting {
        var name: String
        var turns: [(speaker: Int, clips: [String])]
    }

    /// Two meetings of about 27 and 25 s, two voices each: the reader and the ALSA voice, the
    /// reader and Allison.
    static let standard = [
        Meeting(name: "standup.wav", turns: [(0, [reader[0]]), (1, Array(alsa[0..<3])), (0, [reader[1]]), (1, Array(alsa[3..<6])), (0, [reader[2]])]),
        Meeting(name: "review.wav", turns: [(0, [reader[3]]), (1, Array(allison[0..<3])), (0, [reader[4]]), (1, Array(allison[3..<6]))]),
    ]

    /// The voices' files are there (`make test-deps`).
    static var available: Bool {
        (reader + alsa + allison).allSatisfy { FileManager.default.fileExists(atPath: $0) }
    }

    static func load(_ path: String) throws -> [Float] {
        let r = try Tool.run("sox", [path, "-t", "f32", "-r", "16000", "-c", "1", "-"])
        guard r.status == 0 else { throw FixtureError("sox could not read \(path): \(r.stderrText)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// Writes the meetings into `folder` and returns, per file name, each turn's speaker and
    /// [start, end) in seconds.
    @discardableResult
    static func write(into folder: String, _ meetings: [Meeting] = standard) throws -> [String: [(speaker: Int, start: Double, end: Double)]] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var truth: [String: [(speaker: Int, start: Double, end: Double)]] = [:]
        for m in meetings {
            var audio = [Float](repeating: 0, count: 8000)
            var turns: [(speaker: Int, start: Double, end: Double)] = []
            for t in m.turns {
                let start = audio.count
                for (k, c) in t.clips.enumerated() {
                    if k > 0 { audio += [Float](repeating: 0, count: 3200) }
                    audio += try load(c)
                }
                turns.append((t.speaker, Double(start) / 16000, Double(audio.count) / 16000))
                audio += [Float](repeating: 0, count: 6400)
            }
            let raw = folder + "/." + m.name + ".f32"
            try audio.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: raw)) }
            let r = try Tool.run("sox", ["-t", "f32", "-r", "16000", "-c", "1", raw, "-b", "16", folder + "/" + m.name])
            try? FileManager.default.removeItem(atPath: raw)
            guard r.status == 0 else { throw FixtureError("sox could not write \(m.name): \(r.stderrText)") }
            // An hour old: the spec's `settle` takes only files that stopped changing.
            RunWorkspace.setModified(folder + "/" + m.name, seconds: Int(Date().timeIntervalSince1970) - 3600)
            truth[m.name] = turns
        }
        return truth
    }
}
