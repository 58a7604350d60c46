import Foundation

/// The two date formats S3 answers with, parsed without formatters (thread-safe, locale-free).
enum S3Dates {
    /// `2026-11-22T00:11:15.000Z` (ISO 8601 in UTC, fraction optional) as in list results.
    static func parseISO8601(_ text: String) -> Date? {
        let chars = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= chars.count else { return nil }
            var value = 0
            for c in chars[from..<(from + count)] {
                guard c >= 48, c <= 57 else { return nil }
                value = value * 10 + Int(c - 48)
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2) else { return nil }
        var fraction = 0.0
        var i = 19
        if i < chars.count, chars[i] == UInt8(ascii: ".") {
            i += 1
            var scale = 0.1
            while i < chars.count, chars[i] >= 48, chars[i] <= 57 {
                fraction += Double(chars[i] - 48) * scale
                scale /= 10
                i += 1
            }
        }
        return make(year, month, day, hour, minute, second).map { $0.addingTimeInterval(fraction) }
    }

    /// `Sun, 22 Nov 2026 00:11:15 GMT` (RFC 7231 IMF-fixdate) as in `Last-Modified`.
    static func parseHTTP(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, let day = Int(parts[1]), let year = Int(parts[3]) else { return nil }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard let month = months.firstIndex(of: String(parts[2])) else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3 else { return nil }
        return make(year, month + 1, day, clock[0], clock[1], clock[2])
    }

    private static func make(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int) -> Date? {
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let seconds = timegm(&parts)
        return seconds == -1 ? nil : Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
