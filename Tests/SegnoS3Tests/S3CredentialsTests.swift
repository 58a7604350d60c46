import Foundation
@testable import SegnoS3
import Testing

@Suite struct S3CredentialsTests {
    static let credentials = S3Credentials(accessKeyId: "AKIDEXAMPLE", secretAccessKey: "very-secret-value",
                                           sessionToken: "session-token-value")

    @Test func secretAndTokenNeverPrint() {
        var dumped = ""
        dump(Self.credentials, to: &dumped)
        let texts = ["\(Self.credentials)", String(describing: Self.credentials), String(reflecting: Self.credentials),
                     dumped, "\([Self.credentials])", "\(Optional(Self.credentials) as Any)"]
        for text in texts {
            #expect(text.contains("AKIDEXAMPLE"))
            #expect(!text.contains("very-secret-value"), "leaked in: \(text)")
            #expect(!text.contains("session-token-value"), "leaked in: \(text)")
        }
        #expect(Self.credentials.description.contains("<redacted>"))
    }

    @Test func emptySessionTokenMeansNone() {
        #expect(!S3Credentials(accessKeyId: "a", secretAccessKey: "b", sessionToken: "").hasSessionToken)
        #expect(Self.credentials.hasSessionToken)
        #expect(Self.credentials.secrets == ["very-secret-value", "session-token-value"])
    }

    @Test func signerAndClientDescriptionsDoNotLeakTheSecret() throws {
        let signer = SigV4Signer(credentials: Self.credentials, region: "us-east-1")
        var dumped = ""
        dump(signer, to: &dumped)
        #expect(!dumped.contains("very-secret-value"))
        #expect(!String(reflecting: signer).contains("very-secret-value"))
    }
}
