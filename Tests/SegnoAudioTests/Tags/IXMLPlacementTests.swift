import Foundation
@testable import SegnoAudio
@testable import SegnoCore
import SegnoCoreTestSupport
import Testing

/// Decision 0096: a carried iXML's sync points placed through the time maps, worked out by hand,
/// and the chunk written over or moved in a WAV built byte by byte here.
@Suite struct IXMLPlacementTests {
    static func xml(_ points: [String], count: Int? = nil) -> [UInt8] {
        Array(("<BWFXML><SCENE>4</SCENE><SYNC_POINT_LIST><SYNC_POINT_COUNT>\(count ?? points.count)</SYNC_POINT_COUNT>"
            + points.joined() + "</SYNC_POINT_LIST></BWFXML>").utf8)
    }
    static func point(_ type: String, _ comment: String, _ sample: UInt64, function: String = "MARKER_GENERIC", high: Bool = true) -> String {
        "<SYNC_POINT><SYNC_POINT_TYPE>\(type)</SYNC_POINT_TYPE><SYNC_POINT_FUNCTION>\(function)</SYNC_POINT_FUNCTION><SYNC_POINT_COMMENT>\(comment)</SYNC_POINT_COMMENT>"
            + "<SYNC_POINT_LOW>\(sample & 0xFFFF_FFFF)</SYNC_POINT_LOW>" + (high ? "<SYNC_POINT_HIGH>\(sample >> 32)</SYNC_POINT_HIGH>" : "") + "</SYNC_POINT>"
    }

    /// A cut list at 1 kHz: keeps 0–2 s at 0, removes 2–5 s, keeps 5–9 s at 2 s (output 6 s).
    static let cuts = [TimeMap(pieces: [TimeMap.Piece(inputStart: 0, inputEnd: 2, outputStart: 0), TimeMap.Piece(inputStart: 5, inputEnd: 9, outputStart: 2)])]

    @Test func aCutListMovesPointsAndRemovesThoseAfterTheEnd() {
        let source = Self.xml([
            Self.point("RELATIVE", "before the cut", 1500),      // 1.5 s: stays
            Self.point("RELATIVE", "in the cut", 3000),          // 3 s: moves to the cut, 2 s
            Self.point("ABSOLUTE", "after", 10_000 + 7250),      // 7.25 s after the reference: 4.25 s
            Self.point("RELATIVE", "other clock", 3000, function: "GROUP_OFFSET"),
            Self.point("RELATIVE", "trimmed end", 9500),         // 9.5 s: the output's end, 6 s: removed
            Self.point("RELATIVE", "no high", 6000, high: false), // 6 s: 3 s
        ])
        let (out, notes) = IXMLPlacement.mapped(source, rate: 1000, timeReference: 10_000, maps: Self.cuts, length: 6, file: "out/take.wav")
        let want = Self.xml([
            Self.point("RELATIVE", "before the cut", 1500),
            Self.point("RELATIVE", "in the cut", 2000),
            Self.point("ABSOLUTE", "after", 10_000 + 4250),
            Self.point("RELATIVE", "other clock", 3000, function: "GROUP_OFFSET"),
            Self.point("RELATIVE", "no high", 3000, high: false),
        ], count: 5)
        #expect(String(decoding: out, as: UTF8.self) == String(decoding: want, as: UTF8.self))
        #expect(notes.count == 1 && notes[0].contains("\"trimmed end\"") && notes[0].contains("out/take.wav"), "\(notes)")
    }

    @Test func aTempoScalesPointsToTheNearestSampleAndGrowsAHighHalf() {
        let tempo = [TimeMap(pieces: [TimeMap.Piece(inputStart: 0, inputEnd: 1e7, outputStart: 0, scale: 1 / 0.5)])]
        // At half speed (scale 2): 9,999 → 19,998; 2^31 + 1 → 2^32 + 2, whose high half is 1, and
        // the point without a high element gains one after its low one.
        let source = Self.xml([Self.point("RELATIVE", "a", 9999), Self.point("RELATIVE", "big", (1 << 31) + 1, high: false)])
        let (out, notes) = IXMLPlacement.mapped(source, rate: 48000, timeReference: nil, maps: tempo, length: 1e7, file: "o.wav")
        let text = String(decoding: out, as: UTF8.self)
        #expect(text.contains("<SYNC_POINT_LOW>19998</SYNC_POINT_LOW><SYNC_POINT_HIGH>0</SYNC_POINT_HIGH>"), "\(text)")
        #expect(text.contains("<SYNC_POINT_LOW>2</SYNC_POINT_LOW><SYNC_POINT_HIGH>1</SYNC_POINT_HIGH></SYNC_POINT>"), "\(text)")
        #expect(notes.isEmpty)
        // 1 / 1.25 of 7 samples is 5.6: rounded to 6.
        let faster = [TimeMap(pieces: [TimeMap.Piece(inputStart: 0, inputEnd: 100, outputStart: 0, scale: 1 / 1.25)])]
        let six = IXMLPlacement.mapped(Self.xml([Self.point("RELATIVE", "a", 7)]), rate: 48000, timeReference: nil, maps: faster, length: 100, file: "o.wav").xml
        #expect(String(decoding: six, as: UTF8.self).contains("<SYNC_POINT_LOW>6</SYNC_POINT_LOW>"))
    }

    @Test func withoutAMoveOfTimeTheIXMLIsLeftByteForByte() {
        let source = Self.xml([Self.point("RELATIVE", "a", 9999), "<SYNC_POINT><SYNC_POINT_TYPE>RELATIVE"])
        #expect(IXMLPlacement.mapped(source, rate: 48000, timeReference: nil, maps: [.identity], length: 1, file: "o.wav").xml == source)
        #expect(IXMLPlacement.mapped(source, rate: 48000, timeReference: nil, maps: [], length: 1, file: "o.wav").xml == source)
    }

    /// A WAV of a `fmt `, an `iXML` chunk of `xml` and 100 frames of silence.
    static func wav(_ xml: [UInt8]) -> [UInt8] {
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        let body = Array("WAVE".utf8) + ChapterWriter.chunk("fmt ", [1, 0, 1, 0] + le32(1000) + le32(2000) + [2, 0, 16, 0])
            + ChapterWriter.chunk("iXML", xml) + ChapterWriter.chunk("data", [UInt8](repeating: 0, count: 200))
        return Array("RIFF".utf8) + le32(body.count) + body
    }

    @Test func theChunkIsWrittenOverWhenItFitsAndMovedWhenItHasGrown() throws {
        let dir = try TempDir()
        let before = Array("<BWFXML><SYNC_POINT_LOW>1234</SYNC_POINT_LOW></BWFXML>".utf8)
        try Data(Self.wav(before)).write(to: URL(fileURLWithPath: dir["a.wav"]))
        // Shorter: over the old body, padded with spaces; nothing to append.
        let shorter = Array("<BWFXML><SYNC_POINT_LOW>12</SYNC_POINT_LOW></BWFXML>".utf8)
        #expect(try IXMLPlacement.rewrite(temporary: dir["a.wav"], path: "a.wav", xml: shorter).isEmpty)
        let a = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir["a.wav"])))
        #expect(a == Self.wav(shorter + [0x20, 0x20]))
        // Longer: the old chunk becomes JUNK of zeros; the new one is returned to append.
        let longer = Array("<BWFXML><SYNC_POINT_LOW>123456</SYNC_POINT_LOW></BWFXML>".utf8)
        let appended = try IXMLPlacement.rewrite(temporary: dir["a.wav"], path: "a.wav", xml: longer)
        #expect(appended == ChapterWriter.chunk("iXML", longer))
        let b = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir["a.wav"])))
        var want = Self.wav(shorter + [0x20, 0x20])
        let at = 12 + 8 + 16
        want.replaceSubrange(at..<(at + 4), with: Array("JUNK".utf8))
        want.replaceSubrange((at + 8)..<(at + 8 + before.count), with: [UInt8](repeating: 0, count: before.count))
        #expect(b == want)
    }
}
