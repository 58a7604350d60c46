import Foundation
@testable import SegnoSources
import Testing

/// The ICY demuxer and the MP3/ADTS frame splitter give the same result whatever chunk sizes the
/// network delivers (NIO's habit: feed the same input in several chunk sizes).
@Suite struct StreamParsingTests {
    static let chunkSizes = [1, 7, 333, 4096, 1 << 20]

    /// `metaint` audio bytes, then a metadata block, repeated; titles at known audio offsets.
    static func icyStream(metaint: Int, blocks: Int, titles: [Int: String]) -> (bytes: [UInt8], audio: [UInt8]) {
        var out: [UInt8] = [], audio: [UInt8] = []
        for b in 0..<blocks {
            let chunk = (0..<metaint).map { UInt8(truncatingIfNeeded: b * 31 + $0) }
            out += chunk
            audio += chunk
            if let t = titles[b] {
                var meta = Array("StreamTitle='\(t)';StreamUrl='';".utf8)
                meta += [UInt8](repeating: 0, count: (16 - meta.count % 16) % 16)
                out.append(UInt8(meta.count / 16))
                out += meta
            } else {
                out.append(0)
            }
        }
        return (out, audio)
    }

    @Test(arguments: chunkSizes)
    func icyTitlesLandBetweenTheRightAudioBytes(chunk: Int) {
        let (bytes, audio) = Self.icyStream(metaint: 100, blocks: 6, titles: [0: "Intro", 3: "Rock 'n' Roll – 노래"])
        var d = ICYDemuxer(metaint: 100)
        var got: [UInt8] = []
        var titles: [(Int, String)] = []
        for start in stride(from: 0, to: bytes.count, by: chunk) {
            for e in d.feed(Array(bytes[start..<min(bytes.count, start + chunk)])) {
                switch e {
                case .audio(let a): got += a
                case .title(let t): titles.append((got.count, t))
                }
            }
        }
        #expect(got == audio)
        #expect(titles.map(\.0) == [100, 400])
        #expect(titles.map(\.1) == ["Intro", "Rock 'n' Roll – 노래"])
    }

    @Test func noMetaintPassesEverythingThrough() {
        var d = ICYDemuxer(metaint: 0)
        #expect(d.feed([1, 2, 3]) == [.audio([1, 2, 3])])
    }

    /// MPEG-1 layer III, 128 kb/s, 44.1 kHz: 417/418-byte frames of 1152 samples.
    static func mp3Frame(padding: Bool) -> [UInt8] {
        var f = [UInt8](repeating: 0x55, count: padding ? 418 : 417)
        f[0] = 0xFF; f[1] = 0xFB; f[2] = 0x90 | (padding ? 0x02 : 0); f[3] = 0x64
        return f
    }

    /// ADTS AAC-LC, 44.1 kHz, one raw block (1024 samples), `length` bytes with the header.
    static func adtsFrame(length: Int) -> [UInt8] {
        var f = [UInt8](repeating: 0x11, count: length)
        f[0] = 0xFF; f[1] = 0xF1; f[2] = 0x50; f[3] = 0x80 | UInt8((length >> 11) & 3)
        f[4] = UInt8((length >> 3) & 0xFF); f[5] = UInt8((length & 7) << 5) | 0x1F; f[6] = 0xFC
        return f
    }

    @Test(arguments: chunkSizes)
    func mp3FramesAfterJunkWhateverTheChunks(chunk: Int) {
        let frames = (0..<20).map { Self.mp3Frame(padding: $0 % 3 == 0) }
        let bytes = [UInt8](repeating: 0xFF, count: 5) + [0x49, 0x44, 0x33, 1, 2] + frames.joined()
        var s = FrameSplitter(codec: .mp3)
        var got: [FrameSplitter.Frame] = []
        for start in stride(from: 0, to: bytes.count, by: chunk) { got += s.feed(Array(bytes[start..<min(bytes.count, start + chunk)])) }
        // The last frame waits for the next header to prove itself only while unsynced: all 20 come out.
        #expect(got.count == 20)
        #expect(got.map(\.bytes) == frames)
        #expect(got.allSatisfy { $0.samples == 1152 && $0.rate == 44100 })
        #expect(s.skippedBytes == 10)
    }

    @Test(arguments: chunkSizes)
    func adtsFramesResyncAfterACutFrame(chunk: Int) {
        let frames = (0..<12).map { Self.adtsFrame(length: 300 + $0) }
        // A reconnect: half a frame, then whole frames again.
        let bytes = Array(frames[0].prefix(150)) + frames[1...].joined()
        var s = FrameSplitter(codec: .aac)
        var got: [FrameSplitter.Frame] = []
        for start in stride(from: 0, to: bytes.count, by: chunk) { got += s.feed(Array(bytes[start..<min(bytes.count, start + chunk)])) }
        #expect(got.map(\.bytes) == Array(frames[1...]))
        #expect(got.allSatisfy { $0.samples == 1024 && $0.rate == 44100 })
    }

    @Test func codecsFromContentTypes() {
        #expect(FrameSplitter.codec(contentType: "audio/mpeg") == .mp3)
        #expect(FrameSplitter.codec(contentType: "audio/aacp; charset=x") == .aac)
        #expect(FrameSplitter.codec(contentType: "application/ogg") == nil)
    }
}
