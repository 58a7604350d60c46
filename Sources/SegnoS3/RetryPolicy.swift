import Foundation

/// How often and how long to retry a request: exponential backoff with full jitter
/// (a random delay between 0 and `min(maxDelay, baseDelay * 2^(attempt-1))`).
/// Retried: 5xx, 429, the S3 codes `SlowDown`, `RequestTimeout`, `InternalError`,
/// `ServiceUnavailable`, and transport failures (timeouts, resets, refused connections).
/// Never retried: other 4xx (authentication, validation, missing objects).
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in total, the first included (1 = no retry).
    public var maxAttempts: Int
    /// Seconds; the upper bound of the first retry's delay.
    public var baseDelay: Double
    /// Seconds; no delay is longer.
    public var maxDelay: Double

    public init(maxAttempts: Int = 5, baseDelay: Double = 0.25, maxDelay: Double = 20) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = max(0, baseDelay)
        self.maxDelay = max(0, maxDelay)
    }

    /// No retries at all.
    public static let none = RetryPolicy(maxAttempts: 1)

    /// The delay in seconds before attempt `attempt + 1`, after `attempt` failed (attempt ≥ 1).
    public func delay(afterAttempt attempt: Int, random: Double = Double.random(in: 0..<1)) -> Double {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(maxDelay, baseDelay * pow(2, Double(exponent)))
        return ceiling * random
    }

    static let retryableCodes: Set<String> = [
        "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling",
        "ThrottlingException", "RequestLimitExceeded", "TooManyRequests", "OperationAborted",
    ]

    /// True when an HTTP answer with this status and S3 code is worth another attempt.
    public static func isRetryable(status: Int, code: String?) -> Bool {
        if status >= 500 || status == 429 { return true }
        if let code, retryableCodes.contains(code) { return true }
        return false
    }

    /// True when a transport error (URLError code) is worth another attempt.
    public static func isRetryable(urlErrorCode code: Int) -> Bool {
        switch code {
        case -1001, // timedOut
             -1003, // cannotFindHost (DNS hiccup)
             -1004, // cannotConnectToHost
             -1005, // networkConnectionLost (reset)
             -1006, // dnsLookupFailed
             -1009, // notConnectedToInternet
             -1011, // badServerResponse
             -1017, // cannotParseResponse
             -1018, // internationalRoamingOff
             -1019, // callIsActive
             -1020: // dataNotAllowed
            return true
        default:
            return false
        }
    }
}
