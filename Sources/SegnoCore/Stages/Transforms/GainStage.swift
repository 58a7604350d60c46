import Foundation
import SegnoDSP

/// `gain: { db: -3 }` multiplies every sample by 10^(db/20). Range −96…+48 dB.
public struct GainConfig: TransformConfig {
    public let db: Double
    public var name: String { "gain" }
    public var version: Int { 1 }
    public var options: [(String, String)] { [("db", canonicalNumber(db))] }
    public init(db: Double) { self.db = db }
    public func makeTransform() throws -> any Transform { GainTransform(gain: Gain(decibels: db)) }
}

final class GainTransform: Transform {
    let gain: Gain
    init(gain: Gain) { self.gain = gain }
    func start(_ input: AudioFormat) throws -> AudioFormat { input }
    func process(_ block: inout AudioBlock) throws { gain.apply(to: &block) }
}

/// A number as options print it: integers without a fraction, others with up to 6 significant digits.
public func canonicalNumber(_ v: Double) -> String {
    if v == v.rounded() && abs(v) < 1e15 { return String(Int64(v)) }
    return String(format: "%g", v)
}
