import Foundation
import Testing
import TestSupport

@Suite struct ObserverTests {
    @Test func observerIsCreatedShownClearedAndDeleted() throws {
        let server = try TestServer()
        let client = server.client
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        let created = try client.post("/observers")
        #expect(created.status == 201)
        let id = try #require(created.json["id"]?.stringValue)
        #expect(created.header("Location") == "/observers/\(id)")
        #expect(created.json["cursor"] == 2)
        #expect(created.json["reads"] == .array([]))
        #expect(created.json["ttlSeconds"] == 600)

        _ = try client.get("/truck?fields=name,orderCount", observer: id)
        _ = try client.get("/account?observer=\(id)")
        let shown = try client.get("/observers/\(id)")
        #expect(shown.status == 200)
        #expect(shown.json["reads"] == ["/account/userName", "/truck/name", "/truck/orderCount"])

        #expect(try client.delete("/observers/\(id)/reads").status == 204)
        #expect(try client.get("/observers/\(id)").json["reads"] == .array([]))

        #expect(try client.delete("/observers/\(id)").status == 204)
        #expect(try client.get("/observers/\(id)").status == 404)
        #expect(try client.delete("/observers/\(id)").status == 404)
        #expect(try client.delete("/observers/\(id)/reads").status == 404)
        #expect(try client.changes(id).status == 404)
    }

    /// A read naming an observer that is not there is refused alike whether
    /// its answer is kept (not rendered again) or made afresh, and tracks
    /// nothing.
    @Test func aReadWithAnObserverNotThereIsRefusedWhetherItsAnswerIsKeptOrNot() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        #expect(try client.delete("/observers/\(id)").status == 204)
        #expect(try client.get("/truck").status == 200)  // kept from now on
        for (path, method) in [("/truck", "GET"), ("/truck?fields=name", "GET"), ("/truck", "HEAD")] {
            let refused = try client.request(method, path, headers: ["Observer": id])
            #expect(refused.status == 404, "\(method) \(path)")
            #expect(refused.header("Content-Type") == "application/problem+json", "\(method) \(path)")
            if method == "GET" {
                #expect(refused.json["detail"] == .string("no observer \(id); create one with POST /observers"), "\(method) \(path)")
            }
        }
        #expect(try client.get("/observers/\(id)").status == 404)
    }

    @Test func observerIdsAreUnguessableUUIDs() throws {
        let server = try TestServer()
        let a = try server.client.observer()
        let b = try server.client.observer()
        #expect(a != b)
        #expect(UUID(uuidString: a) != nil)
    }

    @Test func ttlIsValidated() throws {
        let server = try TestServer()
        #expect(try server.client.post("/observers", ["ttlSeconds": 0]).status == 422)
        #expect(try server.client.post("/observers", ["ttlSeconds": 86_401]).status == 422)
        #expect(try server.client.post("/observers", ["ttlSeconds": "10"]).status == 400)
        #expect(try server.client.post("/observers", ["ttl": 10]).status == 400)
        #expect(try server.client.post("/observers", ["ttlSeconds": 86_400]).status == 201)
    }

    @Test func unusedObserverIsDroppedAfterItsTTL() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer(ttl: 1)
        let kept = try client.observer(ttl: 1)
        _ = try client.get("/truck/orderCount", observer: id)
        #expect(try client.metric("observable_observers") == 2)
        // Until housekeeping drops the unused one (its TTL and then a pass),
        // asked through /metrics: reading the observer would use it.
        try waitUntil(timeout: 5, every: 0.1) {
            #expect(try client.changes(kept).status == 200)  // use keeps it alive
            return try client.metric("observable_observers") == 1
        }
        #expect(try client.get("/observers/\(id)").status == 404)
        #expect(try client.get("/truck/orderCount", observer: id).status == 404)
        #expect(try client.get("/observers/\(kept)").status == 200)
    }

    @Test func readNamingAnUnknownObserverIsNotServed() throws {
        let server = try TestServer()
        let response = try server.client.get("/truck", observer: "no-such-observer")
        #expect(response.status == 404)
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(try server.client.get("/truck?observer=nobody").status == 404)
    }

    @Test func everyResourceGetCarriesTheCursor() throws {
        let server = try TestServer()
        let client = server.client
        _ = try client.post("/account/login", ["userName": "ada"])
        for path in ["/truck", "/truck/donuts", "/truck/orders", "/truck/orderCount", "/account", "/truck/donuts/\(Seed.maple)"] {
            #expect(try client.get(path).cursor == 1, "\(path)")
        }
    }
}
