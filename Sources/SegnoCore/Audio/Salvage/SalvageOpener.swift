import Foundation

/// Picks the salvaging decoder for a damaged recording (`damaged: salvage`): PCM in WAV/RF64/AIFF/CAF
/// whose data size runs past the end of the file or was never written, FLAC through libFLAC
/// (resynchronising on the next frame header), MP3 through libmpg123 reading past junk and
/// errors. Everything else (and a healthy PCM file) opens the ordinary way.
enum SalvageOpener {
    /// A salvaging decoder for `path`, or nil to open it the ordinary way. `kind` is what its
    /// first bytes look like. Called once per recording (per pass), before the ordinary open.
    static func open(path: String, kind: ContentSniffer.Kind) throws -> (any AudioDecoder)? {
        switch kind {
        case .wav, .rf64, .aiff, .caf:
            guard let layout = PCMLayout.read(path: path), layout.damage != nil else { return nil }
            return try SalvagedPCMDecoder(path: path, layout: layout)
        case .flac:
            return try FLACSalvageDecoder(path: path)
        case .mp3:
            do { return try Mpg123Decoder(path: path, salvage: true) } catch let e as AudioError {
                guard case .unrecognised = e else { throw e }
                return nil
            }
        default:
            return nil
        }
    }
}
