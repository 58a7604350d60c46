import Foundation
@testable import SegnoS3
import Testing

@Suite struct RetryPolicyTests {
    @Test func backoffGrowsExponentiallyUpToTheCapWithFullJitter() {
        let policy = RetryPolicy(maxAttempts: 6, baseDelay: 0.5, maxDelay: 3)
        #expect(policy.delay(afterAttempt: 1, random: 0.999_999) < 0.5)
        #expect(abs(policy.delay(afterAttempt: 2, random: 1) - 1.0) < 1e-9)
        #expect(abs(policy.delay(afterAttempt: 3, random: 1) - 2.0) < 1e-9)
        #expect(abs(policy.delay(afterAttempt: 9, random: 1) - 3.0) < 1e-9)
        #expect(policy.delay(afterAttempt: 4, random: 0) == 0)
        #expect(RetryPolicy.none.maxAttempts == 1)
    }

    @Test func whatIsRetried() {
        #expect(RetryPolicy.isRetryable(status: 503, code: "SlowDown"))
        #expect(RetryPolicy.isRetryable(status: 500, code: "InternalError"))
        #expect(RetryPolicy.isRetryable(status: 429, code: nil))
        #expect(RetryPolicy.isRetryable(status: 400, code: "RequestTimeout"))
        #expect(!RetryPolicy.isRetryable(status: 403, code: "SignatureDoesNotMatch"))
        #expect(!RetryPolicy.isRetryable(status: 400, code: "InvalidArgument"))
        #expect(!RetryPolicy.isRetryable(status: 404, code: "NoSuchKey"))
        #expect(RetryPolicy.isRetryable(urlErrorCode: -1001))
        #expect(RetryPolicy.isRetryable(urlErrorCode: -1005))
        #expect(!RetryPolicy.isRetryable(urlErrorCode: -999))
    }
}
