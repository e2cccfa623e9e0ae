import Foundation
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
        let server = try TestServer { $0.http.connectionLimit = 20 }
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
