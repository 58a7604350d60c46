@testable import SegnoWaveform
import Testing

/// audiowaveform's picture layout (`window`, bars, lane colours, auto amplitude) and its
/// amplitude scaling of data (`segno waveform --amplitude-scale`).
@Suite struct AudiowaveformLayoutTests {
    static let red = RGBAColor(red: 255, green: 0, blue: 0)
    static let blue = RGBAColor(red: 0, green: 0, blue: 255)

    /// Six mono points whose maxima are 1000·(i+1) and minima −1000·(i+1).
    static func ramp(bits: Int = 16) throws -> WaveformData {
        var d: [Int16] = []
        for i in 1...6 {
            d.append(Int16(-1000 * i))
            d.append(Int16(1000 * i))
        }
        return try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 16, data: d).converted(toBits: bits)
    }

    @Test func aWindowShowsOnePointPerColumnFromItsStart() throws {
        var p = try WaveformPicture(width: 4, height: 65)
        p.window = 3
        let bars = try #require(p.bars(try Self.ramp()))[0]
        var fitted = p
        fitted.window = nil
        let whole = try #require(fitted.bars(try Self.ramp()))[0]
        // Columns 0–2 are points 3–5; column 3 is past the end and stays empty (top > bottom).
        let rampTops = bars.prefix(3).map(\.top)
        #expect(rampTops == rampTops.sorted(by: >) && Set(rampTops).count == 3, "\(bars)")
        #expect(bars[3].top > bars[3].bottom)
        // Fitted, the four columns cover all six points instead (the last column holds point 5 at its loudest).
        #expect(whole.allSatisfy { $0.top <= $0.bottom } && whole[3] == bars[2])
    }

    @Test func barsAreSymmetricBlocksSeparatedByGaps() throws {
        var p = try WaveformPicture(width: 6, height: 101)
        p.window = 0
        p.barStyle = try WaveformPicture.BarStyle(width: 2, gap: 1)
        let bars = try #require(p.bars(try Self.ramp()))[0]
        // Bar 0 spans columns 0–1 with the peak of points 0–2 (3000); column 2 is a gap; bar 1 points 3–5 (6000).
        #expect(bars[0] == bars[1] && bars[3] == bars[4])
        #expect(bars[2].top > bars[2].bottom && bars[5].top > bars[5].bottom)
        let middle = 50
        #expect(bars[0].top + bars[0].bottom == 2 * middle && bars[3].top + bars[3].bottom == 2 * middle)
        #expect(bars[3].bottom - bars[3].top > bars[0].bottom - bars[0].top)
        var normal = p
        normal.barStyle = nil
        let column2 = try #require(normal.bars(try Self.ramp()))[0][2]
        #expect(column2.top <= column2.bottom)
    }

    @Test func roundedBarsLoseTheirCornersOnly() throws {
        let style = try WaveformPicture.BarStyle(width: 8, gap: 0, rounded: true)
        #expect(style.radius(laneHeight: 50) == 2 && style.radius(laneHeight: 2) == 0)
        // Radius 2: the outermost columns lose the corner square's 2 rows at each end (only the
        // circle's leftmost point, one row further in, is on it), the next one row.
        #expect((0..<8).map { style.cut(column: $0, radius: 2) } == [2, 1, 0, 0, 0, 0, 1, 2])
        let wide = try WaveformPicture.BarStyle(width: 16, gap: 0, rounded: true)
        #expect((0..<16).map { wide.cut(column: $0, radius: 4) } == [4, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 4])
        var p = try WaveformPicture(width: 8, height: 101)
        p.window = 0
        p.barStyle = style
        let bars = try #require(p.bars(try AudiowaveformLayoutTests.ramp()))[0]
        var square = p
        square.barStyle = try WaveformPicture.BarStyle(width: 8, gap: 0)
        let flat = try #require(square.bars(try AudiowaveformLayoutTests.ramp()))[0]
        #expect(bars[0].top == flat[0].top + 2 && bars[0].bottom == flat[0].bottom - 2 && bars[3] == flat[3])
    }

    @Test func lanesTakeTheirColoursInTurn() throws {
        let d = try WaveformData(channels: 3, sampleRate: 8000, samplesPerPixel: 2, bits: 16,
                                 data: [-32768, 32767, -32768, 32767, -32768, 32767])
        var p = try WaveformPicture(width: 1, height: 9, background: .white)
        p.laneColors = [Self.red, Self.blue]
        let png = try Inflater.png(p.png(d))
        func pixel(_ y: Int) -> RGBAColor {
            RGBAColor(red: png.rgba[y * 4], green: png.rgba[y * 4 + 1], blue: png.rgba[y * 4 + 2], alpha: png.rgba[y * 4 + 3])
        }
        #expect(pixel(1) == Self.red && pixel(4) == Self.blue && pixel(7) == Self.red)
    }

    @Test func autoAmplitudeFollowsAudiowaveformsRule() throws {
        // Largest max 6000, smallest min −6000: |min(32767/6000, 32767/−6000)| = 32767/6000.
        #expect(try Self.ramp().autoAmplitudeScale() == 32767.0 / 6000)
        // Over points 0–1 only.
        #expect(try Self.ramp().autoAmplitudeScale(points: 0..<2) == 32767.0 / 2000)
        // A negative minimum decides even when the maximum is larger (audiowaveform's quirk).
        let lopsided = try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 16, data: [-100, 20000])
        #expect(lopsided.autoAmplitudeScale() == 32767.0 / 100)
        let silent = try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 16, data: [0, 0])
        #expect(silent.autoAmplitudeScale() == 1)
        // 8-bit data is compared at 16 bits.
        #expect(try Self.ramp(bits: 8).autoAmplitudeScale() == 32767.0 / Double(6000 / 256 * 256))
    }

    @Test func scalingClampsAndTruncatesTowardZero() throws {
        let d = try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 16,
                                 data: [-20000, 20000, -3, 3, -32768, 32767])
        #expect(d.amplitudeScaled(by: 2).data == [-32768, 32767, -6, 6, -32768, 32767])
        #expect(d.amplitudeScaled(by: 0.5).data == [-10000, 10000, -1, 1, -16384, 16383])
        let eight = try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 2, bits: 8, data: [-100, 100])
        #expect(eight.amplitudeScaled(by: 2).data == [-128, 127])
    }

    @Test func spanResolutionIsAudiowaveformsEndZoom() throws {
        // (10.5 − 0.5) s at 44100 Hz over 800 pixels: ⌊441000⌋ / 800 = 551.
        #expect(try WaveformResolution.span(seconds: 10, width: 800).samplesPerPixel(sampleRate: 44100, frames: nil) == 551)
        #expect(try WaveformResolution.span(seconds: nil, width: 1000).samplesPerPixel(sampleRate: 8000, frames: 123_456) == 123)
        #expect(throws: WaveformError.self) { try WaveformResolution.span(seconds: 0.0001, width: 1000).samplesPerPixel(sampleRate: 8000, frames: nil) }
        #expect(throws: WaveformError.self) { try WaveformResolution.span(seconds: -1, width: 10).validate() }
    }
}

/// audiowaveform's `--with-axis-labels`: a border, ticks every N seconds, time labels.
@Suite struct AxisLabelTests {
    static let border = RGBAColor(red: 255, green: 0, blue: 0)
    static let text = RGBAColor(red: 0, green: 0, blue: 255)

    /// 400 mono points of silence at 8000 Hz, 80 samples per pixel: 100 columns per second.
    static func silence() throws -> WaveformData {
        try WaveformData(channels: 1, sampleRate: 8000, samplesPerPixel: 80, bits: 16, data: [Int16](repeating: 0, count: 800))
    }

    static func picture(start: Double) throws -> WaveformPicture {
        var p = try WaveformPicture(width: 250, height: 60, background: .white)
        p.window = Int(start * 100)
        p.axisLabels = .init(border: border, text: text, startSeconds: start)
        return p
    }

    @Test func ticksFallOnWholeStepsFromTheStart() throws {
        // 100 columns per second: 1 s steps (the first step at least 60 columns apart).
        let at0 = try Self.picture(start: 0).axisTicks(sampleRate: 8000, samplesPerPixel: 80, startSeconds: 0)
        #expect(at0.map(\.x) == [0, 100, 200] && at0.map(\.seconds) == [0, 1, 2])
        // From 0.5 s the first tick is 1 s, 50 columns in.
        let atHalf = try Self.picture(start: 0.5).axisTicks(sampleRate: 8000, samplesPerPixel: 80, startSeconds: 0.5)
        #expect(atHalf.map(\.x) == [50, 150] && atHalf.map(\.seconds) == [1, 2])
        // 10 columns per second: 10 s steps (1, 2 and 5 s would be closer than 60 columns).
        let coarse = try Self.picture(start: 0).axisTicks(sampleRate: 8000, samplesPerPixel: 800, startSeconds: 0)
        #expect(coarse.map(\.seconds) == [0, 10, 20])
        #expect(WaveformPicture.timeLabel(75) == "01:15" && WaveformPicture.timeLabel(3725) == "01:02:05")
    }

    @Test func drawsTheBorderTicksAndLabelsInsideWhichTheLanesSit() throws {
        let p = try Self.picture(start: 0.5)
        #expect(p.lanes(channels: 1).map { [$0.top, $0.height] } == [[1, 58]])
        let png = try Inflater.png(p.png(try Self.silence()))
        func pixel(_ x: Int, _ y: Int) -> RGBAColor {
            let k = (y * 250 + x) * 4
            return RGBAColor(red: png.rgba[k], green: png.rgba[k + 1], blue: png.rgba[k + 2], alpha: png.rgba[k + 3])
        }
        #expect(pixel(0, 30) == Self.border && pixel(249, 30) == Self.border && pixel(120, 0) == Self.border && pixel(120, 59) == Self.border)
        #expect(pixel(50, 10) == Self.border && pixel(50, 49) == Self.border && pixel(50, 11) != Self.border)
        #expect(pixel(51, 10) != Self.border)
        // "00:01" centred on the tick, its glyphs 10 rows tall just above the bottom tick.
        let labelRows = (38..<48)
        #expect(labelRows.contains { y in (30..<72).contains { pixel($0, y) == Self.text } })
        #expect(!(0..<38).contains { y in (0..<250).contains { pixel($0, y) == Self.text } })
    }
}
