/// A colour with 8-bit red, green, blue and alpha (255 = opaque).
public struct RGBAColor: Sendable, Hashable, CustomStringConvertible {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8
    public var alpha: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        self.red = red
        self.green = green
        self.blue = blue
        self.alpha = alpha
    }

    /// Parses `#rrggbb` or `#rrggbbaa` (the `#` is optional, letters in either case).
    public init(hex text: String) throws(WaveformError) {
        var digits = Substring(text)
        if digits.hasPrefix("#") { digits = digits.dropFirst() }
        guard digits.count == 6 || digits.count == 8,
              digits.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }),
              let v = UInt32(digits, radix: 16)
        else { throw .invalidColor(text) }
        let rgba = digits.count == 6 ? v << 8 | 0xFF : v
        self.init(red: UInt8(rgba >> 24), green: UInt8(rgba >> 16 & 0xFF), blue: UInt8(rgba >> 8 & 0xFF),
                  alpha: UInt8(rgba & 0xFF))
    }

    /// `#rrggbb`, or `#rrggbbaa` when not opaque.
    public var description: String {
        func hex2(_ b: UInt8) -> String { (b < 16 ? "0" : "") + String(b, radix: 16) }
        return "#" + hex2(red) + hex2(green) + hex2(blue) + (alpha == 255 ? "" : hex2(alpha))
    }

    /// `#rrggbb` without alpha (for SVG `fill`, whose opacity goes in its own attribute).
    var rgbHex: String { RGBAColor(red: red, green: green, blue: blue).description }

    public static let white = RGBAColor(red: 255, green: 255, blue: 255)
    public static let transparent = RGBAColor(red: 0, green: 0, blue: 0, alpha: 0)
}

/// How a waveform is drawn: size in pixels, colours and vertical scale. Draws PNG (`png(_:)`)
/// and SVG (`svg(_:)`) pictures of the same shape.
///
/// The picture spans the whole data: column x (of `width`) shows the points
/// [⌊x·L/W⌋, ⌊(x+1)·L/W⌋) (the point ⌊x·L/W⌋ when there are fewer points than columns) as one
/// vertical bar from the largest max to the smallest min. Split channels get one lane each,
/// stacked top to bottom. Silence draws a one-pixel line in the middle of the lane.
public struct WaveformPicture: Sendable, Hashable {
    /// Picture width in pixels.
    public let width: Int
    /// Picture height in pixels.
    public let height: Int
    /// Background; `RGBAColor.transparent` for none.
    public let background: RGBAColor
    /// Colour of the waveform bars.
    public let waveform: RGBAColor
    /// Colour of a one-pixel line along the middle of each lane, drawn under the waveform; nil for none.
    public let axis: RGBAColor?
    /// Vertical gain: 1 puts full scale at the lane's edges; 2 doubles bar heights (clipped).
    public let amplitudeScale: Double

    /// audiowaveform's layout instead of the whole data fitted to the width: column x shows point
    /// `start + x` only (one point per column, audiowaveform's `--start` as a point index), and
    /// columns past the data's end stay background. PNG only; nil fits the whole data (and SVG
    /// always fits).
    public var window: Int?
    /// One colour per lane (audiowaveform's `--waveform-color a,b,…`, reused in turn); empty
    /// means `waveform` for every lane.
    public var laneColors: [RGBAColor] = []
    /// audiowaveform's `--waveform-style bars` (PNG only): nil draws one bar per column.
    public var barStyle: BarStyle?
    /// audiowaveform's `--amplitude-scale auto`: the factor of `WaveformData.autoAmplitudeScale`
    /// over the points shown, instead of `amplitudeScale`.
    public var autoAmplitude = false

    /// audiowaveform's `--with-axis-labels` (PNG with a `window`): a one-pixel border, the lanes
    /// inside it, and every N seconds (1, 2, 5, 10, 20, 30 s, then minutes…, the first step at
    /// least 60 columns apart) a 10-pixel tick at the top and bottom with the time (`mm:ss`, or
    /// `hh:mm:ss` from an hour) above the bottom tick. Nil draws none.
    public var axisLabels: AxisLabels?
    /// With a `window`: draw as audiowaveform 1.10.3 does, pixel for pixel (its integer row
    /// arithmetic, lanes, ticks and 6 × 13 label font; `AudiowaveformPicture.swift`) instead of
    /// segno's own rounding and font. Set by the audiowaveform form of `segno waveform`.
    public var drawsAsAudiowaveform = false

    /// Colours of the border and ticks, and of the time labels, and the time of column 0.
    public struct AxisLabels: Sendable, Hashable {
        public var border: RGBAColor
        public var text: RGBAColor
        /// Seconds at the picture's first column (audiowaveform's `--start`).
        public var startSeconds: Double
        public init(border: RGBAColor, text: RGBAColor, startSeconds: Double) {
            self.border = border
            self.text = text
            self.startSeconds = startSeconds
        }
    }

    /// Bars `width` columns wide with `gap` empty columns between them. Bar k starts at the point
    /// index that is a multiple of width + gap, and is as tall as the largest |value| over its
    /// width + gap points, drawn symmetric about the lane's middle (audiowaveform's square bars).
    /// `rounded` (bars wider than 2 pixels in lanes of 3 rows or more) cuts each corner to a
    /// quarter circle of radius width / 4 (width / 2 up to 4 pixels), as audiowaveform's
    /// `--bar-style rounded`.
    public struct BarStyle: Sendable, Hashable {
        public let width: Int
        public let gap: Int
        public let rounded: Bool
        /// Checks width ≥ 1 and gap ≥ 0.
        public init(width: Int, gap: Int, rounded: Bool = false) throws(WaveformError) {
            guard width >= 1 else { throw .invalidSize("bar width", width) }
            guard gap >= 0 else { throw .invalidSize("bar gap", gap) }
            self.width = width
            self.gap = gap
            self.rounded = rounded
        }

        /// Radius of the rounded corners, 0 when square.
        func radius(laneHeight: Int) -> Int {
            guard rounded, width > 2, laneHeight >= 3 else { return 0 }
            return width > 4 ? width / 4 : width / 2
        }

        /// Rows a rounded corner takes off the end of the column `dx` pixels into a bar: the rows
        /// of the corner's r × r square outside its quarter circle.
        func cut(column dx: Int, radius r: Int) -> Int {
            guard r > 0 else { return 0 }
            let cx = dx < r ? r - dx : (dx > width - 1 - r ? dx - (width - 1 - r) : 0)
            guard cx > 0 else { return 0 }
            var k = 0
            while k < r && (r - k) * (r - k) + cx * cx > r * r { k += 1 }
            return k
        }
    }

    public static let defaultWaveform = RGBAColor(red: 0x33, green: 0x6E, blue: 0xC4)

    /// Checks the sizes (width 1…16384, height 1…4096 pixels) and the scale (finite, > 0).
    /// A picture's size when none is given, in pixels.
    public static let standardWidth = 1000
    public static let standardHeight = 200

    public init(width: Int = WaveformPicture.standardWidth, height: Int = WaveformPicture.standardHeight, background: RGBAColor = .white,
                waveform: RGBAColor = WaveformPicture.defaultWaveform, axis: RGBAColor? = nil,
                amplitudeScale: Double = 1) throws(WaveformError) {
        guard (1...16384).contains(width) else { throw .invalidSize("width", width) }
        guard (1...4096).contains(height) else { throw .invalidSize("height", height) }
        guard amplitudeScale.isFinite, amplitudeScale > 0 else { throw .invalidSize("amplitude scale", 0) }
        self.width = width
        self.height = height
        self.background = background
        self.waveform = waveform
        self.axis = axis
        self.amplitudeScale = amplitudeScale
    }

    /// One lane of the picture: rows `top..<top+height`.
    struct Lane { let top: Int; let height: Int }

    /// The lanes for `channels` channels; the last lane takes the rows left over.
    /// With `axisLabels` (and a `window`) the lanes share the rows inside the border.
    func lanes(channels: Int) -> [Lane] {
        let inset = axisLabels != nil && window != nil && height > 2 ? 1 : 0
        let rows = height - 2 * inset
        let n = Swift.max(1, Swift.min(channels, rows))
        return (0..<n).map { k in
            let top = k * rows / n
            return Lane(top: inset + top, height: (k + 1) * rows / n - top)
        }
    }

    /// The ticks of `axisLabels` for data at `sampleRate` and `samplesPerPixel`: (column, seconds).
    func axisTicks(sampleRate: Int, samplesPerPixel: Int, startSeconds: Double) -> [(x: Int, seconds: Int)] {
        let perSecond = Double(sampleRate) / Double(samplesPerPixel)  // columns per second
        var base = 1, index = 0, step = 1
        let steps = [1, 2, 5, 10, 20, 30]
        while true {
            step = base * steps[index]
            if Int(Double(step) * perSecond) >= 60 || base > 1 << 40 { break }
            index += 1
            if index == steps.count { base *= 60; index = 0 }
        }
        let first = (Int(startSeconds.rounded(.up)) + step - 1) / step * step
        let offset = Int((Double(first) - startSeconds) * Double(sampleRate)) / samplesPerPixel
        var ticks: [(Int, Int)] = []
        var secs = first
        while true {
            let x = offset + (secs - first) * sampleRate / samplesPerPixel
            if x >= width { break }
            ticks.append((x, secs))
            secs += step
        }
        return ticks
    }

    /// `mm:ss`, or `hh:mm:ss` from an hour (audiowaveform's labels).
    static func timeLabel(_ seconds: Int) -> String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : String(n) }
        let h = seconds / 3600, m = seconds / 60 % 60, s = seconds % 60
        return h > 0 ? "\(two(h)):\(two(m)):\(two(s))" : "\(two(m)):\(two(s))"
    }

    /// For each lane and column, the bar's first and last row (inclusive, picture coordinates),
    /// or nil when the data has no points. Rows grow downward; the max is the upper end.
    /// With a `window`, a column with no point (past the data's end, or in a gap between
    /// `barStyle` bars) has top > bottom: nothing is drawn there.
    func bars(_ data: WaveformData) -> [[(top: Int, bottom: Int)]]? {
        let length = data.length
        guard length > 0 else { return nil }
        let fullScale = data.bits == 8 ? 128.0 : 32768.0
        let shown = window.map { $0..<($0 + width) } ?? 0..<length
        let scale = autoAmplitude ? data.autoAmplitudeScale(points: shown) : amplitudeScale
        let channelLanes = lanes(channels: data.channels)
        return channelLanes.enumerated().map { c, lane in
            func row(_ v: Int) -> Int {
                let a = Double(v) / fullScale * scale  // +1 top … −1 bottom
                let r = ((1 - a) * Double(lane.height - 1) / 2).rounded()
                return lane.top + Int(Swift.min(Swift.max(r, 0), Double(lane.height - 1)))
            }
            let none = (top: lane.top + 1, bottom: lane.top)
            guard let start = window else {
                return (0..<width).map { x in
                    let first = x * length / width
                    let end = Swift.max(first + 1, (x + 1) * length / width)
                    var lo = Int16.max, hi = Int16.min
                    for i in first..<end {
                        lo = Swift.min(lo, data.min(channel: c, at: i))
                        hi = Swift.max(hi, data.max(channel: c, at: i))
                    }
                    return (row(Int(hi)), row(Int(lo)))
                }
            }
            guard let style = barStyle else {
                return (0..<width).map { x in
                    let i = start + x
                    guard i < length else { return none }
                    return (row(Int(data.max(channel: c, at: i))), row(Int(data.min(channel: c, at: i))))
                }
            }
            var columns = Array(repeating: none, count: width)
            let step = style.width + style.gap
            var first = start / step * step  // bars sit on multiples of width + gap
            while first - start < width && first < length {
                var peak = 0
                for i in first..<Swift.min(first + step, length) {
                    peak = Swift.max(peak, abs(Int(data.min(channel: c, at: i))), abs(Int(data.max(channel: c, at: i))))
                }
                peak = Swift.min(peak, Int(fullScale) - 1)
                let span = (row(peak), row(-peak))
                let r = style.radius(laneHeight: lane.height)
                if peak > 0 && span.0 != span.1 {  // audiowaveform draws no bar of zero height
                    for x in Swift.max(0, first - start)..<Swift.min(width, first - start + style.width) {
                        let cut = Swift.min(style.cut(column: x - (first - start), radius: r), (span.1 - span.0) / 2)
                        columns[x] = (span.0 + cut, span.1 - cut)
                    }
                }
                first += step
            }
            return columns
        }
    }

    /// The middle row of each lane (where the axis goes and where silence is drawn).
    func axisRows(channels: Int) -> [Int] {
        lanes(channels: channels).map { $0.top + ($0.height - 1) / 2 }
    }

    /// RGBA pixels, row after row, 4 bytes each.
    func pixels(_ data: WaveformData) -> [UInt8] {
        if drawsAsAudiowaveform, let start = window, data.length > 0 { return audiowaveformPixels(data, start: start) }
        let bg = [background.red, background.green, background.blue, background.alpha]
        var out = [UInt8](repeating: 0, count: width * height * 4)
        for k in stride(from: 0, to: out.count, by: 4) {
            out[k] = bg[0]; out[k + 1] = bg[1]; out[k + 2] = bg[2]; out[k + 3] = bg[3]
        }
        func put(_ x: Int, _ y: Int, _ c: RGBAColor) {
            let k = (y * width + x) * 4
            out[k] = c.red; out[k + 1] = c.green; out[k + 2] = c.blue; out[k + 3] = c.alpha
        }
        if let axis {
            for y in axisRows(channels: data.channels) {
                for x in 0..<width { put(x, y, axis) }
            }
        }
        if let bars = bars(data) {
            for (c, lane) in bars.enumerated() {
                let colour = laneColors.isEmpty ? waveform : laneColors[c % laneColors.count]
                for (x, bar) in lane.enumerated() where bar.top <= bar.bottom {
                    for y in bar.top...bar.bottom { put(x, y, colour) }
                }
            }
        }
        if let labels = axisLabels, window != nil {
            for x in 0..<width { put(x, 0, labels.border); put(x, height - 1, labels.border) }
            for y in 0..<height { put(0, y, labels.border); put(width - 1, y, labels.border) }
            let tick = 10, scale = 2
            for (x, secs) in axisTicks(sampleRate: data.sampleRate, samplesPerPixel: data.samplesPerPixel,
                                        startSeconds: labels.startSeconds) {
                for y in 0...Swift.min(tick, height - 1) { put(x, y, labels.border); put(x, height - 1 - y, labels.border) }
                let text = Self.timeLabel(secs)
                let left = x - PixelFont.measure(text, scale: scale) / 2 + 1
                let top = height - 1 - tick - 1 - PixelFont.height * scale
                guard left >= 0 else { continue }
                PixelFont.draw(text, x: left, y: top, scale: scale) { px, py in
                    if px >= 0 && px < width && py >= 0 && py < height { put(px, py, labels.text) }
                }
            }
        }
        return out
    }

    /// A PNG picture of `data` (8-bit RGBA, zlib-compressed).
    public func png(_ data: WaveformData) -> [UInt8] {
        PNGEncoder.encodeRGBA(pixels(data), width: width, height: height)
    }

    /// An SVG picture of `data`: a background rectangle and, per lane, one filled outline that
    /// covers the same pixels as the PNG's bars. Always the whole data fitted to the width
    /// (`window` and `barStyle` are for PNG).
    public func svg(_ data: WaveformData) -> String {
        var fitted = self
        fitted.window = nil
        fitted.barStyle = nil
        fitted.axisLabels = nil
        return fitted.svgFitted(data)
    }

    private func svgFitted(_ data: WaveformData) -> String {
        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\""
        s += " viewBox=\"0 0 \(width) \(height)\">\n"
        if background.alpha > 0 {
            s += "<rect width=\"\(width)\" height=\"\(height)\"\(Self.fill(background))/>\n"
        }
        if let axis, axis.alpha > 0 {
            for y in axisRows(channels: data.channels) {
                s += "<rect y=\"\(y)\" width=\"\(width)\" height=\"1\"\(Self.fill(axis))/>\n"
            }
        }
        if let bars = bars(data) {
            for (c, lane) in bars.enumerated() {
                let colour = laneColors.isEmpty ? waveform : laneColors[c % laneColors.count]
                if colour.alpha > 0 { s += "<path\(Self.fill(colour)) d=\"\(Self.outline(lane))\"/>\n" }
            }
        }
        s += "</svg>\n"
        return s
    }

    private static func fill(_ c: RGBAColor) -> String {
        var s = " fill=\"\(c.rgbHex)\""
        if c.alpha < 255 {
            let opacity = (Double(c.alpha) / 255 * 1000).rounded() / 1000
            s += " fill-opacity=\"\(opacity)\""
        }
        return s
    }

    /// The outline of a row of bars: along the tops left to right, back along the bottoms.
    /// Bar x covers [x, x+1) × [top, bottom+1). Only corners are written.
    private static func outline(_ bars: [(top: Int, bottom: Int)]) -> String {
        let n = bars.count
        var d = "M0 \(bars[0].top)"
        for x in 1..<Swift.max(1, n) where bars[x].top != bars[x - 1].top {
            d += "H\(x)V\(bars[x].top)"
        }
        d += "H\(n)V\(bars[n - 1].bottom + 1)"
        for x in stride(from: n - 2, through: 0, by: -1) where bars[x].bottom != bars[x + 1].bottom {
            d += "H\(x + 1)V\(bars[x].bottom + 1)"
        }
        return d + "H0Z"
    }
}
