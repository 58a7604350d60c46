import CSpeechEngines
import Foundation
import SegnoAudio
import SegnoCore

/// Finds speech in 16 kHz mono audio as it streams in. Owned by one recording.
package protocol VoiceDetector: AnyObject {
    /// Feeds `count` samples (16 kHz mono, [-1, 1]). Called for each block, in order.
    func accept(_ samples: UnsafePointer<Float>, count: Int)
    /// Called once after the last samples: every segment still open is closed.
    func flush()
    /// Appends the speech segments found since the last call ([start, end) in 16 kHz samples, in order).
    func takeSegments(into segments: inout [Range<Int>])
    /// Every speech segment that starts before this sample (16 kHz) has been reported.
    var decided: Int { get }
}

/// The `pauses` stage's voice activity detectors.
public enum VoiceActivityEngine: String, Sendable, CaseIterable {
    /// Silero VAD v6 (PyPI `silero-vad`'s ONNX model) through sherpa-onnx's C API (PyPI `sherpa-onnx-core`).
    case silero
    /// WebRTC's VAD from Debian's `libwebrtc-audio-processing1`, no model.
    case webrtc

    public static let standard = VoiceActivityEngine.silero
    static package let rate = 16_000

    package var summary: String {
        switch self {
        case .silero: return "Silero VAD v6 (PyPI silero-vad 6.2.3) through sherpa-onnx's C API (PyPI sherpa-onnx-core 2.0.1), loaded at run time"
        case .webrtc: return "WebRTC VAD (Debian libwebrtc-audio-processing1), loaded at run time, no model"
        }
    }

    package func libraryPath(_ locator: SpeechLocator) -> String? {
        switch self {
        case .silero:
            guard locator.locate("silero_vad/data/silero_vad.onnx") != nil else { return nil }
            return locator.locate("sherpa_onnx/lib/libsherpa-onnx-c-api.so")
        case .webrtc:
            return ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"]
                .map { $0 + "/libwebrtc_audio_processing.so.1" }.first { FileManager.default.fileExists(atPath: $0) }
        }
    }

    /// A fresh detector for one recording; `SpeechError.missing` when not installed.
    package func make(locator: SpeechLocator) throws(SpeechError) -> any VoiceDetector {
        switch self {
        case .silero: return try SileroDetector(locator: locator)
        case .webrtc:
            guard let path = libraryPath(locator) else {
                throw .missing(engine: "voice activity (webrtc)", what: "libwebrtc_audio_processing.so.1 (Debian libwebrtc-audio-processing1)", hint: SpeechLocator.installHint)
            }
            return try WebRTCDetector(path: path)
        }
    }
}

/// Silero VAD through sherpa-onnx's `SherpaOnnxVoiceActivityDetector`: fed 512-sample windows,
/// it queues speech segments with their absolute start once min_silence_duration of silence
/// closes them (or max_speech_duration splits them).
final package class SileroDetector: VoiceDetector {
    package typealias Create = @convention(c) (UnsafePointer<SegnoVadModelConfig>?, Float) -> OpaquePointer?
    package typealias Handle = @convention(c) (OpaquePointer?) -> Void
    package typealias Query = @convention(c) (OpaquePointer?) -> Int32
    package typealias Accept = @convention(c) (OpaquePointer?, UnsafePointer<Float>?, Int32) -> Void
    package typealias Front = @convention(c) (OpaquePointer?) -> UnsafePointer<SegnoSpeechSegment>?
    package typealias FreeSegment = @convention(c) (UnsafePointer<SegnoSpeechSegment>?) -> Void
    static package let window = 512
    /// Silence that ends a segment, and speech that starts one, in seconds.
    static package let minSilence: Float = 0.25
    static package let minSpeech: Float = 0.1
    /// While no speech is detected, samples older than this are final (the detector's onset latency, generously).
    static package let lag = 8000

    private let vad: OpaquePointer
    private let acceptWaveform: Accept
    private let empty: Query, detected: Query
    private let front: Front, pop: Handle, freeSegment: FreeSegment, flushVAD: Handle, destroy: Handle, resetVAD: Handle
    private var fed = 0
    private var reported = 0
    private(set) package var decided = 0
    private var window = [Float](repeating: 0, count: SileroDetector.window)
    private var filled = 0
    private var found: [Range<Int>] = []

    package init(locator: SpeechLocator) throws(SpeechError) {
        let engine = "voice activity (silero)"
        let libPath = try locator.require("sherpa_onnx/lib/libsherpa-onnx-c-api.so", engine: engine, package: "sherpa-onnx-core")
        let model = try locator.require("silero_vad/data/silero_vad.onnx", engine: engine, package: "silero-vad")
        let lib = try DynamicLibrary(path: libPath, engine: engine)
        let create = try lib.function("SherpaOnnxCreateVoiceActivityDetector", as: Create.self)
        acceptWaveform = try lib.function("SherpaOnnxVoiceActivityDetectorAcceptWaveform", as: Accept.self)
        empty = try lib.function("SherpaOnnxVoiceActivityDetectorEmpty", as: Query.self)
        detected = try lib.function("SherpaOnnxVoiceActivityDetectorDetected", as: Query.self)
        front = try lib.function("SherpaOnnxVoiceActivityDetectorFront", as: Front.self)
        pop = try lib.function("SherpaOnnxVoiceActivityDetectorPop", as: Handle.self)
        freeSegment = try lib.function("SherpaOnnxDestroySpeechSegment", as: FreeSegment.self)
        flushVAD = try lib.function("SherpaOnnxVoiceActivityDetectorFlush", as: Handle.self)
        destroy = try lib.function("SherpaOnnxDestroyVoiceActivityDetector", as: Handle.self)
        resetVAD = try lib.function("SherpaOnnxVoiceActivityDetectorReset", as: Handle.self)
        let made: OpaquePointer? = model.withCString { m in
            "cpu".withCString { cpu in
                var config = SegnoVadModelConfig()
                config.silero_vad = SegnoSileroVadConfig(model: m, threshold: 0.5, min_silence_duration: Self.minSilence,
                                                         min_speech_duration: Self.minSpeech, window_size: Int32(Self.window),
                                                         max_speech_duration: 10)
                config.sample_rate = Int32(VoiceActivityEngine.rate)
                config.num_threads = 1
                config.provider = cpu
                return create(&config, 60)
            }
        }
        guard let made else { throw .failed(engine: engine, message: "the model \(model) did not load") }
        vad = made
    }

    deinit { destroy(vad) }

    /// Makes the detector as a freshly loaded one (the model's state, sherpa's queue and this
    /// object's counts cleared), for the next recording (`VoiceDetectorPool`). Called between
    /// recordings, never during one.
    package func reset() {
        resetVAD(vad)
        fed = 0
        reported = 0
        decided = 0
        filled = 0
        found.removeAll(keepingCapacity: true)
    }

    package func accept(_ samples: UnsafePointer<Float>, count: Int) {
        var i = 0
        while i < count {
            let n = min(Self.window - filled, count - i)
            window.withUnsafeMutableBufferPointer { w in (w.baseAddress! + filled).update(from: samples + i, count: n) }
            filled += n
            i += n
            if filled == Self.window {
                window.withUnsafeBufferPointer { acceptWaveform(vad, $0.baseAddress, Int32(Self.window)) }
                fed += Self.window
                filled = 0
                collect()
                if detected(vad) == 0 { decided = max(decided, fed - Self.lag) }
            }
        }
    }

    package func flush() {
        if filled > 0 {
            window.withUnsafeBufferPointer { acceptWaveform(vad, $0.baseAddress, Int32(filled)) }
            fed += filled
            filled = 0
        }
        flushVAD(vad)
        collect()
        decided = Int.max
    }

    /// Moves finished segments from sherpa's queue into `found`.
    private func collect() {
        while empty(vad) == 0 {
            if let s = front(vad) {
                let start = max(Int(s.pointee.start), reported)
                let end = Int(s.pointee.start) + Int(s.pointee.n)
                if end > start { found.append(start..<end) }
                reported = max(reported, end)
                decided = max(decided, end)
                freeSegment(s)
            }
            pop(vad)
        }
    }

    package func takeSegments(into segments: inout [Range<Int>]) {
        segments.append(contentsOf: found)
        found.removeAll(keepingCapacity: true)
    }
}

/// WebRTC's VAD (`WebRtcVad_Create`, `_Init`, `_set_mode`, `_Process`, `_Free`, no header
/// shipped): one decision per 30 ms int16 frame; runs of speech frames less than 300 ms apart
/// are one segment.
final package class WebRTCDetector: VoiceDetector {
    static package let frame = 480
    static package let hangover = 10
    private let handle: OpaquePointer
    private let process: @convention(c) (OpaquePointer?, Int32, UnsafePointer<Int16>?, Int) -> Int32
    private let free: @convention(c) (OpaquePointer?) -> Void
    private var pcm = [Int16](repeating: 0, count: WebRTCDetector.frame)
    private var filled = 0
    private var position = 0
    private var runStart: Int?
    private var lastSpeechEnd = 0
    private var silentFrames = 0
    private(set) package var decided = 0
    private var found: [Range<Int>] = []

    package init(path: String) throws(SpeechError) {
        let engine = "voice activity (webrtc)"
        let lib = try DynamicLibrary(path: path, engine: engine)
        let create = try lib.function("WebRtcVad_Create", as: (@convention(c) () -> OpaquePointer?).self)
        let initialise = try lib.function("WebRtcVad_Init", as: (@convention(c) (OpaquePointer?) -> Int32).self)
        let setMode = try lib.function("WebRtcVad_set_mode", as: (@convention(c) (OpaquePointer?, Int32) -> Int32).self)
        process = try lib.function("WebRtcVad_Process", as: (@convention(c) (OpaquePointer?, Int32, UnsafePointer<Int16>?, Int) -> Int32).self)
        free = try lib.function("WebRtcVad_Free", as: (@convention(c) (OpaquePointer?) -> Void).self)
        guard let h = create(), initialise(h) == 0, setMode(h, 2) == 0 else {
            throw .failed(engine: engine, message: "WebRtcVad_Create/Init failed")
        }
        handle = h
    }

    deinit { free(handle) }

    package func accept(_ samples: UnsafePointer<Float>, count: Int) {
        for i in 0..<count {
            pcm[filled] = Int16(max(-32768, min(32767, (samples[i] * 32768).rounded())))
            filled += 1
            if filled == Self.frame { decide(pcm.withUnsafeBufferPointer { process(handle, 16000, $0.baseAddress, Self.frame) } == 1) }
        }
    }

    private func decide(_ speech: Bool) {
        filled = 0
        let start = position
        position += Self.frame
        if speech {
            if runStart == nil { runStart = start }
            lastSpeechEnd = position
            silentFrames = 0
        } else if let s = runStart {
            silentFrames += 1
            if silentFrames >= Self.hangover { found.append(s..<lastSpeechEnd); runStart = nil }
        }
        decided = runStart ?? position
    }

    package func flush() {
        if let s = runStart { found.append(s..<lastSpeechEnd); runStart = nil }
        decided = Int.max
    }

    package func takeSegments(into segments: inout [Range<Int>]) {
        segments.append(contentsOf: found)
        found.removeAll(keepingCapacity: true)
    }
}
