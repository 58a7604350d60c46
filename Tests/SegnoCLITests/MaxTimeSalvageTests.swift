import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Issue 33: `--max-time` stops a search for frames in a damaged MP4 (minutes on a large file
/// full of junk) instead of letting it overrun the cron slot; the recording is neither done nor
/// failed, so the next run takes it up again.
@Suite struct MaxTimeSalvageTests {
    @Test func maxTimeStopsASearchForFramesAndLeavesTheRecordingForTheNextRun() throws {
        let repair = try RepairTests()
        let ws = try RunWorkspace()
        try FileManager.default.createDirectory(atPath: ws["in"], withIntermediateDirectories: true)
        let original = try repair.encode("long.m4a", codec: "aac", rate: 48000, channels: 1)
        let damaged = try repair.damage(original, android: true)
        // 32 MB of junk inside the unterminated mdat: without the stop, the search runs to its
        // budget (linear in the data; about 6 s per 8 MB here), far past the 2 s given.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: damaged)))
        var rng = SplitMix64(seed: 0x4D41_5854)
        bytes += (0..<32_000_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        try Data(bytes).write(to: URL(fileURLWithPath: ws["in/long.m4a"]))
        try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s, damaged: salvage, reference: \(original) }\n"
                         + "output: { root: out }\nretries: 0\nstages:\n  - encode: { path: \"{stem}.flac\" }\n")
        let run = try ws.segno(["run", "spec.yaml", "--max-time", "2s"])
        #expect(run.exited(0), "\(run.status) \(run.stderr)")
        #expect((run.stdout + run.stderr).contains("--max-time reached, 1 left for the next run"), "\(run.stdout) \(run.stderr)")
        let status = try ws.segno(["status", "spec.yaml", "--json"])
        #expect(status.stdout.contains("\"failed\":0") && status.stdout.contains("\"done\":0"), "\(status.stdout)")
        #expect(!FileManager.default.fileExists(atPath: ws["out/long.flac"]))
    }
}
