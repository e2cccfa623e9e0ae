import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JSON
import Synchronization

/// One answer of the server: status, headers (names in lower case) and body.
struct HTTPAnswer: Sendable {
    let status: Int
    let headers: [String: String]
    let body: Data

    var json: JSONValue? { try? JSONParser.parse(Array(body)) }
    /// `Observation-Cursor`: the newest change the answer reflects.
    var cursor: Int64? { headers["observation-cursor"].flatMap { Int64($0) } }

    /// The `rel="next"` target of `Link`, a path and query.
    var nextLink: String? {
        guard let link = headers["link"] else { return nil }
        for part in link.split(separator: ",") where part.contains("rel=\"next\"") {
            guard let open = part.firstIndex(of: "<"), let close = part.firstIndex(of: ">") else { continue }
            return String(part[part.index(after: open)..<close])
        }
        return nil
    }
}

/// Requests to one server through one `URLSession`. No cache: every `GET`
/// must reach the server, which tracks it.
final class HTTPTransport: Sendable {
    let baseURL: URL
    let token: String?
    let session: URLSession

    init(baseURL: URL, token: String?) {
        self.baseURL = baseURL
        self.token = token
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpMaximumConnectionsPerHost = 8
        configuration.timeoutIntervalForRequest = 90
        session = URLSession(configuration: configuration)
    }

    func url(_ pathAndQuery: String) -> URL {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + pathAndQuery)!
    }

    func request(_ method: String, _ pathAndQuery: String, body: JSONValue? = nil, headers: [String: String] = [:],
                 timeout: TimeInterval = 30) -> URLRequest
    {
        var request = URLRequest(url: url(pathAndQuery), cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.httpBody = Data(JSONWriter.bytes(body))
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    /// Sends a request and returns the answer, whatever its status; throws
    /// `.unreachable` when there is none, and `CancellationError` when the
    /// calling task is cancelled.
    func send(_ method: String, _ pathAndQuery: String, body: JSONValue? = nil, headers: [String: String] = [:],
              timeout: TimeInterval = 30) async throws -> HTTPAnswer
    {
        let request = request(method, pathAndQuery, body: body, headers: headers, timeout: timeout)
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPAnswer, any Error>) in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        if (error as? URLError)?.code == .cancelled {
                            continuation.resume(throwing: CancellationError())
                        } else {
                            continuation.resume(throwing: ObservableClientError.unreachable(error.localizedDescription))
                        }
                        return
                    }
                    guard let http = response as? HTTPURLResponse else {
                        continuation.resume(throwing: ObservableClientError.unreachable("no HTTP answer"))
                        return
                    }
                    var headers: [String: String] = [:]
                    for (name, value) in http.allHeaderFields {
                        if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
                    }
                    continuation.resume(returning: HTTPAnswer(status: http.statusCode, headers: headers, body: data ?? Data()))
                }
                box.set(task)
                task.resume()
            }
        } onCancel: {
            box.cancel()
        }
    }

    func invalidate() {
        session.invalidateAndCancel()
    }
}

/// The task of a request, for cancelling it from another thread.
private final class TaskBox: Sendable {
    private let state = Mutex<(task: URLSessionTask?, cancelled: Bool)>((nil, false))

    func set(_ task: URLSessionTask) {
        let cancelled = state.withLock { state in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    func cancel() {
        let task = state.withLock { state in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }
}
