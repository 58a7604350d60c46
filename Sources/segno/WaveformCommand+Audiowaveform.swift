import ArgumentParser
import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState
import SegnoWaveform

/// audiowaveform's own form of `segno waveform` (`-i`/`-o`/`--input-format`/`--output-format`):
/// which input and output formats go together, and the two outputs only this form writes
/// (audio as WAV, waveform data as text).
extension WaveformCommand {
    static let awfAudio: Set<String> = ["wav", "mp3", "flac", "ogg", "opus", "raw"]
    static let awfData: Set<String> = ["dat", "json"]

    /// The input's format: --input-format, else the name's extension; a name segno does not
    /// know by extension is audio (segno reads it by its content).
    var awfInputFormat: String {
        if let inputFormat { return inputFormat }
        let ext = ((allInputs.first ?? "") as NSString).pathExtension.lowercased()
        if Self.awfAudio.contains(ext) || Self.awfData.contains(ext) || ext == "txt" { return ext }
        return ext == "oga" ? "ogg" : "audio"
    }

    /// The output's format: --output-format (or --format), else -o's extension.
    var awfOutputFormat: String? {
        if let f = outputFormat ?? format { return f }
        guard let o = output ?? outputFilename, o != "-" else { return nil }
        let ext = (o as NSString).pathExtension.lowercased()
        return ext.isEmpty ? nil : ext
    }

    /// True when the input is headerless audio: --input-format raw, or a `.raw` name in audiowaveform's form.
    var readsRaw: Bool { inputFormat == "raw" || (awfForm && awfInputFormat == "raw") }

    /// True when a zoom is asked for (audiowaveform then rescales data instead of converting it).
    var resamples: Bool { zoom != nil || pixelsPerSecond != nil || end != nil || zooms != nil || points != nil }

    /// audiowaveform's table of what it makes from what; anything else fails as it does.
    func checkAudiowaveformForm() throws {
        if inputFilename.count + inputs.count > 1 { throw ValidationError("the audiowaveform form (-i) takes one input") }
        if let inputFormat, !(Self.awfAudio.contains(inputFormat) || Self.awfData.contains(inputFormat) || inputFormat == "txt") {
            throw ValidationError("--input-format must be wav, mp3, flac, ogg, opus, raw, dat or json")
        }
        guard let out = awfOutputFormat else {
            if outputName == "-" { throw ValidationError("writing standard output (-o -) needs --output-format (dat, json, txt, png or wav)") }
            throw ValidationError("give an output: -o FILE, or --output-format to write standard output")
        }
        let input = awfInputFormat
        let audio = Self.awfAudio.contains(input) || input == "audio"
        let data = Self.awfData.contains(input)
        let possible: Bool
        switch out {
        case "wav": possible = audio && input != "wav"
        case "dat", "json", "png", "svg": possible = audio || data
        case "levels": possible = audio
        case "txt": possible = data && !resamples
        default: possible = false
        }
        if !possible {
            let why = out == "wav" && input == "wav" ? " (it is WAV already)"
                : out == "txt" && data ? " with a zoom (txt converts data at its own zoom)" : ""
            throw ValidationError("can't generate \(out) format output from \(input == "audio" ? "this" : input) format input\(why)")
        }
    }

    /// A usage error: this command's usage line, exit 2 — or 1 in the audiowaveform form, as
    /// audiowaveform fails every way with 1.
    func usageFailure(_ message: String) -> ExitCode {
        let code = Self.usage(message)
        return awfForm ? Exit.failures : code
    }

    /// `-o OUT.wav` / `--output-format wav`: the input audio as 16-bit WAV (audiowaveform's conversion).
    func runWAV(input: String, output: String, spool: String?) throws {
        let target = output == "-" ? (spool ?? Self.makeSpool()) + "/stdout.wav" : output
        if output != "-" { try refuseForeign(target) }
        let watcher = SignalWatcher()
        do {
            try WAVExtract.run(input: input, tools: ProcessContext.tools, raw: readsRaw ? try rawInput() : nil, mp3AsAudiowaveform: awfInputFormat == "mp3", output: target,
                               isCancelled: { watcher.flag.isStopped })
        } catch is Interrupted {
            throw watcher.flag.signal == SIGTERM ? Exit.sigterm : Exit.sigint
        } catch {
            printError("segno: " + AudioError.salvageWording("\(error)", for: .flag))
            throw Exit.failures
        }
        if output == "-" {
            do { try ConvertCommand.copy(fromFile: target, to: 1) } catch { printError("segno: writing standard output: \(error)"); throw Exit.failures }
        }
    }

    /// `--output-format txt` / `-o OUT.txt`: waveform data as audiowaveform's text, at the data's
    /// zoom and its bit depth unless -b is given.
    func runText(input: String, output: String) throws {
        do {
            guard let bytes = FileManager.default.contents(atPath: input) else { throw AudioError.unreadable(path: input, reason: "cannot read") }
            var data: WaveformData
            do {
                data = awfInputFormat == "dat" ? try WaveformDat.decode(Array(bytes)) : try WaveformJSON.decode(Array(bytes))
            } catch { throw AudioError.unrecognised(path: input, looksLike: nil, detail: "not audiowaveform \(awfInputFormat) data: \(error)") }
            if let bits { data = try data.converted(toBits: bits) }
            let text = WaveformText.encode(data)
            if output == "-" {
                try FileHandle.standardOutput.write(contentsOf: Data(text))
            } else {
                try refuseForeign(output)
                try OutputFile.write(text, to: output)
            }
        } catch let e as ExitCode {
            throw e
        } catch {
            printError("segno: \(error)")
            throw Exit.failures
        }
    }

    /// Never over a file segno did not write (its `user.segno` mark) unless --overwrite, and
    /// never into a folder that does not exist.
    func refuseForeign(_ path: String) throws {
        if let dir = missingFolder(of: path) {
            printError("segno: \(AudioError.quoted(path)): its folder \(AudioError.quoted(dir)) does not exist; segno creates no folder for -o")
            throw Exit.failures
        }
        if !overwrite, OutputFile.exists(path), !OutputFile.isMarked(path) {
            printError("segno: \(AudioError.quoted(path)) exists and segno did not write it; add --overwrite to replace it")
            throw Exit.failures
        }
    }

    /// A private temporary folder (removed by the caller).
    static func makeSpool() -> String {
        var t = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("segno-waveform-XXXXXX").utf8CString)
        guard let made = mkdtemp(&t) else { return NSTemporaryDirectory() }
        return String(cString: made)
    }
}
