import AsyncHTTPClient
import Foundation
import JSON
import NIOCore
import NIOHTTP1

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

    /// The head's fields, names in lower case (a repeated one joined with ", ").
    static func headers(_ fields: HTTPHeaders) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in fields {
            let name = name.lowercased()
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        return headers
    }
}

/// Requests to one server, on AsyncHTTPClient (SwiftNIO): a connection that
/// waits costs no CPU, where FoundationNetworking's `URLSession` keeps a
/// core busy on Linux while a stream is open. No cache: every `GET` must
/// reach the server, which tracks it.
final class HTTPTransport: Sendable {
    let baseURL: URL
    let token: String?
    /// Seconds a request may take, head and body, unless it says otherwise.
    let requestTimeout: Double

    /// Largest answer body read (the server's largest is a page of 1,000
    /// elements or a whole singleton).
    static let maxBody = 256 * 1024 * 1024

    /// One client for the process, never shut down: its connections are
    /// kept per server, and an idle one sleeps in the event loop. No read
    /// timeout of its own: a stream is watched for silence by the client,
    /// and each request has its deadline (`send`).
    static let client = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10)),
            connectionPool: .init(idleTimeout: .seconds(20)),
            decompression: .disabled))

    init(baseURL: URL, token: String?, requestTimeout: Double) {
        self.baseURL = baseURL
        self.token = token
        self.requestTimeout = requestTimeout
    }

    /// Whether the base URL can be sent to: `http` or `https`, with a host.
    var baseURLError: ObservableClientError? {
        let scheme = baseURL.scheme?.lowercased()
        guard scheme == "http" || scheme == "https", let host = baseURL.host, !host.isEmpty else {
            return .invalidBaseURL(baseURL.absoluteString)
        }
        return nil
    }

    func url(_ pathAndQuery: String) -> String {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return base + pathAndQuery
    }

    func request(_ method: String, _ pathAndQuery: String, body: JSONValue? = nil, headers: [String: String] = [:]) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url(pathAndQuery))
        request.method = HTTPMethod(rawValue: method)
        if let token { request.headers.replaceOrAdd(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        if let body {
            request.body = .bytes(ByteBuffer(bytes: JSONWriter.bytes(body)))
            request.headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        }
        return request
    }

    /// Sends a request and returns the answer, whatever its status; throws
    /// `.unreachable` when there is none within `timeout` seconds (head
    /// and body; by default `requestTimeout`), `.invalidBaseURL` at once
    /// when the base URL cannot be sent to, and `CancellationError` when
    /// the calling task is cancelled.
    func send(_ method: String, _ pathAndQuery: String, body: JSONValue? = nil, headers: [String: String] = [:],
              timeout: TimeInterval? = nil) async throws -> HTTPAnswer
    {
        let timeout = timeout ?? requestTimeout
        if let baseURLError { throw baseURLError }
        let request = request(method, pathAndQuery, body: body, headers: headers)
        let deadline = NIODeadline.now() + .nanoseconds(Int64(timeout * 1e9))
        do {
            return try await Self.withDeadline(deadline) {
                let response = try await Self.client.execute(request, deadline: deadline)
                let body = try await response.body.collect(upTo: Self.maxBody)
                return HTTPAnswer(status: Int(response.status.code), headers: HTTPAnswer.headers(response.headers),
                                  body: Data(body.readableBytesView))
            }
        } catch {
            throw Self.mapped(error)
        }
    }

    /// What a failure of AsyncHTTPClient means to the client.
    static func mapped(_ error: any Error) -> any Error {
        if error is CancellationError || Task.isCancelled { return CancellationError() }
        if let error = error as? HTTPClientError, error == .cancelled { return CancellationError() }
        if error is ObservableClientError { return error }
        if let error = error as? HTTPClientError, error == .deadlineExceeded {
            return ObservableClientError.unreachable("no answer in time")
        }
        return ObservableClientError.unreachable("\(error)")
    }

    /// Runs `operation`, cancelled at `deadline` (then `.deadlineExceeded`).
    static func withDeadline<T: Sendable>(_ deadline: NIODeadline, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                let nanoseconds = deadline.uptimeNanoseconds > NIODeadline.now().uptimeNanoseconds
                    ? deadline.uptimeNanoseconds - NIODeadline.now().uptimeNanoseconds : 0
                try await Task.sleep(nanoseconds: nanoseconds)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw HTTPClientError.deadlineExceeded }
            return value
        }
    }
}
