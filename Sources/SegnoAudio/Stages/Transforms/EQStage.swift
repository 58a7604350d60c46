import Foundation
import SegnoCore
import SegnoDSP

/// `eq: { bands: [{ type, frequency, bandwidth, gain, bypass }, …] }` with AVAudioUnitEQ's band
/// types (parametric, lowPass, highPass, resonantLowPass, resonantHighPass, bandPass, bandStop,
/// lowShelf, highShelf, resonantLowShelf, resonantHighShelf), so a spec can carry over an iOS
/// app's EQ settings. Each band is one RBJ cookbook biquad; docs/eq-mapping.md gives the exact
/// mapping. Bands run in order; bypassed bands and 0 dB bands cost nothing.
public struct EQConfig: TransformConfig {
    public var changesLevel: Bool { true }
    public let bands: [EQBand]
    public var name: String { "eq" }
    public var savesState: Bool { true }
    public var version: Int { 1 }
    public var options: [(String, String)] {
        bands.enumerated().map { i, b in
            ("band\(i + 1)", "\(b.type.rawValue):\(canonicalNumber(b.frequency)):\(canonicalNumber(b.bandwidth)):\(canonicalNumber(b.gain))\(b.bypass ? ":bypass" : "")")
        }
    }
    public init(bands: [EQBand]) { self.bands = bands }

    /// The keys of one item of `bands`.
    public static let bandFields: [StageDeclaration.Option] = [
        .init("type", .choice, default: nil, .oneOf(EQFilterType.self), help: "AVAudioUnitEQ's band type (docs/eq-mapping.md gives the exact mapping)."),
        .init("frequency", .number, unit: "Hz", default: nil, help: "Centre, corner or shelf midpoint frequency."),
        .init("bandwidth", .number, unit: "octaves", default: canonicalNumber(EQBand.defaultBandwidth), .range(0, FilterDesign.maximumBandwidth),
              help: "Width, for the types that use it (above 0)."),
        .init("gain", .number, unit: "dB", default: "0", .range(-FilterDesign.maximumGain, FilterDesign.maximumGain),
              help: "Boost or cut, for parametric and shelf types."),
        .init("bypass", .boolean, default: "false", help: "Passes audio through unchanged."),
    ]

    public static let declaration = StageDeclaration(
        key: "eq", kind: .transform, summary: "An equaliser with AVAudioUnitEQ's bands, each one RBJ cookbook biquad, run in order.",
        options: [.init("bands", .list, default: nil, help: "The bands, at least one: mappings of the keys below.", fields: bandFields)],
        example: "eq: { bands: [{ type: parametric, frequency: 1000, bandwidth: 1, gain: -6 }] }", capabilities: [.changesLevel])

    public func makeTransform() throws -> any Transform {
        let bands = self.bands
        return BiquadTransform(name: name) { rate throws(FilterDesignError) in try FilterDesign.equalizer(bands, sampleRate: rate) }
    }

    /// Parses `convert --eq "type:freq:bw:gain,…"` (bandwidth and gain optional).
    public static func parse(bands text: String) throws(TemplateError) -> [EQBand] {
        var out: [EQBand] = []
        for item in text.split(separator: ",") {
            let f = item.split(separator: ":").map { String($0).trimmingCharacters(in: .whitespaces) }
            guard f.count >= 2, let type = EQFilterType(rawValue: f[0]), let freq = Double(f[1]) else {
                throw TemplateError("--eq band \"\(item)\" is not type:frequency[:bandwidth[:gain]] (types: \(EQFilterType.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            let bw = f.count > 2 ? Double(f[2]) : EQBand.defaultBandwidth
            let gain = f.count > 3 ? Double(f[3]) : 0
            guard let bw, let gain else { throw TemplateError("--eq band \"\(item)\": bandwidth and gain must be numbers") }
            let band = EQBand(type: type, frequency: freq, bandwidth: bw, gain: gain)
            do { try band.validate() } catch { throw TemplateError("--eq band \"\(item)\": \(error)") }
            out.append(band)
        }
        if out.isEmpty { throw TemplateError("--eq needs at least one band") }
        return out
    }
}

extension EQConfig {
    /// The spec\'s options for this stage: every check, before any audio flows (SoX\'s getopts).
    static package func parse(_ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let o = try v.options(declaredBy: declaration)
        var bands: [EQBand] = []
        for item in try o["bands"]!.list() {
            let b = try item.options(declaredBy: bandFields)
            let band = EQBand(type: try b["type"]!.choice(EQFilterType.self), frequency: try b["frequency"]!.double(unit: "Hz"),
                              bandwidth: try b["bandwidth"]?.double() ?? EQBand.defaultBandwidth,
                              gain: try b["gain"]?.double() ?? 0, bypass: try b["bypass"]?.bool() ?? false)
            do { try band.validate(sampleRate: c.knownRate.map(Double.init)) } catch {
                throw (b[error.option] ?? item).error("\(error)")
            }
            bands.append(band)
        }
        if bands.isEmpty { throw o["bands"]!.error("give at least one band") }
        return EQConfig(bands: bands)
    }
}
