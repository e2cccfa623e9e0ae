import Foundation
import HTTPServer
import Testing
import TestSupport

/// Strict framing: a request whose head a proxy could read otherwise than
/// libmicrohttpd does is refused by the daemon before its body is read, in
/// the responder's form (`text/x-refusal` here), and its connection is
/// closed; the responder never sees it. What libmicrohttpd 0.9.75 (Debian's)
/// refuses itself, and what it reads its own way where its public API shows
/// the daemon nothing to refuse, are pinned down as what it does.
@Suite struct FramingTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let bytes: [UInt8]
        let status: Int
        var testDescription: String { name }

        init(_ name: String, _ text: String, _ status: Int) {
            self.init(name, Array(text.utf8), status)
        }

        init(_ name: String, _ bytes: [UInt8], _ status: Int) {
            self.name = name
            self.bytes = bytes
            self.status = status
        }
    }

    static let chunkedBody = "3\r\nabc\r\n0\r\n\r\n"

    /// What the daemon refuses itself, each with the status nginx answers.
    static let refused: [Case] = [
        Case("Content-Length with Transfer-Encoding",
             "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody, 400),
        Case("Transfer-Encoding with Content-Length",
             "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n" + chunkedBody, 400),
        Case("two different Content-Lengths", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde", 400),
        Case("a malformed repeated Content-Length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3x\r\n\r\nabc", 400),
        Case("Transfer-Encoding: gzip", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nabc", 501),
        Case("Transfer-Encoding: chunked, identity",
             "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n" + chunkedBody, 501),
        Case("Transfer-Encoding: gzip, chunked", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + chunkedBody, 501),
        // libmicrohttpd would wait for a body it cannot frame.
        Case("Transfer-Encoding: chunked with a blank after it",
             "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked \r\n\r\n" + chunkedBody, 501),
        Case("Transfer-Encoding twice",
             "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody, 501),
        Case("an unknown coding on a GET", "GET /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        Case("Transfer-Encoding in HTTP/1.0", "POST /echo HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody, 400),
        Case("a space before the colon", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n" + chunkedBody, 400),
        Case("a tab before the colon", "GET /echo HTTP/1.1\r\nHost: x\r\nX-Test\t: yes\r\n\r\n", 400),
        Case("a space inside a name", "GET /echo HTTP/1.1\r\nHost: x\r\nX Test: yes\r\n\r\n", 400),
        Case("a folded Transfer-Encoding", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n" + chunkedBody, 400),
        Case("a folded Content-Length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n 3\r\n\r\nabc", 400),
        Case("a Transfer-Encoding with a folded line after it",
             "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\tx\r\n\r\n" + chunkedBody, 400),
        Case("a folded line with a blank in it", "GET /echo HTTP/1.1\r\nHost: x\r\nX-Test: one\r\n two three\r\n\r\n", 400),
        Case("a CR in a value", "GET /echo HTTP/1.1\r\nHost: x\r\nX-Test: a\rb\r\n\r\n", 400),
        Case("no Host in HTTP/1.1", "GET /echo HTTP/1.1\r\n\r\n", 400),
        Case("two Hosts", "GET /echo HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400),
        Case("two Hosts in HTTP/1.0", "GET /echo HTTP/1.0\r\nHost: x\r\nHost: y\r\n\r\n", 400),
        Case("a relative target", "POST ../truck/donuts HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        Case("a target without a slash", "GET echo HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        Case("an authority target", "CONNECT x:80 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        Case("* for another method than OPTIONS", "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        Case("an absolute URL without a host", "GET http:///echo HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        Case("a blank inside the target", "GET /echo x HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        Case("a tab inside the target", "GET /echo\tx HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        Case("a blank inside the query", "GET /echo?a=1 2 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        Case("a control character in the target", "GET /ec\u{01}ho HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        Case("DEL in the target", "GET /ec\u{7F}ho HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ]

    @Test(arguments: FramingTests.refused)
    func isRefusedByTheDaemonAndItsConnectionClosed(_ refused: Case) throws {
        let (daemon, responder) = try HTTPDaemonTests.daemon()
        defer { daemon.stop() }
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 5)
        try connection.send(refused.bytes)
        let answer = try connection.receive()
        #expect(answer.status == refused.status)
        #expect(answer.headers["content-type"] == "text/x-refusal")
        #expect(answer.headers["connection"] == "close")
        #expect(connection.isClosedByServer())
        #expect(responder.requests.withLock { $0.isEmpty })
    }

    /// What is well-formed is served as before, however unusual.
    @Test func wellFormedRequestsAreServedAsBefore() throws {
        let (daemon, _) = try HTTPDaemonTests.daemon()
        defer { daemon.stop() }
        func text(_ request: String) throws -> String {
            let answer = try HTTPDaemonTests.request(daemon, request)
            #expect(answer.status == 200, "\(request)")
            return answer.text
        }
        #expect(try text("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc") == "POST /echo a=- x-test=-\nabc")
        #expect(try text("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n" + Self.chunkedBody) == "POST /echo a=- x-test=-\nabc")
        #expect(try text("GET /echo HTTP/1.0\r\n\r\n") == "GET /echo a=- x-test=-\n")
        #expect(try text("GET /echo HTTP/1.1\r\nHost:\r\nX-Test:  yes \t\r\nX-Empty:\r\nCookie: a=1; b=2\r\n\r\n") == "GET /echo a=- x-test=yes \t\n")
        // Absolute-form, which servers must accept, names the path after the authority.
        #expect(try text("GET http://x/echo/caf%C3%A9?a=1 HTTP/1.1\r\nHost: x\r\n\r\n") == "GET /echo/café a=1 x-test=-\n")
        #expect(try text("GET HTTPS://x:8080/echo HTTP/1.1\r\nHost: x\r\n\r\n") == "GET /echo a=- x-test=-\n")
        #expect(try text("GET http://x%2Fecho/y HTTP/1.1\r\nHost: x\r\n\r\n") == "GET /y a=- x-test=-\n")
        #expect(try text("GET http://x?a=2 HTTP/1.1\r\nHost: x\r\n\r\n") == "GET / a=2 x-test=-\n")
        #expect(try text("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n") == "OPTIONS * a=- x-test=-\n")
    }

    /// What libmicrohttpd reads its own way, where the header lines its
    /// public API hands over show nothing to refuse: a folded line joined to
    /// the name of the field before it (a name still, when the folded text
    /// holds no blank), a value cut at a NUL byte, a bare LF taken as a line
    /// end. Served, with the fields as libmicrohttpd read them.
    @Test(arguments: [
        (Case("a folded line", "GET /echo HTTP/1.1\r\nHost: x\r\nX-Test: one\r\n two\r\nX-Other: z\r\n\r\n", 200),
         ["Host: x", "X-Testtwo: one", "X-Other: z"]),
        (Case("a line folded with a tab, last", "GET /echo HTTP/1.1\r\nHost: x\r\nX-Test: one\r\n\ttwo\r\n\r\n", 200),
         ["Host: x", "X-Testtwo: one"]),
        (Case("a NUL in a value", Array("GET /echo HTTP/1.1\r\nAuthorization: Bearer token".utf8) + [0] + Array("junk\r\nHost: x\r\n\r\n".utf8), 200),
         ["Authorization: Bearer token", "Host: x"]),
        (Case("a NUL in the last value", Array("GET /echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer token".utf8) + [0] + Array("junk\r\n\r\n".utf8), 200),
         ["Host: x", "Authorization: Bearer token"]),
        (Case("a bare LF ending a header line", "GET /echo HTTP/1.1\r\nHost: x\nX-Test: yes\r\n\r\n", 200), ["Host: x", "X-Test: yes"]),
        (Case("a bare LF ending the request line", "GET /echo HTTP/1.1\nHost: x\r\n\r\n", 200), ["Host: x"]),
    ])
    func isServedAsLibmicrohttpdReadsIt(_ served: Case, fields: [String]) throws {
        let (daemon, responder) = try HTTPDaemonTests.daemon()
        defer { daemon.stop() }
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 5)
        try connection.send(served.bytes)
        let answer = try connection.receive()
        #expect(answer.status == served.status)
        #expect(answer.headers["content-type"] == "text/plain")
        let seen = responder.requests.withLock { $0.map { $0.headerFields.map { "\($0.name): \($0.value)" } } }
        #expect(seen == [fields])
    }

    /// A line with an empty name (`: yes`) ends the head for libmicrohttpd:
    /// the line is dropped, and the bytes after it are read as the next
    /// request on the connection, here a request of their own.
    @Test func aLineWithAnEmptyNameEndsTheHeadForLibmicrohttpd() throws {
        let (daemon, responder) = try HTTPDaemonTests.daemon()
        defer { daemon.stop() }
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 5)
        try connection.send("GET /echo HTTP/1.1\r\nHost: x\r\n: yes\r\nGET /echo?a=2 HTTP/1.1\r\nHost: y\r\n\r\n")
        #expect(try connection.receive().text == "GET /echo a=- x-test=-\n")
        #expect(try connection.receive().text == "GET /echo a=2 x-test=-\n")
        let seen = responder.requests.withLock { $0.map { $0.headerFields.map { "\($0.name): \($0.value)" } } }
        #expect(seen == [["Host: x"], ["Host: y"]])
    }

    /// libmicrohttpd parses a request's head in its own buffer as the bytes
    /// come; the checks hold for a head that arrives a few bytes at a time,
    /// and the connection stays open for the next request.
    @Test func aHeadArrivingInPiecesIsServedAndItsConnectionKept() throws {
        let (daemon, _) = try HTTPDaemonTests.daemon()
        defer { daemon.stop() }
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 5)
        let head = Array("POST /echo HTTP/1.1\r\nHost: x\r\nX-Test: \(String(repeating: "p", count: 3_000))\r\nContent-Length: 2\r\n\r\nok".utf8)
        for start in stride(from: 0, to: head.count, by: 7) {
            try connection.send(Array(head[start..<min(start + 7, head.count)]))
        }
        let answer = try connection.receive()
        #expect(answer.status == 200)
        #expect(answer.text.hasSuffix("\nok"))
        try connection.send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try connection.receive().text == "GET /echo a=- x-test=-\n")
    }

    /// A chunked body is answered `413` as soon as it passes the limit,
    /// before its last chunk is sent, and the connection closed.
    @Test func aChunkedBodyPastTheLimitIsAnswered413AtOnce() throws {
        let (daemon, responder) = try HTTPDaemonTests.daemon { $0.maxBody = 1_000 }
        defer { daemon.stop() }
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 5)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        let chunk = "100\r\n" + String(repeating: "a", count: 256) + "\r\n"
        // 1,024 bytes: past the limit; the body never ends.
        try connection.send(String(repeating: chunk, count: 4))
        let answer = try connection.receive()
        #expect(answer.status == 413)
        #expect(answer.headers["content-type"] == "text/x-refusal")
        #expect(answer.headers["connection"] == "close")
        #expect(answer.text == "The request body exceeds 1000 bytes.")
        #expect(connection.isClosedByServer())
        #expect(responder.requests.withLock { $0.isEmpty })
    }

    /// What libmicrohttpd refuses before the daemon sees the request: its
    /// own answer, an HTML page without a `Content-Type` (not the
    /// responder's form: it never sees the request), and the connection
    /// closed. Its answer to a single malformed or too large
    /// `Content-Length` has its head twice, and a chunk line longer than the
    /// connection's memory is answered `500`, however long: no handler is
    /// asked, and libmicrohttpd takes the full buffer for one that does not
    /// read.
    @Test(arguments: [
        (Case("a malformed Content-Length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3x\r\n\r\nabc", 400), true),
        (Case("a negative Content-Length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -3\r\n\r\nabc", 400), true),
        (Case("a list as Content-Length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc", 400), true),
        (Case("a Content-Length past 64 bits", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\nabc", 413), true),
        (Case("a NUL in a name", Array("GET /echo HTTP/1.1\r\nHost: x\r\nX-T".utf8) + [0] + Array("est: yes\r\n\r\n".utf8), 400), false),
        (Case("a NUL after the version", Array("GET /echo HTTP/1.1".utf8) + [0] + Array("junk\r\nHost: x\r\n\r\n".utf8), 400), false),
        (Case("a line without a colon", "GET /echo HTTP/1.1\r\nHost: x\r\nX-Test\r\n\r\n", 400), false),
        (Case("a 20 KB chunk extension",
              "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;\(String(repeating: "e", count: 20_000))\r\nabc\r\n0\r\n\r\n", 500), false),
        (Case("a 1 MB chunk extension after a first chunk",
              "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3;\(String(repeating: "e", count: 1_000_000))\r\nabc\r\n0\r\n\r\n", 500),
         false),
        (Case("a chunk size of 200 KB of digits",
              "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\(String(repeating: "0", count: 200_000))3\r\nabc\r\n0\r\n\r\n", 500), false),
        (Case("HTTP/2.0 in the request line", "GET /echo HTTP/2.0\r\nHost: x\r\n\r\n", 505), false),
        (Case("a header past the connection's memory", "GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 40_000))\r\n\r\n", 431), false),
        (Case("a target past the connection's memory", "GET /\(String(repeating: "a", count: 40_000)) HTTP/1.1\r\nHost: x\r\n\r\n", 414), false),
    ])
    func isRefusedByLibmicrohttpdItself(_ refused: Case, headTwice: Bool) throws {
        let (daemon, responder) = try HTTPDaemonTests.daemon()
        defer { daemon.stop() }
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 5)
        try? connection.send(refused.bytes)
        // Every byte up to the close: the answer as sent, however framed.
        var bytes: [UInt8] = []
        while let more = try? connection.receiveBytes() { bytes += more }
        #expect(connection.isClosedByServer())
        let text = String(decoding: bytes, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let heads = headTwice ? Array(parts.dropLast().prefix(2)) : Array(parts.prefix(1))
        #expect(parts.count == heads.count + 1, "\(text)")
        #expect(Set(heads).count == 1, "the same head each time")
        let head = heads[0].components(separatedBy: "\r\n")
        let reasons = [400: "Bad Request", 413: "Content Too Large", 414: "URI Too Long", 431: "Request Header Fields Too Large",
                       500: "Internal Server Error", 505: "HTTP Version Not Supported"]
        let reason = try #require(reasons[refused.status])
        #expect(head.first == "HTTP/1.1 \(refused.status) \(reason)")
        #expect(head.contains("Connection: close"))
        #expect(!head.contains { $0.lowercased().hasPrefix("content-type:") })
        let body = try #require(parts.last)
        #expect(head.contains("Content-Length: \(body.utf8.count)"))
        #expect(body.hasPrefix("<html><head><title>") && body.hasSuffix("</body></html>"), "\(body)")
        #expect(responder.requests.withLock { $0.isEmpty })
    }
}
