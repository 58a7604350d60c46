import Foundation
import SegnoDSP
@testable import SegnoWaveform

/// Golden files in `Fixtures/`, found next to this source file (not SwiftPM resources).
enum Fixture {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
    }

    /// Runs a generator over interleaved frames fed in blocks of `blockFrames`.
    static func generate(
        _ samples: [Float], channels: Int, rate: Int, spp: [Int], mode: WaveformChannels = .mix,
        conversion: Int16Conversion = .integerPCM, bits: Int = 16, blockFrames: Int = 4096
    ) throws -> [WaveformData] {
        var g = try PeakGenerator(format: AudioFormat(sampleRate: rate, channels: channels),
                                  samplesPerPixel: spp, channels: mode, conversion: conversion)
        let frames = samples.count / channels
        var f = 0
        while f < frames {
            let n = min(blockFrames, frames - f)
            let block = AudioBlock(interleaved: Array(samples[(f * channels)..<((f + n) * channels)]),
                                   channels: channels)
            try g.process(block)
            f += n
        }
        return try g.finish(bits: bits)
    }

    /// int16 values as the floats libsndfile's sf_read_float gives for 16-bit PCM.
    static func floats16(_ values: [Int]) -> [Float] { values.map { Float($0) / 32768 } }

    /// Deterministic pseudo-random floats in [−1.1, 1.1] (some beyond full scale).
    static func noise(count: Int, seed: UInt64 = 1) -> [Float] {
        var s = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<count).map { _ in
            s ^= s << 13; s ^= s >> 7; s ^= s << 17
            return (Float(s >> 40) / Float(1 << 24) * 2 - 1) * 1.1
        }
    }
}
