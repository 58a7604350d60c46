import Foundation
import SegnoCore

/// One running `segno-decode` program: a decoder helper that serves many files, one after the
/// other, so a folder of AAC memos pays FFmpeg's start-up once per worker instead of once per
/// file; it also makes fingerprints (`Chromaprinter`). segno links none of FFmpeg's libraries nor
/// libchromaprint; the helper does, and the two exchange requests and raw samples over pipes (the protocol is described in `Sources/segno-decode/main.swift`:
/// 8-byte message heads — a type byte, three zero bytes, a UInt32 length — then the payload).
///
/// Owned by one thread at a time: a `DecodeHelperPool` hands it to one decoder, which gives it
/// back when the file's stream ended cleanly, or kills it when the file is abandoned mid-stream.
final package class DecodeHelper: @unchecked Sendable {
    /// The protocol this segno speaks; a helper greeting with another is not used.
    /// 2 added fingerprints ('P', 'S', 'R').
    static package let protocolVersion = 2

    /// The running program.
    package let child: ChildProcess
    /// The helper's greeting, e.g. "segno-decode 2 libavcodec 5.1.9-0+deb12u1 chromaprint 1.5.1".
    package let greeting: String
    /// Files sent to this helper so far.
    private(set) package var filesServed = 0

    /// Message types (the first byte of a message head).
    package enum Message: UInt8 {
        case version = 0x56   // 'V'
        case open = 0x4F      // 'O'
        case openMad = 0x4D   // 'M': MP3 decoded by libmad as audiowaveform decodes it
        case header = 0x48    // 'H'
        case data = 0x44      // 'D'
        case end = 0x45       // 'E' (both ways: a file's end; the end of a fingerprint's samples)
        case failed = 0x46    // 'F'
        case fingerprint = 0x50  // 'P'
        case samples = 0x53   // 'S'
        case result = 0x52    // 'R'
        case boundaries = 0x42  // 'B': frame boundaries of a raw AAC/ALAC stream (repair)
        case frames = 0x5A    // 'Z': (offset, length) pairs found
        case codecOpen = 0x43 // 'C': a packet-by-packet decode (salvage of Ogg and ADTS)
        case packets = 0x4B   // 'K': packets to decode
        case decoded = 0x51   // 'Q': frames per packet, then the samples
    }

    /// Starts `executable` and reads its greeting. Throws `DecodeHelper.Unusable` when it cannot
    /// be started or does not speak this protocol. Called when a pool has no idle helper.
    package init(executable: String) throws {
        // `--parent`: the helper exits when this process ends, and at once if it already has.
        do { child = try ChildProcess(executable: executable, arguments: ["--parent", "\(getpid())"], stdinPipe: true) } catch {
            throw Unusable(reason: "cannot run \(executable): \(error)")
        }
        // A program that never greets (a wrong SEGNO_DECODE_HELPER, a wedged helper) must not hang a worker.
        guard child.waitForStdout(milliseconds: Self.greetingTimeout) else {
            child.terminate()
            throw Unusable(reason: "\(executable) did not greet within \(Self.greetingTimeout / 1000) s")
        }
        let head: (Message, Int)?
        do { head = try Self.readHead(child) } catch { child.terminate(); throw Unusable(reason: "\(executable): \(error)") }
        guard let (type, length) = head, type == .version, length < 4096,
              let text = try? Self.readPayload(child, length: length) else {
            let why = child.stderrSummary()
            child.terminate()
            throw Unusable(reason: "\(executable) did not greet as segno-decode" + (why.isEmpty ? "" : ": \(why)"))
        }
        greeting = String(decoding: text, as: UTF8.self)
        let words = greeting.split(separator: " ")
        guard words.count >= 2, words[0] == "segno-decode", words[1] == "\(Self.protocolVersion)" else {
            child.terminate()
            throw Unusable(reason: "\(executable) speaks \(AudioError.quoted(greeting)), not segno-decode \(Self.protocolVersion)")
        }
    }

    /// How long a new helper may take to greet, in milliseconds (it greets before loading anything).
    static package let greetingTimeout: Int32 = 10_000

    /// Why a helper program cannot be used (segno then runs the `ffmpeg` program per file).
    package struct Unusable: Error, CustomStringConvertible {
        package let reason: String
        package var description: String { reason }
    }

    /// Asks for `path` decoded to interleaved Float32 at `rate` Hz and `channels` channels.
    /// Throws `POSIXError` (EPIPE) when the helper is gone.
    package func request(path: String, rate: Int, channels: Int, type: Message = .open) throws {
        var payload = [UInt8]()
        withUnsafeBytes(of: UInt32(rate)) { payload += $0 }
        withUnsafeBytes(of: UInt32(channels)) { payload += $0 }
        payload += FileNameBytes.bytes(path)  // the name's own bytes, not UTF-8 only
        var msg: [UInt8] = [type.rawValue, 0, 0, 0]
        withUnsafeBytes(of: UInt32(payload.count)) { msg += $0 }
        try Self.withoutSIGPIPE { try child.writeStdin(msg + payload) }
        filesServed += 1
    }

    /// Sends one message of `type` with `payload` (a fingerprint's 'P' and 'E').
    /// Throws `POSIXError` (EPIPE) when the helper is gone.
    package func send(_ type: Message, _ payload: [UInt8] = []) throws {
        var msg: [UInt8] = [type.rawValue, 0, 0, 0]
        withUnsafeBytes(of: UInt32(payload.count)) { msg += $0 }
        try Self.withoutSIGPIPE { try child.writeStdin(msg + payload) }
    }

    /// Runs `body` with SIGPIPE blocked on this thread, and swallows one that it raised: a helper
    /// that dies between `poll` and `write` must make the write fail with EPIPE, not kill segno
    /// (which keeps SIGPIPE's default action for its own standard output).
    static package func withoutSIGPIPE<T>(_ body: () throws -> T) rethrows -> T { try SignalMask.withoutSIGPIPE(body) }

    /// The (rate, channels) an 'H' payload announces; nil when it is not 8 bytes.
    static package func format(of payload: [UInt8]) -> (Int, Int)? {
        guard payload.count == 8 else { return nil }
        return payload.withUnsafeBytes { (Int($0.load(as: UInt32.self)), Int($0.load(fromByteOffset: 4, as: UInt32.self))) }
    }

    /// True when a `SEGNO_DECODE_HELPER` value turns the helper off ("off", "0", "no", "false").
    static package func isOff(_ value: String) -> Bool { ["off", "0", "no", "false"].contains(value.lowercased()) }

    /// Reads the next message head; nil at end of the helper's output (it died or exited).
    /// Throws `POSIXError` on a read error or `Unusable` on a head this protocol does not know.
    static package func readHead(_ child: ChildProcess) throws -> (Message, Int)? {
        // On the stack: one head per 256 KiB block, no allocation per message.
        var head: UInt64 = 0
        let complete = try withUnsafeMutableBytes(of: &head) { try readExactly(child, $0) }
        guard complete else { return nil }
        return try withUnsafeBytes(of: head) { raw in
            guard let type = Message(rawValue: raw[0]), raw[1] == 0, raw[2] == 0, raw[3] == 0 else {
                throw Unusable(reason: "unexpected bytes from \(child.executable)")
            }
            return (type, Int(raw.load(fromByteOffset: 4, as: UInt32.self)))
        }
    }

    /// Reads a whole payload of `length` bytes; nil when the output ends first.
    static package func readPayload(_ child: ChildProcess, length: Int) throws -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: length)
        return try bytes.withUnsafeMutableBytes { try readExactly(child, $0) } ? bytes : nil
    }

    /// Fills `raw` from the helper's stdout; false when it ends first.
    private static func readExactly(_ child: ChildProcess, _ raw: UnsafeMutableRawBufferPointer) throws -> Bool {
        var have = 0
        while have < raw.count {
            let n = try child.readStdout(into: UnsafeMutableRawBufferPointer(rebasing: raw[have...]))
            if n == 0 { return false }
            have += n
        }
        return true
    }

    /// Ends the helper: closes its input (it exits at end of input) and reaps it, so its CPU time
    /// counts in segno's children. Called when the pool shuts down.
    package func stop() {
        child.closeStdin()
        _ = child.wait()
    }

    /// Kills and reaps the helper (a file abandoned mid-stream, or a helper that misbehaved).
    package func kill() { child.terminate() }
}

/// One file's decode through a `DecodeHelper`: the samples of its 'D' messages as one byte
/// stream, then how it ended. Owned by the `FFmpegDecoder` reading the file.
final package class HelperStream {
    private let helper: DecodeHelper
    private let pool: DecodeHelperPool
    /// Bytes of the current 'D' message not read yet.
    private var remaining = 0
    private var outcome: Outcome?

    /// How the file's stream ended.
    package enum Outcome {
        /// 'E': every frame was sent; `log` holds libav's error-level lines, if any.
        case ended(frames: Int, log: String)
        /// 'F': the helper gave up on this file, for `reason` (libav's lines and its own).
        case failed(reason: String)
        /// The helper's output ended mid-file: it crashed or was killed.
        case died(ChildProcess.Termination, stderr: String)
    }

    /// The helper's process id.
    package var pid: pid_t { helper.child.pid }

    /// Takes `helper` (with the request already sent) and the pool to give it back to.
    package init(helper: DecodeHelper, pool: DecodeHelperPool) {
        self.helper = helper
        self.pool = pool
    }

    /// Reads up to `buffer.count` bytes of samples; 0 when the stream ended (see `outcome`).
    /// Throws `POSIXError` on a read error.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while remaining == 0 {
            if outcome != nil { return 0 }
            try nextMessage()
        }
        let n = try helper.child.readStdout(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(buffer.count, remaining)]))
        if n == 0 { died(); return 0 }
        remaining -= n
        return n
    }

    /// Reads message heads until samples or the end; 'H' was checked by the pool.
    private func nextMessage() throws {
        guard let (type, length) = try DecodeHelper.readHead(helper.child) else { died(); return }
        switch type {
        case .data:
            remaining = length
        case .end, .failed:
            guard let payload = try DecodeHelper.readPayload(helper.child, length: length) else { died(); return }
            if type == .failed {
                outcome = .failed(reason: Self.oneLine(payload))
            } else {
                let frames = payload.count >= 8 ? payload.withUnsafeBytes { Int($0.load(as: UInt64.self)) } : 0
                outcome = .ended(frames: frames, log: Self.oneLine(Array(payload.dropFirst(8))))
            }
        default:
            _ = try DecodeHelper.readPayload(helper.child, length: length)
            throw DecodeHelper.Unusable(reason: "unexpected message \(type) from \(helper.child.executable)")
        }
    }

    /// The first message after a request, read by the pool: true for 'H' with the asked format.
    package func expectHeader(rate: Int, channels: Int) throws -> Bool {
        guard let (type, length) = try DecodeHelper.readHead(helper.child) else { died(); return false }
        guard type == .header else {
            if type == .failed {
                // A helper that dies while telling why is a crash on this file, not a wrong program.
                guard let payload = try DecodeHelper.readPayload(helper.child, length: length) else { died(); return false }
                outcome = .failed(reason: Self.oneLine(payload))
                return true
            }
            throw DecodeHelper.Unusable(reason: "unexpected message \(type) from \(helper.child.executable)")
        }
        guard let p = try DecodeHelper.readPayload(helper.child, length: length), let got = DecodeHelper.format(of: p) else { died(); return false }
        guard got == (rate, channels) else {
            throw DecodeHelper.Unusable(reason: "\(helper.child.executable) answered \(got.1) channels at \(got.0) Hz, not \(channels) at \(rate)")
        }
        return true
    }

    /// How the stream ended, once `read` returned 0.
    package var result: Outcome? { outcome }

    /// Gives the helper back to the pool when the file's stream ended cleanly; otherwise (closed
    /// mid-stream) kills it, since it would still be writing this file's samples. Safe to call twice.
    package func close() {
        guard !closed else { return }
        closed = true
        switch outcome {
        case .ended?, .failed?: pool.checkIn(helper)
        case .died?: helper.kill()
        case nil: helper.kill()
        }
    }
    private var closed = false

    deinit { close() }

    private func died() {
        let status = helper.child.wait()
        outcome = .died(status, stderr: helper.child.stderrSummary())
    }

    /// The payload's lines as one line, "; "-joined, at most 400 characters from the end.
    static package func oneLine(_ payload: [UInt8]) -> String {
        let lines = String(decoding: payload, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r" })
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        var joined = lines.joined(separator: "; ")
        if joined.count > 400 { joined = "…" + joined.suffix(399) }
        return AudioError.quoted(joined)
    }
}
