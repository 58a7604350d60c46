import Foundation

/// Which sample rate a raw AAC-LC stream (an MP4's `mdat` without its index) was made at, from
/// its frames alone (decision 0068). AAC's band tables tie the bitstream to a *family* of rates:
/// a frame parses only with its family's scale-factor bands (96/88.2, 64, 48/44.1, 32, 24/22.05,
/// 16/12/11.025, 8 kHz), so trial decoding tells the family. Inside a family the frames decode
/// alike; what still tells the rate is the bitrate: encoders aim at a round one (64 kb/s), and
/// the frames' average size gives it only at the true rate (64.2 kb/s at 44.1 kHz is 69.9 kb/s
/// read as 48 kHz).
package enum AACRateChoice {
    /// The families, each with its rates (the first is tried by trial decoding, and is the
    /// guess when nothing else tells).
    static package let families: [[Int]] = [[48000, 44100], [32000], [24000, 22050], [16000, 12000, 11025], [8000], [96000, 88200], [64000]]

    /// Bitrates encoders are set to (kb/s): LAME's and the AAC encoders' usual steps.
    static package let standardKbps: [Double] = [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 192, 224, 256, 288, 320]

    /// How close (relative) an average bitrate must be to a standard one to count as aimed at it.
    static package let tolerance = 0.025

    /// The family of `rate`: the rates whose frames decode alike.
    static package func family(of rate: Int) -> [Int] { families.first { $0.contains(rate) } ?? [rate] }

    /// The stream's average bitrate in kb/s if it was made at `rate` (AAC-LC: 1024 samples a frame).
    static package func kbps(bytesPerFrame: Double, rate: Int) -> Double { bytesPerFrame * 8 * Double(rate) / 1024 / 1000 }

    /// The standard bitrate `kbps` is aimed at, or nil.
    static package func standard(near kbps: Double) -> Double? {
        standardKbps.first { abs(kbps - $0) <= $0 * tolerance }
    }

    /// The rate inside `family` that the bitrate names, with the reason in words; nil when no
    /// rate, or more than one, gives a standard bitrate.
    static package func rate(in family: [Int], bytesPerFrame: Double) -> (rate: Int, why: String)? {
        guard family.count > 1, bytesPerFrame > 0 else { return nil }
        let fits = family.filter { standard(near: kbps(bytesPerFrame: bytesPerFrame, rate: $0)) != nil }
        guard fits.count == 1, let rate = fits.first else { return nil }
        func at(_ r: Int) -> String { String(format: "%.1f kb/s at %d Hz", kbps(bytesPerFrame: bytesPerFrame, rate: r), r) }
        let others = family.filter { $0 != rate }.map(at).joined(separator: ", ")
        return (rate, "the frames average \(at(rate)), an encoder's usual bitrate (\(others) is not)")
    }
}
