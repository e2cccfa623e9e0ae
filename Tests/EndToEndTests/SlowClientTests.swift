import Foundation
import HTTPServer
import Testing
import TestSupport

/// Slow and greedy clients are cut off or refused while others are served.
@Suite struct SlowClientTests {
    @Test func silentAndTricklingConnectionsAreCutAfterTheIdleTimeout() throws {
        let server = try TestServer { $0.http.idleTimeout = 1 }
        let silent = try TestConnection(port: server.port, receiveTimeout: 5)
        let trickling = try TestConnection(port: server.port, receiveTimeout: 5)
        let start = Date()
        // A trickle slower than the idle timeout: the first bytes of a
        // request, then none for longer than the timeout.
        try trickling.sendRaw(Array("GET /tr".utf8))
        // Others are served normally meanwhile.
        #expect(try server.client.get("/truck/orderCount").status == 200)
        // Each read returns once the server closes (or after 5 s, failing).
        #expect(silent.isClosedByServer())
        #expect(trickling.isClosedByServer())
        #expect(Date().timeIntervalSince(start) < 10)
        #expect(try server.client.get("/healthz").status == 200)
    }

    @Test func connectionsBeyondTheLimitWaitUnservedUntilOthersLeave() throws {
        let server = try TestServer {
            $0.http.connectionLimit = 20
            // All from one address here, trusted: none kept for newcomers.
            $0.http.maxConnectionsPerAddress = 20
            $0.http.trustedAddresses = try! TrustedAddresses(parsing: "127.0.0.1")
        }
        var held: [TestConnection] = []
        for _ in 0..<20 { held.append(try TestConnection(port: server.port, receiveTimeout: 3)) }
        // Accepted by the server, not only by the kernel.
        try waitUntil { server.application.daemon.connectionCount == 20 }
        // The 21st is accepted by the kernel but not served: it waits in the
        // backlog (no answer within half a second) while the 20 are held.
        let extra = try TestConnection(port: server.port, receiveTimeout: 0.5)
        try? extra.send("GET", "/healthz")
        #expect((try? extra.receive()) == nil)
        // The held ones still work.
        let answer = try held[0].request("GET", "/truck/orderCount")
        #expect(answer.status == 200)
        held.removeAll()
        // Once they are gone, the one that waited is served.
        var waited: TestResponse?
        try waitUntil { waited = try? extra.receive(); return waited != nil }
        #expect(waited?.status == 200)
        #expect(try server.client.get("/healthz").status == 200)
        #expect(try server.client.get("/truck").status == 200)
    }

    /// Sends `bytes` a byte at a time on each of `connections` that has
    /// no answer yet, waiting up to each connection's receive timeout for
    /// one after every byte (a client that is never silent for long, so
    /// the idle timeout never ends it), until each has an answer or is
    /// closed; returns the answers (nil: closed without one).
    static func trickle(_ bytes: [UInt8], on connections: [RawConnection], timeout: Double) throws -> [RawResponse?] {
        var answers: [Int: RawResponse?] = [:]
        var next = 0
        try waitUntil(timeout: timeout, every: 0) {
            for (index, connection) in connections.enumerated() where answers[index] == nil {
                if next < bytes.count, (try? connection.send([bytes[next]])) == nil {
                    answers[index] = .some(nil)
                    continue
                }
                do {
                    answers[index] = .some(try connection.receive())
                } catch TestHTTPError.io(let message) where message == "connection closed" || message == "recv failed: \(ECONNRESET)" {
                    answers[index] = .some(nil)
                } catch {}
            }
            next += 1
            return answers.count == connections.count
        }
        return connections.indices.map { answers[$0] ?? nil }
    }

    /// One address holds slow connections up to its limit (each sends its
    /// request a byte at a time and is never silent for long): another
    /// address is served normally all the while, one more connection from
    /// the first is refused `429` at once, and the slow ones are cut with
    /// `408` once their request has been arriving for the request timeout.
    @Test func oneAddressHoldingSlowConnectionsLeavesAnotherServedAndTheyAreCutAtTheDeadline() throws {
        let server = try TestServer {
            $0.http.connectionLimit = 10
            $0.http.maxConnectionsPerAddress = 4
            $0.http.requestTimeout = 2
            $0.http.idleTimeout = 30
        }
        let head = Array("GET /truck/orderCount HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: \(String(repeating: "s", count: 200))\r\n\r\n".utf8)
        let start = Date()
        let slow = try (0..<4).map { _ in try RawConnection(port: server.port, receiveTimeout: 0.1) }
        for connection in slow { try connection.send(Array(head[..<1])) }
        try waitUntil { server.application.daemon.connectionCount == 4 }

        let fifth = try TestConnection(port: server.port, receiveTimeout: 5)
        let refused = try fifth.receive()
        #expect(refused.status == 429)
        #expect(refused.header("Content-Type") == "application/problem+json")
        #expect(refused.json["title"] == "Too Many Requests")
        #expect(refused.header("Retry-After") == "1")
        #expect(fifth.isClosedByServer())
        let other = try TestConnection(port: server.port, receiveTimeout: 5, source: "127.0.0.2")
        #expect(try other.request("GET", "/truck/orderCount").json == ["orderCount": 0])
        #expect(try other.request("GET", "/healthz").status == 200)

        let answers = try Self.trickle(Array(head[1...]), on: slow, timeout: 15)
        let cutAfter = Date().timeIntervalSince(start)
        for answer in answers {
            #expect(answer?.status == 408)
            #expect(answer?.headers["content-type"] == "application/problem+json")
            #expect(answer?.headers["connection"] == "close")
        }
        // Cut at the deadline: not before, and within the second the clock looks once in, and the trickle's turn.
        #expect(cutAfter >= 2)
        #expect(cutAfter < 6)
        #expect(slow.allSatisfy { $0.isClosedByServer() })
        // The address has its connections back.
        try waitUntil { server.application.daemon.connectionCount <= 1 }
        #expect(try server.client.get("/truck/orderCount").status == 200)
        // Each refusal is counted once, though no request was in.
        let metrics = try server.client.get("/metrics").text
        #expect(metrics.contains(#"observable_http_requests_total{route="refused",status="429"} 1"#))
        #expect(metrics.contains(#"observable_http_requests_total{route="refused",status="408"} 4"#))
    }

    /// The request deadline is for requests still arriving: a body that
    /// trickles in is cut, while a connection idle between requests, a new
    /// one that has sent nothing yet (both the idle timeout's), a parked
    /// long-poll and an event stream (whose requests are in) are not.
    @Test func onlyConnectionsStillSendingTheirRequestAreCut() throws {
        let server = try TestServer {
            $0.http.requestTimeout = 1
            $0.http.idleTimeout = 30
        }
        let client = server.client
        let keptAlive = try TestConnection(port: server.port, receiveTimeout: 5)
        #expect(try keptAlive.request("GET", "/truck/orderCount").status == 200)
        let silent = try RawConnection(port: server.port, receiveTimeout: 0.1)
        let observer = try client.observer()
        _ = try client.get("/truck/orderCount", observer: observer)
        let poll = try TestConnection(port: server.port, receiveTimeout: 10)
        try poll.send("GET", "/observers/\(observer)/changes?timeout=30")
        try server.waitUntil(parked: 1)
        let streamed = try client.observer()
        let stream = try EventStreamClient(port: server.port, observer: streamed)
        #expect(stream.head.status == 200)

        // Far longer than the trickle sends before the deadline.
        let body = Array("{\"name\": \"Slow\"\(String(repeating: " ", count: 1_000))}".utf8)
        let slowBody = try RawConnection(port: server.port, receiveTimeout: 0.1)
        try slowBody.send("PATCH /truck HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n")
        let answers = try Self.trickle(body, on: [slowBody], timeout: 10)
        #expect(answers.first??.status == 408)

        #expect(!silent.isClosedByServer())
        try silent.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        try waitUntil { (try? silent.receive())?.status == 200 }
        #expect(try keptAlive.request("GET", "/truck?fields=name").json == ["name": "Food Truck"])
        #expect(server.application.daemon.parkedCount == 1)
        #expect(server.application.daemon.streamCount == 1)
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        #expect(try poll.receive().json.changePaths == ["/truck/orderCount"])
    }

    /// `--max-connections-per-address` and `--request-timeout` are flags (and
    /// `OBSERVABLE_…` variables) of `serve`; neither may be below 1. Unless
    /// given, an address may hold a quarter of the connection limit.
    @Test(arguments: [(["--connection-limit", "12"], 3), (["--connection-limit", "12", "--max-connections-per-address", "2"], 2)])
    func thePerAddressLimitIsAQuarterOfTheConnectionLimitUnlessGiven(arguments: [String], limit: Int) throws {
        let folder = temporaryFolder()
        let server = try ServerProcess(folder: folder, arguments: arguments + ["--request-timeout", "5"])
        let held = try (0..<limit).map { _ in try TestConnection(port: server.port, receiveTimeout: 5) }
        for connection in held { #expect(try connection.request("GET", "/healthz").status == 200) }
        let refused = try TestConnection(port: server.port, receiveTimeout: 5)
        #expect(try refused.receive().status == 429)
        #expect(try TestConnection(port: server.port, receiveTimeout: 5, source: "127.0.0.2").request("GET", "/healthz").status == 200)
        #expect(try held[0].request("GET", "/healthz").status == 200)
        server.stop()
        for flag in ["--max-connections-per-address", "--request-timeout"] {
            #expect(throws: TestHTTPError.self) { try ServerProcess(folder: folder, arguments: [flag, "0"]) }
        }
    }

    @Test func anObserverCannotTrackUnboundedReads() throws {
        let server = try TestServer { $0.store.maxReadsPerObserver = 10 }
        let client = server.client
        let id = try client.observer()
        #expect(try client.get("/truck/orderCount", observer: id).status == 200)
        // A collection read is one entry, however many elements it shows:
        // the truck is its name, its count and two shapes.
        for _ in 0..<3 { _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1]) }
        #expect(try client.get("/truck", observer: id).status == 200)
        #expect(try client.get("/observers/\(id)").json["shapes"]?.arrayValue?.count == 2)
        // Each property of an element read on its own is one.
        #expect(try client.get("/truck/donuts/\(Seed.glazed)", observer: id).status == 200)
        let before = try client.get("/observers/\(id)").json["reads"]
        let tooMany = try client.get("/truck/donuts/\(Seed.maple)", observer: id)
        #expect(tooMany.status == 422)
        #expect(tooMany.header("Content-Type") == "application/problem+json")
        #expect(try client.get("/observers/\(id)").json["reads"] == before)
        #expect(try client.delete("/observers/\(id)/reads").status == 204)
        #expect(try client.get("/truck/donuts?fields=name", observer: id).status == 200)
    }

    @Test func oneObserverParksAtMostOneLongPoll() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        var connections: [TestConnection] = []
        for _ in 0..<5 {
            let connection = try TestConnection(port: server.port)
            try connection.send("GET", "/observers/\(id)/changes?timeout=30")
            if let previous = connections.last {
                // The newer poll has taken its place (it is parked before the older one is answered).
                #expect(try previous.receive().json["changes"] == .array([]))
            } else {
                try server.waitUntil(parked: 1)
            }
            connections.append(connection)
        }
        #expect(try client.get("/metrics").text.contains("observable_longpolls_parked 1\n"))
    }
}
