import Foundation
import SegnoCore

/// Two recordings that share audio: where, for how long, and how alike.
public struct AudioOverlap: Sendable, Equatable {
    /// How much of the two recordings the shared audio covers.
    public enum Kind: String, Sendable {
        /// At least 90 % of both: the same recording (a copy, a re-encoding, another rate).
        case duplicate
        /// At least 90 % of one (the shorter) only: a cut of the other, or a piece inside it.
        case contained
        /// Less than 90 % of either: a shared stretch (a song in two radio captures).
        case overlap
    }
    /// Indices into the fingerprints given to `DuplicateFinder.find`; `a < b`.
    public var a: Int
    public var b: Int
    /// Seconds from the start of each recording to the shared audio.
    public var aStart: Double
    public var bStart: Double
    /// Seconds of shared audio.
    public var length: Double
    /// 1 − the bit error rate of the aligned items over the shared stretch (1 = identical items).
    public var similarity: Double
    public var kind: Kind
    /// `bStart − aStart`: where a moment of `a` is found in `b`.
    public var offset: Double { bStart - aStart }
}

/// Finds the recordings that share audio among many Chromaprint fingerprints without comparing
/// every pair: an index of item values (sorted, not hashed) proposes pairs and alignments by
/// voting, and only those are checked item by item with the aligned bit error rate.
///
/// 1. Index: for each recording, the keys (the 20 most stable bits of an item, `stableBits`) that
///    start a run of equal keys and fall in a content-chosen half of the key space (so both
///    copies of the same audio choose the same places), as (key, position) pairs sorted by key. Values found in more than `maxPostings`
///    places (silence, hum) are stop words and skipped.
/// 2. Votes: every two places with the same key in different recordings vote for that pair at
///    that alignment (position in b − position in a). Alignments with `minVotes` votes (±1 item)
///    are candidates, the best per pair.
/// 3. Check: at the candidate alignment (and ±1 item) the items are compared bit by bit; the
///    stretch with the most evidence (maximum sum of `extentBitError·32 − bit errors`) is the shared
///    audio. It counts when it is at least `minOverlap` long (or covers 90 % of both recordings
///    and has `minWholeItems` items), its bit error rate is at most
///    `maxBitError`, and it is not one repeated item (silence matches silence).
public struct DuplicateFinder: Sendable {
    /// Seconds of shared audio below which a match is not reported.
    public var minOverlap: Double = 5
    /// Highest bit error rate of a match (similarity ≥ 0.85). Measured: unrelated audio disagrees
    /// in about 45 % of the bits and two stretches of hiss in 17–30 %; re-encodings and resampled
    /// copies in 0–2 %, a copy with noise at 20 dB SNR in 0.1–1 %, and an excerpt cut half an
    /// item off the original's grid (the worst case) in 6–10 %.
    public var maxBitError: Double = Self.defaultMaxBitError
    /// `maxBitError` unless a caller sets another: the one number `segno help duplicates` quotes.
    public static let defaultMaxBitError = 0.15
    /// Bit error rate that bounds the shared stretch: items with fewer errors extend it.
    public var extentBitError: Double = 0.20
    public var minVotes = 3
    /// Fewest fingerprint items of a whole copy reported whatever `minOverlap` says (a 3.4 s
    /// memo has 6).
    public static let minWholeItems = 4
    public var maxPostings = 200
    /// Votes held at once (8 bytes each): 4,000,000 is 32 MB. A pass costs a scan of the index,
    /// so smaller passes trade little time for memory.
    public var votesPerPass = 4_000_000

    public init(minOverlap: Double = 5) { self.minOverlap = minOverlap }

    /// All shared stretches, ordered by `a`, then `b`.
    public func find(_ prints: [[UInt32]]) -> [AudioOverlap] {
        precondition(prints.count < 1 << 20, "at most 1,048,575 recordings")
        var base: [Int] = [0]
        for p in prints { base.append(base.last! + p.count) }
        // 1. the index: (item << 32 | global position), sorted.
        var entries: [UInt64] = []
        entries.reserveCapacity(base.last! / 3)
        for (r, p) in prints.enumerated() {
            var previous: UInt32? = nil
            for (i, item) in p.enumerated() {
                let key = item & Self.stableBits
                defer { previous = key }
                guard key != previous, Self.sampled(key) else { continue }
                entries.append(UInt64(key) << 32 | UInt64(base[r] + i))
            }
        }
        entries.sort()
        // Each entry's recording, once (entries are sorted by key, so positions are not).
        var owner = [UInt32](repeating: 0, count: entries.count)
        for (n, e) in entries.enumerated() { owner[n] = UInt32(Self.recording(of: Int(e & 0xFFFF_FFFF), base: base)) }
        // 2. votes, packed as recA(20) recB(20) offset(24, biased). Votes can outnumber entries
        // by far (every pair of places of a key: 100,000 fingerprints of random items put about
        // 23 places on each of the 2^19 sampled keys, so 12 million entries make 140 million
        // votes), so they are made in passes over ranges of recA of at most `votesPerPass` votes
        // each (an upper bound counted first): memory stays bounded whatever the collection, and
        // each pass's votes are complete for its pairs.
        var bound = [Int](repeating: 0, count: prints.count)
        forEachGroup(entries) { start, end in
            for x in start..<(end - 1) { bound[Int(owner[x])] += end - 1 - x }
        }
        var ranges: [Range<Int>] = []
        var from = 0, sum = 0
        for r in 0..<prints.count {
            if sum > 0 && sum + bound[r] > votesPerPass {
                ranges.append(from..<r)
                from = r
                sum = 0
            }
            sum += bound[r]
        }
        ranges.append(from..<prints.count)
        let bias = 1 << 23
        var votes: [UInt64] = []
        var results: [AudioOverlap] = []
        for range in ranges {
            let lowest = UInt32(range.lowerBound), highest = UInt32(range.upperBound)
            votes.removeAll(keepingCapacity: true)
            votes.reserveCapacity(range.reduce(0) { $0 + bound[$1] })
            forEachGroup(entries) { start, end in
                for x in start..<(end - 1) where owner[x] >= lowest && owner[x] < highest {
                    let rx = owner[x]
                    let px = Int(entries[x] & 0xFFFF_FFFF) - base[Int(rx)]
                    for y in (x + 1)..<end where owner[y] != rx {
                        let py = Int(entries[y] & 0xFFFF_FFFF) - base[Int(owner[y])]
                        let offset = py - px + bias
                        guard offset > 0 && offset < 2 * bias else { continue }
                        votes.append(UInt64(rx) << 44 | UInt64(owner[y]) << 24 | UInt64(offset))
                    }
                }
            }
            votes.sort()
            results += bestAlignments(votes, prints: prints, bias: bias)
        }
        results += wholeShortCopies(prints, found: Set(results.map { $0.a << 20 | $0.b }))
        return results.sorted { ($0.a, $0.b) < ($1.a, $1.b) }
    }

    /// Calls `body` with each run of equal keys in `entries` (sorted) that votes: 2 to `maxPostings` places.
    package func forEachGroup(_ entries: [UInt64], _ body: (Int, Int) -> Void) {
        var start = 0
        while start < entries.count {
            let key = entries[start] >> 32
            var end = start + 1
            while end < entries.count && entries[end] >> 32 == key { end += 1 }
            let g = end - start
            if g > 1 && g <= maxPostings { body(start, end) }
            start = end
        }
    }

    /// Per pair in `votes` (sorted): the alignment with most votes counting its neighbours, checked
    /// item by item.
    package func bestAlignments(_ votes: [UInt64], prints: [[UInt32]], bias: Int) -> [AudioOverlap] {
        var results: [AudioOverlap] = []
        var counts: [(offset: Int, count: Int)] = []
        var i = 0
        while i < votes.count {
            let pair = votes[i] >> 24
            counts.removeAll(keepingCapacity: true)
            while i < votes.count && votes[i] >> 24 == pair {
                let v = votes[i]
                var n = 0
                while i < votes.count && votes[i] == v { n += 1; i += 1 }
                counts.append((Int(v & 0xFF_FFFF), n))
            }
            var best = (offset: 0, score: 0)
            for (k, c) in counts.enumerated() {
                var s = c.count
                if k > 0 && counts[k - 1].offset == c.offset - 1 { s += counts[k - 1].count }
                if k + 1 < counts.count && counts[k + 1].offset == c.offset + 1 { s += counts[k + 1].count }
                if s > best.score { best = (c.offset, s) }
            }
            guard best.score >= minVotes else { continue }
            let a = Int(pair >> 20), b = Int(pair & 0xF_FFFF)
            if let m = check(prints[a], prints[b], around: best.offset - bias) {
                results.append(AudioOverlap(a: a, b: b, aStart: m.aStart, bStart: m.bStart, length: m.length, similarity: m.similarity, kind: m.kind))
            }
        }
        return results
    }

    /// Recordings shorter than `minOverlap` carry too few index keys to vote: those of about the
    /// same length (within 10 %) are compared directly near alignment 0 (±4 items, 0.5 s), and a
    /// whole copy counts (a 3.8 s memo and its MP3). Sorted by length, so each is compared with
    /// its neighbours only.
    package func wholeShortCopies(_ prints: [[UInt32]], found: Set<Int>) -> [AudioOverlap] {
        let item = AudioFingerprint.itemSeconds
        let short = prints.indices.filter { Double(prints[$0].count) * item < minOverlap && prints[$0].count >= Self.minWholeItems }
            .sorted { prints[$0].count < prints[$1].count }
        var out: [AudioOverlap] = []
        for (k, x) in short.enumerated() {
            for y in short[(k + 1)...] {
                guard Double(prints[y].count) <= Double(prints[x].count) * 1.1 else { break }
                let (a, b) = (min(x, y), max(x, y))
                guard !found.contains(a << 20 | b) else { continue }
                for offset in [0, -3, 3] {
                    if let m = check(prints[a], prints[b], around: offset), m.kind == .duplicate {
                        out.append(AudioOverlap(a: a, b: b, aStart: m.aStart, bStart: m.bStart, length: m.length, similarity: m.similarity, kind: m.kind))
                        break
                    }
                }
            }
        }
        return out
    }

    /// Groups of recordings joined by overlaps (connected components), each sorted, largest first.
    public static func groups(_ overlaps: [AudioOverlap]) -> [[Int]] {
        var parent: [Int: Int] = [:]
        func root(_ x: Int) -> Int {
            var r = x
            while let p = parent[r], p != r { r = p }
            var y = x
            while let p = parent[y], p != r { parent[y] = r; y = p }
            return r
        }
        for o in overlaps {
            if parent[o.a] == nil { parent[o.a] = o.a }
            if parent[o.b] == nil { parent[o.b] = o.b }
            parent[root(o.a)] = root(o.b)
        }
        var members: [Int: [Int]] = [:]
        for x in parent.keys { members[root(x), default: []].append(x) }
        return members.values.map { $0.sorted() }.sorted { ($0.count, -$0[0]) > ($1.count, -$1[0]) }
    }

    /// The 20 bits of an item that change least when the audio moves by a fraction of an item
    /// (an excerpt cut anywhere, a song starting at any moment of a radio capture): measured over
    /// shifts of 0.015–0.1 s, they flip 1.2–4.5 % of the time, the other 12 bits 5–11.5 %. A key
    /// of these bits is exact for about 58 % of the items of such a copy, the whole item for 23 %.
    static package let stableBits: UInt32 = 0xFEBCCA8E

    /// Half of the value space, chosen by a multiplicative hash of the key.
    @inline(__always) static package func sampled(_ item: UInt32) -> Bool { (item &* 0x9E37_79B1) >> 31 == 0 }

    @inline(__always) static package func recording(of global: Int, base: [Int]) -> Int {
        var lo = 0, hi = base.count - 1   // base[lo] <= global < base[hi]
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if base[mid] <= global { lo = mid } else { hi = mid }
        }
        return lo
    }

    /// The shared stretch of `a` and `b` at alignment `offset` (item j = i + offset of b matches
    /// item i of a) or its neighbours, if it qualifies.
    package func check(_ a: [UInt32], _ b: [UInt32], around offset: Int) -> (aStart: Double, bStart: Double, length: Double, similarity: Double, kind: AudioOverlap.Kind)? {
        var best: (start: Int, count: Int, errors: Int, offset: Int, score: Double)? = nil
        let gain = extentBitError * 32
        for off in [offset, offset - 1, offset + 1] {
            let lo = max(0, -off), hi = min(a.count, b.count - off)
            guard hi > lo else { continue }
            // Maximum-sum stretch of (gain − bit errors): Kadane.
            var runStart = lo, runSum = 0.0, runErrors = 0
            var top: (start: Int, count: Int, errors: Int, score: Double) = (lo, 0, 0, 0)
            for i in lo..<hi {
                let e = (a[i] ^ b[i + off]).nonzeroBitCount
                if runSum <= 0 { runStart = i; runSum = 0; runErrors = 0 }
                runSum += gain - Double(e)
                runErrors += e
                if runSum > top.score { top = (runStart, i - runStart + 1, runErrors, runSum) }
            }
            if top.count > 0 && top.score > (best?.score ?? 0) { best = (top.start, top.count, top.errors, off, top.score) }
        }
        guard let m = best else { return nil }
        let item = AudioFingerprint.itemSeconds
        let ber = Double(m.errors) / Double(32 * m.count)
        // A whole copy (90 % of both) counts however short, from `minWhole`: a 3.8 s memo and its
        // MP3 are duplicates even below `minOverlap`, which bounds partial overlaps.
        let coverA = Double(m.count) / Double(max(1, a.count)), coverB = Double(m.count) / Double(max(1, b.count))
        let whole = coverA >= 0.9 && coverB >= 0.9
        guard Double(m.count) * item >= minOverlap || (whole && m.count >= Self.minWholeItems), ber <= maxBitError else { return nil }
        // Silence, hum or one held note matches itself anywhere: ask for some variety (every
        // item distinct in a whole copy too short to have 8).
        let distinct = Set(a[m.start..<(m.start + m.count)]).count
        guard distinct >= min(max(8, m.count / 10), whole ? m.count : Int.max) else { return nil }
        let kind: AudioOverlap.Kind = coverA >= 0.9 && coverB >= 0.9 ? .duplicate : (coverA >= 0.9 || coverB >= 0.9 ? .contained : .overlap)
        return (Double(m.start) * item, Double(m.start + m.offset) * item, Double(m.count) * item, 1 - ber, kind)
    }
}
