import Foundation

/// An error that knows its failure class. Each module's error types conform, so the core
/// classifies errors it has never heard of.
public protocol ClassifiedError: Error {
    var failureClass: FailureClass { get }
}

/// Why a recording failed, in the four classes of DESIGN.md §8. Persisted with the failure
/// (`recording.failure_class`); it alone decides what the next run does with the recording.
public enum FailureClass: String, Sendable, Codable, CaseIterable {
    /// The file itself cannot be processed (corrupt, truncated, empty, not audio): a known
    /// failure until the file changes.
    case input
    /// A stage cannot handle this recording (an 8-channel stream into an MP3 tap, an output name
    /// over 255 bytes): a known failure until the spec changes.
    case spec
    /// Disk full, read-only file system, permissions, a missing program, the network, the object
    /// store, the database: the next plain run tries again; never a known failure.
    case environment
    /// EINTR, HTTP 5xx, time-outs, resets: retried within the run with back-off, and by the next run.
    case transient

    /// True when a plain run skips the recording until its source or the spec changes.
    public var isParked: Bool { self == .input || self == .spec }

    /// True when trying again within the same run can help (not for a full disk or a missing program).
    public var retryWithinRun: Bool { self == .transient }

    /// The class of any error segno throws. One place decides it, for every caller.
    public static func of(_ error: any Error) -> FailureClass {
        switch error {
        case let e as any ClassifiedError: return e.failureClass
        case is StageStartError: return .spec
        default: return .environment
        }
    }

    /// The class of a failed system call's `errno`.
    public static func of(errno code: Int32) -> FailureClass {
        switch code {
        case EINTR, EAGAIN, EBUSY, ETIMEDOUT, ECONNRESET: return .transient
        case ENAMETOOLONG: return .spec
        default: return .environment  // ENOSPC, EROFS, EACCES, EPERM, EDQUOT, EIO, ENOENT…
        }
    }
}

extension AudioError: ClassifiedError {
    /// The failure class: damaged content is the input's fault, an output the stages cannot make is
    /// the spec's, and everything that touches the system (disk, folders, programs) the environment's.
    public var failureClass: FailureClass {
        switch self {
        case .notAFile, .empty, .unrecognised, .truncated, .decodeFailed: return .input
        case .encodeFailed, .unsupportedOutput, .refused: return .spec
        case .missing, .unreadable, .missingDecoder, .missingEncoder: return .environment
        case .io(_, _, let code): return code == 0 ? .environment : FailureClass.of(errno: code)
        }
    }
}
