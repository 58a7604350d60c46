import Foundation
import SegnoCore
import SegnoDSP

/// Decodes a damaged Ogg Vorbis or Ogg Opus recording. Pages are read in order and checked
/// (`OggPageReader`: junk and pages failing their CRC are skipped to the next "OggS" whose page
/// passes); a packet that lost a piece (a page missing from the sequence, a continuation without
/// its start) is dropped; the packets left are decoded one page at a time in the `segno-decode`
/// helper (`HelperPacketDecoder`, libavcodec), and each page's samples are placed by its granule
/// position, so the audio lost in a gap becomes silence of exactly that length and later audio
/// keeps its time. A packet that does not decode becomes silence of the length its page's granule
/// says is missing. Vorbis's end trimming and Opus's pre-skip are applied as the granules say.
///
/// Opened by `SalvageOpener` for Ogg when salvaging; one per recording, owned by one worker.
/// Memory: the page window (256 KiB), one page's packets and their decoded samples.
final package class OggSalvageDecoder: AudioDecoder {
    private(set) package var info: SourceInfo
    private let path: String
    private let reader: OggPageReader
    private var decoder: HelperPacketDecoder?
    private var report: SalvageReport
    private var queue: SalvageQueue
    private let serial: UInt32
    private let isOpus: Bool
    /// Output starts at this granule (Opus's pre-skip; 0 for Vorbis).
    private let origin: Int64
    /// The granule of the next sample handed to the queue; nil before the first audio page.
    private var position: Int64?
    /// The packet being put together across pages, and whether its start was seen.
    private var partial: [UInt8] = []
    private var partialValid = false
    private var lastSequence: UInt32?
    /// Headers still to be passed over before audio packets (Vorbis 3, Opus 2).
    private var headersLeft: Int
    /// A gap precedes the next packets: the decoder is flushed and the gap filled.
    private var gap = false
    private var gapDetail = ""
    private var ended = false
    private var sawEOS = false
    private var packetBytes: [UInt8] = []
    private var lengths: [Int] = []
    private var batch = HelperPacketDecoder.Batch()
    private var declaredEnd: Int64?

    /// Gaps longer than this (seconds) are not filled: a page that passed its CRC by chance could
    /// claim any granule; its samples are kept, no silence is made up.
    static package let maxGapSeconds: Int64 = 600

    package var salvage: SalvageReport? { report.ifSalvaged }

    /// Opens `path`: finds the first Vorbis or Opus stream's headers and starts the decoder in a
    /// helper from `pool`. Throws `AudioError` when the headers are lost or no helper can decode.
    /// Called once per recording.
    package init(path: String, pool: DecodeHelperPool) throws {
        self.path = path
        reader = try OggPageReader(path: path)
        // The identification header: the first page of a stream that starts a Vorbis or Opus stream.
        var first: OggPage?
        var pagesBefore = 0
        while let page = reader.next(), pagesBefore < 64 {
            pagesBefore += 1
            guard page.bos, let n = page.lacing.first, n < 255 else { continue }
            let b = page.body
            if b.count >= 30, b[0] == 1, Array(b[1..<7]) == Array("vorbis".utf8) { first = page; break }
            if b.count >= 19, Array(b[0..<8]) == Array("OpusHead".utf8) { first = page; break }
        }
        guard let first else {
            throw AudioError.decodeFailed(path: path, detail: "damaged Ogg: no readable Vorbis or Opus header page (the start of the stream is lost)")
        }
        serial = first.serial
        lastSequence = first.sequence
        let head = Array(first.body[0..<Int(first.lacing[0])])
        isOpus = head[0] == UInt8(ascii: "O")
        let channels: Int, rate: Int
        var extradata: [UInt8]
        if isOpus {
            channels = Int(head[9])
            origin = Int64(head[10]) | Int64(head[11]) << 8
            rate = 48000
            extradata = head
            headersLeft = 1
        } else {
            channels = Int(head[11])
            rate = Int(UInt32(head[12]) | UInt32(head[13]) << 8 | UInt32(head[14]) << 16 | UInt32(head[15]) << 24)
            origin = 0
            extradata = []
            headersLeft = 2
        }
        guard (1...255).contains(channels), (1...768_000).contains(rate) else {
            throw AudioError.decodeFailed(path: path, detail: "damaged Ogg: its header declares \(channels) channels at \(rate) Hz")
        }
        info = SourceInfo(container: "Ogg", codec: isOpus ? "Opus" : "Vorbis", sampleRate: rate, channels: channels, frames: 0, sampleKind: .float)
        queue = SalvageQueue(channels: channels)
        report = SalvageReport(method: "Ogg pages resynchronised on the next capture pattern with a valid checksum")
        if let end = reader.lastGranule(serial: serial), end > origin {
            declaredEnd = end
            report.declaredFrames = Int(end - origin)
            info.frames = Int(end - origin)
        }
        if !isOpus {
            // Vorbis: the comment and setup headers (the comment may be lost; the setup may not).
            var comment: [UInt8]?
            var setup: [UInt8]?
            var tries = 0
            while setup == nil, tries < 256, let page = reader.next() {
                tries += 1
                guard page.serial == serial else { continue }
                for packet in packets(of: page) {
                    if packet.first == 3 { comment = packet } else if packet.first == 5 { setup = packet; break }
                }
            }
            guard let setup else {
                throw AudioError.decodeFailed(path: path, detail: "damaged Ogg Vorbis: its setup header is lost, so no audio packet can be decoded")
            }
            // libavcodec reads the three headers Xiph-laced; a lost comment header is replaced by an empty one.
            let c = comment ?? Array("\u{3}vorbis".utf8) + [0, 0, 0, 0, 0, 0, 0, 0, 1]
            extradata = [2]
            for size in [head.count, c.count] {
                var s = size
                while s >= 255 { extradata.append(255); s -= 255 }
                extradata.append(UInt8(s))
            }
            extradata += head + c + setup
            headersLeft = 0
        }
        decoder = try HelperPacketDecoder(path: path, codec: isOpus ? .opus : .vorbis, rate: rate, channels: channels,
                                          extradata: extradata, pool: pool)
    }

    deinit { close() }

    /// How much a damaged Ogg holds by its pages alone (for `segno info`): the codec, and the
    /// time at which its last readable page ends, in seconds. Nil when no Vorbis/Opus header page
    /// is readable. Reads the first pages and the last 64 KiB.
    static func extent(path: String) -> (codec: String, seconds: Double)? {
        guard let reader = try? OggPageReader(path: path) else { return nil }
        var pages = 0
        while let page = reader.next(), pages < 64 {
            pages += 1
            guard page.bos, let n = page.lacing.first, n < 255 else { continue }
            let b = page.body
            let opus = b.count >= 19 && Array(b[0..<8]) == Array("OpusHead".utf8)
            let vorbis = b.count >= 30 && b[0] == 1 && Array(b[1..<7]) == Array("vorbis".utf8)
            guard opus || vorbis else { continue }
            let rate = opus ? 48000 : Int(UInt32(b[12]) | UInt32(b[13]) << 8 | UInt32(b[14]) << 16 | UInt32(b[15]) << 24)
            let skip = opus ? Int64(b[10]) | Int64(b[11]) << 8 : 0
            guard rate > 0, let end = reader.lastGranule(serial: page.serial) else { return nil }
            return (opus ? "Opus" : "Vorbis", Double(max(end - skip, 0)) / Double(rate))
        }
        return nil
    }

    /// The packets that end on `page`, whole (pieces of packets whose start was lost are dropped);
    /// keeps the unfinished last packet for the next page.
    private func packets(of page: OggPage) -> [[UInt8]] {
        let missing = page.skippedBefore > 0 || (lastSequence.map { page.sequence != $0 &+ 1 } ?? false)
        lastSequence = page.sequence
        if missing {
            if !partial.isEmpty || page.continued { note(.lostSync, frames: 0, "a packet lost a piece before byte \(page.offset)") }
            partial.removeAll(keepingCapacity: true)
            partialValid = false
            markGap(page, missing: true)
        }
        var out: [[UInt8]] = []
        var at = 0
        // A page continuing a packet whose start was lost: skip to that packet's end.
        var dropping = page.continued && !partialValid
        if !page.continued && !partial.isEmpty { partial.removeAll(keepingCapacity: true) }
        for l in page.lacing {
            let n = Int(l)
            guard at + n <= page.body.count else { dropping = true; break }   // a cut page ends here
            if !dropping { partial += page.body[at..<(at + n)] }
            at += n
            if n < 255 {
                if !dropping && partial.count <= 1 << 20 { out.append(partial) }
                partial.removeAll(keepingCapacity: true)
                dropping = false
            }
        }
        partialValid = !dropping && page.lacing.last == 255
        if !partialValid { partial.removeAll(keepingCapacity: true) }
        return out
    }

    private func markGap(_ page: OggPage, missing: Bool) {
        gap = true
        gapDetail = page.skippedBefore > 0
            ? "\(page.skippedBefore) bytes before byte \(page.offset) are not Ogg pages (damaged or junk)"
            : "pages missing before byte \(page.offset)"
    }

    package func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        block.reset(channels: info.channels, capacity: maxFrames)
        var filled = 0
        while filled < maxFrames {
            if !queue.isEmpty {
                filled += block.samples.withUnsafeMutableBufferPointer { queue.drain(into: $0, at: filled, max: maxFrames - filled) }
                continue
            }
            if ended { break }
            try nextPage()
        }
        block.frames = filled
        report.framesYielded += filled
        return filled
    }

    /// Reads and decodes the next page of the stream; sets `ended` at the end of the file.
    private func nextPage() throws {
        guard let page = reader.next() else { return try finish() }
        guard page.serial == serial else { return }
        let list = packets(of: page).filter { p in
            // Headers still coming (Opus's tags) are passed over.
            if headersLeft > 0, isOpus, p.count >= 8, Array(p[0..<8]) == Array("OpusTags".utf8) { headersLeft = 0; return false }
            if !isOpus, let f = p.first, f & 1 == 1 { return false }
            return true
        }
        if page.eos { sawEOS = true }
        guard !list.isEmpty, let decoder else { return }
        headersLeft = 0
        packetBytes.removeAll(keepingCapacity: true)
        lengths.removeAll(keepingCapacity: true)
        for p in list { packetBytes += p; lengths.append(p.count) }
        let flush = gap
        try decoder.decode(packetBytes[...], lengths: lengths, flush: flush, into: &batch)
        place(page, flush: flush)
        if page.eos { try finish() }
    }

    /// Puts the decoded samples of `page` in the queue, where its granule position says they belong.
    private func place(_ page: OggPage, flush: Bool) {
        let ch = info.channels
        guard batch.channels == ch || batch.channels == 0 else {
            note(.badFrame, frames: 0, "packets at byte \(page.offset) decoded to \(batch.channels) channels, not \(ch); dropped")
            return
        }
        let counts = batch.counts
        let decoded = counts.reduce(0) { $0 + max($1, 0) }
        let failed = counts.indices.filter { counts[$0] < 0 }
        var samples = batch.samples[...]
        var start: Int64
        let rate = Int64(info.sampleRate)
        if let pos = position {
            start = pos
            if page.granule >= 0 {
                let want = page.granule - pos
                let missing = want - Int64(decoded)
                if missing > 0 && missing <= Self.maxGapSeconds * rate && (flush || !failed.isEmpty) {
                    if failed.isEmpty {
                        // Pages lost before this one: silence before its samples.
                        queueSilence(Int(missing), at: pos, cause: .lostSync, gapDetail)
                        start += missing
                    } else {
                        // Packets that did not decode: silence where they were, shared out.
                        var offset = 0
                        var left = missing
                        for (k, i) in failed.enumerated() {
                            let before = counts[..<i].reduce(0) { $0 + max($1, 0) }
                            queueSamples(samples, from: offset, to: before, start: &start)
                            offset = before
                            let share = k == failed.count - 1 ? left : missing / Int64(failed.count)
                            left -= share
                            queueSilence(Int(share), at: start, cause: .badFrame, "a packet on the page at byte \(page.offset) does not decode")
                            start += share
                        }
                        samples = samples[(samples.startIndex + offset * ch)...]
                    }
                } else if missing > 0 && (flush || !failed.isEmpty) {
                    note(.lostSync, frames: 0, "the page at byte \(page.offset) claims granule \(page.granule) where \(pos) was due; kept in place")
                } else if missing < 0 {
                    // More than the granule says: the end of the stream (trimmed at the end), or
                    // a decoder restarted after a gap (the overlap dropped at the start).
                    let extra = Int(min(-missing, Int64(samples.count / ch)))
                    if page.eos || !flush {
                        samples = samples.dropLast(extra * ch)
                    } else {
                        samples = samples.dropFirst(extra * ch)
                    }
                }
            }
        } else {
            start = page.granule >= 0 ? page.granule - Int64(decoded) : origin
            if !failed.isEmpty { note(.badFrame, frames: 0, "a packet on the first audio page does not decode") }
        }
        var s = start
        queueSamples(samples, from: 0, to: samples.count / ch, start: &s)
        position = s
        gap = false
    }

    /// Queues frames `from..<to` of `samples` starting at granule `start` (advanced); frames
    /// before `origin` (Opus's pre-skip, Vorbis's start trimming) are dropped.
    private func queueSamples(_ samples: ArraySlice<Float>, from: Int, to: Int, start: inout Int64) {
        let ch = info.channels
        guard to > from else { return }
        var first = from
        if start < origin { first += Int(min(origin - start, Int64(to - from))) }
        let base = samples.startIndex
        queue.append(samples[(base + first * ch)..<(base + to * ch)])
        start += Int64(to - from)
    }

    private func queueSilence(_ frames: Int, at: Int64, cause: SalvageReport.Cause, _ detail: String) {
        let visible = at >= origin ? frames : max(0, frames - Int(origin - at))
        queue.silence(visible)
        note(cause, frames: visible, filled: true, at: Int(max(at - origin, 0)), detail + "; filled with silence")
    }

    /// At the end of the file: the whole packets of a cut last page, what the decoder still
    /// holds, a cut last page, a missing end.
    private func finish() throws {
        guard !ended else { return }
        ended = true
        var recovered = 0
        if let cut = reader.cutPage, cut.serial == serial, cut.skippedBefore == 0, let last = lastSequence,
           cut.sequence == last &+ 1, let decoder, position != nil {
            // Packets that end before the cut: decoded and put straight after what came before.
            let list = packets(of: cut).filter { p in isOpus || p.first.map { $0 & 1 == 0 } ?? false }
            if !list.isEmpty {
                packetBytes.removeAll(keepingCapacity: true)
                lengths.removeAll(keepingCapacity: true)
                for p in list { packetBytes += p; lengths.append(p.count) }
                try decoder.decode(packetBytes[...], lengths: lengths, flush: false, into: &batch)
                if batch.channels == info.channels, let pos = position {
                    var s = pos
                    var offset = 0
                    for c in batch.counts where c > 0 {
                        queueSamples(batch.samples[...], from: offset, to: offset + c, start: &s)
                        offset += c
                    }
                    recovered = Int(s - pos)
                    position = s
                }
            }
        }
        if let decoder {
            try decoder.finish(into: &batch)
            if batch.channels == info.channels, let pos = position, !batch.samples.isEmpty {
                var samples = batch.samples[...]
                if let end = declaredEnd, sawEOS {
                    let room = Int(max(0, end - pos))
                    samples = samples.prefix(room * info.channels)
                }
                var s = pos
                queueSamples(samples, from: 0, to: samples.count / info.channels, start: &s)
                position = s
            }
        }
        decoder = nil
        let at = Int(max((position ?? origin) - origin, 0))
        if reader.tailBytes > 0 {
            note(.cutFrame, frames: 0, at: at, "the last \(reader.tailBytes) bytes are a page cut off by the end of the file"
                 + (recovered > 0 ? "; its \(recovered) frames in whole packets were kept" : ""))
        }
        if let end = declaredEnd, let pos = position, end > pos, !sawEOS || reader.tailBytes > 0 {
            note(.truncated, frames: Int(end - pos), at: at, "the stream ends \(end - pos) frames before its last page's granule")
        } else if !sawEOS {
            note(.truncated, frames: 0, at: at, "the stream ends without its end-of-stream page (the recording was cut)")
        }
    }

    private func note(_ cause: SalvageReport.Cause, frames: Int, filled: Bool = false, at: Int? = nil, _ detail: String) {
        let where_ = at ?? Int(max((position ?? origin) - origin, 0))
        report.addOrExtend(at: where_, frames: frames, filled: filled, cause: cause, detail)
    }

    package func close() {
        decoder?.close()
        decoder = nil
        ended = true
    }
}
