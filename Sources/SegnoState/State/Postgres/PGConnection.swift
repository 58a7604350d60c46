import CLibPQ
import Foundation
import SegnoCore
import Synchronization

/// A PostgreSQL error: the server's message and SQLSTATE, or why the connection failed. Never
/// holds the password (libpq reads it from PGPASSWORD or ~/.pgpass, not from the URL segno logs).
public struct PGError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// SQLSTATE ("40001"…), nil for connection failures.
    public var state: String?
    /// True when the connection itself failed (server down, network): worth reconnecting.
    public var connectionLost: Bool
    public var description: String { "PostgreSQL: " + message.trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// Statements a pool's connections ran and the wall time they took (round trip included), for
/// the benchmark's claim overhead per recording (`SEGNO_STATE_STATS`). Updated by every `exec`.
public final class PGStats: Sendable {
    private let counts = Atomic<Int>(0)
    private let nanoseconds = Atomic<Int>(0)
    public init() {}
    /// Statements run so far (BEGIN and COMMIT count as statements: each is a round trip).
    public var statements: Int { counts.load(ordering: .relaxed) }
    /// Seconds spent waiting for those statements.
    public var seconds: Double { Double(nanoseconds.load(ordering: .relaxed)) / 1e9 }
    package func add(nanoseconds ns: UInt64) {
        counts.add(1, ordering: .relaxed)
        nanoseconds.add(Int(ns), ordering: .relaxed)
    }
}

/// One synchronous libpq connection, used by one thread at a time (the pool hands it out).
/// Parameters and results travel as text.
final package class PGConnection: @unchecked Sendable {
    private var conn: OpaquePointer?
    package let url: String
    package let stats: PGStats?

    /// Connects; `url` is a libpq connection URI (postgres://user@host:port/db?sslmode=…).
    package init(url: String, stats: PGStats? = nil) throws(PGError) {
        self.url = url
        self.stats = stats
        conn = PQconnectdb(url)
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = conn.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(conn)
            conn = nil
            throw PGError(message: message, state: nil, connectionLost: true)
        }
        _ = try? exec("SET client_min_messages = warning")
    }

    deinit { PQfinish(conn) }

    package var isHealthy: Bool { conn != nil && PQstatus(conn) == CONNECTION_OK }

    /// Runs one statement with text parameters ($1, $2…); returns the rows as text (nil for NULL).
    @discardableResult
    package func exec(_ sql: String, _ params: [String?] = []) throws(PGError) -> [[String?]] {
        guard let conn else { throw PGError(message: "not connected", state: nil, connectionLost: true) }
        let cStrings = params.map { $0.map { strdup($0) } ?? nil }
        defer { cStrings.forEach { free($0) } }
        let started = DispatchTime.now().uptimeNanoseconds
        defer { stats?.add(nanoseconds: DispatchTime.now().uptimeNanoseconds - started) }
        let result: OpaquePointer? = cStrings.withUnsafeBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: max(1, params.count)) { ptr in
                PQexecParams(conn, sql, Int32(params.count), nil, params.isEmpty ? nil : ptr, nil, nil, 0)
            }
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = result.map { String(cString: PQresultErrorMessage($0)) } ?? String(cString: PQerrorMessage(conn))
            let state = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) }
            throw PGError(message: message, state: state, connectionLost: PQstatus(conn) != CONNECTION_OK)
        }
        let rows = Int(PQntuples(result)), cols = Int(PQnfields(result))
        var out: [[String?]] = []
        out.reserveCapacity(rows)
        for r in 0..<rows {
            var row: [String?] = []
            row.reserveCapacity(cols)
            for c in 0..<cols {
                row.append(PQgetisnull(result, Int32(r), Int32(c)) != 0 ? nil : String(cString: PQgetvalue(result, Int32(r), Int32(c))))
            }
            out.append(row)
        }
        return out
    }
}

extension PGConnection {
    /// Runs a query through a cursor and hands its rows to `body` `fetch` at a time, so a large
    /// table (a million recordings) is never held whole, neither by libpq nor as Swift arrays.
    /// Must be called inside a transaction (a cursor lives in one).
    package func forEachRow(_ sql: String, _ params: [String?] = [], fetch: Int = 10_000, _ body: ([String?]) throws -> Void) throws {
        try exec("DECLARE segno_rows NO SCROLL CURSOR FOR " + sql, params)
        while true {
            let rows = try exec("FETCH \(fetch) FROM segno_rows")
            for r in rows { try body(r) }
            if rows.count < fetch { break }
        }
        try exec("CLOSE segno_rows")
    }
}

/// Connections shared by a process's threads: each call takes an idle one (or opens one), so a
/// worker thread in a call has a connection of its own. A lost server is waited for: calls
/// reconnect with back-off for up to `patience` seconds, then fail (an environment failure).
final package class PGPool: Sendable {
    package let url: String
    package let patience: Double
    package let stats = PGStats()
    private let idle = Mutex<[PGConnection]>([])

    package init(url: String, patience: Double = 120) {
        self.url = url
        self.patience = patience
    }

    /// Runs `body` on a connection; retried on a fresh connection while the server is unreachable.
    @discardableResult
    package func with<T>(_ body: (PGConnection) throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(patience)
        var delay = 0.2
        while true {
            do {
                let conn = try idle.withLock { $0.popLast() } ?? PGConnection(url: url, stats: stats)
                do {
                    let value = try body(conn)
                    idle.withLock { $0.append(conn) }
                    return value
                } catch let e as PGError where e.connectionLost || !conn.isHealthy {
                    throw e  // the connection is dropped, not returned to the pool
                } catch {
                    _ = try? conn.exec("ROLLBACK")
                    idle.withLock { $0.append(conn) }
                    throw error
                }
            } catch let e as PGError where e.connectionLost {
                if Date() >= deadline { throw e }
                Thread.sleep(forTimeInterval: delay)
                delay = min(5, delay * 2)
            }
        }
    }

    /// Runs `body` in one transaction (BEGIN … COMMIT; ROLLBACK on error).
    package func transaction<T>(_ body: (PGConnection) throws -> T) throws -> T {
        try with { conn in
            try conn.exec("BEGIN")
            do {
                let value = try body(conn)
                try conn.exec("COMMIT")
                return value
            } catch {
                _ = try? conn.exec("ROLLBACK")
                throw error
            }
        }
    }
}

/// PostgreSQL array literals for `unnest($n::text[])`: one statement carries a whole batch.
package enum PGArray {
    /// `{"a","b\\\"c",NULL}`: every element quoted, backslash and double quote escaped.
    static package func text(_ values: [String?]) -> String {
        var out = "{"
        for (i, v) in values.enumerated() {
            if i > 0 { out += "," }
            guard let v else { out += "NULL"; continue }
            out += "\""
            for ch in v.unicodeScalars {
                if ch == "\\" || ch == "\"" { out += "\\" }
                out.unicodeScalars.append(ch)
            }
            out += "\""
        }
        return out + "}"
    }

    /// Numbers (and NULL) as an array literal.
    static package func numbers<T: LosslessStringConvertible>(_ values: [T?]) -> String {
        "{" + values.map { $0.map { String($0) } ?? "NULL" }.joined(separator: ",") + "}"
    }
}
