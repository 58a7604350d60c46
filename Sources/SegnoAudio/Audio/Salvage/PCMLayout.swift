import Foundation
import SegnoCore

/// Where the samples of a WAV/RF64/BW64, AIFF/AIFC or CAF file with PCM (or μ-law/A-law) audio
/// are and how they are stored, read from the header alone, without believing the data chunk's
/// size. A crashed recorder leaves that size larger than the file (never updated: "truncated") or
/// unwritten (0, 0xFFFFFFFF, CAF's −1: "size unknown"); the samples then run from `dataOffset` to
/// the end of the file. Made by `read(path:)`, once per recording, only when salvaging.
package struct PCMLayout: Equatable {
    /// "WAV", "RF64", "AIFF", "CAF": the names libsndfile gives (`SourceInfo.container`).
    package var container: String
    /// libsndfile's subtype name: "PCM_16", "FLOAT", "ULAW", …
    package var codec: String
    /// Hz.
    package var sampleRate: Int
    package var channels: Int
    /// The headerless encoding libsndfile reads (`SndFileDecoder.RawFormat` key: "s16le", "ulaw", …).
    package var encoding: String
    /// Bytes per frame (all channels).
    package var bytesPerFrame: Int
    /// Byte offset of the first sample.
    package var dataOffset: Int64
    /// Bytes the header declares, nil when it leaves the size unknown.
    package var declaredBytes: Int64?
    /// Size of the file in bytes.
    package var fileSize: Int64

    /// Bytes of audio the file holds from `dataOffset`.
    package var presentBytes: Int64 { max(0, fileSize - dataOffset) }
    /// Whole frames the file holds from `dataOffset` to its end.
    package var presentFrames: Int { Int(presentBytes / Int64(bytesPerFrame)) }
    /// Frames the header declares, nil when unknown.
    package var declaredFrames: Int? { declaredBytes.map { Int($0 / Int64(bytesPerFrame)) } }

    /// Why this file cannot be read as its header says, nil when the header fits the file (a
    /// healthy file, read the ordinary way).
    package var damage: SalvageReport.Cause? {
        guard let declared = declaredBytes else { return presentBytes > 0 ? .sizeUnknown : nil }
        return dataOffset + declared > fileSize ? .truncated : nil
    }

    /// The layout of `path` when it is PCM in one of these containers and its header can be read
    /// up to the start of the samples; nil otherwise (the ordinary decode then has the last word).
    /// Reads at most a few KiB of chunk headers.
    static package func read(path: String) -> PCMLayout? {
        guard let r = ByteSource(path: path), let head = r.bytes(0, 12) else { return nil }
        switch String(decoding: head[0..<4], as: UTF8.self) {
        case "RIFF", "RF64", "BW64":
            guard String(decoding: head[8..<12], as: UTF8.self) == "WAVE" else { return nil }
            return wave(r, container: head[0] == UInt8(ascii: "R") && head[1] == UInt8(ascii: "I") ? "WAV" : "RF64")
        case "FORM":
            let type = String(decoding: head[8..<12], as: UTF8.self)
            guard type == "AIFF" || type == "AIFC" else { return nil }
            return aiff(r, compressed: type == "AIFC")
        case "caff":
            return caf(r)
        default:
            return nil
        }
    }

    /// At most this many chunks are walked before the samples: a damaged header cannot loop.
    private static let chunkLimit = 256

    // MARK: - WAV / RF64

    private static func wave(_ r: ByteSource, container: String) -> PCMLayout? {
        var at: Int64 = 12
        var format: (tag: Int, channels: Int, rate: Int, block: Int, bits: Int)?
        var ds64Data: Int64?
        for _ in 0..<chunkLimit {
            guard let c = r.bytes(at, 8) else { return nil }
            let id = String(decoding: c[0..<4], as: UTF8.self)
            let size = Int64(le32(c, 4))
            switch id {
            case "ds64":
                if let d = r.bytes(at + 8, 16) { ds64Data = Int64(bitPattern: le64(d, 8)) }
            case "fmt ":
                guard let f = r.bytes(at + 8, Int(min(max(size, 16), 40))), f.count >= 16 else { return nil }
                var tag = Int(le16(f, 0))
                if tag == 0xFFFE, f.count >= 26 { tag = Int(le16(f, 24)) }
                format = (tag, Int(le16(f, 2)), Int(le32(f, 4)), Int(le16(f, 12)), Int(le16(f, 14)))
            case "data":
                guard let f = format, f.channels > 0, f.block > 0, f.block % f.channels == 0 else { return nil }
                var declared: Int64? = size
                if size == 0xFFFF_FFFF { declared = container == "RF64" ? ds64Data : nil }
                if declared == 0 { declared = nil }
                if let d = declared, d < 0 { declared = nil }
                guard let (encoding, codec) = waveEncoding(tag: f.tag, bytes: f.block / f.channels) else { return nil }
                return PCMLayout(container: container, codec: codec, sampleRate: f.rate, channels: f.channels, encoding: encoding,
                                 bytesPerFrame: f.block, dataOffset: at + 8, declaredBytes: declared, fileSize: r.size).checked
            default:
                break
            }
            guard size < r.size else { return nil }
            at += 8 + size + (size & 1)
        }
        return nil
    }

    private static func waveEncoding(tag: Int, bytes: Int) -> (String, String)? {
        switch (tag, bytes) {
        case (1, 1): return ("u8", "PCM_U8")
        case (1, 2): return ("s16le", "PCM_16")
        case (1, 3): return ("s24le", "PCM_24")
        case (1, 4): return ("s32le", "PCM_32")
        case (3, 4): return ("f32le", "FLOAT")
        case (3, 8): return ("f64le", "DOUBLE")
        case (6, 1): return ("alaw", "ALAW")
        case (7, 1): return ("ulaw", "ULAW")
        default: return nil
        }
    }

    // MARK: - AIFF / AIFC

    private static func aiff(_ r: ByteSource, compressed: Bool) -> PCMLayout? {
        var at: Int64 = 12
        var comm: (channels: Int, bits: Int, rate: Int, compression: String)?
        for _ in 0..<chunkLimit {
            guard let c = r.bytes(at, 8) else { return nil }
            let id = String(decoding: c[0..<4], as: UTF8.self)
            let size = Int64(be32(c, 4))
            switch id {
            case "COMM":
                guard let f = r.bytes(at + 8, compressed ? 22 : 18) else { return nil }
                let compression = compressed ? String(decoding: f[18..<22], as: UTF8.self) : "NONE"
                comm = (Int(be16(f, 0)), Int(be16(f, 6)), extended80(Array(f[8..<18])), compression)
            case "SSND":
                guard let m = comm, m.channels > 0, let o = r.bytes(at + 8, 8) else { return nil }
                let offset = Int64(be32(o, 0))
                guard let (encoding, codec, bytes) = aiffEncoding(m.compression, bits: m.bits) else { return nil }
                let declared: Int64? = size <= 8 ? nil : size - 8 - offset
                return PCMLayout(container: "AIFF", codec: codec, sampleRate: m.rate, channels: m.channels, encoding: encoding,
                                 bytesPerFrame: bytes * m.channels, dataOffset: at + 16 + offset,
                                 declaredBytes: declared.flatMap { $0 > 0 ? $0 : nil }, fileSize: r.size).checked
            default:
                break
            }
            guard size < r.size else { return nil }
            at += 8 + size + (size & 1)
        }
        return nil
    }

    private static func aiffEncoding(_ compression: String, bits: Int) -> (String, String, Int)? {
        let bytes = (bits + 7) / 8
        switch compression {
        case "NONE", "twos":
            let names = [1: ("s8", "PCM_S8"), 2: ("s16be", "PCM_16"), 3: ("s24be", "PCM_24"), 4: ("s32be", "PCM_32")]
            return names[bytes].map { ($0.0, $0.1, bytes) }
        case "sowt":
            let names = [2: ("s16le", "PCM_16"), 3: ("s24le", "PCM_24"), 4: ("s32le", "PCM_32")]
            return names[bytes].map { ($0.0, $0.1, bytes) }
        case "fl32", "FL32": return ("f32be", "FLOAT", 4)
        case "fl64", "FL64": return ("f64be", "DOUBLE", 8)
        case "ulaw", "ULAW": return ("ulaw", "ULAW", 1)
        case "alaw", "ALAW": return ("alaw", "ALAW", 1)
        default: return nil
        }
    }

    // MARK: - CAF

    private static func caf(_ r: ByteSource) -> PCMLayout? {
        var at: Int64 = 8
        var desc: (rate: Int, id: String, flags: UInt32, bytesPerPacket: Int, channels: Int, bits: Int)?
        for _ in 0..<chunkLimit {
            guard let c = r.bytes(at, 12) else { return nil }
            let id = String(decoding: c[0..<4], as: UTF8.self)
            let size = Int64(bitPattern: be64(c, 4))
            switch id {
            case "desc":
                guard let d = r.bytes(at + 12, 32) else { return nil }
                let rate = Double(bitPattern: be64(d, 0))
                guard rate.isFinite, rate >= 1, rate <= 1_000_000 else { return nil }
                desc = (Int(rate), String(decoding: d[8..<12], as: UTF8.self), be32(d, 12), Int(be32(d, 16)),
                        Int(be32(d, 24)), Int(be32(d, 28)))
            case "data":
                guard let f = desc, f.channels > 0, f.bytesPerPacket > 0, f.bytesPerPacket % f.channels == 0,
                      let (encoding, codec) = cafEncoding(f.id, flags: f.flags, bytes: f.bytesPerPacket / f.channels) else { return nil }
                let declared: Int64? = size < 0 ? nil : size - 4
                return PCMLayout(container: "CAF", codec: codec, sampleRate: f.rate, channels: f.channels, encoding: encoding,
                                 bytesPerFrame: f.bytesPerPacket, dataOffset: at + 16,
                                 declaredBytes: declared.flatMap { $0 > 0 ? $0 : nil }, fileSize: r.size).checked
            default:
                break
            }
            guard size >= 0, size < r.size else { return nil }
            at += 12 + size
        }
        return nil
    }

    private static func cafEncoding(_ id: String, flags: UInt32, bytes: Int) -> (String, String)? {
        switch id {
        case "ulaw": return bytes == 1 ? ("ulaw", "ULAW") : nil
        case "alaw": return bytes == 1 ? ("alaw", "ALAW") : nil
        case "lpcm":
            let float = flags & 1 != 0, little = flags & 2 != 0
            let e = little ? "le" : "be"
            switch (float, bytes) {
            case (true, 4): return ("f32" + e, "FLOAT")
            case (true, 8): return ("f64" + e, "DOUBLE")
            case (false, 1): return ("s8", "PCM_S8")
            case (false, 2): return ("s16" + e, "PCM_16")
            case (false, 3): return ("s24" + e, "PCM_24")
            case (false, 4): return ("s32" + e, "PCM_32")
            default: return nil
            }
        default: return nil
        }
    }

    /// Nil unless rate, channels and frame size are in the ranges libsndfile takes.
    private var checked: PCMLayout? {
        (1...768_000).contains(sampleRate) && (1...1024).contains(channels) && bytesPerFrame > 0 && dataOffset <= fileSize ? self : nil
    }
}

// MARK: - Byte helpers

private func le16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
private func le32(_ b: [UInt8], _ i: Int) -> UInt32 { UInt32(le16(b, i)) | UInt32(le16(b, i + 2)) << 16 }
private func le64(_ b: [UInt8], _ i: Int) -> UInt64 { UInt64(le32(b, i)) | UInt64(le32(b, i + 4)) << 32 }
private func be16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) << 8 | UInt16(b[i + 1]) }

/// An 80-bit IEEE extended float (AIFF's sample rate) as whole Hz; 0 when out of range.
private func extended80(_ b: [UInt8]) -> Int {
    let exponent = Int(be16(b, 0) & 0x7FFF) - 16383
    let mantissa = be64(b, 2)
    guard mantissa != 0, (0...30).contains(exponent) else { return 0 }
    return Int(mantissa >> UInt64(63 - exponent))
}
