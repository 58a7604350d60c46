@testable import SegnoWaveform
import Testing

@Suite struct Int16ConversionTests {
    @Test func integerPCMGives16BitValuesBackUnchanged() {
        // What sf_read_float returns for 16-bit PCM is v / 32768.
        let wrong = (-32768...32767).filter { Int16Conversion.integerPCM.int16(Float($0) / 32768) != Int16($0) }
        #expect(wrong.isEmpty)
    }

    @Test func integerPCMShifts24BitValuesArithmetically() {
        // Around every multiple of 256, where floor and truncation differ for negative values.
        var wrong: [Int] = []
        for k in -32768...32767 {
            for v in [256 * k - 1, 256 * k, 256 * k + 1] where v >= -8_388_608 && v <= 8_388_607 {
                if Int16Conversion.integerPCM.int16(Float(v) / 8_388_608) != Int16(v >> 8) { wrong.append(v) }
            }
        }
        #expect(wrong.isEmpty)
        #expect(Int16Conversion.integerPCM.int16(Float(-1) / 8_388_608) == -1)  // not 0
        #expect(Int16Conversion.integerPCM.int16(Float(255) / 8_388_608) == 0)
    }

    @Test func integerPCMShiftsUnsigned8BitValues() {
        let wrong = (0...255).filter { Int16Conversion.integerPCM.int16(Float($0 - 128) / 128) != Int16(($0 - 128) << 8) }
        #expect(wrong.isEmpty)
    }

    @Test func floatingPointTruncatesTowardZeroAndClips() {
        let table: [(Float, Int16)] = [
            (1.0, 32767), (-1.0, -32767), (0.5, 16383), (-0.5, -16383), (0.25, 8191), (-0.25, -8191),
            (-1e-9, 0), (-0.0, 0), (1.5, 32767), (-1.5, -32768), (2.0, 32767), (-2.0, -32768),
            (.infinity, 32767), (-.infinity, -32768), (.nan, 0),
        ]
        for (x, expected) in table {
            #expect(Int16Conversion.floatingPoint.int16(x) == expected, "\(x)")
        }
        let wrong = Fixture.noise(count: 100_000, seed: 11).filter {
            abs($0) <= 1 && Int16Conversion.floatingPoint.int16($0) != Int16(($0 * 32767).rounded(.towardZero))
        }
        #expect(wrong.isEmpty)
    }

    @Test func lossyCodecRoundsHalfToEvenAndClips() {
        #expect(roundNearest(2.5).1 == 2)
        #expect(roundNearest(3.5).1 == 4)
        #expect(roundNearest(-2.5).1 == -2)
        #expect(roundNearest(-32768).1 == -32768)
        let table: [(Float, Int16)] = [(1.0, 32767), (-1.0, -32767), (1.2, 32767), (-1.2, -32768), (.nan, 0)]
        for (x, expected) in table {
            #expect(Int16Conversion.lossyCodec.int16(x) == expected, "\(x)")
        }
        let wrong = Fixture.noise(count: 100_000, seed: 12).filter {
            abs($0) <= 1 && Int16Conversion.lossyCodec.int16($0) != Int16(($0 * 32767).rounded(.toNearestOrEven))
        }
        #expect(wrong.isEmpty)
    }

    @Test func integerPCMFloorsAnyFloat() {
        #expect(Int16Conversion.integerPCM.int16(.nan) == 0)
        #expect(Int16Conversion.integerPCM.int16(.infinity) == 32767)
        #expect(Int16Conversion.integerPCM.int16(-.infinity) == -32768)
        let wrong = Fixture.noise(count: 100_000, seed: 13).filter {
            abs($0) < 1 && Int16Conversion.integerPCM.int16($0) != Int16(($0 * 32768).rounded(.down))
        }
        #expect(wrong.isEmpty)
    }
}
