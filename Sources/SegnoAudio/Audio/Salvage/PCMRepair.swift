import Foundation
import SegnoCore

/// `segno repair` for a WAV/RF64/BW64, AIFF/AIFC or CAF file that a recorder left cut short or
/// with its sizes unwritten (decision 0069): the header is copied with every size set to what
/// the file holds — whole frames from the first sample to the end of the file, a partial last
/// frame left out — and the samples are copied as they are. Nothing is decoded.
extension StreamRepair {
    /// Repairs `input` (whose layout is `layout`) into `output`. Throws `RepairError`.
    static package func repairPCM(input: String, output: String, layout: PCMLayout) throws -> Outcome {
        guard let cause = layout.damage else {
            throw RepairError.damaged(input, "its header's sizes fit the file; nothing to repair")
        }
        let frames = layout.presentFrames
        guard frames > 0 else { throw RepairError.damaged(input, "holds no whole sample frame after its header") }
        let dataBytes = Int64(frames) * Int64(layout.bytesPerFrame)
        guard let source = ByteSource(path: input), var header = source.bytes(0, Int(layout.dataOffset)) else {
            throw RepairError.damaged(input, "its header cannot be read")
        }
        let pad: Int64 = layout.container == "CAF" ? 0 : dataBytes & 1
        let total = layout.dataOffset + dataBytes + pad
        try patchSizes(&header, layout: layout, dataBytes: dataBytes, frames: frames, total: total, input: input)
        try write(output) { out in
            try out.write(header)
            guard let h = FileHandle(forReadingAtPath: input) else { throw AudioError.unreadable(path: input, reason: "cannot open") }
            defer { try? h.close() }
            try h.seek(toOffset: UInt64(layout.dataOffset))
            var left = dataBytes
            while left > 0, let chunk = try h.read(upToCount: Int(min(left, 1 << 20))), !chunk.isEmpty {
                try out.write(chunk)
                left -= Int64(chunk.count)
            }
            if left > 0 { throw AudioError.unreadable(path: input, reason: "it ended while being read") }
            if pad > 0 { try out.write([UInt8(0)]) }
        }
        let dropped = layout.presentBytes - dataBytes
        let claim = layout.declaredFrames.map { "its header claimed \($0) frames" } ?? "its header left the size unwritten"
        let seconds = SalvageReport.seconds(Double(frames) / Double(layout.sampleRate))
        return Outcome(output: output, frames: 0, bytesKept: dataBytes, bytesDropped: dropped,
                       what: "a partial last sample frame",
                       note: "\(layout.container) sizes set to the \(frames) frames (\(seconds)) the file holds (\(cause == .truncated ? "cut short: " : "")\(claim))")
    }

    /// Sets the container's sizes in `header` (the bytes before the first sample).
    private static func patchSizes(_ header: inout [UInt8], layout: PCMLayout, dataBytes: Int64, frames: Int, total: Int64, input: String) throws {
        let chunks = chunkOffsets(header, container: layout.container)
        switch layout.container {
        case "WAV", "RF64":
            let rf64 = header[0] != UInt8(ascii: "R") || header[1] != UInt8(ascii: "I")
            if rf64, let ds64 = chunks["ds64"] {
                putLE64(&header, ds64 + 8, UInt64(total - 8))
                putLE64(&header, ds64 + 16, UInt64(dataBytes))
                putLE64(&header, ds64 + 24, UInt64(frames))
                putLE32(&header, 4, 0xFFFF_FFFF)
                putLE32(&header, Int(layout.dataOffset) - 4, 0xFFFF_FFFF)
            } else {
                guard total - 8 <= Int64(UInt32.max) else {
                    throw RepairError.damaged(input, "holds more than a WAV's 4 GiB; `segno convert --salvage` writes it as RF64")
                }
                putLE32(&header, 4, UInt32(total - 8))
                putLE32(&header, Int(layout.dataOffset) - 4, UInt32(dataBytes))
            }
            if let fact = chunks["fact"], fact + 12 <= header.count { putLE32(&header, fact + 8, UInt32(clamping: frames)) }
        case "AIFF":
            guard total - 8 <= Int64(UInt32.max), let ssnd = chunks["SSND"] else {
                throw RepairError.damaged(input, "holds more than an AIFF's 4 GiB")
            }
            putBE32(&header, 4, UInt32(total - 8))
            putBE32(&header, ssnd + 4, UInt32(layout.dataOffset - Int64(ssnd) - 8 + dataBytes))
            if let comm = chunks["COMM"], comm + 14 <= header.count { putBE32(&header, comm + 10, UInt32(clamping: frames)) }
        case "CAF":
            putBE64(&header, Int(layout.dataOffset) - 12, UInt64(dataBytes + 4))
        default:
            throw RepairError.damaged(input, "is \(layout.container), which repair does not rewrite")
        }
    }

    /// Where each chunk before the samples starts in `header` (the first of each id).
    private static func chunkOffsets(_ h: [UInt8], container: String) -> [String: Int] {
        let caf = container == "CAF", big = container != "WAV" && container != "RF64"
        var at = caf ? 8 : 12
        var out: [String: Int] = [:]
        let headerSize = caf ? 12 : 8
        for _ in 0..<256 {
            guard at + headerSize <= h.count else { break }
            let id = String(decoding: h[at..<(at + 4)], as: UTF8.self)
            if out[id] == nil { out[id] = at }
            var size: Int64
            if caf {
                size = Int64(bitPattern: (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(h[at + 4 + $1]) })
            } else {
                let b = big ? Array(h[(at + 4)..<(at + 8)]) : Array(h[(at + 4)..<(at + 8)].reversed())
                size = b.reduce(Int64(0)) { $0 << 8 | Int64($1) }
            }
            guard size >= 0, size < Int64(h.count) else { break }
            at += headerSize + Int(size) + (caf ? 0 : Int(size & 1))
        }
        return out
    }

    private static func putLE32(_ b: inout [UInt8], _ i: Int, _ v: UInt32) { for k in 0..<4 { b[i + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(k))) } }
    private static func putLE64(_ b: inout [UInt8], _ i: Int, _ v: UInt64) { for k in 0..<8 { b[i + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(k))) } }
    private static func putBE32(_ b: inout [UInt8], _ i: Int, _ v: UInt32) { for k in 0..<4 { b[i + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(3 - k))) } }
    private static func putBE64(_ b: inout [UInt8], _ i: Int, _ v: UInt64) { for k in 0..<8 { b[i + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(7 - k))) } }
}
