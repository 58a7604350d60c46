import Foundation
import Testing

@testable import SegnoDSP

struct FFTTests {
    /// Deterministic test signal: a few tones plus pseudo-random noise.
    private func signal(_ n: Int, seed: UInt64) -> [Float] {
        var state = seed
        return (0..<n).map { t in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let noise = Double(Int64(bitPattern: state >> 11) % 1_000_000) / 1_000_000.0
            return Float(0.5 * sin(0.3 * Double(t)) + 0.2 * cos(1.7 * Double(t) + 0.4) + 0.3 * noise)
        }
    }

    /// The textbook O(n²) DFT in Double, bins 0…n/2.
    private func naiveDFT(_ x: [Float]) -> (re: [Double], im: [Double]) {
        let n = x.count
        var re = [Double](repeating: 0, count: n / 2 + 1)
        var im = re
        for k in 0...(n / 2) {
            var sr = 0.0, si = 0.0
            for t in 0..<n {
                let a = -2.0 * Double.pi * Double(k * t % n) / Double(n)
                sr += Double(x[t]) * cos(a)
                si += Double(x[t]) * sin(a)
            }
            re[k] = sr
            im[k] = si
        }
        return (re, im)
    }

    @Test("forward matches a naive DFT", arguments: [4, 8, 16, 32, 64, 128, 512, 1024, 2048])
    func forwardMatchesNaiveDFT(size: Int) {
        let fft = RealFFT(size: size)
        let x = signal(size, seed: UInt64(size))
        var re = [Float](repeating: 0, count: size / 2 + 1)
        var im = re
        var scratch = [Float](repeating: 0, count: fft.scratchCount)
        x.withUnsafeBufferPointer { xp in
            fft.forward(xp.baseAddress!, real: &re, imag: &im, scratch: &scratch)
        }
        let ref = naiveDFT(x)
        let scale = ref.re.indices.map { hypot(ref.re[$0], ref.im[$0]) }.max()!
        var worst = 0.0
        for k in ref.re.indices {
            worst = max(worst, hypot(Double(re[k]) - ref.re[k], Double(im[k]) - ref.im[k]))
        }
        #expect(worst / scale < 1e-5, "size \(size): relative error \(worst / scale)")
    }

    @Test("inverse of forward returns size times the input", arguments: [4, 8, 32, 256, 4096, 8192])
    func roundTrip(size: Int) {
        let fft = RealFFT(size: size)
        let x = signal(size, seed: 7)
        var re = [Float](repeating: 0, count: size / 2 + 1)
        var im = re
        var y = [Float](repeating: 0, count: size)
        var scratch = [Float](repeating: 0, count: fft.scratchCount)
        x.withUnsafeBufferPointer { xp in
            fft.forward(xp.baseAddress!, real: &re, imag: &im, scratch: &scratch)
        }
        fft.inverse(real: re, imag: im, output: &y, scratch: &scratch)
        var worst: Float = 0
        for t in 0..<size { worst = max(worst, abs(y[t] / Float(size) - x[t])) }
        #expect(worst < 1e-5, "size \(size): max error \(worst)")
    }

    @Test("a pure cosine lands in one bin")
    func cosineLandsInOneBin() {
        let size = 1024
        let fft = RealFFT(size: size)
        let x = (0..<size).map { Float(cos(2 * Double.pi * 37 * Double($0) / Double(size))) }
        var re = [Float](repeating: 0, count: size / 2 + 1)
        var im = re
        var scratch = [Float](repeating: 0, count: fft.scratchCount)
        fft.forward(x, real: &re, imag: &im, scratch: &scratch)
        #expect(abs(re[37] - Float(size / 2)) < 1e-2)
        for k in re.indices where k != 37 {
            #expect(hypot(re[k], im[k]) < 1e-2)
        }
    }
}
