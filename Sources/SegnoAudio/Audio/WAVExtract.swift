import Foundation
import SegnoCore
import SegnoDSP

/// audiowaveform's `-o out.wav`: any audio segno reads, decoded to 16-bit PCM WAV at the source's
/// rate and channel count, with no other processing (audiowaveform writes `SF_FORMAT_WAV |
/// SF_FORMAT_PCM_16` through libsndfile; so does this). 16-bit sources come out bit for bit.
public enum WAVExtract {
    /// Decodes `input` (headerless when `raw` describes it) into `output`, which appears only when
    /// complete. Called once per `segno waveform -i IN -o OUT.wav`.
    /// `mp3AsAudiowaveform` decodes MP3 with libmad as audiowaveform does (`AudiowaveformMP3Decoder`).
    public static func run(input: String, tools: AudioTools, raw: SndFileDecoder.RawFormat?, mp3AsAudiowaveform: Bool = false, output: String,
                           isCancelled: () -> Bool = { false }) throws {
        if OutputFile.sameFile(output, input) {
            throw AudioError.refused(path: output, detail: "is the input file; segno never writes over its input")
        }
        let decoder: any AudioDecoder = try raw.map { try SndFileDecoder(path: input, raw: $0) }
            ?? (mp3AsAudiowaveform ? AudiowaveformMP3Decoder.open(path: input, tools: tools) : DecoderFactory.open(path: input, tools: tools))
        defer { decoder.close() }
        let encoder = try SndFileEncoder(path: output, format: .wav, bits: .b16, quality: nil, stream: decoder.info.format)
        var block = AudioBlock(channels: decoder.info.channels, capacity: 4096)
        do {
            while try decoder.read(into: &block, maxFrames: 4096) > 0 {
                if isCancelled() { throw Interrupted() }
                try encoder.write(block)
            }
            try encoder.finish()
        } catch {
            encoder.abandon()
            throw error
        }
    }
}
