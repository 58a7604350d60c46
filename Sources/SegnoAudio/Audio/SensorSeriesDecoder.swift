import Foundation
import SegnoCore
import SegnoDSP

/// A sensor series as a multichannel stream: CSV (`t,x,y,z` with a header line) or JSON lines
/// (`{"t":0.01,"x":…}` per line) from a phone's gyroscope or accelerometer at 50–200 Hz.
///
/// The time column is the one named `t`, `time`, `timestamp`, `seconds` or `ts` (else the first
/// column), in seconds (`…_ms`/`ms` in milliseconds); every other column is a channel, named in
/// `SourceInfo.tags["channels"]` ("x,y,z"). The rate is the reciprocal of the median interval of
/// the first 1000 rows, rounded to whole Hz; rows are resampled onto that uniform grid by linear
/// interpolation, so irregular timestamps are fine, and gaps (intervals over twice the period) are
/// reported in `tags["gaps"]`. Values are kept as the sensor gives them (not normalised).
///
/// Opening reads the file once to check every row (a bad row fails the file: "line 812: 'x' is not
/// a number") and to learn the length and gaps; reading streams it again. Memory is constant in
/// the file's length.
public final class SensorSeriesDecoder: AudioDecoder {
    /// Extensions taken as sensor series, when the content is text.
    public static let extensions: Set<String> = ["csv", "jsonl", "ndjson"]
    /// Most channels a series may have.
    static package let maxChannels = 64

    public let info: SourceInfo
    /// Channel names, in order.
    public let channelNames: [String]
    /// Every column's name, the time column included.
    package let header: [String]
    package let path: String
    package let json: Bool
    package let timeIndex: Int
    package let timeScale: Double
    package let rate: Double
    package let firstTime: Double
    package let reader: LineReader
    /// The two rows around the next grid point: time and values.
    package var previous: (t: Double, v: [Double])?
    package var next: (t: Double, v: [Double])?
    package var gridIndex = 0
    package var lineNumber = 0
    package var ended = false

    public init(path: String) throws {
        self.path = path
        json = ["jsonl", "ndjson"].contains((path as NSString).pathExtension.lowercased())
        let scan = try LineReader(path: path)
        // Header: the CSV's first line, or the first JSON object's keys.
        guard let first = try scan.nextLine() else { throw AudioError.empty(path: path) }
        var names: [String]
        if json {
            names = try Self.jsonFields(first, line: 1, path: path).map(\.0)
        } else {
            names = first.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        }
        guard names.count >= 2 else {
            throw AudioError.unrecognised(path: path, looksLike: nil, detail: "a sensor series needs a time column and at least one value column (line 1: \(names.joined(separator: ",")))")
        }
        let timeNames = ["t", "time", "timestamp", "seconds", "ts", "time_s", "t_ms", "time_ms", "ms", "timestamp_ms"]
        timeIndex = names.firstIndex { timeNames.contains($0.lowercased()) } ?? 0
        let timeName = names[timeIndex].lowercased()
        timeScale = timeName == "ms" || timeName.hasSuffix("_ms") ? 0.001 : 1
        var channels = names
        channels.remove(at: timeIndex)
        guard channels.count <= Self.maxChannels else {
            throw AudioError.unrecognised(path: path, looksLike: nil, detail: "\(channels.count) value columns; at most \(Self.maxChannels)")
        }
        channelNames = channels
        header = names
        // Check every row; learn the first and last time, the rate and the gaps.
        var line = json ? 0 : 1
        var times: (first: Double, last: Double)?
        var intervals: [Double] = []
        var count = 0
        var rows: [(Double, [Double])] = []
        if json { rows.append(try Self.parse(first, line: 1, json: true, header: names, timeIndex: timeIndex, timeScale: timeScale, path: path)); line = 1 }
        var gapsFound: [(at: Double, seconds: Double)] = []
        var previousTime: Double?
        func take(_ t: Double, _ n: Int) throws {
            if let p = previousTime {
                guard t > p else { throw AudioError.decodeFailed(path: path, detail: "line \(n): time \(t) does not follow \(p) (times must increase)") }
                if intervals.count < 1000 { intervals.append(t - p) }
            }
            previousTime = t
            times = (times?.first ?? t, t)
            count += 1
        }
        for r in rows { try take(r.0, 1) }
        var gapCandidates: [(Double, Double)] = []
        var shortest = Double.infinity
        while let text = try scan.nextLine() {
            line += 1
            if text.allSatisfy({ $0 == " " || $0 == "\r" }) { continue }
            let (t, _) = try Self.parse(text, line: line, json: json, header: names, timeIndex: timeIndex, timeScale: timeScale, path: path)
            if let p = previousTime, t > p {
                shortest = min(shortest, t - p)
                if t - p > 2 * shortest && gapCandidates.count < 4096 { gapCandidates.append((p, t - p)) }
            }
            try take(t, line)
        }
        scan.close()
        guard let span = times, count >= 2 else { throw AudioError.truncated(path: path, detail: "a sensor series needs at least two rows") }
        let sorted = intervals.sorted()
        let median = sorted[sorted.count / 2]
        rate = max(1, (1 / median).rounded())
        let period = 1 / rate
        // Gaps: intervals over twice the period (candidates kept bounded; the longest matter).
        for (at, seconds) in gapCandidates where seconds > 2 * period { gapsFound.append((at - span.first, seconds)) }
        firstTime = span.first
        let frames = Int(((span.last - span.first) * rate).rounded(.down)) + 1
        var tags = ["channels": channels.joined(separator: ","), "time_column": names[timeIndex], "rate_from": "time column"]
        if !gapsFound.isEmpty {
            tags["gaps"] = gapsFound.prefix(20).map { String(format: "%.3f s at %.3f s", $0.seconds, $0.at) }.joined(separator: "; ")
                + (gapsFound.count > 20 ? "; …" : "")
            tags["gap_count"] = String(gapsFound.count)
        }
        info = SourceInfo(container: json ? "JSON lines" : "CSV", codec: "sensor series", sampleRate: Int(rate), channels: channels.count,
                          frames: frames, sampleKind: .float, tags: tags)
        reader = try LineReader(path: path)
        if !json { _ = try reader.nextLine(); lineNumber = 1 }
    }

    /// Interpolated frames on the grid t₀ + k / rate.
    public func read(into block: inout AudioBlock, maxFrames: Int) throws -> Int {
        let channels = info.channels
        if block.samples.count < maxFrames * channels { block.samples = [Float](repeating: 0, count: maxFrames * channels) }
        block.channels = channels
        var n = 0
        while n < maxFrames && gridIndex < info.frames {
            let g = firstTime + Double(gridIndex) / rate
            // Advance until next.t >= g.
            while next == nil || next!.t < g {
                guard let row = try nextRow() else { break }
                previous = next
                next = row
            }
            guard let b = next else { break }
            let a = previous ?? b
            let f = b.t > a.t ? min(1, max(0, (g - a.t) / (b.t - a.t))) : 1
            for c in 0..<channels { block.samples[n * channels + c] = Float(a.v[c] + (b.v[c] - a.v[c]) * f) }
            n += 1
            gridIndex += 1
        }
        block.frames = n
        return n
    }

    package func nextRow() throws -> (t: Double, v: [Double])? {
        while let text = try reader.nextLine() {
            lineNumber += 1
            if text.allSatisfy({ $0 == " " || $0 == "\r" }) { continue }
            return try Self.parse(text, line: lineNumber, json: json, header: header, timeIndex: timeIndex, timeScale: timeScale, path: path)
        }
        return nil
    }

    public func close() { reader.close() }

    /// One row: its time (seconds) and values in channel order. `header` holds every column's
    /// name (the time column at `timeIndex`); JSON rows are matched by name, CSV rows by position.
    static package func parse(_ text: String, line: Int, json: Bool, header: [String], timeIndex: Int, timeScale: Double, path: String) throws -> (Double, [Double]) {
        var raw: [Substring] = []
        raw.reserveCapacity(header.count)
        if json {
            let fields = try jsonFields(text, line: line, path: path)
            for name in header {
                guard let f = fields.first(where: { $0.0 == name }) else {
                    throw AudioError.decodeFailed(path: path, detail: "line \(line): no \"\(name)\"")
                }
                raw.append(f.1)
            }
        } else {
            raw = text.split(separator: ",", omittingEmptySubsequences: false)
            guard raw.count == header.count else {
                throw AudioError.decodeFailed(path: path, detail: "line \(line): \(raw.count) columns, the header has \(header.count)")
            }
        }
        var t = 0.0
        var values: [Double] = []
        values.reserveCapacity(raw.count)
        for (i, field) in raw.enumerated() {
            let s = field.trimmingCharacters(in: .whitespaces)
            guard let v = Double(s), v.isFinite else {
                throw AudioError.decodeFailed(path: path, detail: "line \(line): '\(s.prefix(40))' is not a number")
            }
            if i == timeIndex { t = v * timeScale } else { values.append(v) }
        }
        return (t, values)
    }

    /// A flat JSON object's fields, in order: `{"t":0.01,"x":1.5}` → [("t","0.01"),("x","1.5")].
    static package func jsonFields(_ text: String, line: Int, path: String) throws -> [(String, Substring)] {
        let s = Substring(text.trimmingCharacters(in: .whitespacesAndNewlines))
        guard s.hasPrefix("{"), s.hasSuffix("}") else { throw AudioError.decodeFailed(path: path, detail: "line \(line): not a JSON object") }
        var out: [(String, Substring)] = []
        for part in s.dropFirst().dropLast().split(separator: ",") {
            guard let colon = part.firstIndex(of: ":") else { throw AudioError.decodeFailed(path: path, detail: "line \(line): not a JSON object") }
            let key = part[..<colon].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            out.append((key, part[part.index(after: colon)...]))
        }
        return out
    }

    /// True when `path` has a sensor extension and its first bytes are text (not audio in disguise).
    static package func looksLikeSeries(path: String) -> Bool {
        guard extensions.contains((path as NSString).pathExtension.lowercased()) else { return false }
        guard let h = FileNameBytes.reading(path) else { return false }
        defer { try? h.close() }
        let head = (try? h.read(upToCount: 512)) ?? Data()
        return !head.isEmpty && head.allSatisfy { $0 == 9 || $0 == 10 || $0 == 13 || ($0 >= 32 && $0 != 127) || $0 >= 0x80 }
    }
}

/// Lines of a text file read in 64 KiB pieces (constant memory; a line over 1 MiB is an error).
final package class LineReader {
    package let path: String
    package var fd: Int32
    package var buffer: [UInt8] = []
    package var start = 0
    package var eof = false

    package init(path: String) throws {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw AudioError.system(path, "cannot open", errno: errno) }
    }

    package func nextLine() throws -> String? {
        while true {
            if let nl = buffer[start...].firstIndex(of: 10) {
                let line = String(decoding: buffer[start..<nl], as: UTF8.self)
                start = nl + 1
                return line
            }
            if eof {
                guard start < buffer.count else { return nil }
                let line = String(decoding: buffer[start...], as: UTF8.self)
                start = buffer.count
                return line
            }
            if buffer.count - start > 1 << 20 { throw AudioError.decodeFailed(path: path, detail: "a line longer than 1 MiB") }
            buffer.removeFirst(start)
            start = 0
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw AudioError.system(path, "read failed", errno: errno) }
            if n == 0 { eof = true } else { buffer.append(contentsOf: chunk[0..<n]) }
        }
    }

    /// Safe to call twice.
    package func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    deinit { close() }
}
