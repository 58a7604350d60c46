import SegnoDSP
import Testing

@Suite struct EQFilterTypeTests {
    @Test func namesAreAVAudioUnitEQsFilterTypeNames() {
        let names = EQFilterType.allCases.map(\.rawValue)
        #expect(names == [
            "parametric", "lowPass", "highPass", "resonantLowPass", "resonantHighPass", "bandPass",
            "bandStop", "lowShelf", "highShelf", "resonantLowShelf", "resonantHighShelf",
        ])
        #expect(EQFilterType(rawValue: "highShelf") == .highShelf)
        #expect(EQFilterType(rawValue: "HighShelf") == nil)
    }
}
