import Foundation
import SegnoCore
import Synchronization

/// The idle `segno-decode` helpers of this process. A decoder takes one when it starts a file's
/// decode (or starts a new one when none is idle) and gives it back when the file ends, so there
/// are as many helpers as files decoded at once — one per worker — each serving file after file.
///
/// A helper that dies (a crash on a hostile file, a `kill -9`) costs that one file, or nothing
/// when it was found dead before a file was sent; the next file gets a new helper. When the
/// program cannot be started, or does not speak this segno's protocol, the pool turns itself off
/// and files go to the `ffmpeg` program, one process each, as without a helper.
///
/// `shutdown()` ends the idle helpers and reaps them (their CPU time then counts in segno's
/// children, as the `ffmpeg` children's does); the command line calls it before exiting.
public final class DecodeHelperPool: Sendable {
    /// The helper program; nil when there is none (files go to the `ffmpeg` program).
    public let executable: String?
    private let state = Mutex(State())

    private struct State {
        var idle: [DecodeHelper] = []
        /// Why the helper is not used, once it failed to start or greet.
        var unusable: String?
        /// Helpers started so far (tests check reuse).
        var started = 0
        /// The first helper's greeting, for `segno info --formats`.
        var greeting: String?
        /// When true, a long search (`frameBoundaries`) stops: `--max-time` or a signal.
        var stopLongWork: (@Sendable () -> Bool)?
    }

    /// Lets `shouldStop` end a search for frames in a damaged MP4 (`frameBoundaries`), which can
    /// take minutes on a large file, where a recording's ordinary work runs to its end. Called by
    /// a run before its work starts, with its `--max-time` deadline and stop flag.
    package func stopLongWork(when shouldStop: @escaping @Sendable () -> Bool) {
        state.withLock { $0.stopLongWork = shouldStop }
    }

    /// The run's predicate for stopping long work, nil outside a run.
    package var longWorkStop: (@Sendable () -> Bool)? { state.withLock { $0.stopLongWork } }

    /// Idle helpers kept at most; more are stopped when they come back.
    static package let maxIdle = 64

    /// Name of the helper program, next to `segno` or on `PATH`.
    public static let programName = "segno-decode"

    /// Environment variable: `off` (or `0`) sends every file to the `ffmpeg` program; an absolute
    /// path names the helper program to use.
    public static let environmentVariable = "SEGNO_DECODE_HELPER"

    /// A pool for `executable` (nil: an empty pool that never serves).
    public init(executable: String?) {
        self.executable = executable
    }

    /// Where the helper program is: `SEGNO_DECODE_HELPER` when it names a path (nil when it says
    /// `off`), else `segno-decode` in the folder of the running executable (where `make install`
    /// puts both), else on `PATH`. Costs a few `stat` calls; called once per process.
    public static func locate(environment: [String: String]) -> String? {
        if let forced = environment[environmentVariable], !forced.isEmpty {
            if DecodeHelper.isOff(forced) { return nil }
            return forced.hasPrefix("/") ? forced : nil
        }
        if let found = FFmpegTools.besideExecutable(programName) { return found }
        return FFmpegTools.find(programName, in: environment["PATH"])
    }

    /// A helper with the request for `path` sent and its 'H' (or 'F') read, ready to stream; nil
    /// when there is no usable helper program (the caller runs the `ffmpeg` program). A reused
    /// helper found dead is replaced once. Called by `FFmpegDecoder` on a file's first `read`.
    package func open(path: String, rate: Int, channels: Int, type: DecodeHelper.Message = .open) -> HelperStream? {
        guard let executable else { return nil }
        for _ in 0..<2 {
            // No program, or turned off (`take` disables the pool when a new helper cannot start).
            guard let (helper, reused) = try? take() else { return nil }
            let stream = HelperStream(helper: helper, pool: self)
            do { try helper.request(path: path, rate: rate, channels: channels, type: type) } catch {
                stream.close()
                if reused { continue }   // died while idle
                disable("\(executable) stopped before reading a request: \(error)")
                return nil
            }
            do {
                if try stream.expectHeader(rate: rate, channels: channels) { return stream }
            } catch {
                stream.close()
                disable("\(error)")
                return nil
            }
            // The helper's output ended before it answered: it died while idle (retry with a new
            // one), or crashed on this very file (the file fails; see `HelperStream.result`).
            stream.close()
            if reused { continue }
            return stream
        }
        return nil
    }

    /// An idle helper (`reused`) or a newly started one, for a fingerprint. Throws
    /// `DecodeHelper.Unusable` when there is no program, or it cannot be started or does not
    /// speak this protocol (the pool then turns itself off, as `open` does).
    package func take() throws -> (helper: DecodeHelper, reused: Bool) {
        guard let executable else { throw DecodeHelper.Unusable(reason: "not found beside segno or on PATH") }
        let (reused, why) = state.withLock { s in s.unusable == nil ? (s.idle.popLast(), nil) : (nil, s.unusable) }
        if let why { throw DecodeHelper.Unusable(reason: why) }
        if let reused { return (reused, true) }
        let helper: DecodeHelper
        do { helper = try DecodeHelper(executable: executable) } catch {
            disable("\(error)")
            throw error
        }
        state.withLock { s in
            s.started += 1
            if s.greeting == nil { s.greeting = helper.greeting }
        }
        return (helper, false)
    }

    /// Turns the helper off for this process (files go to the `ffmpeg` program), for `why`.
    private func disable(_ why: String) {
        state.withLock { if $0.unusable == nil { $0.unusable = why } }
    }

    /// Takes back a helper whose file ended cleanly. Called by `HelperStream.close`.
    package func checkIn(_ helper: DecodeHelper) {
        let kept = state.withLock { s -> Bool in
            guard s.idle.count < Self.maxIdle else { return false }
            s.idle.append(helper)
            return true
        }
        if !kept { helper.stop() }
    }

    /// Stops every idle helper and reaps it. Helpers in use are left to their decoders (which
    /// give them back later). Called before the process exits; the pool still works afterwards.
    public func shutdown() {
        let idle = state.withLock { s -> [DecodeHelper] in defer { s.idle = [] }; return s.idle }
        for h in idle { h.stop() }
    }

    /// Helpers started so far.
    package var startedCount: Int { state.withLock { $0.started } }

    /// Process ids of the idle helpers.
    package var idleProcessIDs: [pid_t] { state.withLock { $0.idle.map(\.child.pid) } }

    /// One line for `segno info --formats`: the helper with its libavcodec and chromaprint, or
    /// why files go to the `ffmpeg` program one process each, and whether fingerprints (made with
    /// the helper of `fingerprints`, the pool they use) can be made. Starts the helper once to
    /// read its greeting.
    public func describe(fingerprints: DecodeHelperPool) -> String {
        let name = Self.programName
        let perFile = "each AAC/ALAC/AMR/WebM file starts an ffmpeg process"
        guard let executable else {
            let none = "\(name): not found beside segno or on PATH, or \(Self.environmentVariable)=off (\(perFile))"
            guard fingerprints !== self, let other = fingerprints.executable else {
                return none + "; fingerprints cannot be made: they need it"
            }
            switch fingerprints.probe(other) {
            case .success(let versions): return none + "; fingerprints still use \(other) (\(versions))"
            case .failure(let why): return none + "; fingerprints cannot be made: \(other) not usable: \(why)"
            }
        }
        switch probe(executable) {
        case .success(let versions):
            return "\(name): \(executable) (\(versions)), serving many files per process; fingerprints are made with it"
        case .failure(let why):
            return "\(name): \(executable) not used: \(why) (\(perFile); fingerprints cannot be made: they need it)"
        }
    }

    /// The versions `executable` greets with ("libavcodec 5.1.9 chromaprint 1.5.1"), or why it
    /// cannot be used. Starts and stops it unless the pool already gave up on it.
    private func probe(_ executable: String) -> Result<String, DecodeHelper.Unusable> {
        if let why = state.withLock({ $0.unusable }) { return .failure(DecodeHelper.Unusable(reason: why)) }
        do {
            let h = try DecodeHelper(executable: executable)
            defer { h.stop() }
            return .success(h.greeting.split(separator: " ").dropFirst(2).joined(separator: " "))
        } catch {
            return .failure(error as? DecodeHelper.Unusable ?? DecodeHelper.Unusable(reason: "\(error)"))
        }
    }
}
