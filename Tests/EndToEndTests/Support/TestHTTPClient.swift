import Foundation
import TestSupport

/// A response as a test sees it.
struct TestResponse {
    let status: Int
    let headers: [String: String]
    let body: [UInt8]

    func header(_ name: String) -> String? { headers[name.lowercased()] }
    var text: String { String(decoding: body, as: UTF8.self) }
    /// The body parsed by Foundation; null when it is not JSON.
    var json: JSONValue { (try? JSONValue(parsing: body)) ?? .null }
    var cursor: Int64? { header("Observation-Cursor").flatMap { Int64($0) } }
}

/// One connection to the server under test: raw bytes, or requests with
/// their answers as tests see them.
final class TestConnection {
    private let raw: RawConnection

    /// `source`: the loopback address to connect from (see `RawConnection`).
    init(port: UInt16, receiveTimeout: Double = 70, source: String? = nil) throws {
        raw = try RawConnection(port: port, receiveTimeout: receiveTimeout, source: source)
    }

    func sendRaw(_ bytes: [UInt8]) throws {
        try raw.send(bytes)
    }

    func send(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil) throws {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try raw.send(Array(head.utf8) + (body ?? []))
    }

    /// Reads one response (Content-Length framed; HEAD/204/304 have no body).
    func receive(method: String = "GET") throws -> TestResponse {
        let response = try raw.receive(method: method)
        return TestResponse(status: response.status, headers: response.headers, body: response.body)
    }

    /// True when the server has closed the connection (reads EOF).
    func isClosedByServer() -> Bool {
        raw.isClosedByServer()
    }

    func request(_ method: String, _ path: String, headers: [String: String] = [:], json: JSONValue? = nil, body: [UInt8]? = nil) throws -> TestResponse {
        let payload = json.map(\.bytes) ?? body
        var headers = headers
        if payload != nil && headers["Content-Type"] == nil { headers["Content-Type"] = "application/json" }
        try send(method, path, headers: headers, body: payload)
        return try receive(method: method)
    }
}

/// Issues requests on a fresh connection each (simple and independent).
struct TestClient {
    let port: UInt16
    /// The loopback address its connections come from (nil: 127.0.0.1).
    var source: String?
    /// Headers every request carries (an `Authorization`).
    var headers: [String: String] = [:]

    init(port: UInt16, source: String? = nil, headers: [String: String] = [:]) {
        self.port = port
        self.source = source
        self.headers = headers
    }

    @discardableResult
    func request(_ method: String, _ path: String, headers: [String: String] = [:], json: JSONValue? = nil, body: [UInt8]? = nil) throws -> TestResponse {
        try TestConnection(port: port, source: source).request(method, path, headers: self.headers.merging(headers) { $1 }, json: json, body: body)
    }

    func get(_ path: String, observer: String? = nil, headers: [String: String] = [:]) throws -> TestResponse {
        var headers = headers
        if let observer { headers["Observer"] = observer }
        return try request("GET", path, headers: headers)
    }

    @discardableResult
    func post(_ path: String, _ json: JSONValue? = nil) throws -> TestResponse {
        try request("POST", path, json: json)
    }

    @discardableResult
    func patch(_ path: String, _ json: JSONValue, headers: [String: String] = [:]) throws -> TestResponse {
        try request("PATCH", path, headers: headers, json: json)
    }

    @discardableResult
    func delete(_ path: String, headers: [String: String] = [:]) throws -> TestResponse {
        try request("DELETE", path, headers: headers)
    }

    /// Creates an observer and returns its id.
    func observer(ttl: Int? = nil) throws -> String {
        let response = try post("/observers", ttl.map { ["ttlSeconds": .int(Int64($0))] })
        guard response.status == 201, let id = response.json["id"]?.stringValue else {
            throw TestHTTPError.io("cannot create observer: \(response.status) \(response.text)")
        }
        return id
    }

    /// Polls an observer's changes; `timeout` 0 answers at once.
    func changes(_ observer: String, since: Int64? = nil, timeout: Double = 0, extra: String = "") throws -> TestResponse {
        var query = "timeout=\(timeout)"
        if let since { query += "&since=\(since)" }
        return try get("/observers/\(observer)/changes?\(query)\(extra)")
    }
}
