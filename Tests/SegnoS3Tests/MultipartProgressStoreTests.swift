import Foundation
@testable import SegnoS3
import Testing

@Suite struct MultipartProgressStoreTests {
    @Test func savesLoadsAndClearsPerObject() throws {
        let store = InMemoryMultipartProgressStore()
        let a = MultipartUploadKey(bucket: "b", key: "a.flac"), b = MultipartUploadKey(bucket: "b", key: "b.flac")
        #expect(try store.load(a) == nil)
        var progress = MultipartProgress(fileSHA256: "00", uploadId: "id-1", partSize: 8 << 20, startedAt: Date(timeIntervalSince1970: 0))
        try store.save(progress, for: a)
        progress.parts[1] = "etag1"
        try store.save(progress, for: a)
        #expect(try store.load(a)?.parts == [1: "etag1"])
        #expect(try store.load(b) == nil)
        try store.clear(a)
        #expect(try store.load(a) == nil)
    }

    @Test func progressIsCodableForAPersistentStore() throws {
        let progress = MultipartProgress(fileSHA256: "ab", uploadId: "2~x", partSize: 5 << 20, parts: [1: "e1", 3: "e3"],
                                         startedAt: Date(timeIntervalSince1970: 1000))
        let decoded = try JSONDecoder().decode(MultipartProgress.self, from: JSONEncoder().encode(progress))
        #expect(decoded == progress)
    }

    /// `startedAt` is stored as seconds since 1970 like `started_at`; records written before
    /// (seconds since 2001, Foundation's default) still decode to the same moment.
    @Test func startedAtCountsFrom1970AndOldRecordsStillRead() throws {
        let moment = Date(timeIntervalSince1970: 1_790_000_000)
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(
            MultipartProgress(fileSHA256: "ab", uploadId: "u", partSize: 5 << 20, startedAt: moment))) as? [String: Any]
        #expect(json?["startedAt"] as? Double == 1_790_000_000)
        #expect(json?["epoch"] as? Int == 1970)
        let old = #"{"fileSHA256":"ab","uploadId":"u","partSize":5242880,"parts":{},"startedAt":\#(moment.timeIntervalSinceReferenceDate)}"#
        #expect(try JSONDecoder().decode(MultipartProgress.self, from: Data(old.utf8)).startedAt == moment)
    }
}
