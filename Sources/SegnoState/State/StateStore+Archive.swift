import Foundation
import GRDB
import SegnoCore

extension StateStore {
    /// Writes one recording's fingerprints and search entry, inside `apply`'s transaction.
    static package func applyArchive(_ db: Database, path: String, fingerprints: [String: AudioFingerprint], catalog: CatalogEntry?) throws {
        guard let rid = try Int64.fetchOne(db, sql: "SELECT id FROM recording WHERE path = ?", arguments: [path]) else { return }
        for (stage, fp) in fingerprints {
            try db.execute(sql: "INSERT OR REPLACE INTO fingerprint (recording_id, stage, algorithm, duration, items) VALUES (?, ?, ?, ?, ?)",
                           arguments: [rid, stage, fp.algorithm, fp.duration, fp.blob])
        }
        if let c = catalog {
            let fields = CatalogEntry.searchFields
            let columns = fields.map(\.column)
            let sets = columns.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
            var arguments: [(any DatabaseValueConvertible)?] = [rid, c.recorded, c.latitude, c.longitude, c.duration, c.chapters?.catalogJSON]
            arguments += fields.map { $0.text(c) }
            try db.execute(sql: """
                INSERT INTO catalog (recording_id, recorded, latitude, longitude, duration, chapters, \(columns.joined(separator: ", ")))
                VALUES (?, ?, ?, ?, ?, ?\(String(repeating: ", ?", count: columns.count)))
                ON CONFLICT(recording_id) DO UPDATE SET \(sets),
                  recorded = excluded.recorded, latitude = excluded.latitude, longitude = excluded.longitude,
                  duration = COALESCE(excluded.duration, catalog.duration), chapters = excluded.chapters
                """, arguments: StatementArguments(arguments))
        }
    }

    /// Every fingerprint a tap (`stage`, its identity) stored, in path order. One query.
    public func fingerprints(stage: String) throws -> [StoredFingerprint] {
        try dbReader.read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT r.path, f.algorithm, f.duration, f.items FROM fingerprint f JOIN recording r ON r.id = f.recording_id
                WHERE f.stage = ? ORDER BY r.path
                """, arguments: [stage])
            var out: [StoredFingerprint] = []
            while let r = try rows.next() {
                let blob: Data = r[3]
                out.append(StoredFingerprint(path: r[0], fingerprint: AudioFingerprint(algorithm: r[1], items: AudioFingerprint.items(blob: blob), duration: r[2])))
            }
            return out
        }
    }

    /// The recordings that match `query`: ranked by FTS5's bm25 (title counts most, then tags,
    /// then the file name) when words are given, else by distance when `near` is given, else
    /// newest first.
    public func search(_ query: CatalogQuery, limit: Int = 1000) throws -> [CatalogHit] {
        var conditions: [String] = []
        var args: [any DatabaseValueConvertible] = []
        let match = Self.ftsQuery(query.words)
        if !query.words.isEmpty && match == nil { return [] }
        if let match {
            conditions.append("catalog_fts MATCH ?")
            args.append(match)
        }
        if let from = query.from {
            conditions.append("c.recorded >= ?")
            args.append(from)
        }
        if let to = query.to {
            // A date alone takes the whole day.
            conditions.append(to.count == 10 ? "substr(c.recorded, 1, 10) <= ?" : "c.recorded <= ?")
            args.append(to)
        }
        if let near = query.near {
            let dLat = near.km / 111.0 + 1e-6
            conditions.append("c.latitude BETWEEN ? AND ?")
            args += [near.latitude - dLat, near.latitude + dLat]
            let cosLat = cos(min(89.0, abs(near.latitude) + dLat) * Double.pi / 180)
            let dLon = near.km / (111.0 * max(cosLat, 1e-6)) + 1e-6
            if near.longitude - dLon > -180 && near.longitude + dLon < 180 {
                conditions.append("c.longitude BETWEEN ? AND ?")
                args += [near.longitude - dLon, near.longitude + dLon]
            } else {
                conditions.append("c.longitude IS NOT NULL")
            }
        }
        let from = match != nil
            ? "catalog_fts JOIN catalog c ON c.recording_id = catalog_fts.rowid JOIN recording r ON r.id = c.recording_id"
            : "catalog c JOIN recording r ON r.id = c.recording_id"
        let weights = CatalogEntry.searchFields.map { String($0.weight) }.joined(separator: ", ")
        let rank = match != nil ? "bm25(catalog_fts, \(weights))" : "NULL"
        let whereSQL = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let order = match != nil ? "ORDER BY 8, r.path" : "ORDER BY c.recorded DESC, r.path"
        let sql = "SELECT r.id, r.path, c.title, c.recorded, c.latitude, c.longitude, c.duration, \(rank), c.chapters FROM \(from) \(whereSQL) \(order) LIMIT ?"
        args.append(limit)
        return try dbReader.read { db in
            var hits: [CatalogHit] = []
            let outputs = try db.cachedStatement(sql: "SELECT output FROM step WHERE recording_id = ? ORDER BY stage")
            for r in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(args)) {
                var hit = CatalogHit(path: r[1], title: r[2], recorded: r[3], latitude: r[4], longitude: r[5], duration: r[6],
                                     distanceKm: nil, rank: r[7], outputs: [], chapters: (r[8] as String?).flatMap(ChapterList.init(catalogJSON:)))
                if let near = query.near {
                    guard let lat = hit.latitude, let lon = hit.longitude else { continue }
                    let d = CatalogEntry.distanceKm(near.latitude, near.longitude, lat, lon)
                    guard d <= near.km else { continue }
                    hit.distanceKm = d
                }
                let id: Int64 = r[0]
                for text in try String.fetchAll(outputs, arguments: [id]) {
                    hit.outputs += StepState(stage: "", fingerprint: "", source: "", output: text, outputHash: Data(), outputSize: 0, finishedAt: 0).outputs
                }
                hits.append(hit)
            }
            if match == nil, query.near != nil {
                hits.sort { ($0.distanceKm ?? 0, $0.path) < ($1.distanceKm ?? 0, $1.path) }
            }
            return hits
        }
    }

    /// The FTS5 query for the user's words: each word a quoted prefix query (`"seoul"*`), all of
    /// them required. Words with no letter or digit are dropped; nil when none is left.
    static package func ftsQuery(_ words: [String]) -> String? {
        let terms = words.flatMap { $0.split(whereSeparator: \.isWhitespace) }
            .filter { $0.contains { $0.isLetter || $0.isNumber } }
            .map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"*" }
        return terms.isEmpty ? nil : terms.joined(separator: " ")
    }
}
