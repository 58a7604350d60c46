import Foundation
import Testing
@testable import SegnoS3

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
}
