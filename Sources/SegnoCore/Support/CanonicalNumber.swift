import Foundation

/// A number as options print it: integers without a fraction, others with up to 6 significant digits.
public func canonicalNumber(_ v: Double) -> String {
    if v == v.rounded() && abs(v) < 1e15 { return String(Int64(v)) }
    return String(format: "%g", v)
}
