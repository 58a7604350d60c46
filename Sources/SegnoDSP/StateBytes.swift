/// A DSP object's running state as bytes, for a checkpoint inside a long recording (decision
/// 0095): the object writes its fields in a fixed order with a `Writer` between two blocks, and a
/// fresh object of the same configuration reads them back in the same order with a `Reader`. The
/// bytes are little-endian and carry no field names; they are only ever read by the same build
/// (a checkpoint names the build that wrote it).
public enum StateBytes {
    /// Thrown by a `Reader` when the bytes end early or do not fit the object reading them.
    public struct Mismatch: Error, Sendable, CustomStringConvertible {
        public let what: String
        public init(_ what: String) { self.what = what }
        public var description: String { "checkpoint state does not fit: \(what)" }
    }

    /// Appends fields. Used once per checkpoint, on the thread that runs the object.
    public struct Writer: Sendable {
        public private(set) var bytes: [UInt8] = []
        public init() {}

        public mutating func int(_ v: Int) { withUnsafeBytes(of: Int64(v).littleEndian) { bytes += $0 } }
        public mutating func double(_ v: Double) { withUnsafeBytes(of: v.bitPattern.littleEndian) { bytes += $0 } }
        public mutating func doubles(_ v: [Double]) {
            int(v.count)
            for x in v { double(x) }
        }
        public mutating func floats<C: Collection>(_ v: C) where C.Element == Float {
            int(v.count)
            for x in v { withUnsafeBytes(of: x.bitPattern.littleEndian) { bytes += $0 } }
        }
        public mutating func data(_ v: [UInt8]) {
            int(v.count)
            bytes += v
        }
    }

    /// Reads fields in the order they were written; throws `Mismatch` past the end.
    public struct Reader {
        private let bytes: [UInt8]
        private var at = 0
        public init(_ bytes: [UInt8]) { self.bytes = bytes }
        /// True once every byte was read: a restore checks it, so a longer state is not half-read.
        public var atEnd: Bool { at == bytes.count }

        private mutating func take(_ n: Int, _ what: String) throws(Mismatch) -> ArraySlice<UInt8> {
            guard n >= 0, bytes.count - at >= n else { throw Mismatch("\(what) runs past the end") }
            defer { at += n }
            return bytes[at..<(at + n)]
        }
        private mutating func u64(_ what: String) throws(Mismatch) -> UInt64 {
            try take(8, what).reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }
        private mutating func u32(_ what: String) throws(Mismatch) -> UInt32 {
            try take(4, what).reversed().reduce(0) { $0 << 8 | UInt32($1) }
        }
        public mutating func int(_ what: String = "an integer") throws(Mismatch) -> Int { Int(Int64(bitPattern: try u64(what))) }
        public mutating func double(_ what: String = "a number") throws(Mismatch) -> Double { Double(bitPattern: try u64(what)) }
        /// A count written by `doubles`/`floats`/`data`, checked against what the bytes can hold.
        private mutating func count(_ size: Int, _ what: String, expected: Int?) throws(Mismatch) -> Int {
            let n = try int(what)
            guard n >= 0, n <= (bytes.count - at) / size else { throw Mismatch("\(what) claims \(n) values") }
            if let expected, n != expected { throw Mismatch("\(what) holds \(n) values, not \(expected)") }
            return n
        }
        public mutating func doubles(_ what: String, count expected: Int? = nil) throws(Mismatch) -> [Double] {
            let n = try count(8, what, expected: expected)
            var out: [Double] = []
            out.reserveCapacity(n)
            for _ in 0..<n { out.append(Double(bitPattern: try u64(what))) }
            return out
        }
        public mutating func floats(_ what: String, count expected: Int? = nil) throws(Mismatch) -> [Float] {
            let n = try count(4, what, expected: expected)
            var out: [Float] = []
            out.reserveCapacity(n)
            for _ in 0..<n { out.append(Float(bitPattern: try u32(what))) }
            return out
        }
        public mutating func data(_ what: String) throws(Mismatch) -> [UInt8] {
            let n = try count(1, what, expected: nil)
            return Array(try take(n, what))
        }
    }
}
