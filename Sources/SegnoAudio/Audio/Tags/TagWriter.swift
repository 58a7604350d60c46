import CSegnoTags
import CSndFile
import Foundation
import SegnoCore

/// Writes a `TagPlan` into an output segno is encoding. Two moments, both before the file is
/// renamed into place:
/// - before the first block (`beforeAudio`): what libsndfile writes itself — WAV/RF64 `LIST/INFO`,
///   `bext` and `iXML`; AIFF's text chunks; CAF's `info`;
/// - after the encoder has closed the file (`afterClose`): TagLib writes Vorbis comments and
///   pictures (FLAC, Ogg Vorbis, Opus), ID3v2.4 with `APIC` (MP3, and an `ID3 ` chunk in WAV and
///   AIFF), `ilst` with `covr` (M4A).
/// RF64, W64 and CAF get no pictures and only libsndfile's names (see README, Tags).
package enum TagWriter {
    /// What libsndfile must keep alive until the file is closed (`sf_set_chunk` holds a pointer).
    final package class Held {
        package var buffers: [UnsafeMutableRawPointer] = []
        deinit { for b in buffers { b.deallocate() } }
        package func copy(_ bytes: [UInt8]) -> UnsafeMutableRawPointer {
            let p = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
            bytes.withUnsafeBytes { p.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            buffers.append(p)
            return p
        }
    }

    /// The TagLib writer for an output format, nil where TagLib must not write (RF64: TagLib 1.13
    /// breaks its size fields) or cannot (CAF, W64).
    static package func tagLibFormat(_ f: OutputFormat) -> Int32? {
        switch f {
        case .flac: return Int32(SEGNO_TAGS_FLAC.rawValue)
        case .ogg: return Int32(SEGNO_TAGS_OGG_VORBIS.rawValue)
        case .opus: return Int32(SEGNO_TAGS_OPUS.rawValue)
        case .mp3: return Int32(SEGNO_TAGS_MPEG.rawValue)
        case .aac, .alac: return Int32(SEGNO_TAGS_MP4.rawValue)
        case .wav: return Int32(SEGNO_TAGS_WAV.rawValue)
        case .aiff: return Int32(SEGNO_TAGS_AIFF.rawValue)
        case .rf64, .w64, .caf: return nil
        }
    }

    /// Sets libsndfile's strings, `bext` and `iXML` on a file just opened for writing. Returns
    /// what libsndfile refused, one line each (the audio is still written).
    static package func beforeAudio(_ h: OpaquePointer, format: OutputFormat, plan: TagPlan, held: Held) -> [String] {
        var refused: [String] = []
        let strings: Bool = [.wav, .rf64, .aiff, .caf].contains(format)
        if strings {
            for (name, slot) in TagNames.sndfileSlots {
                guard let v = plan.value(name) else { continue }
                if format == .aiff && !["title", "artist", "comment", "copyright"].contains(name) { continue }
                if sf_set_string(h, slot, v) != 0 { refused.append("\(name) not written: \(String(cString: sf_strerror(h)))") }
            }
        }
        guard format == .wav || format == .rf64 else { return refused }
        if let b = plan.broadcast, !setBroadcast(h, b) { refused.append("bext not written: \(String(cString: sf_strerror(h)))") }
        if let x = plan.ixml {
            var chunk = SF_CHUNK_INFO()
            withUnsafeMutableBytes(of: &chunk.id) { id in for (i, c) in "iXML".utf8.enumerated() { id[i] = c } }
            chunk.id_size = 4
            chunk.datalen = UInt32(x.count)
            chunk.data = held.copy(x)
            if sf_set_chunk(h, &chunk) != 0 { refused.append("iXML not written: \(String(cString: sf_strerror(h)))") }
        }
        return refused
    }

    /// `SFC_SET_BROADCAST_INFO` with a coding history of any length (libsndfile's struct holds 256
    /// bytes of it; the variable form is the same layout with a longer tail).
    private static func setBroadcast(_ h: OpaquePointer, _ b: BroadcastInfo) -> Bool {
        typealias S = SF_BROADCAST_INFO
        let history = Array(b.codingHistory.utf8.prefix(16 * 1024 - 1))
        let historyOffset = MemoryLayout<S>.offset(of: \S.coding_history)!
        let size = max(MemoryLayout<S>.size, historyOffset + history.count + 1)
        let p = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<S>.alignment)
        defer { p.deallocate() }
        p.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        func put(_ s: String, _ field: PartialKeyPath<S>, _ capacity: Int) {
            let bytes = Array(s.utf8.prefix(capacity))
            let at = MemoryLayout<S>.offset(of: field)!
            for (i, c) in bytes.enumerated() { p.storeBytes(of: c, toByteOffset: at + i, as: UInt8.self) }
        }
        put(b.description, \S.description, 256)
        put(b.originator, \S.originator, 32)
        put(b.originatorReference, \S.originator_reference, 32)
        put(b.originationDate, \S.origination_date, 10)
        put(b.originationTime, \S.origination_time, 8)
        p.storeBytes(of: UInt32(truncatingIfNeeded: b.timeReference), toByteOffset: MemoryLayout<S>.offset(of: \S.time_reference_low)!, as: UInt32.self)
        p.storeBytes(of: UInt32(truncatingIfNeeded: b.timeReference >> 32), toByteOffset: MemoryLayout<S>.offset(of: \S.time_reference_high)!, as: UInt32.self)
        p.storeBytes(of: Int16(bitPattern: b.version), toByteOffset: MemoryLayout<S>.offset(of: \S.version)!, as: Int16.self)
        let umid = MemoryLayout<S>.offset(of: \S.umid)!
        for (i, c) in b.umid.prefix(64).enumerated() { p.storeBytes(of: c, toByteOffset: umid + i, as: UInt8.self) }
        let loud: [PartialKeyPath<S>] = [\S.loudness_value, \S.loudness_range, \S.max_true_peak_level, \S.max_momentary_loudness, \S.max_shortterm_loudness]
        for (i, k) in loud.enumerated() where i < b.loudness.count {
            p.storeBytes(of: b.loudness[i], toByteOffset: MemoryLayout<S>.offset(of: k)!, as: Int16.self)
        }
        p.storeBytes(of: UInt32(history.count), toByteOffset: MemoryLayout<S>.offset(of: \S.coding_history_size)!, as: UInt32.self)
        for (i, c) in history.enumerated() { p.storeBytes(of: c, toByteOffset: historyOffset + i, as: UInt8.self) }
        return sf_command(h, Int32(SFC_SET_BROADCAST_INFO), p, Int32(size)) == Int32(SF_TRUE)
    }

    /// Writes the tags and pictures with TagLib into the closed file at `temporary` (the output's
    /// temporary name). Throws `AudioError.encodeFailed` naming `path` when TagLib cannot.
    static package func afterClose(temporary: String, path: String, format: OutputFormat, plan: TagPlan) throws {
        guard let f = tagLibFormat(format), !(plan.tags.isEmpty && plan.pictures.isEmpty) else { return }
        // C strings for the call: keys upper case (TagLib's property names), values as written.
        let keys = plan.tags.map { strdup($0.key.uppercased()) }, values = plan.tags.map { strdup($0.value) }
        let mimes = plan.pictures.map { strdup($0.mime) }, descriptions = plan.pictures.map { strdup($0.description) }
        defer { for p in keys + values + mimes + descriptions { free(p) } }
        let properties = (0..<plan.tags.count).map { segno_tags_property(key: keys[$0], value: values[$0]) }
        var error = [CChar](repeating: 0, count: 256)
        let rc: Int32 = withPictures(plan.pictures, mimes: mimes, descriptions: descriptions) { pictures in
            properties.withUnsafeBufferPointer { props in
                FileNameBytes.withCPath(temporary) {
                    segno_tags_write($0, f, props.baseAddress, props.count, pictures.baseAddress, pictures.count, &error, error.count)
                }
            }
        }
        if rc != 0 {
            throw AudioError.encodeFailed(path: path, detail: "tags not written: \(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
    }

    /// Calls `body` with the pictures as C structs whose data pointers stay valid during the call.
    private static func withPictures<R>(_ pictures: [EmbeddedPicture], mimes: [UnsafeMutablePointer<CChar>?],
                                        descriptions: [UnsafeMutablePointer<CChar>?],
                                        _ body: (UnsafeBufferPointer<segno_tags_picture>) -> R) -> R {
        var out: [segno_tags_picture] = []
        func next(_ i: Int) -> R {
            guard i < pictures.count else { return out.withUnsafeBufferPointer(body) }
            let data = pictures[i].data ?? []
            return data.withUnsafeBufferPointer { d in
                out.append(segno_tags_picture(type: Int32(pictures[i].type), mime: mimes[i], description: descriptions[i],
                                              data: d.baseAddress, size: d.count))
                return next(i + 1)
            }
        }
        return next(0)
    }
}
