import SegnoDSP

/// A line graph per channel, for values that are not audio (a gyroscope's rad/s): one panel per
/// channel stacked top to bottom, each scaled to its own minimum and maximum, with the channel's
/// name, its range on the left and the time along the bottom, drawn with `PixelFont`.
///
/// Fed the raw Float32 stream (no int16 conversion, no clipping): each of the plot's columns keeps
/// the minimum and maximum of the frames it covers, so memory is constant in the stream's length.
public struct SeriesGraph: Sendable {
    public let width: Int
    public let height: Int
    let names: [String]
    let channels: Int
    let expectedFrames: Int
    let rate: Int
    let background: RGBAColor
    var lows: [Float]
    var highs: [Float]
    public private(set) var frames = 0

    static let palette = [RGBAColor(red: 0x33, green: 0x6E, blue: 0xC4), RGBAColor(red: 0xC6, green: 0x28, blue: 0x28),
                          RGBAColor(red: 0x1A, green: 0x7F, blue: 0x37), RGBAColor(red: 0xB2, green: 0x6A, blue: 0x00),
                          RGBAColor(red: 0x6A, green: 0x3D, blue: 0x9A), RGBAColor(red: 0x00, green: 0x83, blue: 0x8F)]
    static let left = 64, bottom = 18, top = 4, right = 8, scale = 2

    /// `expectedFrames` maps frames to columns (the stream may run a little longer: the last column
    /// takes the rest). Names beyond `channels` are ignored; missing ones are "channel N".
    public init(width: Int, height: Int, channels: Int, expectedFrames: Int, rate: Int, names: [String], background: RGBAColor = .white) {
        self.width = max(width, Self.left + Self.right + 16)
        self.height = max(height, Self.top + Self.bottom + 16 * channels)
        self.channels = channels
        self.expectedFrames = max(1, expectedFrames)
        self.rate = max(1, rate)
        self.names = (0..<channels).map { $0 < names.count && names.count == channels ? names[$0] : "channel \($0 + 1)" }
        self.background = background
        let plot = self.width - Self.left - Self.right
        lows = Array(repeating: .infinity, count: plot * channels)
        highs = Array(repeating: -.infinity, count: plot * channels)
    }

    var plotWidth: Int { width - Self.left - Self.right }

    /// Takes a block of the stream (interleaved, `channels` wide).
    public mutating func process(_ block: AudioBlock) {
        let w = plotWidth
        for f in 0..<block.frames {
            let col = min(w - 1, (frames + f) * w / expectedFrames)
            for c in 0..<channels {
                let v = block.samples[f * block.channels + c]
                let i = c * w + col
                if v < lows[i] { lows[i] = v }
                if v > highs[i] { highs[i] = v }
            }
        }
        frames += block.frames
    }

    /// The picture as PNG.
    public func png() -> [UInt8] {
        var px = [UInt8](repeating: 0, count: width * height * 4)
        func plot(_ x: Int, _ y: Int, _ c: RGBAColor) {
            guard x >= 0, y >= 0, x < width, y < height else { return }
            let i = (y * width + x) * 4
            px[i] = c.red; px[i + 1] = c.green; px[i + 2] = c.blue; px[i + 3] = c.alpha
        }
        for y in 0..<height { for x in 0..<width { plot(x, y, background) } }
        let ink = RGBAColor(red: 0x44, green: 0x4B, blue: 0x55)
        let grid = RGBAColor(red: 0xD8, green: 0xDC, blue: 0xE2)
        let w = plotWidth
        let panel = (height - Self.top - Self.bottom) / channels
        for c in 0..<channels {
            let y0 = Self.top + c * panel, y1 = y0 + panel - 3
            let colour = Self.palette[c % Self.palette.count]
            var lo = Float.infinity, hi = -Float.infinity
            for i in 0..<w where lows[c * w + i] <= highs[c * w + i] { lo = min(lo, lows[c * w + i]); hi = max(hi, highs[c * w + i]) }
            if !lo.isFinite { lo = -1; hi = 1 }
            if hi - lo < 1e-9 { lo -= 1; hi += 1 }
            func row(_ v: Float) -> Int { y1 - Int(((v - lo) / (hi - lo) * Float(y1 - y0 - 1)).rounded()) - 1 }
            // Frame, zero line.
            for x in Self.left..<(Self.left + w) { plot(x, y0, grid); plot(x, y1, grid) }
            for y in y0...y1 { plot(Self.left - 1, y, ink); plot(Self.left + w, y, grid) }
            if lo < 0 && hi > 0 { let z = row(0); for x in stride(from: Self.left, to: Self.left + w, by: 2) { plot(x, z, grid) } }
            // The line: each column from its min to its max, joined to the previous column.
            var previous: (Int, Int)?
            for i in 0..<w where lows[c * w + i] <= highs[c * w + i] {
                var a = row(highs[c * w + i]), b = row(lows[c * w + i])
                if let (pa, pb) = previous { a = min(a, pb); b = max(b, pa) }
                for y in a...max(a, b) { plot(Self.left + i, y, colour) }
                previous = (row(highs[c * w + i]), row(lows[c * w + i]))
            }
            // Labels: the name inside the panel, the range on the left.
            PixelFont.draw(names[c], x: Self.left + 4, y: y0 + 3, scale: Self.scale) { plot($0, $1, colour) }
            for (text, y) in [(Self.number(Double(hi)), y0 + 1), (Self.number(Double(lo)), y1 - PixelFont.height * Self.scale)] {
                PixelFont.draw(text, x: Self.left - 4 - PixelFont.measure(text, scale: Self.scale), y: y, scale: Self.scale) { plot($0, $1, ink) }
            }
        }
        // Time along the bottom: start, middle, end.
        let seconds = Double(frames) / Double(rate)
        let base = Self.top + channels * panel + 2
        for (f, align) in [(0.0, 0), (0.5, 1), (1.0, 2)] {
            let text = Self.number(seconds * f) + " s"
            let x = Self.left + Int(Double(w - 1) * f) - [0, PixelFont.measure(text, scale: Self.scale) / 2, PixelFont.measure(text, scale: Self.scale)][align]
            for y in (base - 2)..<(base + 1) { plot(Self.left + Int(Double(w - 1) * f), y, ink) }
            PixelFont.draw(text, x: x, y: base + 2, scale: Self.scale) { plot($0, $1, ink) }
        }
        return PNGEncoder.encodeRGBA(px, width: width, height: height)
    }

    /// A short label: up to 4 significant digits, no exponent for everyday values.
    static func number(_ v: Double) -> String {
        if v == 0 { return "0" }
        let a = abs(v)
        let places = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3
        var p = 1.0
        for _ in 0..<places { p *= 10 }
        let r = (v * p).rounded() / p
        var s = places == 0 ? String(Int(r)) : "\(r)"
        if s.contains("e") { s = String(Int(r)) }
        if s.contains(".") { while s.hasSuffix("0") { s.removeLast() }; if s.hasSuffix(".") { s.removeLast() } }
        return s == "-0" ? "0" : s
    }
}
