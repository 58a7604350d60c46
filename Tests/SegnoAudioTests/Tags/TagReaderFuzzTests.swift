import Foundation
@testable import SegnoAudio
@testable import SegnoCore
import Testing

/// The tag readers on damaged files: tagged files made by mutagen and ffmpeg
/// (Tests/support/tags.py), cut at random points and with random byte runs overwritten, read in
/// this process. A crash or hang fails the whole test run.
@Suite struct TagReaderFuzzTests {
    static let helper = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("support/tags.py").path

    /// xorshift64*: the same mutations on every run.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12; state ^= state << 25; state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(1, n))) }
    }

    @Test func damagedTagsNeverCrashAndTheirPicturesStayBounded() throws {
        let dir = NSTemporaryDirectory() + "segno-tagfuzz-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Self.helper, "make", dir]
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        // The crafted ones too (issue 33): nesting, a compression bomb, 10,000 values.
        let hostile = Process()
        hostile.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        hostile.arguments = ["python3", Self.helper.replacingOccurrences(of: "tags.py", with: "hostile.py"), "make", dir]
        try hostile.run()
        hostile.waitUntilExit()
        #expect(hostile.terminationStatus == 0)
        let sources = ["flac", "mp3", "m4a", "opus", "ogg", "wav"].map { "\(dir)/tagged.\($0)" }
            + ["nested-chap.mp3", "nested-ctoc.wav", "zbomb.mp3", "many-titles.flac"].map { "\(dir)/\($0)" }
        let originals = try sources.map { try [UInt8](Data(contentsOf: URL(fileURLWithPath: $0))) }
        // The undamaged files read fully.
        for s in sources.prefix(6) { #expect(TagReader.read(path: s).value("title") == "비 오는 날 회의", "\(s)") }
        var rng = Random(state: 0x5E6_0_7A65)
        var warned = 0
        let target = dir + "/mutant"
        for round in 0..<1200 {
            let k = round % sources.count
            var b = originals[k]
            // Damage mostly where the tags are (the first 4 KiB), sometimes anywhere.
            let span = rng.below(4) == 0 ? b.count : min(b.count, 4096)
            for _ in 0..<(1 + rng.below(4)) {
                let at = rng.below(span), n = 1 + rng.below(16)
                for i in at..<min(b.count, at + n) { b[i] = UInt8(truncatingIfNeeded: rng.next()) }
            }
            if rng.below(3) == 0 { b = Array(b.prefix(rng.below(b.count))) }
            // Keep the container's name on the mutant so TagLib is asked for the same format.
            let path = target + "." + (sources[k] as NSString).pathExtension
            try Data(b).write(to: URL(fileURLWithPath: path))
            let m = TagReader.read(path: path, pictures: .load)
            if !m.warnings.isEmpty { warned += 1 }
            #expect(m.pictures.allSatisfy { ($0.data?.count ?? 0) <= TagReader.pictureLimit && $0.size >= 0 })
            #expect(m.tags.count <= TagLimits.values && m.raw.count <= TagLimits.values)
            #expect(m.tags.allSatisfy { $0.value.utf8.count <= TagLimits.valueBytes })
        }
        // Some of the damage must have been noticed and named (a check that could never warn would pass silently otherwise).
        #expect(warned > 0)
    }
}
