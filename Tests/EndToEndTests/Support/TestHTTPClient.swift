import Foundation
#if canImport(Glibc)
import Glibc
#endif

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

enum TestHTTPError: Error {
    case connect(Int32)
    case io(String)
}

/// A minimal blocking HTTP/1.1 client over one TCP connection, so tests
/// control exactly what is sent and when (and can park many long-polls).
final class TestConnection {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16, receiveTimeout: Double = 70) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestHTTPError.connect(errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let error = errno
            close(fd)
            throw TestHTTPError.connect(error)
        }
        var timeout = timeval(tv_sec: Int(receiveTimeout), tv_usec: Int((receiveTimeout - receiveTimeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func sendRaw(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestHTTPError.io("send failed: \(errno)") }
            sent += n
        }
    }

    func send(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil) throws {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try sendRaw(Array(head.utf8) + (body ?? []))
    }

    /// Reads one response (Content-Length framed; HEAD/204/304 have no body).
    func receive(method: String = "GET") throws -> TestResponse {
        while true {
            if let end = headerEnd() {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                var lines = head.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw TestHTTPError.io("bad status line") }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let length = (method == "HEAD" || status == 204 || status == 304) ? 0 : Int(headers["content-length"] ?? "0") ?? 0
                while buffer.count < end + 4 + length { try fill() }
                let body = Array(buffer[(end + 4)..<(end + 4 + length)])
                buffer.removeFirst(end + 4 + length)
                return TestResponse(status: status, headers: headers, body: body)
            }
            try fill()
        }
    }

    /// True when the server has closed the connection (reads EOF).
    func isClosedByServer() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }

    private func headerEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw TestHTTPError.io(n == 0 ? "connection closed" : "recv failed: \(errno)") }
        buffer.append(contentsOf: chunk[..<n])
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

    @discardableResult
    func request(_ method: String, _ path: String, headers: [String: String] = [:], json: JSONValue? = nil, body: [UInt8]? = nil) throws -> TestResponse {
        try TestConnection(port: port).request(method, path, headers: headers, json: json, body: body)
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
