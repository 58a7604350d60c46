import CChromaprint
import Foundation

/// libchromaprint's functions, loaded with `dlopen` the first time a fingerprint is made rather
/// than linked: Debian's libchromaprint links libavcodec (for its FFT), and with it about 95
/// shared libraries (video codecs, cairo, X11, …) that cost every segno command some 16 ms of
/// CPU at start-up (dynamic loader relocations), a third of a 10-minute waveform's budget.
/// Loaded once per process, thread-safe (a `static let`). Types match chromaprint.h 1.5.
struct ChromaprintLibrary: @unchecked Sendable {
    let new: @convention(c) (Int32) -> OpaquePointer?
    let free: @convention(c) (OpaquePointer?) -> Void
    let start: @convention(c) (OpaquePointer?, Int32, Int32) -> Int32
    let feed: @convention(c) (OpaquePointer?, UnsafePointer<Int16>?, Int32) -> Int32
    let finish: @convention(c) (OpaquePointer?) -> Int32
    let getRawFingerprint: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafeMutablePointer<UInt32>?>?,
                                           UnsafeMutablePointer<Int32>?) -> Int32
    let encodeFingerprint: @convention(c) (UnsafePointer<UInt32>?, Int32, Int32, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                           UnsafeMutablePointer<Int32>?, Int32) -> Int32
    let dealloc: @convention(c) (UnsafeMutableRawPointer?) -> Void

    /// The library, or why it could not be loaded (a one-line message naming the file).
    static let shared: Result<ChromaprintLibrary, FingerprintError> = load()

    /// The library, or throws `FingerprintError.start` saying why it is missing.
    static func get() throws -> ChromaprintLibrary { try shared.get() }

    static let soname = "libchromaprint.so.1"

    private static func load() -> Result<ChromaprintLibrary, FingerprintError> {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "not found"
            return .failure(.start("cannot load \(soname) (Debian package libchromaprint1): \(why)"))
        }
        func symbol<T>(_ name: String, as type: T.Type) throws(FingerprintError) -> T {
            guard let p = dlsym(handle, name) else { throw .start("\(soname) has no \(name)") }
            return unsafeBitCast(p, to: type)
        }
        do {
            return .success(ChromaprintLibrary(
                new: try symbol("chromaprint_new", as: (@convention(c) (Int32) -> OpaquePointer?).self),
                free: try symbol("chromaprint_free", as: (@convention(c) (OpaquePointer?) -> Void).self),
                start: try symbol("chromaprint_start", as: (@convention(c) (OpaquePointer?, Int32, Int32) -> Int32).self),
                feed: try symbol("chromaprint_feed", as: (@convention(c) (OpaquePointer?, UnsafePointer<Int16>?, Int32) -> Int32).self),
                finish: try symbol("chromaprint_finish", as: (@convention(c) (OpaquePointer?) -> Int32).self),
                getRawFingerprint: try symbol("chromaprint_get_raw_fingerprint", as: (@convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafeMutablePointer<UInt32>?>?, UnsafeMutablePointer<Int32>?) -> Int32).self),
                encodeFingerprint: try symbol("chromaprint_encode_fingerprint", as: (@convention(c) (UnsafePointer<UInt32>?, Int32, Int32, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, UnsafeMutablePointer<Int32>?, Int32) -> Int32).self),
                dealloc: try symbol("chromaprint_dealloc", as: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self)))
        } catch {
            return .failure(error)
        }
    }
}
