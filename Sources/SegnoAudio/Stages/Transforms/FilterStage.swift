import SegnoCore
import SegnoDSP

/// `lowpass` / `highpass: { frequency: Hz, order: 2|4|6|8, q }` (Butterworth as cascaded
/// biquads; `q` for a resonant order 2, as AVAudioUnitEQ's resonantLowPass/HighPass) and
/// `bandpass` / `bandstop: { frequency: Hz, bandwidth: octaves }` (one cookbook section).
/// Shorthand: `lowpass: 3400`. The frequency must be below the Nyquist frequency of the stream
/// at the stage's place: checked when the spec loads if an upstream resample fixes the rate,
/// else when each recording's chain starts.
public struct FilterConfig: TransformConfig {
    public var savesState: Bool { true }
    public var changesLevel: Bool { true }
    public enum Kind: String, Sendable, CaseIterable { case lowpass, highpass, bandpass, bandstop }
    public let filter: Kind
    /// Corner or centre frequency, Hz.
    public let frequency: Double
    public let order: Int
    public let q: Double?
    /// Octaves, for bandpass/bandstop.
    public let bandwidth: Double
    public var name: String { filter.rawValue }
    public var version: Int { 1 }
    public var options: [(String, String)] {
        switch filter {
        case .lowpass, .highpass:
            var o = [("frequency", canonicalNumber(frequency)), ("order", String(order))]
            if let q { o.append(("q", canonicalNumber(q))) }
            return o
        case .bandpass, .bandstop:
            return [("frequency", canonicalNumber(frequency)), ("bandwidth", canonicalNumber(bandwidth))]
        }
    }

    /// Butterworth order when none is given.
    public static let standardOrder = 2
    /// Bandwidth of bandpass/bandstop when none is given, in octaves.
    public static let standardBandwidth = 1.0

    /// The declaration of the `lowpass`, `highpass`, `bandpass` or `bandstop` stage.
    public static func declaration(_ kind: Kind) -> StageDeclaration {
        let frequency = StageDeclaration.Option("frequency", .number, unit: "Hz", default: nil,
                                                help: "Corner (centre for band filters) frequency, below the Nyquist frequency of the stream there.")
        let band: [StageDeclaration.Option] = [
            frequency,
            .init("bandwidth", .number, unit: "octaves", default: canonicalNumber(standardBandwidth), .range(0, FilterDesign.maximumBandwidth),
                  help: "Width between the −3 dB points (above 0)."),
        ]
        let pass: [StageDeclaration.Option] = [
            frequency,
            .init("order", .wholeNumber, default: String(standardOrder), .choices(FilterDesign.supportedOrders.map(String.init)),
                  help: "Butterworth order, as cascaded biquads (−3 dB at the frequency)."),
            .init("q", .number, default: "none", help: "Order 2 only: a resonant section (AVAudioUnitEQ's resonantLowPass/HighPass); above 0."),
        ]
        let summary: String
        switch kind {
        case .lowpass: summary = "Cuts what lies above a frequency (Butterworth)."
        case .highpass: summary = "Cuts what lies below a frequency (Butterworth)."
        case .bandpass: summary = "Keeps a band around a centre frequency (one cookbook section)."
        case .bandstop: summary = "Removes a band around a centre frequency (one cookbook section)."
        }
        let isBand = kind == .bandpass || kind == .bandstop
        return StageDeclaration(
            key: kind.rawValue, kind: .transform, summary: summary, options: isBand ? band : pass,
            shorthand: "`\(kind.rawValue): 3400` is `{ frequency: 3400 }`",
            example: isBand ? "\(kind.rawValue): { frequency: 1000, bandwidth: 2 }" : "\(kind.rawValue): { frequency: \(kind == .lowpass ? 3400 : 80), order: 4 }",
            capabilities: [.changesLevel])
    }

    public init(filter: Kind, frequency: Double, order: Int = FilterConfig.standardOrder, q: Double? = nil, bandwidth: Double = FilterConfig.standardBandwidth) {
        self.filter = filter
        self.frequency = frequency
        self.order = order
        self.q = q
        self.bandwidth = bandwidth
    }

    /// The design's sections at `sampleRate`; throws the design error (naming the option).
    public func sections(sampleRate: Double) throws(FilterDesignError) -> [Biquad] {
        switch filter {
        case .lowpass: return try FilterDesign.lowpass(frequency: frequency, order: order, q: q, sampleRate: sampleRate)
        case .highpass: return try FilterDesign.highpass(frequency: frequency, order: order, q: q, sampleRate: sampleRate)
        case .bandpass: return try FilterDesign.bandpass(frequency: frequency, bandwidth: bandwidth, sampleRate: sampleRate)
        case .bandstop: return try FilterDesign.bandstop(frequency: frequency, bandwidth: bandwidth, sampleRate: sampleRate)
        }
    }

    public func makeTransform() throws -> any Transform {
        BiquadTransform(name: name) { rate throws(FilterDesignError) in try sections(sampleRate: rate) }
    }
}

/// Runs a biquad cascade designed when the stream's rate is known. Shared by the filter and EQ stages.
final package class BiquadTransform: CheckpointingTransform {
    package let name: String
    package let design: (Double) throws(FilterDesignError) -> [Biquad]
    package var cascade: BiquadCascade?

    package init(name: String, design: @escaping (Double) throws(FilterDesignError) -> [Biquad]) {
        self.name = name
        self.design = design
    }

    package func start(_ input: AudioFormat) throws -> AudioFormat {
        let sections: [Biquad]
        do { sections = try design(Double(input.sampleRate)) } catch {
            throw StageStartError(stage: name, "\(error.option): \(error) (stream: \(input))")
        }
        cascade = sections.isEmpty ? nil : BiquadCascade(sections: sections, channels: input.channels)
        return input
    }

    package func process(_ block: inout AudioBlock) throws {
        cascade?.process(&block)
    }

    package func save(into w: inout StateBytes.Writer) { cascade?.save(into: &w) }
    package func restore(from r: inout StateBytes.Reader) throws { try cascade?.restore(from: &r) }
}

extension FilterConfig {
    /// `lowpass:`/`highpass:`/`bandpass:`/`bandstop:` options: every check, before any audio flows.
    static package func parse(_ kind: FilterConfig.Kind, _ v: SpecValue, _ c: StageParseContext) throws(SpecError) -> any StageConfig {
        let config: FilterConfig
        var freqNode = v
        if v.isScalar {
            config = FilterConfig(filter: kind, frequency: try v.double(unit: "Hz"))
        } else {
            let band = kind == .bandpass || kind == .bandstop
            let o = try v.options(declaredBy: declaration(kind))
            freqNode = o["frequency"]!
            let freq = try freqNode.double(unit: "Hz")
            if band {
                config = FilterConfig(filter: kind, frequency: freq, bandwidth: try o["bandwidth"]?.double() ?? standardBandwidth)
                do { try FilterDesign.validateBandwidth(config.bandwidth) } catch { throw o["bandwidth"]!.error("\(error)") }
            } else {
                let order = try o["order"]?.int() ?? standardOrder
                do { try FilterDesign.validateOrder(order) } catch { throw o["order"]!.error("\(error)") }
                let q = try o["q"]?.double()
                do { try FilterDesign.validateQ(q, order: order) } catch { throw o["q"]!.error("\(error)") }
                config = FilterConfig(filter: kind, frequency: freq, order: order, q: q)
            }
        }
        do { try FilterDesign.validateFrequency(config.frequency, sampleRate: c.knownRate.map(Double.init)) } catch {
            if let rate = c.knownRate {
                throw freqNode.error("\(canonicalNumber(config.frequency)) Hz is not below the Nyquist frequency of the \(String(format: "%g", Double(rate) / 1000)) kHz stream here (after resample)")
            }
            throw freqNode.error("\(error)")
        }
        return config
    }
}
