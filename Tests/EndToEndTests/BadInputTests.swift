import Foundation
import API
import Testing

/// Whatever a client sends, the server answers 4xx problem+json, keeps
/// serving, and changes nothing.
@Suite struct BadInputTests {
    /// Everything a client can read back, to compare before and after.
    static func snapshot(_ client: TestClient) throws -> [String: String] {
        var state: [String: String] = [:]
        for path in ["/truck", "/account", "/grid", "/posts", "/jobs", "/games", "/healthz"] {
            state[path] = try client.get(path).text
        }
        return state
    }

    struct BadRequest: CustomStringConvertible {
        let method: String
        let path: String
        let body: [UInt8]?
        var description: String {
            "\(method) \(path.prefix(60)) \(body.map { String(decoding: $0.prefix(40), as: UTF8.self) } ?? "")"
        }
    }

    static func requests() -> [BadRequest] {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let deepObject = String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000)
        let bodies: [(String, [UInt8])] = [
            ("/truck/donuts", Array(#"{"name": "#.utf8)),
            ("/truck/donuts", Array(#"{"name": "Cruller""#.utf8)),
            ("/truck/donuts", Array(deep.utf8)),
            ("/truck/donuts", Array(deepObject.utf8)),
            ("/truck/donuts", [0x7B, 0x22, 0x6E, 0x61, 0x6D, 0x65, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D]),  // {"name":"\xff\xfe"}
            ("/truck/donuts", [0x7B, 0x22, 0x6E, 0x61, 0x6D, 0x65, 0x22, 0x3A, 0x22, 0xC0, 0xAF, 0x22, 0x7D]),  // overlong UTF-8
            ("/truck/donuts", Array(#"{"name": ["Cruller"]}"#.utf8)),
            ("/truck/donuts", Array(#"{"name": "Cruller", "price": 3}"#.utf8)),
            ("/truck/donuts", Array(#"{"name": "A", "name": "B"}"#.utf8)),
            ("/truck/donuts", Array("null".utf8)),
            ("/truck/donuts", Array("\"text\"".utf8)),
            ("/truck/donuts", []),
            ("/truck/orders", Array(#"{"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": 1e400}"#.utf8)),
            ("/truck/orders", Array(#"{"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": 99999999999999999999}"#.utf8)),
            ("/truck/orders", Array(#"{"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": -1}"#.utf8)),
            ("/truck/orders", Array(#"{"donutId": 7, "quantity": 1}"#.utf8)),
            ("/truck/orders", Array(#"{"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": true}"#.utf8)),
            ("/account/login", Array(#"{"userName": null}"#.utf8)),
            ("/account/login", Array(#"{"userName": "\ud800"}"#.utf8)),
            ("/observers", Array(#"{"ttlSeconds": 1e10}"#.utf8)),
            ("/observers", Array(#"{"ttlSeconds": -5}"#.utf8)),
            ("/grid/rows", Array(#"{"dots": 100000000000}"#.utf8)),
            ("/grid/rows", Array(#"{"dots": "3"}"#.utf8)),
            ("/posts", Array(#"{"imageURL": "javascript:alert(1)", "height": 10}"#.utf8)),
            ("/posts", Array(#"{"imageURL": "https://example.com/a.png", "height": 1e308}"#.utf8)),
            ("/jobs", Array(#"{"total": 9223372036854775807}"#.utf8)),
            ("/jobs", Array(#"{"total": 10, "step": 1}"#.utf8)),
            ("/games", Array(#"{"pairs": 27}"#.utf8)),
            ("/games", Array(#"{"pairs": 2, "seed": "x"}"#.utf8)),
        ]
        var requests = bodies.map { BadRequest(method: "POST", path: $0.0, body: $0.1) }
        requests += [
            BadRequest(method: "PATCH", path: "/truck", body: Array(#"{"name": 12}"#.utf8)),
            BadRequest(method: "PATCH", path: "/truck/donuts/0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", body: Array(#"{"glaze": 1}"#.utf8)),
            BadRequest(method: "GET", path: "/nowhere", body: nil),
            BadRequest(method: "GET", path: "/truck/donuts/..%2F..%2F..%2Fetc%2Fpasswd", body: nil),
            BadRequest(method: "GET", path: "/truck/%2e%2e/%2e%2e/etc/passwd", body: nil),
            BadRequest(method: "GET", path: "/../../etc/passwd", body: nil),
            BadRequest(method: "GET", path: "/grid/rows/-1/dots/0", body: nil),
            BadRequest(method: "GET", path: "/grid/rows/0/dots/-1", body: nil),
            BadRequest(method: "GET", path: "/grid/rows/99999999999999999999999/dots/0", body: nil),
            BadRequest(method: "GET", path: "/grid/rows/0/dots/18446744073709551616", body: nil),
            BadRequest(method: "GET", path: "/observers/x/changes?since=abc", body: nil),
            BadRequest(method: "GET", path: "/observers/x/changes?since=99999999999999999999999", body: nil),
            BadRequest(method: "GET", path: "/truck?fields=%00", body: nil),
            BadRequest(method: "DELETE", path: "/truck", body: nil),
            BadRequest(method: "TRACE", path: "/truck", body: nil),
            BadRequest(method: "POST", path: "/games/x/cards/y/choose", body: nil),
        ]
        return requests
    }

    @Test func badRequestsAreProblemsAndChangeNothing() throws {
        let server = try TestServer()
        let client = server.client
        let observer = try client.observer()
        let before = try Self.snapshot(client)
        for bad in Self.requests() {
            var path = bad.path
            if path.contains("/observers/x/") { path = path.replacingOccurrences(of: "/observers/x/", with: "/observers/\(observer)/") }
            let response = try client.request(bad.method, path, body: bad.body)
            #expect((400..<500).contains(response.status), "\(bad): \(response.status)")
            #expect(response.header("Content-Type") == "application/problem+json", "\(bad)")
            #expect(response.json["status"] == .int(Int64(response.status)), "\(bad)")
        }
        // Feed parameters that are not numbers, on a real observer.
        for query in ["since=1e3", "timeout=NaN", "timeout=inf", "limit=-0", "since=0x10", "timeout=1e2"] {
            #expect(try client.get("/observers/\(observer)/changes?\(query)").status == 400, "\(query)")
        }
        #expect(try Self.snapshot(client) == before)
        #expect(try client.changes(observer, since: 0).json.changeList.isEmpty)
        #expect(try client.get("/healthz").status == 200)
    }

    /// What a proxy in front could read one way and the server another is
    /// refused: a single-valued header or query parameter given twice, an
    /// encoded slash in the path; an integer field takes digits only; a
    /// problem quotes a short prefix of what was sent.
    @Test func ambiguousRequestsAreRefusedAndChangeNothing() throws {
        let server = try TestServer { $0.access = AccessPolicy(writeToken: "w") }
        let client = server.client
        let before = try Self.snapshot(client)
        let rename = Array(#"{"name": "Twice"}"#.utf8)
        func raw(_ head: String, body: [UInt8] = []) throws -> TestResponse {
            let connection = try TestConnection(port: server.port)
            let length = body.isEmpty ? "" : "Content-Length: \(body.count)\r\nContent-Type: application/json\r\n"
            try connection.sendRaw(Array((head + length + "\r\n").utf8) + body)
            return try connection.receive()
        }
        // The same header twice, in either order: refused, never taken from one copy.
        for (first, second) in [("Bearer r", "Bearer w"), ("Bearer w", "Bearer r")] {
            let answer = try raw("PATCH /truck HTTP/1.1\r\nHost: a\r\nAuthorization: \(first)\r\nAuthorization: \(second)\r\n", body: rename)
            #expect(answer.status == 400 && answer.text.contains("Authorization appears more than once"), "\(answer.status) \(answer.text)")
        }
        for name in ["Observer", "If-Match", "If-None-Match", "Last-Event-ID", "Content-Type", "observer"] {
            let answer = try raw("GET /truck HTTP/1.1\r\nHost: a\r\n\(name): a\r\nObserver: b\r\n".replacingOccurrences(of: "Observer: b", with: name == "observer" ? "Observer: b" : "\(name): b"))
            #expect(answer.status == 400, "\(name): \(answer.status)")
            #expect(answer.header("Content-Type") == "application/problem+json")
        }
        // Single-valued query parameters twice; a condition twice is two conditions.
        for query in ["fields=name&fields=orderCount", "orders.limit=1&orders.limit=2", "limit=1&limit=2", "sort=quantity&sort=-quantity"] {
            let path = query.hasPrefix("fields") || query.hasPrefix("orders.") ? "/truck?" + query : "/truck/orders?" + query
            let answer = try client.get(path)
            #expect(answer.status == 400 && answer.text.contains("appears more than once"), "\(query): \(answer.status) \(answer.text)")
        }
        #expect(try client.get("/truck/orders?quantity=gte.2&quantity=lte.5").status == 200)
        // An encoded slash in the path, in any case; in a query value it is a slash.
        for path in ["/truck%2forderCount", "/truck%2ForderCount", "/truck/donuts%2F0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"] {
            let answer = try client.get(path)
            #expect(answer.status == 400 && answer.text.contains("encoded slash"), "\(path): \(answer.status)")
        }
        #expect(try client.get("/truck?fields=name&x=a%2Fb").status == 200)
        // Integers are digits.
        for quantity in ["1e2", "10E-1", "1.0", "-0.0", "2.5"] {
            let body = Array(#"{"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": \#(quantity)}"#.utf8)
            let answer = try client.request("POST", "/truck/orders", headers: ["Authorization": "Bearer w"], body: body)
            #expect(answer.status == 400 && answer.text.contains("digits only"), "\(quantity): \(answer.status) \(answer.text)")
        }
        // A long name quoted back is cut short.
        let long = String(repeating: "q", count: 7_000)
        let echoed = try client.get("/truck/orders?\(long)=eq.1")
        #expect(echoed.status == 400 && echoed.body.count < 1_000, "\(echoed.body.count) bytes")
        #expect(try Self.snapshot(client) == before)
        #expect(try client.get("/healthz").status == 200)
    }

    @Test func overlongUrlAndHeadersAreRefusedAndTheServerGoesOn() throws {
        let server = try TestServer()
        let client = server.client
        let before = try Self.snapshot(client)
        let longPath = "/truck/donuts/" + String(repeating: "a", count: 100_000)
        let connection = try TestConnection(port: server.port)
        try connection.send("GET", longPath)
        let url = try connection.receive()
        #expect((400..<500).contains(url.status), "status \(url.status)")
        let headers = try TestConnection(port: server.port)
        try headers.send("GET", "/truck", headers: ["X-Padding": String(repeating: "b", count: 100_000)])
        let header = try headers.receive()
        #expect((400..<500).contains(header.status), "status \(header.status)")
        #expect(try Self.snapshot(client) == before)
    }

    @Test func garbageOnTheWireIsRefusedAndTheServerGoesOn() throws {
        let server = try TestServer()
        let client = server.client
        for garbage in ["\u{00}\u{01}\u{02}\r\n\r\n", "GET\r\n\r\n", "GET / HTTP/9.9\r\n\r\n",
                        "POST /truck/donuts HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                        "POST /truck/donuts HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n"]
        {
            let connection = try TestConnection(port: server.port, receiveTimeout: 5)
            try connection.sendRaw(Array(garbage.utf8))
            if let answer = try? connection.receive() {
                #expect((400..<600).contains(answer.status), "\(garbage.debugDescription): \(answer.status)")
            }
        }
        #expect(try client.get("/healthz").status == 200)
        #expect(try client.get("/truck/donuts").json["donuts"]?.arrayValue?.count == 4)
    }
}

@Suite struct EncodingEdgeTests {
    /// SQLite keeps a NUL inside text; PostgreSQL's text cannot hold one,
    /// so there it is refused (422) and nothing is stored.
    @Test func textWithNulSurvivesARestartWholeOrIsRefused() throws {
        let folder = temporaryFolder()
        var server: TestServer? = try TestServer(folder: folder)
        let created = try server!.client.post("/truck/donuts", ["name": "a\u{0}b"])
        if TestEngine.isPostgres {
            #expect(created.status == 422)
            #expect(try server!.client.get("/truck/donuts").json["donuts"]?.arrayValue?.count == 4)
            #expect(try server!.client.patch("/truck/donuts/\(Seed.glazed)", ["name": "a\u{0}b"]).status == 422)
            #expect(try server!.client.get("/truck/donuts/\(Seed.glazed)").json["name"] == "Glazed")
            return
        }
        #expect(created.status == 201)
        let id = try #require(created.json["id"]?.stringValue)
        server!.stop()
        server = nil
        let again = try TestServer(folder: folder)
        #expect(try again.client.get("/truck/donuts/\(id)").json["name"] == "a\u{0}b")
    }

    @Test func anEncodedNulNamesNoResource() throws {
        let server = try TestServer()
        let client = server.client
        #expect(try client.delete("/truck/donuts/\(Seed.maple)%00x").status == 404)
        #expect(try client.get("/truck%00/donuts").status == 404)
        #expect(try client.get("/truck/donuts/\(Seed.maple)").status == 200)
        let observer = try client.observer()
        #expect(try client.get("/truck?observer=\(observer)%00x").status == 404)
        // Ordinary escapes still decode.
        #expect(try client.get("/truck/donuts/\(Seed.maple.replacingOccurrences(of: "-", with: "%2D"))").status == 200)
    }

    @Test func timeoutAcceptsEveryDecimalSpelling() throws {
        let server = try TestServer()
        let observer = try server.client.observer()
        for spelling in ["1e-3", "0.001", "1E-3", "0", "2.5e-1"] {
            #expect(try server.client.get("/observers/\(observer)/changes?timeout=\(spelling)").status == 200, "\(spelling)")
        }
        for spelling in ["1e2", "-1e-3", "e", "1e", "nan"] {
            #expect(try server.client.get("/observers/\(observer)/changes?timeout=\(spelling)").status == 400, "\(spelling)")
        }
    }
}
