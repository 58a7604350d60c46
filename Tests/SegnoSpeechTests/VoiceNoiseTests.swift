import Foundation
import SegnoCore
import SegnoCoreTestSupport
@testable import SegnoSpeech
import Testing

/// Names that hold in noise (decision 0086): prints enrolled from the speech as it is and mixed
/// with white and brown noise, matched at a higher threshold than the first.
@Suite struct VoiceNoiseTests {
    /// A 256-float unit vector along axis `a`, turned towards axis `b` until its cosine with axis
    /// `a` is `cos` (so its cosine with `b` is √(1 − cos²)).
    static func vector(_ a: Int, towards b: Int = 255, cos: Float = 1) -> [Float] {
        var v = [Float](repeating: 0, count: VoicePrint.dimension)
        v[a] = cos
        v[b] += (1 - cos * cos).squareRoot()
        return v
    }

    @Test func aPrintsNoisyVectorsCountFromTheHigherThreshold() {
        let clean = Self.vector(0), noisy = Self.vector(1)
        let ann = VoicePrint(name: "Ann", vector: clean + noisy, files: 1, seconds: 9, enrolledAt: 0)
        #expect(ann.vectors == [clean, noisy])
        #expect(VoiceBook.threshold < VoiceBook.noisyThreshold)
        let between = (VoiceBook.threshold + VoiceBook.noisyThreshold) / 2
        // Like the clean vector at a cosine between the thresholds: named; like the noisy one there: not.
        #expect(VoiceBook.names([Self.vector(0, cos: between)], prints: [ann]) == ["Ann"])
        #expect(VoiceBook.names([Self.vector(1, cos: between)], prints: [ann]) == [nil])
        #expect(VoiceBook.names([Self.vector(1, cos: VoiceBook.noisyThreshold + 0.01)], prints: [ann]) == ["Ann"])
        // The most similar vector of all prints wins, clean or noisy: Bo's clean vector is 0.9 like Ann's noisy one.
        let boClean = Self.vector(1, towards: 254, cos: 0.9)
        let bo = VoicePrint(name: "Bo", vector: boClean + Self.vector(2), files: 1, seconds: 9, enrolledAt: 0)
        #expect(VoiceBook.names([noisy, boClean], prints: [ann, bo]) == ["Ann", "Bo"])
        // A print enrolled before decision 0086 (one vector) and an odd length are one print each.
        #expect(VoicePrint(name: "Old", vector: clean, files: 1, seconds: 1, enrolledAt: 0).vectors == [clean])
        #expect(VoicePrint(name: "Odd", vector: [Float](repeating: 0.1, count: 300), files: 1, seconds: 1, enrolledAt: 0).vectors.count == 1)
        // The book's digest covers the noisy threshold as well as the prints (a changed threshold names the archive again).
        #expect(VoiceBook.digest([ann]) != VoicePrint.digest([ann], threshold: VoiceBook.threshold))
        #expect(VoiceBook.digest([ann]) == VoiceBook.digest([ann]) && VoiceBook.digest([ann]) != VoiceBook.digest([bo]))
    }

    @Test func theNoiseHasItsLevelAndColour() {
        // A 1 kHz tone of mean square 0.02 as the "speech", 10 s at 16 kHz.
        let x = (0..<160_000).map { Float(0.2 * sin(2 * Double.pi * 1000 * Double($0) / 16000)) }
        for condition in EnrolmentNoise.conditions {
            var g = condition.generator(power: 0.02, seed: 7)
            var out: [Float] = []
            x.withUnsafeBufferPointer { g.mix($0, into: &out) }
            let noise: [Double] = zip(out, x).map { Double($0 - $1) }
            let power = noise.reduce(0.0) { $0 + $1 * $1 } / Double(noise.count)
            let snr = 10 * log10(0.02 / power)
            #expect(abs(snr - condition.snr) < 0.5, "\(condition): \(snr) dB")
            // The colour: pink falls 3 dB and brown 6 dB per octave, so the power of the
            // sample-to-sample difference (a high-pass) is a known share of the whole.
            var squares = 0.0
            for i in 1..<noise.count { squares += (noise[i] - noise[i - 1]) * (noise[i] - noise[i - 1]) }
            let diff = squares / Double(noise.count - 1) / power
            if condition.colour == .brown { #expect(diff < 0.02, "\(condition): \(diff)") } else { #expect(diff > 0.1 && diff < 0.6, "\(condition): \(diff)") }
            var again = condition.generator(power: 0.02, seed: 7), twice: [Float] = []
            x.withUnsafeBufferPointer { again.mix($0, into: &twice) }
            #expect(twice == out, "the same seed gives the same noise")
        }
    }

    /// Pink noise (Paul Kellet's economy filter over uniform white noise): the colour of the
    /// quality measurement's noise; the enrolment's pink noise is another filter and seed.
    static func pink(_ n: Int, seed: UInt64) -> [Float] {
        var rng = SplitMix64(seed: seed)
        var b0: Float = 0, b1: Float = 0, b2: Float = 0
        return (0..<n).map { _ in
            let w = Float.random(in: -1...1, using: &rng)
            b0 = 0.99765 * b0 + w * 0.0990460
            b1 = 0.96300 * b1 + w * 0.2965164
            b2 = 0.57000 * b2 + w * 1.0526913
            return b0 + b1 + b2 + w * 0.1848
        }
    }

    /// Allison enrolled from clean prompts; a conversation of hers with the LibriVox reader under
    /// pink noise at 10 dB SNR (the quality measurement's condition): her turns carry her name, the
    /// reader's none; her clean print alone names less of her there (decision 0075 measured 6.8 %),
    /// so the noisy prints are what names her.
    @Test func aNameEnrolledFromCleanSpeechHoldsInPinkNoise() throws {
        let allison = ["call-forwarding", "call-waiting", "cannot-complete-as-dialed", "check-number-dial-again", "conf-adminmenu", "conf-errormenu"]
            .map { Voices.allison + $0 + ".wav" }
        let (enrolment, _) = try Voices.conversation([(0, allison)])
        let config = SpeakersStageTests.config()
        let print = try VoiceEnroller(helpers: config.helpers).enroll(name: "Allison", files: [("allison.wav", { MemoryDecoder(enrolment, channels: 1, rate: 16000) })])
        #expect(print.vectors.count == 1 + EnrolmentNoise.conditions.count && print.vectors.allSatisfy { $0.count == VoicePrint.dimension })
        for v in print.vectors { #expect(abs(v.reduce(0) { $0 + $1 * $1 } - 1) < 1e-3, "L2-normed") }
        #expect(print.vectors.dropFirst().allSatisfy { Diarizer.cosine($0, print.vectors[0]) < 0.99 }, "the noisy prints differ from the clean one")

        let (clean, truth) = try Voices.conversation([(0, [Voices.a[0]]), (1, Array(Voices.d[0..<4])), (0, [Voices.a[1]]), (1, Array(Voices.d[4..<8]))])
        let noise = Self.pink(clean.count, seed: 30)
        let gain = Float((clean.reduce(0.0) { $0 + Double($1 * $1) } / noise.reduce(0.0) { $0 + Double($1 * $1) } / 10).squareRoot())
        let audio = zip(clean, noise).map { $0 + gain * $1 }

        func named(_ p: VoicePrint) throws -> [Double] {
            let store = MemoryVoices()
            try store.enroll(p)
            _ = try config.prepareVoices(store: store, stage: "speakers:x", outputRoot: "/nowhere") { _ in nil }
            let r = try VoiceNamingTests.run(audio, config)
            let json = try JSONSerialization.jsonObject(with: Data(r.json.utf8)) as? [[String: Any]] ?? []
            let turns = json.filter { ($0["name"] as? String) == "Allison" }.map { (($0["start"] as? Double) ?? 0, ($0["end"] as? Double) ?? 0) }
            // The share of each truth turn under turns named Allison.
            return truth.map { t in
                let a = Double(t.range.lowerBound) / 16000, b = Double(t.range.upperBound) / 16000
                return turns.reduce(0.0) { $0 + max(0, min($1.1, b) - max($1.0, a)) } / (b - a)
            }
        }
        let withNoise = try named(print)
        #expect(withNoise[1] >= 0.9 && withNoise[3] >= 0.9, "Allison's turns named: \(withNoise)")
        #expect(withNoise[0] <= 0.1 && withNoise[2] <= 0.1, "the reader's turns named: \(withNoise)")
        let cleanOnly = try named(VoicePrint(name: "Allison", vector: print.vectors[0], files: 1, seconds: print.seconds, enrolledAt: 0))
        #expect(cleanOnly[1] + cleanOnly[3] < withNoise[1] + withNoise[3], "clean print alone: \(cleanOnly)")
    }
}
