import Foundation
@testable import SegnoAudio
import SegnoCoreTestSupport
import Testing

/// `ChildProcess.isEnding`, the check a pool makes before it reuses an idle helper: a killed
/// child counts as ending from the moment `kill` returns, before `waitid` can see it. A child with
/// several threads and a large heap (like the transcription helper with its model) takes up to a
/// second on a loaded machine to become reapable, and `ps` shows its main thread as a zombie
/// (`Z`) meanwhile: a pool that looked only at `waitid` handed a recording to such a helper.
@Suite struct ChildProcessEndingTests {
    /// A Python child with four threads and 200 MB touched, that says "ready" once it has them.
    static func busyChild() throws -> ChildProcess {
        let script = ["import threading, time",
                      "big = bytearray(200 * 1024 * 1024)",
                      "for i in range(0, len(big), 4096): big[i] = 1",
                      "def spin():",
                      "    while True: time.sleep(0.001)",
                      "for _ in range(4): threading.Thread(target=spin, daemon=True).start()",
                      "print('ready', flush=True)",
                      "time.sleep(600)"].joined(separator: "\n")
        let python = try #require(ProcessRunner.find("python3"), "python3 is not installed")
        let child = try ChildProcess(executable: python, arguments: ["-c", script])
        var buffer = [UInt8](repeating: 0, count: 16)
        _ = try buffer.withUnsafeMutableBytes { try child.readStdout(into: $0) }
        return child
    }

    @Test func aKilledChildIsEndingAtOnce() throws {
        let child = try Self.busyChild()
        #expect(!child.isEnding)
        kill(child.pid, SIGKILL)
        // No wait: the pending SIGKILL already says so, whatever the threads are doing.
        #expect(child.isEnding)
        #expect(child.wait() == .signalled(SIGKILL))
        #expect(child.isEnding)
    }

    @Test func procStatusIsRead() {
        #expect(!ChildProcess.statusSaysEnding("Name:\tpython3\nState:\tS (sleeping)\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"))
        #expect(ChildProcess.statusSaysEnding("Name:\tpython3\nState:\tZ (zombie)\nShdPnd:\t0000000000000000\n"))
        #expect(ChildProcess.statusSaysEnding("State:\tX (dead)\n"))
        #expect(ChildProcess.statusSaysEnding("State:\tR (running)\nShdPnd:\t0000000000000100\n"))
        #expect(ChildProcess.statusSaysEnding("State:\tS (sleeping)\nSigPnd:\t0000000000000100\nShdPnd:\t0000000000000000\n"))
        // SIGTERM (bit 14) pending is not an end: the child may handle it.
        #expect(!ChildProcess.statusSaysEnding("State:\tS (sleeping)\nShdPnd:\t0000000000004000\n"))
    }
}
