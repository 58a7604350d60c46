import Foundation
import SegnoDSP
import Testing

@Suite struct FilterDesignTests {
    let rate = FilterMeasurement.sampleRate

    @Test func butterworthSectionQsAreTheKnownValues() {
        #expect(abs(FilterDesign.butterworthQs(order: 2)[0] - 0.5.squareRoot()) < 1e-12)
        let q4 = FilterDesign.butterworthQs(order: 4).sorted()
        #expect(abs(q4[0] - 0.541196) < 1e-6 && abs(q4[1] - 1.306563) < 1e-6)
        let q8 = FilterDesign.butterworthQs(order: 8).sorted()
        #expect(abs(q8[0] - 0.509796) < 1e-6 && abs(q8[3] - 2.562915) < 1e-6)
        #expect(FilterDesign.butterworthQs(order: 2, q: 3) == [3])
    }

    @Test(arguments: [2, 4, 6, 8])
    func lowpassMeasuredResponseMatchesDesign(order: Int) throws {
        let sections = try FilterDesign.lowpass(frequency: 3000, order: order, sampleRate: rate)
        #expect(sections.count == order / 2)
        #expect(FilterMeasurement.worstDeviationDB(sections) < 0.1)
    }

    @Test(arguments: [2, 4, 6, 8])
    func highpassMeasuredResponseMatchesDesign(order: Int) throws {
        let sections = try FilterDesign.highpass(frequency: 80, order: order, sampleRate: rate)
        #expect(FilterMeasurement.worstDeviationDB(sections) < 0.1)
    }

    @Test(arguments: [2, 4, 6, 8])
    func cornerIsMinus3dBWithinOnePercent(order: Int) throws {
        let corner = 1000.0
        let low = try FilterDesign.lowpass(frequency: corner, order: order, sampleRate: rate)
        let high = try FilterDesign.highpass(frequency: corner, order: order, sampleRate: rate)
        let halfPower = -3.0103
        #expect(abs(FilterMeasurement.measuredGainDB(low, at: corner) - halfPower) < 0.01)
        #expect(FilterMeasurement.measuredGainDB(low, at: corner * 0.99) > halfPower)
        #expect(FilterMeasurement.measuredGainDB(low, at: corner * 1.01) < halfPower)
        #expect(abs(FilterMeasurement.measuredGainDB(high, at: corner) - halfPower) < 0.01)
        #expect(FilterMeasurement.measuredGainDB(high, at: corner * 1.01) > halfPower)
        #expect(FilterMeasurement.measuredGainDB(high, at: corner * 0.99) < halfPower)
    }

    @Test(arguments: [2, 4, 6, 8])
    func slopeFarFromCornerIsAtLeast6dBPerOctavePerOrder(order: Int) throws {
        let low = try FilterDesign.lowpass(frequency: 1000, order: order, sampleRate: rate)
        let lowSlope = FilterMeasurement.measuredGainDB(low, at: 4000) - FilterMeasurement.measuredGainDB(low, at: 8000)
        #expect(lowSlope >= 6 * Double(order))
        let high = try FilterDesign.highpass(frequency: 2000, order: order, sampleRate: rate)
        let highSlope = FilterMeasurement.measuredGainDB(high, at: 500) - FilterMeasurement.measuredGainDB(high, at: 250)
        #expect(highSlope >= 6 * Double(order))
    }

    @Test func resonantOrder2HasGainQAtTheCorner() throws {
        for q in [0.5, 2.0, 8.0] {
            let low = try FilterDesign.lowpass(frequency: 2000, order: 2, q: q, sampleRate: rate)
            let high = try FilterDesign.highpass(frequency: 2000, order: 2, q: q, sampleRate: rate)
            let expected = 20 * log10(q)
            #expect(abs(FilterMeasurement.measuredGainDB(low, at: 2000) - expected) < 0.1)
            #expect(abs(FilterMeasurement.measuredGainDB(high, at: 2000) - expected) < 0.1)
            #expect(FilterMeasurement.worstDeviationDB(low) < 0.1)
        }
    }

    @Test(arguments: [0.5, 1.0, 2.0])
    func bandpassPeaksAt0dBAndMatchesDesign(bandwidth: Double) throws {
        let sections = try FilterDesign.bandpass(frequency: 1000, bandwidth: bandwidth, sampleRate: rate)
        #expect(abs(FilterMeasurement.measuredGainDB(sections, at: 1000)) < 0.01)
        #expect(FilterMeasurement.worstDeviationDB(sections) < 0.1)
        // The band edges, bandwidth octaves apart around the centre, are near −3 dB.
        let edge = pow(2, bandwidth / 2)
        #expect(abs(FilterMeasurement.measuredGainDB(sections, at: 1000 / edge) + 3.01) < 0.2)
        #expect(abs(FilterMeasurement.measuredGainDB(sections, at: 1000 * edge) + 3.01) < 0.2)
    }

    @Test(arguments: [0.5, 1.0, 2.0])
    func bandstopRejectsTheCentreAndMatchesDesign(bandwidth: Double) throws {
        let sections = try FilterDesign.bandstop(frequency: 1000, bandwidth: bandwidth, sampleRate: rate)
        #expect(FilterMeasurement.measuredGainDB(sections, at: 1000) < -80)
        #expect(FilterMeasurement.worstDeviationDB(sections) < 0.1)
        let edge = pow(2, bandwidth / 2)
        #expect(abs(FilterMeasurement.measuredGainDB(sections, at: 1000 / edge) + 3.01) < 0.2)
        #expect(abs(FilterMeasurement.measuredGainDB(sections, at: 1000 * edge) + 3.01) < 0.2)
    }

    @Test func designsRejectBadSettings() {
        #expect(throws: FilterDesignError.frequencyOutOfRange(frequency: 24000, nyquist: 24000)) {
            try FilterDesign.lowpass(frequency: 24000, sampleRate: rate)
        }
        #expect(throws: FilterDesignError.frequencyOutOfRange(frequency: 0, nyquist: 24000)) {
            try FilterDesign.highpass(frequency: 0, sampleRate: rate)
        }
        #expect(throws: FilterDesignError.unsupportedOrder(3)) {
            try FilterDesign.lowpass(frequency: 1000, order: 3, sampleRate: rate)
        }
        #expect(throws: FilterDesignError.qOutOfRange(0)) {
            try FilterDesign.lowpass(frequency: 1000, q: 0, sampleRate: rate)
        }
        #expect(throws: FilterDesignError.qRequiresOrder2(order: 4)) {
            try FilterDesign.highpass(frequency: 1000, order: 4, q: 1, sampleRate: rate)
        }
        #expect(throws: FilterDesignError.bandwidthOutOfRange(octaves: 0)) {
            try FilterDesign.bandpass(frequency: 1000, bandwidth: 0, sampleRate: rate)
        }
        #expect(throws: FilterDesignError.bandwidthOutOfRange(octaves: 10.5)) {
            try FilterDesign.bandstop(frequency: 1000, bandwidth: 10.5, sampleRate: rate)
        }
        #expect(throws: FilterDesignError.invalidSampleRate(0)) {
            try FilterDesign.lowpass(frequency: 1000, sampleRate: 0)
        }
    }

    @Test func validationHelpersAcceptTheEdgesOfTheirRanges() throws {
        try FilterDesign.validateFrequency(1e-3)
        try FilterDesign.validateFrequency(100_000)  // no sample rate yet: only > 0 is checked
        try FilterDesign.validateFrequency(23999.9, sampleRate: 48000)
        try FilterDesign.validateBandwidth(10)
        try FilterDesign.validateGain(-96)
        try FilterDesign.validateGain(96)
        try FilterDesign.validateQ(nil, order: 8)
        for order in [2, 4, 6, 8] { try FilterDesign.validateOrder(order) }
        #expect(throws: FilterDesignError.gainOutOfRange(dB: 96.5)) { try FilterDesign.validateGain(96.5) }
        #expect(throws: FilterDesignError.self) { try FilterDesign.validateFrequency(.nan) }
        #expect(throws: FilterDesignError.self) { try FilterDesign.validateBandwidth(.infinity) }
    }

    @Test func equalizerSkipsBypassedBands() throws {
        let bands = [
            EQBand(type: .parametric, frequency: 1000, bandwidth: 1, gain: 6),
            EQBand(type: .highShelf, frequency: 8000, gain: -6, bypass: true),
            EQBand(type: .highPass, frequency: 80),
        ]
        let sections = try FilterDesign.equalizer(bands, sampleRate: rate)
        #expect(sections.count == 2)
    }
}
