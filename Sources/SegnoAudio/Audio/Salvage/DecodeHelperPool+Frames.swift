import Foundation
import SegnoCore
import Synchronization

/// Frame boundaries of a raw AAC or ALAC stream, found by trial decoding in the `segno-decode`
/// helper (libavcodec lives there, never in segno's process): what rebuilds a lost MP4 index.
package struct FrameScanResult {
    /// Byte offset of each frame from the start of the scanned range.
    package var offsets: [UInt32] = []
    /// Each frame's length in bytes.
    package var lengths: [UInt32] = []
    /// Bytes skipped because nothing decoded there (damage), and why the scan stopped short.
    package var skipped: Int64 = 0
    package var stoppedBecause = ""

    package var count: Int { offsets.count }
    /// Bytes from the first frame's start to the last frame's end.
    package var span: Int64 { offsets.isEmpty ? 0 : Int64(offsets.last!) + Int64(lengths.last!) - Int64(offsets[0]) }
    /// Bytes the frames hold.
    package var covered: Int64 { lengths.reduce(0) { $0 + Int64($1) } }
}

/// Why frames could not be looked for.
package struct FrameScanError: Error, CustomStringConvertible {
    package let description: String
}

extension DecodeHelperPool {
    /// The frames of the `length` bytes at `offset` in `path`, decoded as `codec` (1 AAC, 2 ALAC)
    /// with `extradata` (AudioSpecificConfig, or ALAC's 36-byte `alac` box) at `rate` Hz and
    /// `channels`. Memory: 8 bytes per frame. Throws `FrameScanError` when the helper is missing,
    /// refuses the configuration or dies, and `Interrupted` when the run's `stopLongWork`
    /// predicate turns true (checked every 100 ms; the helper is killed). Called by `MP4Repair`,
    /// once per configuration tried.
    package func frameBoundaries(path: String, codec: UInt32, rate: Int, channels: Int, offset: Int64, length: Int64,
                         extradata: [UInt8]) throws -> FrameScanResult {
        var payload = [UInt8]()
        for v in [codec, UInt32(rate), UInt32(channels)] { withUnsafeBytes(of: v) { payload += $0 } }
        for v in [UInt64(offset), UInt64(length)] { withUnsafeBytes(of: v) { payload += $0 } }
        withUnsafeBytes(of: UInt32(extradata.count)) { payload += $0 }
        payload += extradata + Array(path.utf8)
        let helper: DecodeHelper
        do { helper = try take().helper } catch { throw FrameScanError(description: "the segno-decode helper is needed to find frames: \(error)") }
        var result = FrameScanResult()
        var returned = false
        let watch = longWorkStop.map { HelperWatch(helper.child.pid, stopWhen: $0) }
        defer { watch?.finish() }
        do {
            try helper.send(.boundaries, payload)
            while true {
                guard let (type, n) = try DecodeHelper.readHead(helper.child), let p = try DecodeHelper.readPayload(helper.child, length: n) else {
                    throw FrameScanError(description: "\(helper.child.executable) ended while looking for frames")
                }
                switch type {
                case .header: continue
                case .frames:
                    p.withUnsafeBytes { raw in
                        let v = raw.bindMemory(to: UInt32.self)
                        var i = 0
                        while i + 1 < v.count {
                            result.offsets.append(v[i])
                            result.lengths.append(v[i + 1])
                            i += 2
                        }
                    }
                case .end:
                    guard p.count >= 16 else { throw FrameScanError(description: "a short end message") }
                    result.skipped = p.withUnsafeBytes { Int64(bitPattern: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
                    result.stoppedBecause = String(decoding: p[16...], as: UTF8.self)
                    checkIn(helper)
                    return result
                case .failed:
                    checkIn(helper)
                    returned = true
                    throw FrameScanError(description: HelperStream.oneLine(p))
                default:
                    throw FrameScanError(description: "unexpected message \(type) from \(helper.child.executable)")
                }
            }
        } catch let e as FrameScanError {
            if !returned { helper.kill() }
            if watch?.fired == true { throw Interrupted() }
            throw e
        } catch {
            helper.kill()
            if watch?.fired == true { throw Interrupted() }
            throw FrameScanError(description: "\(error)")
        }
    }
}

/// Kills a helper (SIGKILL; its owner reaps it) once `stopWhen` turns true, looked at every
/// 100 ms on a thread of its own until `finish()`. One per search for frames in a run.
private final class HelperWatch: Sendable {
    private let state = Mutex((finished: false, fired: false))

    init(_ pid: pid_t, stopWhen: @escaping @Sendable () -> Bool) {
        Thread.detachNewThread { [self] in
            while true {
                let go = state.withLock { s -> Bool? in
                    if s.finished { return false }
                    if stopWhen() { s.fired = true; return true }
                    return nil
                }
                if let go {
                    if go { Foundation.kill(pid, SIGKILL) }
                    return
                }
                usleep(100_000)
            }
        }
    }

    /// True when the helper was killed because the run is stopping.
    var fired: Bool { state.withLock { $0.fired } }

    /// Ends the watch. Called when the search ends, however it ends.
    func finish() { state.withLock { $0.finished = true } }
}
