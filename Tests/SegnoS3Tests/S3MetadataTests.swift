import Foundation
@testable import SegnoS3
import Testing

@Suite struct S3MetadataTests {
    @Test func asciiValuesAreSentAsTheyAre() {
        #expect(S3Metadata.encodeValue("Voice memo 1 (take 2)") == "Voice memo 1 (take 2)")
    }

    @Test(arguments: ["회의 메모", " leading", "trailing ", "line\nbreak", "=?looks encoded?=", "tab\there", "é"])
    func otherValuesRoundTripThroughRFC2047(value: String) {
        let encoded = S3Metadata.encodeValue(value)
        #expect(encoded.hasPrefix("=?UTF-8?B?"))
        #expect(encoded.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
        #expect(S3Metadata.decodeValue(encoded) == value)
    }

    @Test func decodesQEncodingAndLeavesPlainTextAlone() {
        #expect(S3Metadata.decodeValue("=?utf-8?Q?caf=C3=A9_au_lait?=") == "café au lait")
        #expect(S3Metadata.decodeValue("plain") == "plain")
        #expect(S3Metadata.decodeValue("=?bogus") == "=?bogus")
    }

    @Test func sizeLimitCountsKeysAndValuesAndTheReservedHash() throws {
        let value = String(repeating: "7", count: 2048 - 5)
        try S3Metadata.validate(["title": value])  // 5 + 2043 = 2048 exactly
        #expect(throws: S3Error.metadataTooLarge(bytes: 2049, limit: 2048)) {
            try S3Metadata.validate(["title": value + "7"])
        }
        #expect(throws: S3Error.self) { try S3Metadata.validate(["title": value], reserve: S3Metadata.reservedBytes) }
        #expect(S3Metadata.reservedBytes == 12 + 64)
    }

    @Test func keysMustBeHeaderSafe() {
        #expect(throws: S3Error.invalidMetadataKey("bad key")) { try S3Metadata.validate(["bad key": "v"]) }
        #expect(throws: S3Error.invalidMetadataKey("")) { try S3Metadata.validate(["": "v"]) }
        #expect(throws: S3Error.self) { try S3Metadata.validate(["Title": "a", "title": "b"]) }
        #expect(S3Metadata.headers(["Title": "x"]) == ["x-amz-meta-title": "x"])
    }

    /// The limit is enforced before any request: a client pointed at a closed port still
    /// answers with `metadataTooLarge`, not a connection error.
    @Test func oversizedMetadataIsRejectedBeforeSending() throws {
        let client = S3Client(endpoint: try S3Endpoint(url: URL(string: "http://127.0.0.1:9")!),
                              credentials: S3Credentials(accessKeyId: "a", secretAccessKey: "b"),
                              configuration: S3ClientConfiguration(retry: .none))
        let big = ["levels": String(repeating: "1,", count: 1100)]
        let file = try TempFile(size: 10)
        defer { file.remove() }
        #expect(throws: S3Error.metadataTooLarge(bytes: 6 + 2200 + S3Metadata.reservedBytes, limit: 2048)) {
            try client.upload(file: file.url, bucket: "bucket", key: "k", metadata: big)
        }
        #expect(throws: S3Error.metadataTooLarge(bytes: 6 + 2200, limit: 2048)) {
            try client.putObject(bucket: "bucket", key: "k", data: Data(), options: PutObjectOptions(metadata: big))
        }
        #expect(client.statistics.requests == 0)
    }
}
