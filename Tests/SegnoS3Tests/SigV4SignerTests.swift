import Foundation
@testable import SegnoS3
import Testing

/// Signatures checked against AWS's published S3 examples and against botocore's S3 signer.
@Suite struct SigV4SignerTests {
    // The example credentials and time of AWS's "Signature Calculations for the Authorization
    // Header: Transferring Payload in a Single Chunk" page (Amazon S3 API reference).
    static let exampleCredentials = S3Credentials(accessKeyId: "AKIAIOSFODNN7EXAMPLE",
                                                  secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    static let exampleDate = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z
    static let signer = SigV4Signer(credentials: exampleCredentials, region: "us-east-1")
    static let host = "examplebucket.s3.amazonaws.com"

    static func signature(of authorization: String?) -> String? {
        authorization?.components(separatedBy: "Signature=").last
    }

    @Test func awsExampleGetObjectWithRange() {
        let request = SignableRequest(method: "GET", host: Self.host, path: "/test.txt",
                                      headers: ["Range": "bytes=0-9"])
        let headers = Self.signer.sign(request, payloadHash: PayloadHash.empty, date: Self.exampleDate)
        #expect(headers["Authorization"] == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(headers["x-amz-date"] == "20130524T000000Z")
        #expect(headers["x-amz-content-sha256"] == PayloadHash.empty)
    }

    @Test func awsExamplePutObject() {
        let body = Data("Welcome to Amazon S3.".utf8)
        let hash = PayloadHash.of(body)
        #expect(hash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let request = SignableRequest(method: "PUT", host: Self.host, path: "/test$file.text", headers: [
            "Date": "Fri, 24 May 2013 00:00:00 GMT",
            "x-amz-storage-class": "REDUCED_REDUNDANCY",
        ])
        let headers = Self.signer.sign(request, payloadHash: hash, date: Self.exampleDate)
        #expect(headers["Authorization"]?.contains("SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,") == true)
        #expect(Self.signature(of: headers["Authorization"]) == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func awsExampleGetBucketLifecycle() {
        let request = SignableRequest(method: "GET", host: Self.host, path: "/", query: [("lifecycle", nil)])
        let headers = Self.signer.sign(request, payloadHash: PayloadHash.empty, date: Self.exampleDate)
        #expect(Self.signature(of: headers["Authorization"]) == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
    }

    @Test func awsExampleListObjects() {
        let request = SignableRequest(method: "GET", host: Self.host, path: "/",
                                      query: [("prefix", "J"), ("max-keys", "2")])
        var withDate = request
        withDate.headers = ["x-amz-date": "20130524T000000Z", "x-amz-content-sha256": PayloadHash.empty]
        let canonical = Self.signer.canonicalRequest(withDate, payloadHash: PayloadHash.empty)
        #expect(canonical.text.split(separator: "\n", omittingEmptySubsequences: false)[2] == "max-keys=2&prefix=J")
        let headers = Self.signer.sign(request, payloadHash: PayloadHash.empty, date: Self.exampleDate)
        #expect(Self.signature(of: headers["Authorization"]) == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    @Test func pathIsEncodedOnceAndNeverNormalised() {
        #expect(S3URIEncoding.canonicalPath("/b/a//b/./c") == "/b/a//b/./c")
        #expect(S3URIEncoding.canonicalPath("/b/x y+z%") == "/b/x%20y%2Bz%25")
        #expect(S3URIEncoding.canonicalPath("/b/녹음") == "/b/%EB%85%B9%EC%9D%8C")
        #expect(S3URIEncoding.wirePath("/b/a//b/./c/../d") == "/b/a//b/%2E/c/%2E%2E/d")
        #expect(S3URIEncoding.encode("a/b~_-.") == "a%2Fb~_-.")
        #expect(S3URIEncoding.decode("a+b%2Bc%20d%2F") == "a b+c d/")
    }

    @Test func headerValuesAreTrimmedAndFolded() {
        #expect(SigV4Signer.foldValue("  a   b \t c  ") == "a b c")
    }

    @Test func sessionTokenIsSentAndSigned() {
        let signer = SigV4Signer(credentials: S3Credentials(accessKeyId: "AK", secretAccessKey: "SK", sessionToken: "TOKEN"),
                                 region: "us-east-1")
        let headers = signer.sign(SignableRequest(method: "GET", host: "h", path: "/b/k"),
                                  payloadHash: PayloadHash.empty, date: Self.exampleDate)
        #expect(headers["x-amz-security-token"] == "TOKEN")
        #expect(headers["Authorization"]?.contains("x-amz-security-token") == true)
    }

    // MARK: botocore

    struct Case {
        var method = "PUT"
        var path: String
        var query: [(name: String, value: String?)] = []
        var headers: [String: String] = [:]
        var body = ""
        var unsigned = false
        var token: String?
        var region = "us-east-1"
    }

    static let botocoreCases: [Case] = [
        Case(path: "/bucket/with space/and  two.flac", headers: ["Content-Type": "audio/flac"], body: "abc"),
        Case(path: "/bucket/녹음/회의 메모.caf", headers: ["x-amz-meta-title": "  회의   메모 "], body: "x"),
        Case(path: "/bucket/+=&;()!*'$@,.flac", body: "payload"),
        Case(path: "/bucket/a//b/./c", body: ""),
        Case(path: "/bucket/../up/%41", body: "1"),
        Case(method: "POST", path: "/bucket/key", query: [("uploads", nil)],
             headers: ["x-amz-meta-a": "1", "x-amz-storage-class": "STANDARD_IA", "Content-Type": "audio/x-caf"]),
        Case(path: "/bucket/key", query: [("partNumber", "3"), ("uploadId", "2~abc/+=def")],
             headers: ["Content-MD5": "1B2M2Y8AsgTpgAmY7PhCfg=="], body: "part"),
        Case(method: "GET", path: "/bucket", query: [("prefix", "a b/ü"), ("list-type", "2"), ("encoding-type", "url")]),
        Case(method: "GET", path: "/bucket/k", headers: ["Range": "bytes=0-0"], token: "FwoGZXIvYXdzE//token+/="),
        Case(path: "/bucket/unsigned", body: "", unsigned: true),
        Case(method: "DELETE", path: "/bucket/k", region: "auto"),
    ]

    @Test func matchesBotocoreForTrickyKeysQueriesAndHeaders() throws {
        let amzDate = "20260102T030405Z"
        let date = Date(timeIntervalSince1970: 1_767_323_045)  // 2026-01-02T03:04:05Z
        let hostHeader = "127.0.0.1:17480"
        let json: [[String: Any]] = Self.botocoreCases.map { c in
            var item: [String: Any] = [
                "access_key": "SEGNOTESTACCESSKEY01", "secret_key": "segno/Secret+Key", "region": c.region,
                "method": c.method, "scheme": "http", "host": hostHeader, "raw_path": c.path,
                "query": c.query.map { [$0.name, $0.value as Any? ?? NSNull()] }, "headers": c.headers,
                "body": c.body, "amz_date": amzDate,
            ]
            if c.unsigned { item["unsigned"] = true }
            if let token = c.token { item["session_token"] = token }
            return item
        }
        let output = try SupportScript.run("sigv4_reference.py", input: JSONSerialization.data(withJSONObject: json))
        let references = try #require(try JSONSerialization.jsonObject(with: output) as? [[String: String]])
        try #require(references.count == Self.botocoreCases.count)
        for (c, reference) in zip(Self.botocoreCases, references) {
            let signer = SigV4Signer(credentials: S3Credentials(accessKeyId: "SEGNOTESTACCESSKEY01",
                                                                secretAccessKey: "segno/Secret+Key", sessionToken: c.token),
                                     region: c.region)
            let hash = c.unsigned ? PayloadHash.unsigned : PayloadHash.of(Data(c.body.utf8))
            let request = SignableRequest(method: c.method, host: hostHeader, path: c.path, query: c.query, headers: c.headers)
            let added = signer.sign(request, payloadHash: hash, date: date)
            var signed = request
            for (name, value) in added where name != "Authorization" { signed.headers[name] = value }
            let canonical = signer.canonicalRequest(signed, payloadHash: hash)
            #expect(canonical.text == reference["canonical_request"], "canonical request of \(c.path)")
            #expect(canonical.signedHeaders == reference["signed_headers"], "signed headers of \(c.path)")
            #expect(Self.signature(of: added["Authorization"]) == reference["signature"], "signature of \(c.path)")
        }
    }
}
