@testable import SegnoWaveform
import Testing

@Suite struct WaveformPictureTests {
    static let red = RGBAColor(red: 255, green: 0, blue: 0)
    static let grey = RGBAColor(red: 128, green: 128, blue: 128)

    // Points [−32768, 32767], [0, 0], [−16384, 16384].
    static func threePoints() throws -> WaveformData {
        try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 16,
                         data: [-32768, 32767, 0, 0, -16384, 16384])
    }

    @Test func drawsOneBarPerColumnFromMaxToMin() throws {
        let p = try WaveformPicture(width: 3, height: 11)
        let bars = try #require(p.bars(try Self.threePoints()))
        // row(v) = round((1 − v/32768) · (11 − 1) / 2): 32767 → 0, −32768 → 10, 0 → 5, ±16384 → 3 and 8.
        #expect(bars[0].map { [$0.top, $0.bottom] } == [[0, 10], [5, 5], [3, 8]])
    }

    @Test func paintsTheBarsInThePNG() throws {
        let p = try WaveformPicture(width: 3, height: 11, background: .white, waveform: Self.red, axis: Self.grey)
        let png = try Inflater.png(p.png(try Self.threePoints()))
        #expect(png.width == 3 && png.height == 11)
        func pixel(_ x: Int, _ y: Int) -> RGBAColor {
            let k = (y * 3 + x) * 4
            return RGBAColor(red: png.rgba[k], green: png.rgba[k + 1], blue: png.rgba[k + 2], alpha: png.rgba[k + 3])
        }
        #expect(pixel(0, 0) == Self.red && pixel(0, 10) == Self.red)
        #expect(pixel(1, 5) == Self.red && pixel(1, 4) == .white && pixel(1, 6) == .white)
        #expect(pixel(2, 3) == Self.red && pixel(2, 8) == Self.red && pixel(2, 2) == .white && pixel(2, 9) == .white)
        #expect(try WaveformPicture(width: 3, height: 11, axis: Self.grey).axisRows(channels: 1) == [5])
    }

    @Test func stacksSplitChannelsInLanes() throws {
        let d = try WaveformData(channels: 2, sampleRate: 8000, samplesPerPixel: 2, bits: 8, data: [0, 0, -128, 127])
        let p = try WaveformPicture(width: 1, height: 10)
        let bars = try #require(p.bars(d))
        #expect(bars.count == 2)
        #expect(bars[0][0].top == 2 && bars[0][0].bottom == 2)  // silence: the lane's middle row (rounded)
        #expect(bars[1][0].top == 5 && bars[1][0].bottom == 9)  // full scale fills the second lane
    }

    @Test func writesTheSameShapeAsSVG() throws {
        let p = try WaveformPicture(width: 3, height: 11, background: .white, waveform: Self.red)
        let svg = p.svg(try Self.threePoints())
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"3\" height=\"11\" viewBox=\"0 0 3 11\">"))
        #expect(svg.contains("<rect width=\"3\" height=\"11\" fill=\"#ffffff\"/>"))
        #expect(svg.contains("<path fill=\"#ff0000\" d=\"M0 0H1V5H2V3H3V9H2V6H1V11H0Z\"/>"))
        #expect(svg.hasSuffix("</svg>\n"))
        let translucent = try WaveformPicture(width: 3, height: 11, background: .transparent,
                                              waveform: RGBAColor(red: 0, green: 0, blue: 0, alpha: 128))
        let s2 = translucent.svg(try Self.threePoints())
        #expect(!s2.contains("<rect") && s2.contains("fill-opacity=\"0.502\""))
    }

    @Test func drawsNothingButTheBackgroundForEmptyData() throws {
        let empty = try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 16, data: [])
        let p = try WaveformPicture(width: 4, height: 4, background: Self.grey)
        let png = try Inflater.png(p.png(empty))
        #expect(png.rgba == Array([UInt8]([128, 128, 128, 255]).repeated(16)))
        #expect(!p.svg(empty).contains("<path"))
    }

    @Test func compressesALongWaveform() throws {
        let d = try Fixture.generate(Fixture.noise(count: 200_000, seed: 9).map { $0 * 0.4 }, channels: 1,
                                     rate: 44100, spp: [64])[0]
        let p = try WaveformPicture(width: 1000, height: 200)
        let png = p.png(d)
        #expect(png.count < 40_000)  // 800 KB of pixels
        #expect(try Inflater.png(png).rgba == p.pixels(d))
    }

    @Test func rejectsBadSizes() {
        #expect(throws: WaveformError.invalidSize("width", 0)) { try WaveformPicture(width: 0) }
        #expect(throws: WaveformError.invalidSize("height", 5000)) { try WaveformPicture(height: 5000) }
    }
}

extension Array {
    func repeated(_ n: Int) -> [Element] { (0..<n).flatMap { _ in self } }
}
