import Foundation
import SegnoDSP
import Testing

@Suite struct EQBandTests {
    let rate = FilterMeasurement.sampleRate

    func measured(_ band: EQBand, at frequency: Double) throws -> Double {
        FilterMeasurement.measuredGainDB(try band.sections(sampleRate: rate), at: frequency)
    }

    @Test(arguments: EQFilterType.allCases)
    func measuredResponseMatchesDesign(type: EQFilterType) throws {
        for (frequency, bandwidth, gain) in [(1000.0, 1.0, 9.0), (150.0, 0.5, -12.0), (9000.0, 2.0, 6.0)] {
            let band = EQBand(type: type, frequency: frequency, bandwidth: bandwidth, gain: gain)
            let sections = try band.sections(sampleRate: rate)
            #expect(sections.count == 1)
            #expect(FilterMeasurement.worstDeviationDB(sections) < 0.1, "\(band)")
        }
    }

    @Test(arguments: [12.0, -9.0, 0.5])
    func parametricHasExactlyItsGainAtTheCentreAndHalfOfItAtTheBandEdges(gain: Double) throws {
        let band = EQBand(type: .parametric, frequency: 1000, bandwidth: 1, gain: gain)
        #expect(abs(try measured(band, at: 1000) - gain) < 0.1)
        #expect(abs(try measured(band, at: 1000 / 2.0.squareRoot()) - gain / 2) < 0.1)
        #expect(abs(try measured(band, at: 1000 * 2.0.squareRoot()) - gain / 2) < 0.1)
        #expect(abs(try measured(band, at: 20)) < 0.1)
    }

    @Test func passTypesCrossMinus3dBAtTheirFrequencyAndIgnoreGain() throws {
        for type in [EQFilterType.lowPass, .highPass] {
            let band = EQBand(type: type, frequency: 2000, bandwidth: 0.3, gain: 20)
            #expect(abs(try measured(band, at: 2000) + 3.0103) < 0.01)
            #expect(try band.sections(sampleRate: rate)
                == EQBand(type: type, frequency: 2000, bandwidth: 3, gain: -20).sections(sampleRate: rate))
        }
        let lowPass = EQBand(type: .lowPass, frequency: 2000)
        #expect(try measured(lowPass, at: 100) > -0.01)
        #expect(try measured(lowPass, at: 16000) < -30)
    }

    @Test func resonantPassTypesTakeTheirQFromTheBandwidth() throws {
        let oneOctave = EQBand(type: .resonantLowPass, frequency: 1000, bandwidth: 1)
        #expect(abs(oneOctave.resonance(sampleRate: rate) - 2.0.squareRoot()) < 0.01)
        let wide = EQBand(type: .resonantLowPass, frequency: 1000, bandwidth: 1.9)
        #expect(abs(wide.resonance(sampleRate: rate) - 0.5.squareRoot()) < 0.01)
        for type in [EQFilterType.resonantLowPass, .resonantHighPass] {
            for bandwidth in [0.1, 0.5, 1.0, 3.0] {
                let band = EQBand(type: type, frequency: 1000, bandwidth: bandwidth)
                let expected = 20 * log10(band.resonance(sampleRate: rate))
                #expect(abs(try measured(band, at: 1000) - expected) < 0.1)
            }
        }
        // Narrower bandwidth, higher resonance peak.
        let narrow = EQBand(type: .resonantHighPass, frequency: 1000, bandwidth: 0.2)
        #expect(try measured(narrow, at: 1000) > 15)
    }

    @Test func bandPassAndBandStopAreCentredOnTheirFrequency() throws {
        let pass = EQBand(type: .bandPass, frequency: 3000, bandwidth: 1, gain: 10)
        #expect(abs(try measured(pass, at: 3000)) < 0.01)
        #expect(try measured(pass, at: 300) < -15)
        let stop = EQBand(type: .bandStop, frequency: 3000, bandwidth: 1, gain: 10)
        #expect(try measured(stop, at: 3000) < -80)
        #expect(abs(try measured(stop, at: 100)) < 0.01)
    }

    @Test(arguments: [EQFilterType.lowShelf, .resonantLowShelf], [12.0, -18.0])
    func lowShelvesReachTheirGainAt0HzAndHalfOfItAtTheirFrequency(type: EQFilterType, gain: Double) throws {
        let band = EQBand(type: type, frequency: 400, bandwidth: 1, gain: gain)
        #expect(abs(try measured(band, at: 0) - gain) < 0.1)
        #expect(abs(try measured(band, at: 400) - gain / 2) < 0.1)
        #expect(abs(try measured(band, at: 24000)) < 0.1)
    }

    @Test(arguments: [EQFilterType.highShelf, .resonantHighShelf], [12.0, -18.0])
    func highShelvesReachTheirGainAtNyquistAndHalfOfItAtTheirFrequency(type: EQFilterType, gain: Double) throws {
        let band = EQBand(type: type, frequency: 4000, bandwidth: 1, gain: gain)
        #expect(abs(try measured(band, at: 24000) - gain) < 0.1)
        #expect(abs(try measured(band, at: 4000) - gain / 2) < 0.1)
        #expect(abs(try measured(band, at: 0)) < 0.1)
    }

    @Test func plainShelvesAreMonotonicAndResonantShelvesOvershoot() throws {
        let frequencies = FilterMeasurement.logSpaced(200)
        func peak(_ band: EQBand) throws -> Double {
            let cascade = BiquadCascade(sections: try band.sections(sampleRate: rate), channels: 1)
            return frequencies.map { cascade.magnitudeDB(at: $0, sampleRate: rate) }.max()!
        }
        // A 6 dB boost: a plain shelf never exceeds 6 dB, a narrow resonant one does, then dips below 0.
        #expect(try peak(EQBand(type: .lowShelf, frequency: 500, bandwidth: 0.2, gain: 6)) <= 6 + 1e-9)
        #expect(try peak(EQBand(type: .highShelf, frequency: 5000, bandwidth: 0.2, gain: 6)) <= 6 + 1e-9)
        let resonant = EQBand(type: .resonantLowShelf, frequency: 500, bandwidth: 0.5, gain: 6)
        #expect(try peak(resonant) > 7)
        #expect(try measured(resonant, at: 1000) < -0.5)
        #expect(try peak(EQBand(type: .resonantHighShelf, frequency: 5000, bandwidth: 0.5, gain: 6)) > 7)
        // Wide enough (≥ 1.9 octaves, Q ≤ 1/√2) and the resonant shelf is monotonic too.
        #expect(try peak(EQBand(type: .resonantLowShelf, frequency: 500, bandwidth: 2, gain: 6)) <= 6 + 1e-9)
    }

    @Test(arguments: EQFilterType.allCases)
    func bypassIsIdentity(type: EQFilterType) throws {
        let band = EQBand(type: type, frequency: 1000, bandwidth: 1, gain: 12, bypass: true)
        #expect(try band.sections(sampleRate: rate).isEmpty)
        var cascade = BiquadCascade(sections: try band.sections(sampleRate: rate), channels: 1)
        let input: [Float] = (0..<500).map { Float(sin(Double($0) * 0.1)) }
        var output = input
        output.withUnsafeMutableBufferPointer { cascade.process($0.baseAddress!, frames: 500) }
        let same = output == input
        #expect(same)
    }

    @Test func zeroGainBandsThatOnlyApplyGainDropOut() throws {
        for type in [EQFilterType.parametric, .lowShelf, .highShelf, .resonantLowShelf, .resonantHighShelf] {
            #expect(try EQBand(type: type, frequency: 1000, gain: 0).sections(sampleRate: rate).isEmpty)
        }
        #expect(try EQBand(type: .bandStop, frequency: 1000, gain: 0).sections(sampleRate: rate).count == 1)
    }

    @Test func validationChecksEveryFieldAndTheNyquistOnlyOnceTheRateIsKnown() throws {
        let high = EQBand(type: .highShelf, frequency: 30000, gain: -6)
        try high.validate()
        #expect(throws: FilterDesignError.frequencyOutOfRange(frequency: 30000, nyquist: 24000)) {
            try high.sections(sampleRate: rate)
        }
        #expect(throws: FilterDesignError.bandwidthOutOfRange(octaves: 0)) {
            try EQBand(type: .lowShelf, frequency: 100, bandwidth: 0).validate()
        }
        #expect(throws: FilterDesignError.gainOutOfRange(dB: -100)) {
            try EQBand(type: .parametric, frequency: 100, gain: -100).validate()
        }
        #expect(EQBand(type: .parametric, frequency: 100).bandwidth == EQBand.defaultBandwidth)
    }
}
