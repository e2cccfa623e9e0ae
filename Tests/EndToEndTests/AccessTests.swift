import Foundation
@testable import API
import Testing

@Suite struct AccessTests {
    static let write = "write-secret-0123456789"
    static let read = "read-secret-9876543210"

    @Test func writesNeedTheWriteTokenAndReadsStayOpen() throws {
        let server = try TestServer { $0.access = AccessPolicy(writeToken: Self.write) }
        let client = server.client
        let denied = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        #expect(denied.status == 401)
        #expect(denied.header("Content-Type") == "application/problem+json")
        #expect(denied.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        #expect(try client.request("POST", "/truck/orders", headers: ["Authorization": "Bearer wrong"],
                                   json: ["donutId": .string(Seed.glazed), "quantity": 1]).status == 401)
        #expect(try client.request("POST", "/truck/orders", headers: ["Authorization": "Bearer " + Self.write + "x"],
                                   json: ["donutId": .string(Seed.glazed), "quantity": 1]).status == 401)
        #expect(try client.request("PATCH", "/truck", headers: ["Authorization": "Basic " + Self.write], json: ["name": "x"]).status == 401)
        #expect(try client.get("/truck/orderCount").json["orderCount"] == 0)
        let allowed = try client.request("POST", "/truck/orders", headers: ["Authorization": "Bearer " + Self.write],
                                         json: ["donutId": .string(Seed.glazed), "quantity": 1])
        #expect(allowed.status == 201)
        // A read-only dashboard observes without the write token.
        let observer = try client.observer()
        #expect(try client.get("/truck/orderCount", observer: observer).json["orderCount"] == 1)
        #expect(try client.changes(observer).status == 200)
        #expect(try client.delete("/observers/\(observer)/reads").status == 204)
        #expect(try client.delete("/observers/\(observer)").status == 204)
        #expect(try client.get("/healthz").status == 200)
    }

    @Test func aReadTokenClosesReadsToo() throws {
        let server = try TestServer { $0.access = AccessPolicy(writeToken: Self.write, readToken: Self.read) }
        let client = server.client
        #expect(try client.get("/truck").status == 401)
        #expect(try client.post("/observers").status == 401)
        #expect(try client.get("/metrics").status == 401)
        #expect(try client.get("/healthz").status == 200)
        #expect(try client.get("/truck", headers: ["Authorization": "Bearer " + Self.read]).status == 200)
        #expect(try client.get("/truck", headers: ["Authorization": "Bearer " + Self.write]).status == 200)
        #expect(try client.request("PATCH", "/truck", headers: ["Authorization": "Bearer " + Self.read], json: ["name": "x"]).status == 401)
        #expect(try client.request("POST", "/observers", headers: ["Authorization": "Bearer " + Self.read]).status == 201)
    }

    @Test func corsIsOffUnlessOriginsAreNamed() throws {
        let closed = try TestServer()
        let plain = try closed.client.get("/truck", headers: ["Origin": "https://dash.example"])
        #expect(plain.header("Access-Control-Allow-Origin") == nil)
        #expect(try closed.client.request("OPTIONS", "/truck", headers: ["Origin": "https://dash.example"]).status == 405)

        let open = try TestServer { $0.access = AccessPolicy(corsOrigins: ["https://dash.example"]) }
        let allowed = try open.client.get("/truck", headers: ["Origin": "https://dash.example"])
        #expect(allowed.header("Access-Control-Allow-Origin") == "https://dash.example")
        #expect(allowed.header("Access-Control-Expose-Headers")?.contains("Observation-Cursor") == true)
        #expect(try open.client.get("/truck", headers: ["Origin": "https://evil.example"]).header("Access-Control-Allow-Origin") == nil)
        let preflight = try open.client.request("OPTIONS", "/truck/donuts/x", headers: ["Origin": "https://dash.example"])
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Methods") == "DELETE, GET, PATCH, HEAD")
        // A parked long-poll's later answer carries the CORS headers too.
        let observer = try open.client.observer()
        let connection = try TestConnection(port: open.port)
        try connection.send("GET", "/observers/\(observer)/changes?timeout=0.3", headers: ["Origin": "https://dash.example"])
        #expect(try connection.receive().header("Access-Control-Allow-Origin") == "https://dash.example")
    }

    /// The daemon's own refusals, given before any route sees the request,
    /// are finished as every answer is: with an allowed origin's CORS
    /// headers, and counted in `/metrics` (as `refused`).
    @Test func theDaemonsOwnRefusalsCarryTheCORSHeadersAndAreCounted() throws {
        let server = try TestServer {
            $0.access = AccessPolicy(corsOrigins: ["https://dash.example"])
            $0.http.maxBody = 1024
        }
        let origin = "Origin: https://dash.example\r\n"
        func refusal(_ head: String, body: String = "") throws -> TestResponse {
            let connection = try TestConnection(port: server.port, receiveTimeout: 5)
            try? connection.sendRaw(Array((head + "\r\n" + body).utf8))
            let answer = try connection.receive()
            #expect(answer.header("Content-Type") == "application/problem+json")
            #expect(answer.header("Connection") == "close")
            return answer
        }
        let tooManyParameters = "/truck?" + (0...100).map { "a\($0)=1" }.joined(separator: "&")
        let refused = [
            // A query of too many parameters, refused from its target alone.
            try refusal("GET \(tooManyParameters) HTTP/1.1\r\nHost: a\r\n\(origin)"),
            // A body announced over the limit, refused before it is read.
            try refusal("POST /truck/donuts HTTP/1.1\r\nHost: a\r\n\(origin)Content-Length: 2048\r\n"),
            // A chunked one, refused once it passes the limit.
            try refusal("POST /truck/donuts HTTP/1.1\r\nHost: a\r\n\(origin)Transfer-Encoding: chunked\r\n",
                        body: "800\r\n" + String(repeating: " ", count: 2048) + "\r\n0\r\n\r\n"),
            // A head a proxy could read otherwise.
            try refusal("GET /truck HTTP/1.1\r\nHost: a\r\nHost: b\r\n\(origin)"),
        ]
        #expect(refused.map(\.status) == [414, 413, 413, 400])
        for answer in refused {
            #expect(answer.header("Access-Control-Allow-Origin") == "https://dash.example", "\(answer.status)")
            #expect(answer.header("Vary") == "Origin", "\(answer.status)")
            #expect(answer.header("Access-Control-Expose-Headers") == "ETag, Observation-Cursor, Location, Link", "\(answer.status)")
        }
        // Another origin is refused as it is answered: without them.
        let other = try refusal("GET \(tooManyParameters) HTTP/1.1\r\nHost: a\r\nOrigin: https://evil.example\r\n")
        #expect(other.status == 414)
        #expect(other.header("Access-Control-Allow-Origin") == nil)
        let metrics = try server.client.get("/metrics").text
        for (status, count) in [(400, 1), (413, 2), (414, 2)] {
            #expect(metrics.contains(#"observable_http_requests_total{route="refused",status="\#(status)"} \#(count)"#), "\(status)")
        }
    }

    /// With `*`, any origin is answered `*`: no value the client chose is
    /// sent back, `null` and odd bytes included.
    @Test func anyOriginIsAnsweredWithAStarNeverAnEcho() throws {
        let open = try TestServer { $0.access = AccessPolicy(corsOrigins: ["*"]) }
        for origin in ["https://dash.example", "null", "https://a.example\u{7f}", "x"] {
            let answer = try open.client.get("/truck", headers: ["Origin": origin])
            #expect(answer.header("Access-Control-Allow-Origin") == "*", "for \(origin)")
        }
        #expect(try open.client.get("/truck").header("Access-Control-Allow-Origin") == nil)
    }

    @Test func onlyOriginsAsBrowsersSendThemCanBeAllowed() {
        for origin in ["*", "https://dash.example", "http://localhost:8080", "http://127.0.0.1:3000", "http://[::1]:8080", "capacitor://localhost"] {
            #expect(AccessPolicy.isValidCORSOrigin(origin), "\(origin)")
        }
        for origin in ["", "null", "dash.example", "https://", "https://dash.example/", "https://dash.example/path", "https://user@dash.example",
                       "https://dash.example:", "https://dash.example:99999", "https://dash example", "https://dash.example\u{0}", "1http://x", "https://[::1"] {
            #expect(!AccessPolicy.isValidCORSOrigin(origin), "\(origin)")
        }
    }

    /// A list the server cannot honour exactly stops it at start, named.
    @Test func anInvalidOriginInTheListStopsTheServerAtStart() throws {
        let process = Process()
        process.executableURL = ServerProcess.executable
        process.arguments = ["serve", "--database", temporaryFolder() + "/cors.sqlite", "--port", "0"]
        process.environment = ["OBSERVABLE_CORS_ORIGINS": "https://dash.example, https://evil.example/path"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus != 0)
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(text.contains("https://evil.example/path is not an origin"))
    }

    @Test func tokenComparisonIsExact() {
        #expect(AccessPolicy.constantTimeEquals("abc", "abc"))
        #expect(!AccessPolicy.constantTimeEquals("abc", "abd"))
        #expect(!AccessPolicy.constantTimeEquals("abc", "abcd"))
        #expect(!AccessPolicy.constantTimeEquals("", "a"))
        #expect(AccessPolicy.bearer("Bearer  tok") == "tok")
        #expect(AccessPolicy.bearer("bearer tok") == "tok")
        #expect(AccessPolicy.bearer("Basic tok") == nil)
    }
}
