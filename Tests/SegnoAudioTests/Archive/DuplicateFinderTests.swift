@testable import SegnoAudio
@testable import SegnoCore
import Testing

/// The duplicate index on synthetic items: copies with flipped bits are found at their offset,
/// unrelated fingerprints and silence are not.
@Suite struct DuplicateFinderTests {
    struct Rng: RandomNumberGenerator {
        var s: UInt64
        mutating func next() -> UInt64 { s &+= 0x9E37_79B9_7F4A_7C15; var z = s; z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9; return z ^ (z >> 31) }
    }

    static func random(_ n: Int, _ rng: inout Rng) -> [UInt32] {
        (0..<n / 2).flatMap { _ -> [UInt32] in let v = UInt32.random(in: 0...UInt32.max, using: &rng); return [v, v] }
    }

    static func flip(_ items: [UInt32], rate: Double, _ rng: inout Rng) -> [UInt32] {
        items.map { v in (0..<32).reduce(v) { x, b in Double.random(in: 0..<1, using: &rng) < rate ? x ^ (1 << b) : x } }
    }

    @Test func findsCopiesAndExcerptsAtTheirOffsets() {
        var rng = Rng(s: 1)
        let a = Self.random(400, &rng)
        let copy = Self.flip(a, rate: 0.02, &rng)
        let excerpt = Self.flip(Array(a[100..<180]), rate: 0.03, &rng)
        let other = Self.random(400, &rng)
        let found = DuplicateFinder().find([a, copy, excerpt, other])
        #expect(found.map { [$0.a, $0.b] } == [[0, 1], [0, 2], [1, 2]])
        #expect(found[0].kind == .duplicate && abs(found[0].offset) < 0.01)
        #expect(found[1].kind == .contained && abs(found[1].offset + 100 * AudioFingerprint.itemSeconds) < 0.01)
        #expect(found.allSatisfy { $0.similarity > 0.95 })
        #expect(DuplicateFinder.groups(found) == [[0, 1, 2]])
    }

    /// Votes made in many small passes (ranges of recordings) find exactly what one pass finds:
    /// every planted copy, at its shift, and nothing else.
    @Test func votesInPassesFindTheSameAsOnePass() {
        var rng = Rng(s: 3)
        var prints = (0..<300).map { _ in Self.random(240, &rng) }
        var planted: [[Int]] = []
        for k in 0..<12 {
            let src = k * 23, dst = 299 - k * 7
            prints[dst] = Self.flip(Array(prints[src][k...]), rate: 0.02, &rng)
            planted.append([min(src, dst), max(src, dst)])
        }
        let one = DuplicateFinder().find(prints)
        var small = DuplicateFinder()
        small.votesPerPass = 40
        let many = small.find(prints)
        #expect(one.map { [$0.a, $0.b] } == planted.sorted { ($0[0], $0[1]) < ($1[0], $1[1]) })
        #expect(many == one)
    }

    @Test func silenceAndShortOverlapsAreNotMatches() {
        var rng = Rng(s: 2)
        let silence = [UInt32](repeating: 0x1234_5678, count: 300)
        let a = Self.random(200, &rng) + Array(silence)
        let b = Array(silence) + Self.random(200, &rng)
        #expect(DuplicateFinder().find([a, b]).isEmpty)
        let c = Self.random(300, &rng)
        let d = Self.random(100, &rng) + Array(c[0..<30]) + Self.random(100, &rng)   // 3.7 s shared
        #expect(DuplicateFinder().find([c, d]).isEmpty)
        #expect(DuplicateFinder(minOverlap: 3).find([c, d]).count == 1)
    }

    @Test func itemsRoundTripThroughTheBlob() {
        let fp = AudioFingerprint(algorithm: 2, items: [0, 1, 0xFFFF_FFFF, 0x8000_0000], duration: 1)
        #expect(fp.blob.count == 16)
        #expect(AudioFingerprint.items(blob: fp.blob) == fp.items)
    }

    @Test func iso6709Points() {
        let p = CatalogEntry.iso6709("+37.5665+126.9780/")
        #expect(p?.latitude == 37.5665 && p?.longitude == 126.978)
        let q = CatalogEntry.iso6709("-33.8688+151.2093+012.000/")
        #expect(q?.latitude == -33.8688 && q?.longitude == 151.2093)
        let dm = CatalogEntry.iso6709("+3733.99+12658.68/")!
        #expect(abs(dm.latitude - (37 + 33.99 / 60)) < 1e-9 && abs(dm.longitude - (126 + 58.68 / 60)) < 1e-9)
        #expect(CatalogEntry.iso6709("+95.0+10.0/") == nil)
        #expect(CatalogEntry.iso6709("Seoul") == nil)
        #expect(abs(CatalogEntry.distanceKm(37.5665, 126.978, 35.1796, 129.0756) - 325) < 5)
    }
}
