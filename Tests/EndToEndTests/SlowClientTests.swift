import Foundation
import Testing

/// Slow and greedy clients are cut off or refused while others are served.
@Suite struct SlowClientTests {
    @Test func silentAndTricklingConnectionsAreCutAfterTheIdleTimeout() throws {
        let server = try TestServer { $0.http.idleTimeout = 1 }
        let silent = try TestConnection(port: server.port, receiveTimeout: 5)
        let trickling = try TestConnection(port: server.port, receiveTimeout: 5)
        let request = Array("GET /truck HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        let start = Date()
        // One byte every 2.2 s; others are served normally meanwhile.
        var cut = false
        for (i, byte) in request.prefix(4).enumerated() {
            if (try? trickling.sendRaw([byte])) == nil {
                cut = true
                break
            }
            #expect(try server.client.get("/truck/orderCount").status == 200, "byte \(i)")
            Thread.sleep(forTimeInterval: 2.2)
            if i == 0 { #expect(silent.isClosedByServer()) }
        }
        #expect(cut || trickling.isClosedByServer())
        #expect(Date().timeIntervalSince(start) < 10)
        #expect(try server.client.get("/healthz").status == 200)
    }

    @Test func connectionsBeyondTheLimitAreRefusedAndTheServerRecovers() throws {
        let server = try TestServer { $0.http.connectionLimit = 20 }
        var held: [TestConnection] = []
        for _ in 0..<20 { held.append(try TestConnection(port: server.port, receiveTimeout: 3)) }
        Thread.sleep(forTimeInterval: 0.3)
        // The 21st is accepted by the kernel and closed by the server at once.
        let extra = try TestConnection(port: server.port, receiveTimeout: 3)
        try? extra.send("GET", "/healthz")
        #expect((try? extra.receive()) == nil)
        // The held ones still work.
        let answer = try held[0].request("GET", "/truck/orderCount")
        #expect(answer.status == 200)
        held.removeAll()
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try server.client.get("/healthz").status == 200)
        #expect(try server.client.get("/truck").status == 200)
    }

    @Test func anObserverCannotTrackUnboundedReads() throws {
        let server = try TestServer { $0.store.maxReadsPerObserver = 10 }
        let client = server.client
        let id = try client.observer()
        #expect(try client.get("/truck/orderCount", observer: id).status == 200)
        let tooMany = try client.get("/truck", observer: id)
        #expect(tooMany.status == 422)
        #expect(tooMany.header("Content-Type") == "application/problem+json")
        #expect(try client.get("/observers/\(id)").json["reads"] == ["/truck/orderCount"])
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
            connections.append(connection)
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(try client.get("/metrics").text.contains("observable_longpolls_parked 1\n"))
        for connection in connections.dropLast() { #expect(try connection.receive().json["changes"] == .array([])) }
    }
}
