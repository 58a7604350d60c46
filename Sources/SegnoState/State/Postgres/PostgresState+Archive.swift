import Foundation
import SegnoCore
import SegnoS3

/// The archive in PostgreSQL: fingerprints as `bytea` (the same 32-bit little-endian items as
/// SQLite's BLOB), and a catalogue whose searchable fields are kept as folded words
/// (`SearchWords`): " w1 w2 " per field, fields joined by "|". A query word is a `LIKE '% word%'`
/// on that text — the start of a word, as SQLite's FTS5 prefix queries — which needs no word
/// segmentation (Korean) and no extension; a pg_trgm GIN index, made when the extension can be
/// created, makes those LIKEs index scans.
extension PostgresState {
    /// The `words` column for an entry: each field of `CatalogEntry.searchFields` as " w1 w2 ",
    /// joined by "|" (never inside a word, so a phrase never spans two fields).
    static package func words(_ entry: CatalogEntry) -> String {
        CatalogEntry.searchFields.map { " " + SearchWords.of($0.text(entry)).joined(separator: " ") + " " }.joined(separator: "|")
    }

    /// Writes the batch's fingerprints and catalogue entries: one statement each (when any), for
    /// recordings the store has. Called by `apply` after the batch's results.
    package func writeArchive(_ updates: [(path: String, fingerprints: [String: AudioFingerprint], catalog: CatalogEntry?)]) throws {
        var fpPath: [String?] = [], fpStage: [String?] = [], fpAlgorithm: [Int?] = [], fpDuration: [Double?] = [], fpItems: [String?] = []
        var cPath: [String?] = [], cTitle: [String?] = [], cRecorded: [String?] = [], cLat: [Double?] = [], cLon: [Double?] = []
        var cDuration: [Double?] = [], cWords: [String?] = [], cChapters: [String?] = []
        var latest: [String: Int] = [:]
        for u in updates {
            for (stage, fp) in u.fingerprints.sorted(by: { $0.key < $1.key }) {
                fpPath.append(u.path); fpStage.append(stage); fpAlgorithm.append(fp.algorithm); fpDuration.append(fp.duration)
                fpItems.append(Self.byteaHex(fp.blob))
            }
            if let c = u.catalog {
                if let i = latest[u.path] {
                    // One statement may not change a row twice: the later entry wins.
                    cTitle[i] = c.title; cRecorded[i] = c.recorded; cLat[i] = c.latitude; cLon[i] = c.longitude
                    cDuration[i] = c.duration; cWords[i] = Self.words(c); cChapters[i] = c.chapters?.catalogJSON
                    continue
                }
                latest[u.path] = cPath.count
                cPath.append(u.path); cTitle.append(c.title); cRecorded.append(c.recorded); cLat.append(c.latitude); cLon.append(c.longitude)
                cDuration.append(c.duration); cWords.append(Self.words(c)); cChapters.append(c.chapters?.catalogJSON)
            }
        }
        if !fpPath.isEmpty {
            try pool.with {
                try $0.exec("""
                    INSERT INTO fingerprint (recording_id, stage, algorithm, duration, items)
                    SELECT DISTINCT ON (r.id, f.stage) r.id, f.stage, f.algorithm, f.duration, f.items::bytea
                    FROM unnest($1::text[], $2::text[], $3::int4[], $4::float8[], $5::text[]) WITH ORDINALITY AS f(path, stage, algorithm, duration, items, n)
                    JOIN recording r ON r.path = f.path ORDER BY r.id, f.stage, f.n DESC
                    ON CONFLICT (recording_id, stage) DO UPDATE SET algorithm = excluded.algorithm, duration = excluded.duration, items = excluded.items
                    """, [PGArray.text(fpPath), PGArray.text(fpStage), PGArray.numbers(fpAlgorithm), PGArray.numbers(fpDuration), PGArray.text(fpItems)])
            }
        }
        if !cPath.isEmpty {
            try pool.with {
                try $0.exec("""
                    INSERT INTO catalog (recording_id, title, recorded, latitude, longitude, duration, words, chapters)
                    SELECT r.id, c.title, c.recorded, c.latitude, c.longitude, c.duration, c.words, c.chapters
                    FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::float8[], $6::float8[], $7::text[], $8::text[])
                      AS c(path, title, recorded, latitude, longitude, duration, words, chapters)
                    JOIN recording r ON r.path = c.path
                    ON CONFLICT (recording_id) DO UPDATE SET title = excluded.title, recorded = excluded.recorded,
                      latitude = excluded.latitude, longitude = excluded.longitude,
                      duration = COALESCE(excluded.duration, catalog.duration), words = excluded.words, chapters = excluded.chapters
                    """, [PGArray.text(cPath), PGArray.text(cTitle), PGArray.text(cRecorded), PGArray.numbers(cLat), PGArray.numbers(cLon),
                          PGArray.numbers(cDuration), PGArray.text(cWords), PGArray.text(cChapters)])
            }
        }
    }

    /// `\x` and two lowercase hex digits per byte: bytea's input form.
    static package func byteaHex(_ data: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8](repeating: 0, count: 2 + data.count * 2)
        out[0] = UInt8(ascii: "\\"); out[1] = UInt8(ascii: "x")
        var i = 2
        for b in data {
            out[i] = digits[Int(b >> 4)]; out[i + 1] = digits[Int(b & 15)]
            i += 2
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of bytea's output form (`\x…`), nil when it is not that.
    static package func bytea(_ text: String) -> Data? {
        guard text.hasPrefix("\\x") else { return nil }
        return Hex.decode(String(text.dropFirst(2))).map { Data($0) }
    }

    public func fingerprints(stage: String) throws -> [StoredFingerprint] {
        try pool.with { conn in
            var out: [StoredFingerprint] = []
            try conn.exec("BEGIN READ ONLY")
            try conn.forEachRow("""
                SELECT r.path, f.algorithm, f.duration, f.items FROM fingerprint f JOIN recording r ON r.id = f.recording_id
                WHERE f.stage = $1 ORDER BY r.path COLLATE "C"
                """, [stage], fetch: 2000) { row in
                let items = AudioFingerprint.items(blob: row[3].flatMap(Self.bytea) ?? Data())
                out.append(StoredFingerprint(path: row[0] ?? "", fingerprint: AudioFingerprint(algorithm: Int(row[1] ?? "0") ?? 0, items: items,
                                                                                          duration: Double(row[2] ?? "0") ?? 0)))
            }
            try conn.exec("COMMIT")
            return out
        }
    }

    public func search(_ query: CatalogQuery, limit: Int) throws -> [CatalogHit] {
        let terms = SearchWords.terms(query.words)
        if !query.words.isEmpty && terms.isEmpty { return [] }
        var conditions: [String] = []
        var args: [String?] = []
        func arg(_ v: String) -> String {
            args.append(v)
            return "$\(args.count)"
        }
        var score: [String] = []
        for t in terms {
            let p = arg("% " + t.joined(separator: " ") + "%")
            conditions.append("c.words LIKE \(p)")
            for (j, f) in CatalogEntry.searchFields.enumerated() {
                score.append("CASE WHEN split_part(c.words, '|', \(j + 1)) LIKE \(p) THEN \(f.weight) ELSE 0 END")
            }
        }
        if let from = query.from { conditions.append("c.recorded >= \(arg(from))") }
        if let to = query.to {
            // A date alone takes the whole day.
            conditions.append(to.count == 10 ? "substr(c.recorded, 1, 10) <= \(arg(to))" : "c.recorded <= \(arg(to))")
        }
        if let near = query.near {
            let dLat = near.km / 111.0 + 1e-6
            conditions.append("c.latitude BETWEEN \(arg(String(near.latitude - dLat)))::float8 AND \(arg(String(near.latitude + dLat)))::float8")
            let cosLat = cos(min(89.0, abs(near.latitude) + dLat) * Double.pi / 180)
            let dLon = near.km / (111.0 * max(cosLat, 1e-6)) + 1e-6
            if near.longitude - dLon > -180 && near.longitude + dLon < 180 {
                conditions.append("c.longitude BETWEEN \(arg(String(near.longitude - dLon)))::float8 AND \(arg(String(near.longitude + dLon)))::float8")
            } else {
                conditions.append("c.longitude IS NOT NULL")
            }
        }
        let rank = terms.isEmpty ? "NULL::float8" : "-(" + score.joined(separator: " + ") + ")::float8"
        let whereSQL = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let order = terms.isEmpty ? "ORDER BY c.recorded COLLATE \"C\" DESC, r.path COLLATE \"C\"" : "ORDER BY 8, r.path COLLATE \"C\""
        let sql = "SELECT r.id, r.path, c.title, c.recorded, c.latitude, c.longitude, c.duration, \(rank), c.chapters FROM catalog c JOIN recording r ON r.id = c.recording_id \(whereSQL) \(order) LIMIT \(arg(String(limit)))"
        return try pool.with { conn in
            try conn.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { _ = try? conn.exec("COMMIT") }
            var hits: [(id: String, hit: CatalogHit)] = []
            for r in try conn.exec(sql, args) {
                var hit = CatalogHit(path: r[1] ?? "", title: r[2] ?? "", recorded: r[3] ?? "", latitude: r[4].flatMap(Double.init),
                                     longitude: r[5].flatMap(Double.init), duration: r[6].flatMap(Double.init), distanceKm: nil,
                                     rank: r[7].flatMap(Double.init), outputs: [], chapters: r[8].flatMap(ChapterList.init(catalogJSON:)))
                if let near = query.near {
                    guard let lat = hit.latitude, let lon = hit.longitude else { continue }
                    let d = CatalogEntry.distanceKm(near.latitude, near.longitude, lat, lon)
                    guard d <= near.km else { continue }
                    hit.distanceKm = d
                }
                hits.append((r[0] ?? "", hit))
            }
            var outputs: [String: [String]] = [:]
            if !hits.isEmpty {
                for r in try conn.exec("SELECT recording_id, output FROM step WHERE recording_id = ANY($1::int8[]) ORDER BY recording_id, stage COLLATE \"C\"",
                                       [PGArray.text(hits.map(\.id))]) {
                    let text = r[1] ?? "[]"
                    outputs[r[0] ?? "", default: []] += StepState(stage: "", fingerprint: "", source: "", output: text, outputHash: Data(),
                                                                  outputSize: 0, finishedAt: 0).outputs
                }
            }
            var out = hits.map { h -> CatalogHit in
                var hit = h.hit
                hit.outputs = outputs[h.id] ?? []
                return hit
            }
            if terms.isEmpty, query.near != nil {
                out.sort { ($0.distanceKm ?? 0, $0.path) < ($1.distanceKm ?? 0, $1.path) }
            }
            return out
        }
    }

    public func run(id: Int64) throws -> RunRecord? {
        try runs("WHERE id = $1", [String(id)]).first
    }

    public var statementStats: (statements: Int, seconds: Double)? { (pool.stats.statements, pool.stats.seconds) }
}
