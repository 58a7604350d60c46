import SegnoDSP
import Testing

@Suite struct FilterDesignErrorTests {
    @Test func messagesNameTheOptionAndTheValue() {
        let cases: [(FilterDesignError, String, String)] = [
            (.frequencyOutOfRange(frequency: 30000, nyquist: 24000), "frequency",
             "frequency must be above 0 Hz and below the Nyquist frequency (24000 Hz), got 30000 Hz"),
            (.frequencyOutOfRange(frequency: -5, nyquist: nil), "frequency", "frequency must be above 0 Hz, got -5 Hz"),
            (.bandwidthOutOfRange(octaves: 12.5), "bandwidth",
             "bandwidth must be above 0 and at most 10 octaves, got 12.5"),
            (.unsupportedOrder(5), "order", "order must be 2, 4, 6 or 8, got 5"),
            (.gainOutOfRange(dB: 120), "gain", "gain must be between -96 and +96 dB, got 120 dB"),
            (.qOutOfRange(-1), "q", "q must be above 0, got -1"),
            (.qRequiresOrder2(order: 4), "q", "q can only be set with order 2, got order 4"),
            (.invalidSampleRate(0), "sample rate", "sample rate must be above 0 Hz, got 0 Hz"),
        ]
        for (error, option, message) in cases {
            #expect(error.option == option)
            #expect(error.description == message)
        }
    }
}
