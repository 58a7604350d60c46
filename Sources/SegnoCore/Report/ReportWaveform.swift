import Foundation
import SegnoWaveform

/// The small waveform a report row draws on its canvas: at most `columns` min/max pairs, each
/// a byte (sample × 127 + 128, so 128 is silence), in base64. Made from a waveform tap's JSON
/// file, or from a metadata tap's `levels` when there is no such file.
public enum ReportWaveform {
    /// Reads an audiowaveform JSON file and folds it to `columns` pairs (channels merged: the
    /// lowest min and highest max); nil when the file is missing or not waveform JSON.
    public static func fromPeaksFile(_ path: String, columns: Int) -> String? {
        guard let handle = FileNameBytes.reading(path), let data = try? handle.readToEnd() else { return nil }
        try? handle.close()
        guard let w = try? WaveformJSON.decode(Array(data)), w.length > 0 else { return nil }
        let full = Double(w.bits == 8 ? 128 : 32768)
        let n = min(columns, w.length)
        var bytes = [UInt8](repeating: 128, count: n * 2)
        for col in 0..<n {
            let from = col * w.length / n
            let to = max(from + 1, (col + 1) * w.length / n)
            var lo = 0, hi = 0
            for i in from..<to {
                for c in 0..<w.channels {
                    let base = (i * w.channels + c) * 2
                    lo = min(lo, Int(w.data[base]))
                    hi = max(hi, Int(w.data[base + 1]))
                }
            }
            bytes[col * 2] = byte(Double(lo) / full)
            bytes[col * 2 + 1] = byte(Double(hi) / full)
        }
        return Data(bytes).base64EncodedString()
    }

    /// A metadata tap's `levels` (base64 of round(level × 255)) as symmetric min/max pairs.
    public static func fromLevels(_ encoded: String) -> String? {
        guard let levels = Data(base64Encoded: encoded), !levels.isEmpty else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(levels.count * 2)
        for l in levels {
            let v = Double(l) / 255
            bytes.append(byte(-v))
            bytes.append(byte(v))
        }
        return Data(bytes).base64EncodedString()
    }

    /// A sample in [-1, 1] as a byte, 128 for zero.
    static package func byte(_ v: Double) -> UInt8 {
        UInt8(max(1, min(255, (128 + v * 127).rounded())))
    }
}
