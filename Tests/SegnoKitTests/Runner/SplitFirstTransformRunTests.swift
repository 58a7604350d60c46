import Foundation
@testable import SegnoKit
import Testing

/// A split recording whose chain begins with transforms (decision 0085, amended): the first one
/// runs on the decoder's thread. Through the real runner and stages, every output must still be
/// byte for byte the one-thread run's, with a filter, a pitch shift (a tail, the frame count
/// changed) or a resampler first, before the measuring pass of `normalize` and taps at several
/// places; and a chain beginning with a lone transform or with `normalize` too.
extension SplitRunTests {
    static let transformsFirst: [[String]] = [
        ["highpass: { frequency: 80 }", "lowpass: { frequency: 3000 }", "waveform: { path: \"{stem}.mid.json\" }",
         "resample: { rate: 16000 }", "normalize: { loudness: -16 }",
         "encode: { path: \"{stem}.flac\" }", "encode: { path: \"{stem}.mp3\", bitrate: 64 }", "waveform: { path: \"{stem}.json\" }"],
        ["pitch: { semitones: -3 }", "highpass: { frequency: 80 }", "encode: { path: \"{stem}.wav\", bits: 16 }", "waveform: { path: \"{stem}.dat\", bits: 16 }"],
        ["resample: { rate: 22050 }", "lowpass: { frequency: 4000 }", "encode: { path: \"{stem}.flac\" }"],
        ["normalize: { loudness: -20 }", "highpass: { frequency: 120 }", "encode: { path: \"{stem}.flac\" }"],
        ["lowpass: { frequency: 2000 }", "encode: { path: \"{stem}.flac\" }", "waveform: { path: \"{stem}.json\" }"],
    ]

    @Test func chainsBeginningWithTransformsGiveTheOneThreadBytesWhenSplit() throws {
        source.put("talk.wav", seconds: 9, channels: 2)
        for chain in Self.transformsFirst {
            let (split, a) = try run(chain)
            let (single, b) = try run(chain, split: "off")
            #expect(split.done == 1 && single.done == 1, "\(chain): \(split.results) \(single.results)")
            #expect(split.results.first?.split == true && single.results.first?.split == false)
            let x = try outputs(a), y = try outputs(b)
            #expect(!x.isEmpty && x.keys.sorted() == y.keys.sorted(), "\(chain)")
            for (name, bytes) in x {
                #expect(bytes.count > 100, "\(name)")
                #expect(bytes == y[name], "\(name) differs between the split and the one-thread run of \(chain)")
            }
        }
    }

    @Test func aFailingDecoderUnderAFirstTransformFailsTheSplitRecordingAndLeavesNoFile() throws {
        source.put("damaged.wav", seconds: 9, failAfter: 40_000)
        let (summary, dir) = try run(Self.transformsFirst[0])
        #expect(summary.failed == 1 && summary.results.first?.split == true)
        #expect(summary.results.first?.error?.contains("failure injected after 40000 frames") == true, "\(summary.results)")
        #expect(try outputs(dir).isEmpty)
    }
}
