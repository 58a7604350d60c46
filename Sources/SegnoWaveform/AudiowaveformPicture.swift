/// audiowaveform 1.10.3's picture, pixel for pixel (`WaveformPicture.drawsAsAudiowaveform`):
/// its integer arithmetic for lanes, rows, bars and ticks, and the 6 × 13 font its labels use.
/// Drawn by segno itself: libgd, which audiowaveform draws with, is not linked (Debian's build
/// pulls libx265, GPL, into the process; see the README's design notes).
extension WaveformPicture {
    /// A value in 16-bit units (8-bit data is × 256, as audiowaveform reads it) scaled by
    /// `factor`, clamped to Int16 and truncated toward zero.
    static func scaled16(_ v: Int, bits: Int, factor: Double) -> Int {
        let r = Swift.min(Swift.max(Double(bits == 8 ? v * 256 : v) * factor, -32768), 32767)
        return Int(r)
    }

    /// audiowaveform's `auto` factor over points `range`: |min(32767 / max, 32767 / min)| of the
    /// largest and smallest 16-bit values of every channel (1 for a side that is 0).
    static func autoFactor(_ data: WaveformData, _ range: Range<Int>) -> Double {
        var low = Int.max, high = Int.min
        for i in range {
            for c in 0..<data.channels {
                let m = Int(data.min(channel: c, at: i)) * (data.bits == 8 ? 256 : 1)
                let x = Int(data.max(channel: c, at: i)) * (data.bits == 8 ? 256 : 1)
                low = Swift.min(low, m); high = Swift.max(high, x)
            }
        }
        guard !range.isEmpty else { return 1 }
        let h = high == 0 ? 1.0 : 32767.0 / Double(high)
        let l = low == 0 ? 1.0 : 32767.0 / Double(low)
        return abs(Swift.min(h, l))
    }

    /// RGBA pixels of `data` from point `start`, one point per column.
    func audiowaveformPixels(_ data: WaveformData, start: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: width * height * 4)
        func put(_ x: Int, _ y: Int, _ c: RGBAColor) {
            guard x >= 0, x < width, y >= 0, y < height else { return }
            let k = (y * width + x) * 4
            out[k] = c.red; out[k + 1] = c.green; out[k + 2] = c.blue; out[k + 3] = c.alpha
        }
        func fill(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int, _ c: RGBAColor) {
            for y in Swift.min(y0, y1)...Swift.max(y0, y1) { for x in Swift.min(x0, x1)...Swift.max(x0, x1) { put(x, y, c) } }
        }
        fill(0, 0, width - 1, height - 1, background)
        let length = data.length
        let labelled = axisLabels != nil
        let topY = labelled ? 1 : 0, bottomY = labelled ? height - 2 : height - 1
        let factor = autoAmplitude ? Self.autoFactor(data, Swift.min(start, length)..<Swift.min(start + width, length)) : amplitudeScale
        var available = bottomY - topY + 1
        let rowHeight = available / data.channels
        var laneTop = topY
        for c in 0..<data.channels {
            let colour = laneColors.isEmpty ? waveform : laneColors[c % laneColors.count]
            let laneBottom = c == data.channels - 1 ? laneTop + available - 1 : laneTop + rowHeight
            let h = laneBottom - laneTop + 1
            func row(_ v16: Int) -> Int { laneTop + h - 1 - (v16 + 32768) * h / 65536 }
            if let style = barStyle {
                let total = style.width + style.gap
                var i = start / total * total, x = i - start
                while x < width {
                    var peak = 0
                    if i < length {
                        var low = Int.max, high = Int.min
                        for j in i..<Swift.min(i + total, length) {
                            low = Swift.min(low, Int(data.min(channel: c, at: j)) * (data.bits == 8 ? 256 : 1))
                            high = Swift.max(high, Int(data.max(channel: c, at: j)) * (data.bits == 8 ? 256 : 1))
                        }
                        peak = Swift.min(Swift.max(abs(low), abs(high)), 32767)
                    }
                    let top = row(Self.scaled16(peak, bits: 16, factor: factor))
                    let bottom = row(Self.scaled16(-peak, bits: 16, factor: factor))
                    if top != bottom {
                        let r = style.radius(laneHeight: h)
                        for dx in 0..<style.width {
                            let cut = Swift.min(style.cut(column: dx, radius: r), (bottom - top) / 2)
                            fill(x + dx, top + cut, x + dx, bottom - cut, colour)
                        }
                    }
                    i += total; x += total
                }
            } else {
                var x = 0, i = start
                while x < width && i < length {
                    let top = row(Self.scaled16(Int(data.max(channel: c, at: i)), bits: data.bits, factor: factor))
                    let bottom = row(Self.scaled16(Int(data.min(channel: c, at: i)), bits: data.bits, factor: factor))
                    fill(x, top, x, bottom, colour)
                    x += 1; i += 1
                }
            }
            available -= rowHeight + 1
            laneTop += rowHeight + 1
        }
        if let labels = axisLabels {
            fill(0, 0, width - 1, 0, labels.border); fill(0, height - 1, width - 1, height - 1, labels.border)
            fill(0, 0, 0, height - 1, labels.border); fill(width - 1, 0, width - 1, height - 1, labels.border)
            for (x, secs) in audiowaveformTicks(sampleRate: data.sampleRate, samplesPerPixel: data.samplesPerPixel,
                                                 startSeconds: labels.startSeconds) {
                fill(x, 0, x, 10, labels.border)
                fill(x, height - 1, x, height - 11, labels.border)
                let text = Array(Self.timeLabel(secs).utf8)
                let left = x - text.count * GDSmallFont.width / 2 + 1
                let top = height - 1 - 10 - 1 - GDSmallFont.height
                guard left >= 0 else { continue }
                for (k, ch) in text.enumerated() {
                    guard let glyph = GDSmallFont.glyph(ch) else { continue }
                    for (dy, bits) in glyph.enumerated() {
                        for dx in 0..<GDSmallFont.width where bits & (1 << (GDSmallFont.width - 1 - dx)) != 0 {
                            put(left + k * GDSmallFont.width + dx, top + dy, labels.text)
                        }
                    }
                }
            }
        }
        return out
    }

    /// audiowaveform's ticks: the step is the first of 1, 2, 5, 10, 20, 30 s (then minutes, hours)
    /// at least 60 columns apart (columns = ⌊s · rate / spp⌋); the first tick is at the start
    /// rounded up to a whole step, `⌊⌊(first − start) · rate⌋ / spp⌋` columns in.
    func audiowaveformTicks(sampleRate: Int, samplesPerPixel: Int, startSeconds: Double) -> [(x: Int, seconds: Int)] {
        let steps = [1, 2, 5, 10, 20, 30]
        var base = 1, index = 0, step = 1
        while true {
            step = base * steps[index]
            if Int(Double(step) * Double(sampleRate) / Double(samplesPerPixel)) >= 60 || base > 1 << 40 { break }
            index += 1
            if index == steps.count { base *= 60; index = 0 }
        }
        let first = (Int(startSeconds.rounded(.up)) + step - 1) / step * step
        let offset = Int(Double(sampleRate) * (Double(first) - startSeconds)) / samplesPerPixel
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
}

/// The digits and colon of the X11 misc-fixed 6 × 13 semicondensed font (public domain), the
/// font audiowaveform's time labels are drawn in: 13 rows per glyph, bit 5 is the left column.
enum GDSmallFont {
    static let width = 6
    static let height = 13
    static func glyph(_ ch: UInt8) -> [UInt8]? {
        switch ch {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digits[Int(ch - UInt8(ascii: "0"))]
        case UInt8(ascii: ":"): return [0, 0, 0, 0, 0, 0x0C, 0x0C, 0, 0, 0x0C, 0x0C, 0, 0]
        default: return nil
        }
    }
    static let digits: [[UInt8]] = [
        [0, 0, 0, 0x08, 0x14, 0x22, 0x22, 0x22, 0x22, 0x14, 0x08, 0, 0],
        [0, 0, 0, 0x08, 0x18, 0x28, 0x08, 0x08, 0x08, 0x08, 0x3E, 0, 0],
        [0, 0, 0, 0x1C, 0x22, 0x02, 0x04, 0x08, 0x10, 0x20, 0x3E, 0, 0],
        [0, 0, 0, 0x1C, 0x22, 0x02, 0x0C, 0x02, 0x02, 0x22, 0x1C, 0, 0],
        [0, 0, 0, 0x04, 0x0C, 0x14, 0x24, 0x24, 0x3E, 0x04, 0x04, 0, 0],
        [0, 0, 0, 0x3E, 0x20, 0x3C, 0x22, 0x02, 0x02, 0x22, 0x1C, 0, 0],
        [0, 0, 0, 0x0E, 0x10, 0x20, 0x3C, 0x22, 0x22, 0x22, 0x1C, 0, 0],
        [0, 0, 0, 0x3E, 0x02, 0x04, 0x04, 0x08, 0x08, 0x10, 0x10, 0, 0],
        [0, 0, 0, 0x1C, 0x22, 0x22, 0x1C, 0x22, 0x22, 0x22, 0x1C, 0, 0],
        [0, 0, 0, 0x1C, 0x22, 0x22, 0x22, 0x1E, 0x02, 0x04, 0x38, 0, 0],
    ]
}
