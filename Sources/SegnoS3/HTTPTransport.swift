import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a request sends.
enum RequestBody: Sendable {
    case empty
    /// In memory (XML documents, multipart parts).
    case data(Data)
    /// Streamed from the file by URLSession (`uploadTask(with:fromFile:)`), never held in memory.
    case file(URL)

    var length: Int64? {
        switch self {
        case .empty: return 0
        case .data(let data): return Int64(data.count)
        case .file: return nil
        }
    }
}

/// An HTTP answer: status, headers with lower-cased names, and the (small) body.
struct HTTPResponse: Sendable {
    var status: Int
    var headers: [String: String]
    var body: Data

    func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A transport failure with the URLError code (for the retry decision) and a message.
struct TransportFailure: Error, Sendable {
    var code: Int
    var message: String
}

/// One URLSession (FoundationNetworking, libcurl underneath) shared by every request of a client,
/// so connections are reused. `send` blocks the calling thread until the answer is in; it is meant
/// for Dispatch worker threads and must not be called from an `async` function.
final class HTTPTransport: @unchecked Sendable {
    let session: URLSession

    /// - Parameters:
    ///   - timeout: seconds without any byte sent or received before a request fails.
    ///   - maxConnectionsPerHost: parallel connections to one host.
    init(timeout: TimeInterval, maxConnectionsPerHost: Int) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        configuration.httpMaximumConnectionsPerHost = maxConnectionsPerHost
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    private final class Outcome: @unchecked Sendable {
        var data: Data?
        var response: URLResponse?
        var error: Error?
    }

    /// Sends `request` with `body` and waits for the whole answer.
    /// - Throws: `TransportFailure` when no HTTP answer arrived.
    @available(*, noasync, message: "blocks the calling thread; call it from a Dispatch worker")
    func send(_ request: URLRequest, body: RequestBody) throws -> HTTPResponse {
        let done = DispatchSemaphore(value: 0)
        let outcome = Outcome()
        let handler: @Sendable (Data?, URLResponse?, Error?) -> Void = { data, response, error in
            outcome.data = data
            outcome.response = response
            outcome.error = error
            done.signal()
        }
        let task: URLSessionTask
        switch body {
        case .empty:
            task = session.dataTask(with: request, completionHandler: handler)
        case .data(let data):
            task = session.uploadTask(with: request, from: data, completionHandler: handler)
        case .file(let url):
            task = session.uploadTask(with: request, fromFile: url, completionHandler: handler)
        }
        task.resume()
        done.wait()
        if let error = outcome.error {
            let nsError = error as NSError
            let code = (error as? URLError)?.errorCode ?? nsError.code
            throw TransportFailure(code: code, message: Self.describe(code: code, fallback: nsError.localizedDescription))
        }
        guard let http = outcome.response as? HTTPURLResponse else {
            throw TransportFailure(code: -1011, message: "no HTTP response")
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            guard let name = name as? String, let value = value as? String else { continue }
            let lower = name.lowercased()
            if let previous = headers[lower] { headers[lower] = previous + "," + value } else { headers[lower] = value }
        }
        return HTTPResponse(status: http.statusCode, headers: headers, body: outcome.data ?? Data())
    }

    /// A short text for the URLError codes that matter here (no URLs, no headers).
    static func describe(code: Int, fallback: String) -> String {
        switch code {
        case -1001: return "timed out"
        case -1003: return "host not found"
        case -1004: return "cannot connect to host"
        case -1005: return "connection lost"
        case -1006: return "DNS lookup failed"
        case -1009: return "not connected to the network"
        case -1011: return "bad server response"
        case -1017: return "cannot parse the server's response"
        case -1206 ... -1200: return "TLS failure (\(code))"
        case -3001 ... -3000: return "cannot open the file to send"
        default: return "\(fallback) (\(code))"
        }
    }
}
