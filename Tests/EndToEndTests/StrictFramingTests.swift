import Foundation
import Testing
import TestSupport

/// Ambiguous or unsupported framing is refused with problem+json and the
/// connection closed (SPEC §3c), and changes nothing; what servers must
/// accept (an absolute URL as target, `OPTIONS *`) is served.
/// Every case the daemon refuses is in `HTTPServerTests/FramingTests`.
@Suite struct StrictFramingTests {
    static func outcome(_ bytes: String, port: UInt16) throws -> (TestResponse, closed: Bool) {
        let connection = try TestConnection(port: port, receiveTimeout: 5)
        try connection.sendRaw(Array(bytes.utf8))
        let answer = try connection.receive()
        return (answer, connection.isClosedByServer())
    }

    /// A new donut, as JSON: its length is `Self.donut.utf8.count` (13).
    static let donut = #"{"name": "X"}"#
    static let chunkedDonut = "d\r\n\(donut)\r\n0\r\n\r\n"

    @Test(arguments: [
        ("POST /truck/donuts HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\nTransfer-Encoding: chunked\r\n\r\n" + StrictFramingTests.chunkedDonut, 400, "Bad Request"),
        ("POST /truck/donuts HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" + StrictFramingTests.donut, 501, "Not Implemented"),
        ("POST /truck/donuts HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 13\r\n\r\n" + StrictFramingTests.donut, 400, "Bad Request"),
        ("POST ../truck/donuts HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n\r\n" + StrictFramingTests.donut, 400, "Bad Request"),
        ("POST /truck/donuts HTTP/1.1\r\nContent-Length: 13\r\n\r\n" + StrictFramingTests.donut, 400, "Bad Request"),
        ("POST /truck/donuts HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n" + StrictFramingTests.chunkedDonut, 400, "Bad Request"),
    ])
    func ambiguousFramingIsRefusedWithProblemJSONAndChangesNothing(request: String, status: Int, title: String) throws {
        let server = try TestServer()
        let (answer, closed) = try Self.outcome(request, port: server.port)
        #expect(answer.status == status)
        #expect(answer.header("Content-Type") == "application/problem+json")
        #expect(answer.json["status"] == .int(Int64(status)))
        #expect(answer.json["title"] == .string(title))
        #expect(answer.header("Connection") == "close")
        #expect(closed)
        #expect(try server.client.get("/truck/donuts").json["donuts"]?.arrayValue?.count == 4)
    }

    @Test func aChunkedBodyPastTheBodyLimitIs413AsSoonAsItPassesIt() throws {
        let server = try TestServer { $0.http.maxBody = 4_096 }
        let connection = try TestConnection(port: server.port, receiveTimeout: 5)
        try connection.sendRaw(Array("POST /truck/donuts HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
        // Five KiB of a body that never ends.
        try connection.sendRaw(Array(String(repeating: "400\r\n" + String(repeating: " ", count: 1_024) + "\r\n", count: 5).utf8))
        let answer = try connection.receive()
        #expect(answer.status == 413)
        #expect(answer.json["title"] == "Content Too Large")
        #expect(answer.json["detail"] == "The request body exceeds 4096 bytes.")
        #expect(connection.isClosedByServer())
    }

    @Test func anAbsoluteURLIsRoutedByItsPathAndOptionsStarAnswered() throws {
        let server = try TestServer()
        let (read, _) = try Self.outcome("GET http://127.0.0.1/truck/orderCount HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: server.port)
        #expect(read.json == ["orderCount": 0])
        let (created, _) = try Self.outcome(
            "POST http://example.com:8080/truck/donuts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 13\r\n\r\n" + Self.donut, port: server.port)
        #expect(created.status == 201)
        #expect(created.header("Location")?.hasPrefix("/truck/donuts/") == true)
        let (options, _) = try Self.outcome("OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: server.port)
        #expect(options.status == 204)
        #expect(options.header("Allow") == "DELETE, GET, HEAD, OPTIONS, PATCH, POST")
    }
}
