import Foundation
import SegnoCore

/// What decoding and fingerprinting take from the process: the `segno-decode` helper pools and
/// the `PATH` in which `ffmpeg` and `ffprobe` are looked for. Made once by whoever runs the job
/// (the command line, a test) from the environment it read, passed down to sources, stages and
/// one-off commands, and shut down by its maker before the process exits. The library holds no
/// pool of its own.
public final class AudioTools: Sendable {
    /// The pool decoders take helpers from (an empty pool when `SEGNO_DECODE_HELPER=off`).
    public let helpers: DecodeHelperPool
    /// The pool fingerprints use: `helpers`, unless decoding through the helper was turned off —
    /// fingerprints then still use the helper found beside segno or on `PATH` (there is no
    /// `ffmpeg`-program path for them), in a pool of their own.
    public let fingerprintHelpers: DecodeHelperPool
    /// `PATH` as the environment gave it; nil when unset.
    public let searchPath: String?

    /// Tools for `environment` (`SEGNO_DECODE_HELPER`, `PATH`). Costs a few `stat` calls; starts
    /// no process (helpers start on the first decode that needs one).
    public init(environment: [String: String]) {
        helpers = DecodeHelperPool(executable: DecodeHelperPool.locate(environment: environment))
        if helpers.executable == nil, environment[DecodeHelperPool.environmentVariable] != nil {
            fingerprintHelpers = DecodeHelperPool(executable: DecodeHelperPool.locateForFingerprints(environment: environment))
        } else {
            fingerprintHelpers = helpers
        }
        searchPath = environment["PATH"]
    }

    /// Tools with the given pools (tests: a pool with a chosen program, or none).
    public init(helpers: DecodeHelperPool, fingerprintHelpers: DecodeHelperPool? = nil, searchPath: String?) {
        self.helpers = helpers
        self.fingerprintHelpers = fingerprintHelpers ?? helpers
        self.searchPath = searchPath
    }

    /// Stops and reaps the idle helpers of both pools (their CPU time then counts in this
    /// process's children). Called by the maker before it exits; decoding after it starts new helpers.
    public func shutdown() {
        helpers.shutdown()
        if fingerprintHelpers !== helpers { fingerprintHelpers.shutdown() }
    }
}
