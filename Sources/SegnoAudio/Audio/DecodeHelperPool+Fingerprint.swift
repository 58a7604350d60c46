import Foundation
import SegnoCore

/// Fingerprints through the `segno-decode` helper: libchromaprint lives there (Debian's build
/// links libavcodec, with GPL parts), never in segno's process. Unlike decoding there is no other
/// path: without a usable helper a fingerprint fails as an environment failure.
extension DecodeHelperPool {
    /// Where the helper for fingerprints is: as `locate`, except that `off` is ignored.
    public static func locateForFingerprints(environment: [String: String]) -> String? {
        var env = environment
        if let forced = env[environmentVariable], DecodeHelper.isOff(forced) {
            env[environmentVariable] = nil
        }
        return locate(environment: env)
    }

    /// A helper with chromaprint started for a stream of `rate` Hz and `channels` channels
    /// ('P' sent, 'H' read), ready for the samples; a reused helper found dead is replaced once.
    /// Throws `FingerprintError.helperMissing` (no usable program), `.start` (chromaprint refused
    /// the format; the helper goes back to the pool) or `.helperFailed`. Called by `Chromaprinter`.
    package func startFingerprint(rate: Int, channels: Int, algorithm: Int) throws -> DecodeHelper {
        var payload = [UInt8]()
        for v in [rate, channels, algorithm] { withUnsafeBytes(of: UInt32(v)) { payload += $0 } }
        for _ in 0..<2 {
            let (helper, reused): (DecodeHelper, Bool)
            do { (helper, reused) = try take() } catch { throw FingerprintError.helperMissing("\(error)") }
            let name = helper.child.executable
            do { try helper.send(.fingerprint, payload) } catch {
                helper.kill()
                if reused { continue }   // died while idle
                throw FingerprintError.helperFailed("\(name) stopped before reading a request: \(error)")
            }
            let head: (DecodeHelper.Message, Int)?
            do { head = try DecodeHelper.readHead(helper.child) } catch {
                helper.kill()
                throw FingerprintError.helperFailed("\(error)")
            }
            guard let (type, length) = head else {
                let status = helper.child.wait()
                if reused { continue }
                let why = helper.child.stderrSummary()
                throw FingerprintError.helperFailed("\(name) ended (\(status))" + (why.isEmpty ? "" : ": \(why)"))
            }
            let answer: [UInt8]?
            do { answer = try DecodeHelper.readPayload(helper.child, length: length) } catch {
                helper.kill()
                throw FingerprintError.helperFailed("\(error)")
            }
            switch (type, answer) {
            case (.header, let p?) where DecodeHelper.format(of: p) != nil:
                let got = DecodeHelper.format(of: p)!
                guard got == (rate, channels) else {
                    helper.kill()
                    throw FingerprintError.helperFailed("\(name) started \(got.1) channels at \(got.0) Hz, not \(channels) at \(rate)")
                }
                return helper
            case (.failed, let p?):
                checkIn(helper)
                throw FingerprintError.start(HelperStream.oneLine(p))
            default:
                helper.kill()
                throw FingerprintError.helperFailed("unexpected message \(type) from \(name)")
            }
        }
        throw FingerprintError.helperFailed("two \(Self.programName) helpers in a row ended before answering")
    }
}
