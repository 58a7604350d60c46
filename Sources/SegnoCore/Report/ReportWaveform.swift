import Foundation
import SegnoWaveform

/// The small waveform a report row draws on its canvas: at most `columns` min/max pairs, each
/// a byte (sample × 127 + 128, so 128 is silence), in base64. Made from a waveform tap's JSON
/// file, or from a metadata tap's `levels` when there is no such file.
///
/// A waveform file also gives an RMS layer, drawn inside the min/max one: without it a long
/// recording folded into 240 columns is a solid block, as every column's min/max reaches the
/// loudest sample of a few seconds.
public enum ReportWaveform {
    /// The canvas's layers: `minMax` as above, `rms` one byte per column (level × 255).
    public struct Layers: Sendable, Equatable {
        /// Base64 of min/max byte pairs.
        public var minMax: String
        /// Base64 of one byte per column, round(level × 255), level in [0, 1].
        public var rms: String
    }

    /// Reads an audiowaveform JSON file and folds it to `columns` columns (channels merged: the
    /// lowest min and highest max). The RMS of a column is the quadratic mean of the half-ranges
    /// ((max − min) / 2) of the file's pixels folded into it: audiowaveform's data holds min/max per
    /// pixel only, so this is the RMS of the per-pixel envelope, not of the samples (a steady sine
    /// gives its amplitude, not amplitude / √2). Nil when the file is missing or not waveform JSON.
    /// Called once per recording while a report is made.
    public static func fromPeaksFile(_ path: String, columns: Int) -> Layers? {
        guard let handle = FileNameBytes.reading(path), let data = try? handle.readToEnd() else { return nil }
        try? handle.close()
        guard let w = try? WaveformJSON.decode(Array(data)), w.length > 0, columns > 0 else { return nil }
        let full = Double(w.bits == 8 ? 128 : 32768)
        let n = min(columns, w.length)
        var bytes = [UInt8](repeating: 128, count: n * 2)
        var rms = [UInt8](repeating: 0, count: n)
        for col in 0..<n {
            let from = col * w.length / n
            let to = max(from + 1, (col + 1) * w.length / n)
            var lo = 0, hi = 0
            var squares = 0.0
            for i in from..<to {
                var pixelLo = 0, pixelHi = 0
                for c in 0..<w.channels {
                    let base = (i * w.channels + c) * 2
                    pixelLo = min(pixelLo, Int(w.data[base]))
                    pixelHi = max(pixelHi, Int(w.data[base + 1]))
                }
                lo = min(lo, pixelLo)
                hi = max(hi, pixelHi)
                let half = Double(pixelHi - pixelLo) / 2 / full
                squares += half * half
            }
            bytes[col * 2] = byte(Double(lo) / full)
            bytes[col * 2 + 1] = byte(Double(hi) / full)
            let level = min(1, (squares / Double(to - from)).squareRoot())
            rms[col] = UInt8((level * 255).rounded())
        }
        return Layers(minMax: Data(bytes).base64EncodedString(), rms: Data(rms).base64EncodedString())
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
