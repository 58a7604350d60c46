import Foundation
import SegnoCore

/// Reads a QuickTime chapter track (issue 32): a text track named by the `tref/chap` box of
/// another track (the audio's), one text sample per chapter — a 16-bit length, then the title in
/// UTF-8 or, after a byte-order mark, UTF-16 — each starting where the sample's time does (`stts`,
/// in the track's `mdhd` timescale) and ending where it ends. What Apple's tools and ffmpeg write.
/// Called by `ChapterReader` for an MP4/M4A/MOV without a `chpl` box (decision 0090). Every
/// table read is bounded by the samples wanted (`ChapterLimits.count` + 1), every sample read by
/// `sampleBytes`; what does not add up is a warning and the chapters before it are kept.
package enum MP4ChapterTrack {
    /// Most bytes read of one text sample (the length, the title, the boxes after it).
    static package let sampleBytes = 2 + ChapterLimits.titleBytes * 2 + 64
    /// Most track ids a `chap` reference names that are looked at.
    static let references = 64

    static package func read(_ file: BoxReader, moov: [Box], into m: inout RecordingMetadata) {
        let tracks = moov.filter { $0.type == "trak" }
        var byID: [UInt32: Box] = [:]
        for t in tracks { if let id = trackID(file, t), byID[id] == nil { byID[id] = t } }
        for id in referenced(file, tracks) {
            guard let trak = byID[id], let kind = handler(file, trak), kind == "text" || kind == "sbtl" else { continue }
            readTrack(file, trak, into: &m)
            return
        }
    }

    /// The ids the tracks' `tref/chap` boxes name, in order, each once.
    private static func referenced(_ file: BoxReader, _ tracks: [Box]) -> [UInt32] {
        var ids: [UInt32] = []
        for t in tracks {
            guard let tref = file.child("tref", of: t), let chap = file.child("chap", of: tref) else { continue }
            let n = Int(min(chap.end - chap.body, Int64(references * 4))) / 4
            guard n > 0, let b = file.read(chap.body, n * 4) else { continue }
            for i in 0..<n where !ids.contains(be32(b, i * 4)) { ids.append(be32(b, i * 4)) }
        }
        return ids
    }

    /// `tkhd`'s track id (version 0: after two 32-bit times; version 1: after two 64-bit ones).
    private static func trackID(_ file: BoxReader, _ trak: Box) -> UInt32? {
        guard let tkhd = file.child("tkhd", of: trak), let v = file.read(tkhd.body, 1),
              let b = file.read(tkhd.body + (v[0] == 1 ? 20 : 12), 4) else { return nil }
        return be32(b, 0)
    }

    /// `mdia/hdlr`'s handler type ("soun", "text", "sbtl", "vide").
    private static func handler(_ file: BoxReader, _ trak: Box) -> String? {
        guard let hdlr = file.child("hdlr", of: trak, path: ["mdia"]), let h = file.read(hdlr.body + 8, 4) else { return nil }
        return String(decoding: h, as: UTF8.self)
    }

    private static func readTrack(_ file: BoxReader, _ trak: Box, into m: inout RecordingMetadata) {
        let what = "MP4 chapter track"
        guard let mdia = file.child("mdia", of: trak), let mdhd = file.child("mdhd", of: mdia),
              let scale = file.timeHeader(mdhd)?.timescale, scale > 0,
              let stbl = file.child("stbl", of: mdia, path: ["minf"]) else {
            m.warnings.append("\(what) has no media header or sample table with a timescale; not read")
            return
        }
        let wanted = ChapterLimits.count + 1
        guard let times = sampleTimes(file, stbl, wanted, &m), let places = samplePlaces(file, stbl, wanted, &m) else {
            m.warnings.append("\(what)'s sample tables are missing or cut; not read")
            return
        }
        if times.count != places.count { m.warnings.append("\(what)'s sample tables disagree (\(times.count) times, \(places.count) samples); the rest are left out") }
        for (t, p) in zip(times, places) {
            guard p.offset >= 0, p.offset <= file.size, let b = file.read(p.offset, min(p.size, sampleBytes, Int(file.size - p.offset))) else {
                m.warnings.append("\(what) sample at byte \(p.offset) lies past the end of the file; the rest are left out")
                return
            }
            m.addChapter(Chapter(start: Double(t.start) / Double(scale), end: Double(t.start + t.duration) / Double(scale), title: text(b)), from: what)
        }
    }

    /// A sample table's entries of `width` bytes after the 32-bit count at `countAt` bytes into
    /// the box: no more than `wanted`, nor than the box holds (a count past it is a warning).
    private static func table(_ file: BoxReader, _ box: Box, countAt: Int64, width: Int, wanted: Int,
                              _ m: inout RecordingMetadata) -> (count: Int, bytes: [UInt8])? {
        guard let h = file.read(box.body + countAt, 4) else { return nil }
        let claimed = Int(be32(h, 0)), room = Int(max(0, box.end - box.body - countAt - 4)) / width
        if claimed > room { m.warnings.append("MP4 chapter track's \(box.type) box claims \(claimed) entries but holds \(room); read as far as it goes") }
        let n = min(claimed, room, wanted)
        guard let b = file.read(box.body + countAt + 4, n * width) else { return nil }
        return (n, b)
    }

    /// Start and duration of the first `wanted` samples (`stts`, media timescale).
    private static func sampleTimes(_ file: BoxReader, _ stbl: Box, _ wanted: Int, _ m: inout RecordingMetadata) -> [(start: Int64, duration: Int64)]? {
        guard let stts = file.child("stts", of: stbl), let (entries, t) = table(file, stts, countAt: 4, width: 8, wanted: wanted, &m) else { return nil }
        var out: [(Int64, Int64)] = [], at: Int64 = 0
        for e in 0..<entries where out.count < wanted {
            let count = Int(be32(t, e * 8)), delta = Int64(be32(t, e * 8 + 4))
            for _ in 0..<min(count, wanted - out.count) {
                out.append((at, delta))
                at += delta
            }
        }
        return out
    }

    /// File offset and size of the first `wanted` samples (`stsz`, `stsc`, `stco` or `co64`).
    private static func samplePlaces(_ file: BoxReader, _ stbl: Box, _ wanted: Int, _ m: inout RecordingMetadata) -> [(offset: Int64, size: Int)]? {
        guard let stsz = file.child("stsz", of: stbl), let sz = file.read(stsz.body, 12), let stsc = file.child("stsc", of: stbl) else { return nil }
        // One size for every sample, or a table of them.
        let uniform = Int(be32(sz, 4))
        var samples = min(Int(be32(sz, 8)), wanted), sizes: [UInt8] = []
        if uniform == 0 {
            guard let (n, b) = table(file, stsz, countAt: 8, width: 4, wanted: wanted, &m) else { return nil }
            (samples, sizes) = (n, b)
        }
        func size(_ i: Int) -> Int { uniform != 0 ? uniform : Int(be32(sizes, i * 4)) }
        // Chunk offsets: 32-bit (`stco`) or 64-bit (`co64`); each chunk holds at least one sample.
        let wide = file.child("co64", of: stbl)
        guard let co = wide ?? file.child("stco", of: stbl),
              let (chunks, offsets) = table(file, co, countAt: 4, width: wide == nil ? 4 : 8, wanted: max(samples, 1), &m) else { return nil }
        func offset(_ c: Int) -> Int64 { Int64(bitPattern: wide == nil ? UInt64(be32(offsets, c * 4)) : be64(offsets, c * 8)) }
        // Runs of chunks with the same number of samples: (first chunk, 1-based; samples per chunk).
        guard let (runs, t) = table(file, stsc, countAt: 4, width: 12, wanted: max(chunks, 1), &m) else { return nil }
        var out: [(Int64, Int)] = []
        for r in 0..<runs where out.count < samples {
            let first = Int(be32(t, r * 12)) - 1, perChunk = Int(be32(t, r * 12 + 4))
            let next = r + 1 < runs ? Int(be32(t, (r + 1) * 12)) - 1 : chunks
            guard first >= 0, first < chunks else { break }
            for c in first..<max(first, min(next, chunks)) where out.count < samples {
                var at = offset(c)
                for _ in 0..<min(perChunk, samples - out.count) {
                    out.append((at, size(out.count)))
                    at = at &+ Int64(size(out.count - 1))
                }
            }
        }
        return out
    }

    /// A text sample's title: its 16-bit length, then UTF-16 after a byte-order mark, else UTF-8
    /// (Latin-1 when not valid UTF-8); cut to the bytes the sample holds.
    static package func text(_ b: [UInt8]) -> String {
        guard b.count >= 2 else { return "" }
        let n = min(Int(b[0]) << 8 | Int(b[1]), b.count - 2)
        let t = Array(b[2..<(2 + n)])
        if t.count >= 2, (t[0], t[1]) == (0xFE, 0xFF) || (t[0], t[1]) == (0xFF, 0xFE) {
            let big = t[0] == 0xFE
            let units = stride(from: 2, to: t.count - 1, by: 2).map { i -> UInt16 in
                let (hi, lo) = big ? (t[i], t[i + 1]) : (t[i + 1], t[i])
                return UInt16(hi) << 8 | UInt16(lo)
            }
            return String(decoding: units, as: UTF16.self)
        }
        return BroadcastInfo.decode(t)
    }
}
