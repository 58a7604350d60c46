import Foundation
import SegnoDSP

/// `gain: { db: -3 }` multiplies every sample by 10^(db/20). Range −96…+48 dB.
public struct GainConfig: TransformConfig {
    public let db: Double
    public var name: String { "gain" }
    public var version: Int { 1 }
    public var options: [(String, String)] { [("db", canonicalNumber(db))] }
    public init(db: Double) { self.db = db }
    public func makeTransform() throws -> any Transform { GainTransform(factor: Float(pow(10, db / 20))) }
}

final class GainTransform: Transform {
    let factor: Float
    init(factor: Float) { self.factor = factor }
    func start(_ input: AudioFormat) throws -> AudioFormat { input }
    func process(_ block: inout AudioBlock) throws {
        let n = block.frames * block.channels
        let g = factor
        block.samples.withUnsafeMutableBufferPointer { p in
            for i in 0..<n { p[i] *= g }
        }
    }
}

/// A number as options print it: integers without a fraction, others with up to 6 significant digits.
public func canonicalNumber(_ v: Double) -> String {
    if v == v.rounded() && abs(v) < 1e15 { return String(Int64(v)) }
    return String(format: "%g", v)
}
