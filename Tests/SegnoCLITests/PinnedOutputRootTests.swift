import Foundation
import SegnoCoreTestSupport
import SegnoTestSupport
import Testing

/// Issue 33: the output root is opened once per run and written through; swapping it for a
/// symbolic link mid-run (`mv out out.real; ln -s elsewhere out`) redirects nothing: every output
/// lands in the folder the run started with, none in the link's target.
@Suite struct PinnedOutputRootTests {
    @Test func anOutputRootSwappedForALinkMidRunRedirectsNoWrite() throws {
        let ws = try RunWorkspace()
        let recordings = try ws.makeRecordings(count: 12, minSeconds: 3, maxSeconds: 4)
        try FileManager.default.createDirectory(atPath: ws["elsewhere"], withIntermediateDirectories: true)
        // The state lives outside the root, so only the outputs are in play.
        try ws.writeSpec("version: 1\ninput: { root: in, settle: 0s }\noutput: { root: out }\nstate: { path: state/segno.sqlite }\n"
                         + "parallel: 1\nretries: 0\nstages:\n  - pitch: { semitones: 3 }\n  - encode: { path: \"{dir}/{stem}.flac\" }\n")
        let child = try ws.start(["run", "spec.yaml", "--quiet"])
        let first = Wait.until(timeout: 120) {
            ((try? FileManager.default.subpathsOfDirectory(atPath: ws["out"])) ?? []).contains { $0.hasSuffix(".flac") }
        }
        #expect(first, "the run wrote its first output")
        try FileManager.default.moveItem(atPath: ws["out"], toPath: ws["out.real"])
        try FileManager.default.createSymbolicLink(atPath: ws["out"], withDestinationPath: ws["elsewhere"])
        let swappedWhile = (try FileManager.default.subpathsOfDirectory(atPath: ws["out.real"])).filter { $0.hasSuffix(".flac") }.count
        let exit = child.wait(timeout: 600)
        #expect(exit.exited(0), "\(exit.status) \(exit.stderr)")
        #expect(swappedWhile < recordings.count, "the swap came before the run's end (\(swappedWhile) of \(recordings.count) written)")
        let redirected = try FileManager.default.subpathsOfDirectory(atPath: ws["elsewhere"])
        #expect(redirected.isEmpty, "written through the swapped link: \(redirected)")
        let kept = try FileManager.default.subpathsOfDirectory(atPath: ws["out.real"]).filter { $0.hasSuffix(".flac") }
        #expect(kept.count == recordings.count, "\(kept.count) outputs in the folder the run started with")
    }
}
