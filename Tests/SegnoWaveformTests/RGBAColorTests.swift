@testable import SegnoWaveform
import Testing

@Suite struct RGBAColorTests {
    @Test func parsesHexColours() throws {
        #expect(try RGBAColor(hex: "#336ec4") == RGBAColor(red: 0x33, green: 0x6E, blue: 0xC4))
        #expect(try RGBAColor(hex: "FF000080") == RGBAColor(red: 255, green: 0, blue: 0, alpha: 128))
        #expect(try RGBAColor(hex: "#ABCDEF").description == "#abcdef")
        #expect(RGBAColor(red: 1, green: 2, blue: 3, alpha: 4).description == "#01020304")
    }

    @Test(arguments: ["", "#", "#12345", "#1234567", "#12345g", "+12345", "#-12345"])
    func rejectsOtherText(text: String) {
        #expect(throws: WaveformError.invalidColor(text)) { try RGBAColor(hex: text) }
    }
}
