import Foundation

/// Every stored recording with its steps, as `StateBackend.loadAll` returns it: read once per run
/// and looked up by relative path while planning. Compact and immutable, so a state of 1,000,000
/// recordings fits in a few hundred megabytes: the texts and hashes live in one byte arena, each
/// recording is a fixed-size record, each step a fixed-size record with its stage name and
/// fingerprint as indexes into a table of the few distinct values. A `RecordingState` is made
/// (with its steps) only when asked for (`subscript`, iteration).
public final class StateIndex: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// A span of the arena: chunk (24 bits), offset in it (20 bits), length (20 bits); `none` for nil.
    package struct Blob: Sendable, Equatable {
        package var bits: UInt64
        static package let none = Blob(bits: .max)
        /// A step whose `source` is its recording's identity key (the usual case): nothing stored.
        static package let identityKey = Blob(bits: .max - 1)
        static package let wholeChunk: UInt64 = 0xFFFFF
        package init(bits: UInt64) { self.bits = bits }
        package init(chunk: Int, offset: Int, count: UInt64) { bits = UInt64(chunk) << 40 | UInt64(offset) << 20 | count }
        package var chunk: Int { Int(bits >> 40) }
        package var offset: Int { Int(bits >> 20 & 0xFFFFF) }
        package var count: UInt64 { bits & 0xFFFFF }
    }

    package struct Record: Sendable {
        package var id: Int64
        package var size: Int64
        package var mtimeNs: Int64
        package var inode: Int64
        /// NaN for none.
        package var duration: Double
        package var updatedAt: Double
        /// The path's bytes, then the content hash's (`hashLength` of them).
        package var path: Blob
        package var firstStep: Int32
        package var status: UInt8
        /// `FailureClass` index in `FailureClass.allCases`, 0xFF for none.
        package var failureClass: UInt8
        /// Error, failed recipe, attempts or extra fingerprint rows are in `rare`.
        package var hasRare: Bool
        /// Bytes of content hash after the path; `noHash` for none, `rareHash` when in `rare`.
        package var hashLength: UInt8
    }
    static package let noHash: UInt8 = 0xFF
    static package let rareHash: UInt8 = 0xFE

    package struct Step: Sendable {
        /// Index into `texts`; the high bit set when the step's fingerprint row is stored.
        package var stage: UInt32
        package var fingerprint: UInt32
        package var source: Blob
        /// The output text's bytes, then the output hash's, then the detail's.
        package var output: Blob
        package var outputSize: Int64
        package var finishedAt: Double
        /// `UInt32.max` for no detail.
        package var detailLength: UInt32
        package var hashLength: UInt16
    }

    /// What few recordings have: failures, retries, fingerprint rows without a step.
    package struct Rare: Sendable {
        package var error: String?
        package var failedRecipe: String?
        package var attempts: Int = 0
        package var fingerprinted: [String] = []
        /// A content hash too long for its record (never from segno: SHA-256 is 32 bytes).
        package var contentHash: Data? = nil
    }

    static package let chunkSize = 1 << 20
    package let chunks: [[UInt8]]
    package let records: [Record]
    package let steps: [Step]
    package let texts: [String]
    package let rare: [Int32: Rare]
    /// Open addressing over path hashes: record index + 1, 0 for an empty slot.
    package let table: [UInt32]

    package init(chunks: [[UInt8]], records: [Record], steps: [Step], texts: [String], rare: [Int32: Rare]) {
        self.chunks = chunks
        self.records = records
        self.steps = steps
        self.texts = texts
        self.rare = rare
        var capacity = 16
        while capacity < records.count * 2 { capacity <<= 1 }
        var table = [UInt32](repeating: 0, count: capacity)
        let mask = capacity - 1
        for i in records.indices {
            let r = records[i]
            var slot = Self.hash(chunks, r.path, dropLast: Self.tail(r)) & mask
            while table[slot] != 0 { slot = (slot + 1) & mask }
            table[slot] = UInt32(i + 1)
        }
        self.table = table
    }

    /// An index of these recordings (tests, and planning without a store).
    public convenience init(dictionaryLiteral elements: (String, RecordingState)...) {
        self.init(Dictionary(elements, uniquingKeysWith: { _, b in b }))
    }

    /// An index of these recordings, keyed by path (the key wins over `RecordingState.path`).
    public convenience init(_ states: [String: RecordingState]) {
        var b = Builder(recordings: states.count, steps: 0)
        for (path, var r) in states.sorted(by: { $0.key < $1.key }) {
            r.path = path
            b.add(r)
        }
        self.init(building: &b)
    }

    /// Takes what `b` collected (left empty).
    convenience package init(building b: inout Builder) {
        let parts = b.finish()
        self.init(chunks: parts.chunks, records: parts.records, steps: parts.steps, texts: parts.texts, rare: parts.rare)
    }

    public var count: Int { records.count }
    public var isEmpty: Bool { records.isEmpty }

    /// The stored recording at this relative path, made on demand.
    public subscript(path: String) -> RecordingState? {
        guard let i = index(of: path) else { return nil }
        return state(at: i)
    }

    /// True when a recording is stored at `path` (no `RecordingState` made).
    public func contains(_ path: String) -> Bool { index(of: path) != nil }

    /// Every stored relative path, in load order.
    public var keys: LazyMapSequence<Range<Int>, String> { records.indices.lazy.map { self.path(at: $0) } }
    /// Every stored recording, made one at a time.
    public var values: LazyMapSequence<Range<Int>, RecordingState> { records.indices.lazy.map { self.state(at: $0) } }

    public func makeIterator() -> AnyIterator<(key: String, value: RecordingState)> {
        var i = 0
        return AnyIterator {
            guard i < self.records.count else { return nil }
            defer { i += 1 }
            let s = self.state(at: i)
            return (key: s.path, value: s)
        }
    }

    /// Calls `body` with the `output` text (a JSON array) of every stored step whose text
    /// contains `needle` (every step for nil), and no more: what `recordedOutputs` reads without
    /// making the recordings.
    public func forEachStepOutput(containing needle: String? = nil, _ body: (String) -> Void) {
        let pattern = needle.map { Array($0.utf8) } ?? []
        for s in steps {
            let rest = Int(s.hashLength) + (s.detailLength == .max ? 0 : Int(s.detailLength))
            if !pattern.isEmpty, !withBytes(s.output, from: 0, dropLast: rest, { Self.find(pattern, in: $0) }) { continue }
            body(outputText(s))
        }
    }

    static package func find(_ pattern: [UInt8], in bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= pattern.count else { return false }
        for start in 0 ... bytes.count - pattern.count where bytes[start] == pattern[0] {
            if pattern.indices.allSatisfy({ bytes[start + $0] == pattern[$0] }) { return true }
        }
        return false
    }

    // MARK: Reading

    package func index(of path: String) -> Int? {
        guard !records.isEmpty else { return nil }
        var key = path
        return key.withUTF8 { utf8 -> Int? in
            let mask = table.count - 1
            var slot = Self.hash(UnsafeRawBufferPointer(utf8)) & mask
            while true {
                let entry = table[slot]
                if entry == 0 { return nil }
                let i = Int(entry - 1)
                let r = records[i]
                if withBytes(r.path, from: 0, dropLast: Self.tail(r), { $0.elementsEqual(UnsafeRawBufferPointer(utf8)) }) { return i }
                slot = (slot + 1) & mask
            }
        }
    }

    package func withBytes<T>(_ blob: Blob, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let chunk = chunks[blob.chunk]
        return chunk.withUnsafeBytes { all in
            let count = blob.count == Blob.wholeChunk ? all.count : Int(blob.count)
            return body(UnsafeRawBufferPointer(rebasing: all[blob.offset ..< blob.offset + count]))
        }
    }

    /// Bytes `from`… of `blob`, without its last `dropLast`.
    package func withBytes<T>(_ blob: Blob, from start: Int, dropLast: Int, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        withBytes(blob) { body(UnsafeRawBufferPointer(rebasing: $0[start ..< $0.count - dropLast])) }
    }

    /// Bytes of content hash after a record's path.
    static package func tail(_ r: Record) -> Int { r.hashLength >= rareHash ? 0 : Int(r.hashLength) }

    package func path(at i: Int) -> String {
        let r = records[i]
        return withBytes(r.path, from: 0, dropLast: Self.tail(r)) { String(decoding: $0, as: UTF8.self) }
    }

    package func contentHash(at i: Int) -> Data? {
        let r = records[i]
        switch r.hashLength {
        case Self.noHash: return nil
        case Self.rareHash: return rare[Int32(i)]?.contentHash
        default: return withBytes(r.path) { Data($0[($0.count - Int(r.hashLength))...]) }
        }
    }

    /// A step's output text, output hash and detail.
    package func outputText(_ s: Step) -> String {
        withBytes(s.output, from: 0, dropLast: Int(s.hashLength) + (s.detailLength == .max ? 0 : Int(s.detailLength))) { String(decoding: $0, as: UTF8.self) }
    }

    package func outputHash(_ s: Step) -> Data {
        withBytes(s.output) { all in
            let end = all.count - (s.detailLength == .max ? 0 : Int(s.detailLength))
            return Data(all[(end - Int(s.hashLength)) ..< end])
        }
    }

    package func detail(_ s: Step) -> String? {
        guard s.detailLength != .max else { return nil }
        return withBytes(s.output) { String(decoding: UnsafeRawBufferPointer(rebasing: $0[($0.count - Int(s.detailLength))...]), as: UTF8.self) }
    }

    package func string(_ blob: Blob) -> String? {
        guard blob != .none else { return nil }
        return withBytes(blob) { String(decoding: $0, as: UTF8.self) }
    }

    static package func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
        var h: UInt64 = 0xcbf29ce484222325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100000001b3 }
        return Int(truncatingIfNeeded: h ^ h >> 29)
    }

    static package func hash(_ chunks: [[UInt8]], _ blob: Blob, dropLast: Int) -> Int {
        chunks[blob.chunk].withUnsafeBytes { all in
            let count = blob.count == Blob.wholeChunk ? all.count : Int(blob.count)
            return hash(UnsafeRawBufferPointer(rebasing: all[blob.offset ..< blob.offset + count - dropLast]))
        }
    }

    /// The recording at index `i`, with its steps.
    package func state(at i: Int) -> RecordingState {
        let r = records[i]
        let extra = r.hasRare ? rare[Int32(i)] : nil
        let identity = FileIdentity(size: r.size, mtimeNs: r.mtimeNs, inode: r.inode)
        var out = RecordingState(id: r.id, path: path(at: i), identity: identity, contentHash: contentHash(at: i),
                                 duration: r.duration.isNaN ? nil : r.duration,
                                 status: Self.statuses[Int(r.status)], attempts: extra?.attempts ?? 0, error: extra?.error,
                                 updatedAt: r.updatedAt, steps: [:], failedRecipe: extra?.failedRecipe,
                                 failureClass: r.failureClass == 0xFF ? nil : FailureClass.allCases[Int(r.failureClass)])
        let end = i + 1 < records.count ? Int(records[i + 1].firstStep) : steps.count
        var key: String? = nil
        for s in steps[Int(r.firstStep) ..< end] {
            let stage = texts[Int(s.stage & 0x7FFF_FFFF)]
            let source: String
            if s.source == .identityKey {
                if key == nil { key = identity.key }
                source = key!
            } else {
                source = string(s.source) ?? ""
            }
            out.steps[stage] = StepState(stage: stage, fingerprint: texts[Int(s.fingerprint)], source: source,
                                         output: outputText(s), outputHash: outputHash(s),
                                         outputSize: s.outputSize, finishedAt: s.finishedAt, detail: detail(s))
            if s.stage & 0x8000_0000 != 0 { out.fingerprinted.insert(stage) }
        }
        for stage in extra?.fingerprinted ?? [] { out.fingerprinted.insert(stage) }
        return out
    }

    static package let statuses: [RecordingStatus] = [.done, .failed, .partial]

    // MARK: Reading in place (the planner: no `RecordingState` for a recording left alone)

    /// The index of a stage name or fingerprint text, nil when no step has it.
    package func textId(_ text: String) -> UInt32? { texts.firstIndex(of: text).map(UInt32.init) }

    package func status(at i: Int) -> RecordingStatus { Self.statuses[Int(records[i].status)] }

    /// The step of recording `i` whose stage is text `stage`, as an index into `steps`.
    package func step(of i: Int, stage: UInt32?) -> Int? {
        guard let stage else { return nil }
        let end = i + 1 < records.count ? Int(records[i + 1].firstStep) : steps.count
        return (Int(records[i].firstStep) ..< end).first { steps[$0].stage & 0x7FFF_FFFF == stage }
    }

    package func fingerprint(ofStep s: Int) -> String { texts[Int(steps[s].fingerprint)] }

    /// True when step `s` (of recording `i`) was made from a source with this identity.
    package func step(_ s: Int, of i: Int, madeFrom identity: FileIdentity) -> Bool {
        let r = records[i]
        if steps[s].source == .identityKey { return FileIdentity(size: r.size, mtimeNs: r.mtimeNs, inode: r.inode) == identity }
        return string(steps[s].source) == identity.key
    }

    package func outputs(ofStep s: Int) -> [String] { StepState.outputs(of: outputText(steps[s])) }

    /// Calls `body` with each recording's index and every output its steps list, in place (no
    /// `RecordingState` is built). Called once per run by `OutputOwners`, on the first claim.
    package func forEachOutput(_ body: (Int, String) -> Void) {
        for i in records.indices {
            let end = i + 1 < records.count ? Int(records[i + 1].firstStep) : steps.count
            for s in Int(records[i].firstStep) ..< end {
                for o in StepState.outputs(of: outputText(steps[s])) { body(i, o) }
            }
        }
    }
    package func outputHash(ofStep s: Int) -> Data { outputHash(steps[s]) }

    /// True when recording `i` has a `fingerprint` row for this stage.
    package func isFingerprinted(_ i: Int, stage: String, step s: Int?) -> Bool {
        if let s, steps[s].stage & 0x8000_0000 != 0 { return true }
        return records[i].hasRare && rare[Int32(i)]?.fingerprinted.contains(stage) == true
    }

    // MARK: Building

    /// Collects recordings and steps as a backend reads them (recordings first, then steps and
    /// fingerprint rows referring to them by id), then makes the index.
    package struct Builder {
        package var chunks: [[UInt8]] = []
        package var records: [Record] = []
        package var steps: [Step] = []
        /// Record index of each step, while building.
        package var owners: [Int32] = []
        package var texts: [String] = []
        package var textIndex: [String: UInt32] = [:]
        package var rare: [Int32: Rare] = [:]
        package var idsAscending = true
        package var byId: [Int64: Int32]? = nil
        package var prints: [(owner: Int32, stage: String)] = []

        /// `recordings` and `steps` are how many to expect (sizes the arrays once; 0 for unknown).
        package init(recordings: Int, steps: Int) {
            records.reserveCapacity(recordings)
            self.steps.reserveCapacity(steps)
            owners.reserveCapacity(steps)
        }

        mutating package func storeBytes<C: Collection>(_ bytes: C) -> Blob where C.Element == UInt8 {
            let blob = reserve(bytes.count)
            chunks[blob.chunk].append(contentsOf: bytes)
            return blob
        }

        /// Room for `n` bytes in one chunk, appended to next (`chunks[blob.chunk].append`, in order).
        mutating package func reserve(_ n: Int) -> Blob {
            if n >= StateIndex.chunkSize / 4 {
                var c: [UInt8] = []
                c.reserveCapacity(n)
                chunks.append(c)
                return Blob(chunk: chunks.count - 1, offset: 0, count: Blob.wholeChunk)
            }
            if chunks.isEmpty || chunks[chunks.count - 1].count + n > StateIndex.chunkSize || chunks[chunks.count - 1].capacity < StateIndex.chunkSize {
                var c: [UInt8] = []
                c.reserveCapacity(StateIndex.chunkSize)
                chunks.append(c)
            }
            let last = chunks.count - 1
            return Blob(chunk: last, offset: chunks[last].count, count: UInt64(n))
        }

        mutating package func store(_ text: String?) -> Blob {
            guard let text else { return .none }
            return storeBytes(text.utf8)
        }

        mutating package func text(_ t: String) -> UInt32 {
            if let i = textIndex[t] { return i }
            let i = UInt32(texts.count)
            texts.append(t)
            textIndex[t] = i
            return i
        }

        /// Adds a recording and the steps it carries (`RecordingState.steps`, `fingerprinted`).
        mutating package func add(_ r: RecordingState) {
            addRecording(id: r.id, path: r.path, identity: r.identity, contentHash: r.contentHash, duration: r.duration, status: r.status,
                         attempts: r.attempts, error: r.error, updatedAt: r.updatedAt, failedRecipe: r.failedRecipe, failureClass: r.failureClass)
            let owner = Int32(records.count - 1)
            for s in r.steps.values.sorted(by: { $0.stage < $1.stage }) { addStep(owner: owner, s) }
            for f in r.fingerprinted.sorted() { prints.append((owner, f)) }
        }

        mutating package func addRecording(id: Int64, path: String, identity: FileIdentity, contentHash: Data?, duration: Double?,
                                   status: RecordingStatus, attempts: Int, error: String?, updatedAt: Double,
                                   failedRecipe: String?, failureClass: FailureClass?) {
            if let last = records.last, last.id >= id { idsAscending = false }
            let index = Int32(records.count)
            let longHash = (contentHash?.count ?? 0) >= Int(StateIndex.rareHash)
            let hasRare = error != nil || failedRecipe != nil || attempts != 0 || longHash
            if hasRare { rare[index] = Rare(error: error, failedRecipe: failedRecipe, attempts: attempts, contentHash: longHash ? contentHash : nil) }
            let inline = longHash ? nil : contentHash
            let blob = reserve(path.utf8.count + (inline?.count ?? 0))
            chunks[blob.chunk].append(contentsOf: path.utf8)
            if let inline { chunks[blob.chunk].append(contentsOf: inline) }
            records.append(Record(id: id, size: identity.size, mtimeNs: identity.mtimeNs, inode: identity.inode,
                                  duration: duration ?? .nan, updatedAt: updatedAt, path: blob,
                                  firstStep: 0, status: UInt8(StateIndex.statuses.firstIndex(of: status)!),
                                  failureClass: failureClass.map { UInt8(FailureClass.allCases.firstIndex(of: $0)!) } ?? 0xFF,
                                  hasRare: hasRare,
                                  hashLength: contentHash == nil ? StateIndex.noHash : longHash ? StateIndex.rareHash : UInt8(contentHash!.count)))
            if byId != nil { byId![id] = index }
        }

        /// The record index of a recording id (nil for a step whose recording was not read).
        mutating package func owner(of id: Int64) -> Int32? {
            if !idsAscending && byId == nil {
                var map: [Int64: Int32] = [:]
                map.reserveCapacity(records.count)
                for (i, r) in records.enumerated() { map[r.id] = Int32(i) }
                byId = map
            }
            if let byId { return byId[id] }
            var lo = 0, hi = records.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if records[mid].id < id { lo = mid + 1 } else { hi = mid }
            }
            return lo < records.count && records[lo].id == id ? Int32(lo) : nil
        }

        mutating package func addStep(recordingId: Int64, _ s: StepState) {
            guard let owner = owner(of: recordingId) else { return }
            addStep(owner: owner, s)
        }

        mutating package func addStep(owner: Int32, _ s: StepState) {
            let r = records[Int(owner)]
            let sameSource = s.source == FileIdentity(size: r.size, mtimeNs: r.mtimeNs, inode: r.inode).key
            // An output hash is a SHA-256 (32 bytes); a detail, a few values as JSON.
            precondition(s.outputHash.count < Int(UInt16.max) && (s.detail?.utf8.count ?? 0) < Int(UInt32.max), "state index: step too large")
            let blob = reserve(s.output.utf8.count + s.outputHash.count + (s.detail?.utf8.count ?? 0))
            chunks[blob.chunk].append(contentsOf: s.output.utf8)
            chunks[blob.chunk].append(contentsOf: s.outputHash)
            if let d = s.detail { chunks[blob.chunk].append(contentsOf: d.utf8) }
            let step = Step(stage: text(s.stage), fingerprint: text(s.fingerprint), source: sameSource ? .identityKey : store(s.source),
                            output: blob, outputSize: s.outputSize, finishedAt: s.finishedAt,
                            detailLength: s.detail.map { UInt32($0.utf8.count) } ?? .max, hashLength: UInt16(s.outputHash.count))
            steps.append(step)
            owners.append(owner)
        }

        /// A row of the `fingerprint` table.
        mutating package func addFingerprinted(recordingId: Int64, stage: String) {
            guard let owner = owner(of: recordingId) else { return }
            prints.append((owner, stage))
        }

        mutating package func finish() -> (chunks: [[UInt8]], records: [Record], steps: [Step], texts: [String], rare: [Int32: Rare]) {
            // Steps grouped by recording; a later step of the same stage replaces an earlier one.
            if zip(owners, owners.dropFirst()).contains(where: { $0 > $1 }) {
                let order = owners.indices.sorted { (owners[$0], $0) < (owners[$1], $1) }
                steps = order.map { steps[$0] }
                owners = order.map { owners[$0] }
            }
            // Compacted in place (no second array of steps at 1,000,000 recordings).
            var kept = 0
            var next = 0
            for i in records.indices {
                records[i].firstStep = Int32(kept)
                let start = kept
                while next < steps.count && owners[next] == Int32(i) {
                    let s = steps[next]
                    if let same = (start ..< kept).first(where: { steps[$0].stage == s.stage }) { steps[same] = s } else { steps[kept] = s; kept += 1 }
                    next += 1
                }
            }
            steps.removeLast(steps.count - kept)
            owners = []
            for (owner, stage) in prints {
                let start = Int(records[Int(owner)].firstStep)
                let end = Int(owner) + 1 < records.count ? Int(records[Int(owner) + 1].firstStep) : steps.count
                if let t = textIndex[stage], let s = steps[start ..< end].firstIndex(where: { $0.stage == t }) {
                    steps[s].stage |= 0x8000_0000
                } else {
                    records[Int(owner)].hasRare = true
                    rare[owner, default: Rare()].fingerprinted.append(stage)
                }
            }
            defer { (chunks, records, steps, texts, rare) = ([], [], [], [], [:]) }
            return (chunks, records, steps, texts, rare)
        }
    }
}
