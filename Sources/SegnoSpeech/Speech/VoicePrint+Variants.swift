import SegnoCore

/// A print's vectors (decision 0086): `VoicePrint.vector` holds them one after another, each
/// L2-normed and `dimension` floats long, the first from the speech as enrolled, the others from
/// that speech mixed with `EnrolmentNoise.conditions`. The stores keep the BLOB as it is, so no
/// migration: a print enrolled before decision 0086 has the first only, and a segno that knows one
/// vector only reads the first (`Diarizer.cosine` takes the shorter length).
extension VoicePrint {
    /// Floats in one print (the GE2E encoder's 256).
    package static let dimension = 256

    /// The prints of `vector`, the one from the speech as enrolled first. A vector that is not a
    /// whole number of `dimension`-float prints is one print.
    package var vectors: [[Float]] {
        guard vector.count > Self.dimension, vector.count % Self.dimension == 0 else { return [vector] }
        return stride(from: 0, to: vector.count, by: Self.dimension).map { Array(vector[$0..<($0 + Self.dimension)]) }
    }
}
