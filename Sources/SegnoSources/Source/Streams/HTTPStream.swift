import Foundation
import SegnoAudio
import SegnoCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP response read as it arrives: the audio of a station, a playlist, an HLS segment.
package protocol ByteStream: AnyObject {
    /// The URL that answered (after redirects).
    var url: URL { get }
    /// Response headers, names lower-cased.
    var headers: [String: String] { get }
    /// The next bytes, blocking at most the stream's timeout; nil at end of the response.
    func read() throws(StreamError) -> [UInt8]?
    func close()
}

extension ByteStream {
    package var contentType: String? { headers["content-type"] }

    /// Reads the rest of the response, refusing more than `limit` bytes (a playlist, a segment).
    package func readAll(limit: Int) throws(StreamError) -> [UInt8] {
        var all: [UInt8] = []
        while let chunk = try read() {
            all += chunk
            if all.count > limit { throw .unsupported(url, "response is larger than \(limit / 1_048_576) MB") }
        }
        return all
    }
}

/// Opens HTTP(S) URLs for stream capture. `http://` goes through a small socket client of our own:
/// Icecast and Shoutcast reply with header lines (`icy-pub:0`) or a status line (`ICY 200 OK`)
/// that Foundation's URLSession on Linux rejects ("Failed writing header"), and a stream needs
/// the bytes as they come, with a read timeout. `https://` goes through URLSession (TLS), which
/// suits HLS and CDN servers. Redirects are followed (at most 5) on both.
package enum HTTPStreamOpener {
    static package let maxRedirects = 5

    /// Sends a GET for `url` and returns the response once its headers are in. Throws `.status`
    /// for anything but 200 after redirects and `.connection` when nothing answers within `timeout`.
    static package func open(_ url: URL, headers: [String: String] = [:], timeout: Double) throws(StreamError) -> any ByteStream {
        var current = url
        for _ in 0...maxRedirects {
            if current.scheme?.lowercased() == "https" { return try SessionStream(url: current, headers: headers, timeout: timeout) }
            let s = try SocketStream(url: current, headers: headers, timeout: timeout)
            if [301, 302, 303, 307, 308].contains(s.status), let loc = s.headers["location"] {
                s.close()
                guard let next = URL(string: loc, relativeTo: current)?.absoluteURL else { throw .unsupported(current, "redirect to an invalid URL \"\(loc)\"") }
                current = next
                continue
            }
            guard s.status == 200 else { s.close(); throw .status(current, s.status) }
            return s
        }
        throw .connection(url, "more than \(maxRedirects) redirects")
    }

    /// The whole body of a small resource (a playlist): bytes, the URL after redirects, content type.
    static package func fetch(_ url: URL, timeout: Double, limit: Int = 1 << 20) throws(StreamError) -> (body: [UInt8], url: URL, contentType: String?) {
        let s = try open(url, timeout: timeout)
        defer { s.close() }
        return (try s.readAll(limit: limit), s.url, s.contentType)
    }
}

/// HTTP/1.0 GET over a TCP socket, for `http://` URLs: accepts `HTTP/1.x` and `ICY` status lines,
/// and times out a connect or a read after `timeout` seconds of silence.
final package class SocketStream: ByteStream {
    package let url: URL
    private(set) package var headers: [String: String] = [:]
    private(set) package var status = 0
    private var fd: Int32 = -1
    private let timeout: Double
    /// Body bytes that arrived with the headers.
    private var pending: [UInt8] = []
    private var remaining: Int?

    package init(url: URL, headers extra: [String: String], timeout: Double) throws(StreamError) {
        self.url = url
        self.timeout = timeout
        guard let host = url.host, !host.isEmpty else { throw .unsupported(url, "no host in the URL") }
        let port = url.port ?? 80
        fd = try Self.connect(host: host, port: port, timeout: timeout, url: url)
        var path = url.path.isEmpty ? "/" : url.path
        if let q = url.query { path += "?" + q }
        var request = "GET \(path) HTTP/1.0\r\nHost: \(host)\(url.port.map { ":\($0)" } ?? "")\r\nUser-Agent: segno/\(SegnoVersion.string)\r\nAccept: */*\r\n"
        if let user = url.user {
            let cred = "\(user):\(url.password ?? "")"
            request += "Authorization: Basic \(Data(cred.utf8).base64EncodedString())\r\n"
        }
        for (k, v) in extra { request += "\(k): \(v)\r\n" }
        request += "Connection: close\r\n\r\n"
        let bytes = Array(request.utf8)
        let failure = SignalMask.withoutSIGPIPE { bytes.withUnsafeBufferPointer { OutputFile.writeAll(fd, $0) } }
        if failure != 0 { close(); throw .connection(url, "cannot send the request: \(String(cString: strerror(failure)))") }
        try readHeaders()
    }

    deinit { close() }

    package func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }

    private static func connect(host: String, port: Int, timeout: Double, url: URL) throws(StreamError) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &res)
        guard rc == 0, let first = res else { throw .connection(url, "cannot resolve \(host): \(String(cString: gai_strerror(rc)))") }
        defer { freeaddrinfo(res) }
        var lastError = "no address"
        var ai: UnsafeMutablePointer<addrinfo>? = first
        while let a = ai {
            ai = a.pointee.ai_next
            let s = socket(a.pointee.ai_family, a.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), a.pointee.ai_protocol)
            if s < 0 { lastError = String(cString: strerror(errno)); continue }
            if Glibc.connect(s, a.pointee.ai_addr, a.pointee.ai_addrlen) != 0 && errno != EINPROGRESS {
                lastError = String(cString: strerror(errno)); Glibc.close(s); continue
            }
            var p = pollfd(fd: s, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&p, 1, Int32(timeout * 1000))
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len)
            if ready <= 0 { lastError = "no answer within \(canonicalNumber(timeout)) s"; Glibc.close(s); continue }
            if err != 0 { lastError = String(cString: strerror(err)); Glibc.close(s); continue }
            // Back to blocking: reads wait in poll with the timeout.
            _ = fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK)
            var one: Int32 = 1
            setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return s
        }
        throw .connection(url, "cannot connect: \(lastError)")
    }

    /// Reads up to `max` bytes, waiting at most the timeout; [] never returned, nil at end.
    private func readRaw(max: Int = 65536) throws(StreamError) -> [UInt8]? {
        guard fd >= 0 else { return nil }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&p, 1, Int32(timeout * 1000))
            if ready < 0 { if errno == EINTR { continue }; throw .connection(url, "poll: \(String(cString: strerror(errno)))") }
            if ready == 0 { throw .connection(url, "no data for \(canonicalNumber(timeout)) s") }
            var buf = [UInt8](repeating: 0, count: max)
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR || errno == EAGAIN { continue }; throw .connection(url, "read: \(String(cString: strerror(errno)))") }
            if n == 0 { return nil }
            return Array(buf[0..<n])
        }
    }

    private func readHeaders() throws(StreamError) {
        var head: [UInt8] = []
        let end: [UInt8] = [13, 10, 13, 10]
        while true {
            guard let chunk = try readRaw(max: 4096) else { throw .connection(url, "the server closed the connection before answering") }
            head += chunk
            if let r = Self.find(end, in: head) {
                pending = Array(head[(r + 4)...])
                head = Array(head[..<r])
                break
            }
            if head.count > 65536 { throw .unsupported(url, "response headers are larger than 64 KB") }
        }
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines.first ?? ""
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/") || parts[0] == "ICY", let code = Int(parts[1]) else {
            throw .unsupported(url, "not an HTTP answer: \"\(statusLine.prefix(60))\"")
        }
        status = code
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        remaining = headers["content-length"].flatMap { Int($0) }.map { $0 - pending.count }
    }

    static package func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        for i in 0...(hay.count - needle.count) where hay[i] == needle[0] && Array(hay[i..<(i + needle.count)]) == needle { return i }
        return nil
    }

    package func read() throws(StreamError) -> [UInt8]? {
        if !pending.isEmpty { defer { pending = [] }; return pending }
        if let r = remaining, r <= 0 { return nil }
        guard let chunk = try readRaw() else {
            if let r = remaining, r > 0 { throw .connection(url, "the server closed the connection \(r) bytes early") }
            return nil
        }
        if remaining != nil { remaining! -= chunk.count }
        return chunk
    }
}

/// An `https://` response through URLSession, its data handed over chunk by chunk.
final package class SessionStream: NSObject, ByteStream, URLSessionDataDelegate, @unchecked Sendable {
    private(set) package var url: URL
    private(set) package var headers: [String: String] = [:]
    private let condition = NSCondition()
    private var chunks: [[UInt8]] = []
    private var finished = false
    private var failure: StreamError?
    private var responded = false
    private let timeout: Double
    private var session: URLSession!
    private var task: URLSessionDataTask?

    package init(url: URL, headers extra: [String: String], timeout: Double) throws(StreamError) {
        self.url = url
        self.timeout = timeout
        super.init()
        let config = URLSessionConfiguration.ephemeral
        config.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: config, delegate: self, delegateQueue: nil)
        var request = URLRequest(url: url)
        for (k, v) in extra { request.setValue(v, forHTTPHeaderField: k) }
        let task = session.dataTask(with: request)
        self.task = task
        task.resume()
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(timeout + 1)
        while !responded && failure == nil && !finished {
            if !condition.wait(until: deadline) { break }
        }
        if let failure { throw failure }
        if !responded && !finished { task.cancel(); throw .connection(url, "no answer within \(canonicalNumber(timeout)) s") }
        if let code = status, code != 200 { task.cancel(); throw .status(self.url, code) }
    }

    private var status: Int?

    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        condition.lock()
        if let h = response as? HTTPURLResponse {
            status = h.statusCode
            for (k, v) in h.allHeaderFields { headers["\(k)".lowercased()] = "\(v)" }
        }
        if let u = response.url { url = u }
        responded = true
        condition.broadcast()
        condition.unlock()
        completionHandler(.allow)
    }

    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        condition.lock()
        chunks.append([UInt8](data))
        condition.broadcast()
        condition.unlock()
    }

    package func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        condition.lock()
        if let error, failure == nil { failure = .connection(url, error.localizedDescription) }
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    package func read() throws(StreamError) -> [UInt8]? {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(timeout)
        while chunks.isEmpty && !finished {
            if !condition.wait(until: deadline) { throw .connection(url, "no data for \(canonicalNumber(timeout)) s") }
        }
        if !chunks.isEmpty { return chunks.removeFirst() }
        if let failure { throw failure }
        return nil
    }

    package func close() {
        task?.cancel()
        session.invalidateAndCancel()
    }
}
