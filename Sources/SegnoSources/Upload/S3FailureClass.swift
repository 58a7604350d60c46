import SegnoCore
import SegnoS3

/// The S3 client's errors in the failure model, declared here, where the S3 client and the core
/// meet: the core classifies them through `ClassifiedError` without importing the client.
extension S3Error: ClassifiedError {
    public var failureClass: FailureClass { FailureClass.failureClass(of: self) }
}

extension FailureClass {
    /// S3 errors after the client's own retries: transport and 5xx are transient, the rest
    /// (403, missing bucket) the environment's — the next run tries again.
    public static func failureClass(of e: S3Error) -> FailureClass {
        switch e {
        case .transport, .integrity: return .transient
        case .server(_, _, let status, let code, _, _): return RetryPolicy.isRetryable(status: status, code: code) ? .transient : .environment
        default: return .environment
        }
    }
}
