import Foundation
import SegnoAudio
import SegnoCore
import Synchronization

/// The speaker-embedding helper: `segno-speakers --serve` (tools/speech, installed by `make deps`
/// into the speech environment and by `make install` beside segno) run by the speech
/// environment's Python. It reads the GE2E encoder's weights (PyPI `resemblyzer` 0.1.4's
/// `pretrained.pt`) once and runs it with numpy (decision 0073). Each recording's speech windows
/// go to its stdin as they are found, one counted chunk each (a 4-byte little-endian byte count,
/// then float32 16 kHz mono samples), ended by a count of 0; the answer is one JSON line with one
/// 256-dimensional, L2-normed embedding per window. The helper embeds windows in batches as they
/// come, so neither process holds the recording (decision 0074). A helper that dies fails the
/// recording it was given only. Used by one tap at a time (taken from a `SpeakerHelperPool`).
final package class SpeakerHelper: @unchecked Sendable {
    package let child: ChildProcess
    private var line: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 65536)
    static package let engine = "speakers"
    /// The encoder's weights inside their package, and the package.
    static package let model = (relative: "resemblyzer/pretrained.pt", package: "resemblyzer")
    /// The embedding's length.
    static package let dimension = 256

    package init(locator: SpeechLocator) throws(SpeechError) {
        guard let python = locator.python else {
            throw .missing(engine: Self.engine, what: "the speech environment's Python", hint: SpeechLocator.installHint)
        }
        guard let script = Self.helperPath(locator) else {
            throw .missing(engine: Self.engine, what: "the segno-speakers helper", hint: SpeechLocator.installHint)
        }
        let model = try locator.require(Self.model.relative, engine: Self.engine, package: Self.model.package)
        do {
            child = try ChildProcess(executable: python, arguments: [script, "--model", model, "--protocol", String(Self.protocolVersion), "--serve"], stdinPipe: true)
        } catch {
            throw .failed(engine: Self.engine, message: "cannot start \(python): \(error)")
        }
    }

    /// `segno-speakers` beside the running segno, else in a speech environment's `bin`.
    static package func helperPath(_ locator: SpeechLocator) -> String? {
        let exe = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath().deletingLastPathComponent().path
        return ([exe] + locator.roots.map { $0 + "/bin" }).map { $0 + "/segno-speakers" }
            .first { FileManager.default.isReadableFile(atPath: $0) }
    }

    private func write(_ bytes: UnsafeRawBufferPointer) throws(SpeechError) {
        do { try DecodeHelper.withoutSIGPIPE { try child.writeStdin(bytes) } } catch { throw died("\(error)") }
    }

    private func writeCount(_ n: Int) throws(SpeechError) {
        var count = UInt32(n).littleEndian
        try withUnsafeBytes(of: &count) { (b) throws(SpeechError) in try write(b) }
    }

    /// Sends one window to embed (float32, 16 kHz mono, 0.5–1.5 s). Called for each window,
    /// in order, as soon as the voice activity detector has closed its speech segment.
    package func send(window samples: UnsafeBufferPointer<Float>) throws(SpeechError) {
        guard !samples.isEmpty else { return }
        try writeCount(samples.count * 4)
        try write(UnsafeRawBufferPointer(samples))
        sent += 1
    }

    /// Windows sent for the recording under way.
    private(set) package var sent = 0

    /// Ends the recording and reads the embeddings of the windows sent: one per window, in order,
    /// or why this recording could not be embedded (`.failure`; the helper goes on). Throws when
    /// the helper died or answered nonsense. Called once per recording.
    package func embeddings() throws(SpeechError) -> Result<[[Float]], SpeechError> {
        let count = sent
        sent = 0
        try writeCount(0)
        line.removeAll(keepingCapacity: true)
        while true {
            let n: Int
            do { n = try chunk.withUnsafeMutableBytes { try child.readStdout(into: $0) } } catch { throw died("\(error)") }
            if n == 0 { throw exited() }
            line += chunk[0..<n]
            if chunk[n - 1] == UInt8(ascii: "\n") { break }
            if line.count > 1 << 30 { throw died("its answer is longer than 1 GB") }
        }
        guard let o = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], o["protocol"] as? Int == Self.protocolVersion else {
            throw died("its answer is not protocol \(Self.protocolVersion)")
        }
        if let why = o["error"] as? String { return .failure(.failed(engine: Self.engine, message: why)) }
        guard let b64 = o["embeddings"] as? String, let data = Data(base64Encoded: b64),
              data.count == count * Self.dimension * 4 else {
            throw died("its answer does not hold \(count) embeddings")
        }
        let flat = data.withUnsafeBytes { raw in (0..<(count * Self.dimension)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) } }
        return .success((0..<count).map { Array(flat[$0 * Self.dimension..<($0 + 1) * Self.dimension]) })
    }

    /// The wire's version (`segno-speakers`' PROTOCOL).
    static package let protocolVersion = 2

    private func exited() -> SpeechError {
        let status = child.wait()
        if status == .exited(2) { return .failed(engine: Self.engine, message: child.stderrSummary()) }
        return died(status.description)
    }

    private func died(_ why: String) -> SpeechError {
        .failed(engine: Self.engine, message: "the helper failed (\(why)): \(child.stderrSummary())")
    }

    /// Ends an idle helper: closes its input (it exits) and reaps it.
    package func stop() {
        child.closeStdin()
        _ = child.wait()
    }

    /// Kills and reaps the helper (a recording abandoned mid-stream, or a helper that failed).
    package func terminate() { child.terminate() }

    /// False when the idle helper has exited or said something unasked.
    package var isIdleAndAlive: Bool {
        var info = siginfo_t()
        if waitid(P_PID, id_t(child.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info._sifields._sigchld.si_pid != 0 { return false }
        return !child.waitForStdout(milliseconds: 1)
    }
}

/// The idle speaker helpers of one `speakers` stage (one per spec load): a tap takes one in
/// `start` and gives it back once its answer came whole, so a run has about one per worker, each
/// reading the weights once. Idle helpers are stopped when the stage's config goes.
public final class SpeakerHelperPool: Sendable {
    private let idle = Mutex<[SpeakerHelper]>([])
    private let startedCount = Mutex(0)

    public init() {}

    deinit { shutdown() }

    package func take(locator: SpeechLocator) throws(SpeechError) -> SpeakerHelper {
        while let h = idle.withLock({ $0.popLast() }) {
            if h.isIdleAndAlive { return h }
            h.terminate()
        }
        let h = try SpeakerHelper(locator: locator)
        startedCount.withLock { $0 += 1 }
        return h
    }

    package func checkIn(_ helper: SpeakerHelper) { idle.withLock { $0.append(helper) } }

    public func shutdown() {
        let all = idle.withLock { i -> [SpeakerHelper] in defer { i = [] }; return i }
        for h in all { h.stop() }
    }

    /// Helpers started so far (tests check reuse).
    package var started: Int { startedCount.withLock { $0 } }
}
