import Foundation
import SegnoCore

/// Builds the boxes of a minimal MP4 index (`moov`) for one audio track, as ISO/IEC 14496-12
/// lays them out: mvhd, trak › tkhd, edts › elst, mdia › mdhd, hdlr, minf › smhd, dinf › dref,
/// stbl › stsd, stts, stsc, stsz, stco (co64 past 4 GiB). Pure functions of their inputs.
package enum MP4Boxes {
    static package func u16(_ v: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }
    static package func u32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }
    static package func u32(_ v: Int) -> [UInt8] { u32(UInt32(truncatingIfNeeded: v)) }
    static package func u64(_ v: UInt64) -> [UInt8] { u32(UInt32(truncatingIfNeeded: v >> 32)) + u32(UInt32(truncatingIfNeeded: v)) }

    /// A box: 32-bit size, type, body.
    static package func box(_ type: String, _ body: [UInt8]) -> [UInt8] { u32(body.count + 8) + Array(type.utf8) + body }
    /// A full box: version 0, flags, body.
    static package func full(_ type: String, flags: UInt32 = 0, _ body: [UInt8]) -> [UInt8] { box(type, u32(flags) + body) }

    static package let matrix: [UInt8] = u32(0x0001_0000) + u32(0) + u32(0) + u32(0) + u32(0x0001_0000) + u32(0) + u32(0) + u32(0) + u32(0x4000_0000)

    /// An `mp4a` sample entry with an `esds` holding `asc` (object type 0x40, audio stream).
    static package func mp4aEntry(rate: Int, channels: Int, asc: [UInt8]) -> [UInt8] {
        func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] { [tag, UInt8(body.count)] + body }
        let decoderSpecific = descriptor(0x05, asc)
        let decoderConfig = descriptor(0x04, [0x40, 0x15, 0, 0, 0] + u32(0) + u32(0) + decoderSpecific)
        let es = descriptor(0x03, u16(0) + [0] + decoderConfig + descriptor(0x06, [0x02]))
        let entry = [UInt8](repeating: 0, count: 6) + u16(1) + [UInt8](repeating: 0, count: 8)
            + u16(channels) + u16(16) + u16(0) + u16(0) + u32(UInt32(min(rate, 65535)) << 16)
        return box("mp4a", entry + full("esds", es))
    }

    /// The `moov` for `sizes.count` frames of `frameTicks` each at `offsets` (absolute in the
    /// output file), with the sample description `stsd` (a whole box) and an edit skipping
    /// `primingTicks` when given.
    static package func moov(template t: MP4Template, sizes: [UInt32], offsets: [UInt64]) -> [UInt8] {
        let n = sizes.count
        let duration = UInt64(n) * UInt64(t.frameTicks)
        let shown = duration - UInt64(max(0, min(Int64(duration), t.primingTicks ?? 0)))
        let d32 = UInt32(truncatingIfNeeded: min(duration, UInt64(UInt32.max)))
        let mvhd = full("mvhd", u32(0) + u32(0) + u32(t.timescale) + u32(UInt32(truncatingIfNeeded: min(shown, UInt64(UInt32.max))))
                        + u32(0x0001_0000) + u16(0x0100) + [UInt8](repeating: 0, count: 10) + matrix
                        + [UInt8](repeating: 0, count: 24) + u32(2))
        let tkhd = full("tkhd", flags: 7, u32(0) + u32(0) + u32(1) + u32(0) + u32(UInt32(truncatingIfNeeded: min(shown, UInt64(UInt32.max))))
                        + [UInt8](repeating: 0, count: 8) + u16(0) + u16(0) + u16(0x0100) + u16(0) + matrix + u32(0) + u32(0))
        var edts: [UInt8] = []
        if let priming = t.primingTicks, priming > 0 {
            edts = box("edts", full("elst", u32(1) + u32(UInt32(truncatingIfNeeded: shown)) + u32(UInt32(truncatingIfNeeded: priming)) + u32(0x0001_0000)))
        }
        let mdhd = full("mdhd", u32(0) + u32(0) + u32(t.timescale) + u32(d32) + u16(0x55C4) + u16(0))
        let hdlr = full("hdlr", u32(0) + Array("soun".utf8) + [UInt8](repeating: 0, count: 12) + Array("SoundHandler".utf8) + [0])
        let smhd = full("smhd", u16(0) + u16(0))
        let dinf = box("dinf", full("dref", u32(1) + full("url ", flags: 1, [])))
        let stts = full("stts", u32(1) + u32(n) + u32(t.frameTicks))
        let stsc = full("stsc", u32(1) + u32(1) + u32(1) + u32(1))
        var sizesBody = u32(0) + u32(n)
        sizesBody.reserveCapacity(8 + 4 * n)
        for s in sizes { sizesBody += u32(s) }
        let stsz = full("stsz", sizesBody)
        let wide = (offsets.last ?? 0) > UInt64(UInt32.max)
        var offsetBody = u32(n)
        offsetBody.reserveCapacity(4 + (wide ? 8 : 4) * n)
        for o in offsets { offsetBody += wide ? u64(o) : u32(UInt32(o)) }
        let stco = full(wide ? "co64" : "stco", offsetBody)
        let stbl = box("stbl", t.stsd + stts + stsc + stsz + stco)
        let minf = box("minf", smhd + dinf + stbl)
        let mdia = box("mdia", mdhd + hdlr + minf)
        let trak = box("trak", tkhd + edts + mdia)
        return box("moov", mvhd + trak)
    }
}
