import Foundation
import Testing
import TestSupport

/// An observer's id is all it takes to use it: so it is as hard to guess as
/// an id can be, and it need never be in a URL (SPEC §3c, docs/SECURITY.md).
@Suite struct ObserverCapabilityTests {
    /// 122 random bits: a version 4 UUID, nothing of the time in it.
    @Test func observerIdsAreRandomVersion4UUIDs() throws {
        let server = try TestServer()
        let ids = try (0..<32).map { _ in try server.client.observer() }
        for id in ids {
            let hex = Array(id.utf8)
            #expect(hex.count == 36, "\(id)")
            #expect(id.split(separator: "-").map(\.count) == [8, 4, 4, 4, 12], "\(id)")
            #expect(hex[14] == UInt8(ascii: "4"), "version of \(id)")
            #expect([UInt8]("89ab".utf8).contains(hex[19]), "variant of \(id)")
        }
        #expect(Set(ids).count == ids.count)
        // Made one after another, yet not alike at the start (as
        // time-ordered ids would be).
        #expect(Set(ids.map { $0.prefix(8) }).count > 24)
    }

    /// Every observer route has a form with the id in the `Observer`
    /// header, answering as the form with the id in the path does.
    @Test func everyObserverRouteWorksWithTheIdInTheObserverHeader() throws {
        let server = try TestServer()
        let client = server.client
        let observer = try client.observer()
        let named = ["Observer": observer]
        let cursor = try #require(try client.get("/truck/orderCount", observer: observer).cursor)

        let shown = try client.get("/observer", headers: named)
        #expect(shown.status == 200)
        #expect(shown.json["id"] == .string(observer))
        #expect(shown.json["reads"] == ["/truck/orderCount"])

        let empty = try client.get("/observer/changes?since=\(cursor)&timeout=0", headers: named)
        #expect(empty.status == 200)
        #expect(empty.json.changeList.isEmpty)
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        let polled = try client.get("/observer/changes?since=\(cursor)&timeout=5", headers: named)
        #expect(polled.json.changeList.map { $0["path"] } == ["/truck/orderCount"])

        let stream = try EventStreamClient(port: server.port, observer: observer, query: "since=\(cursor)", namedInHeader: true)
        #expect(stream.head.status == 200)
        #expect(try stream.next()?.json.changeList.first?["new"] == 1)

        #expect(try client.request("DELETE", "/observer/reads", headers: named).status == 204)
        #expect(try client.get("/observer", headers: named).json["reads"] == [])
        #expect(try client.request("DELETE", "/observer", headers: named).status == 204)
        #expect(try client.get("/observer", headers: named).status == 404)
        #expect(try client.get("/observers/\(observer)").status == 404)
    }

    /// The debug log shows every request, and no observer's id: not in a
    /// path, not in the `Observer` header, not from the query.
    @Test func theDebugLogNeverShowsAnObserversId() throws {
        let server = try ServerProcess(folder: temporaryFolder(), arguments: ["--log-level", "debug"])
        defer { _ = server.stop() }
        let client = server.client
        let observer = try client.observer()
        _ = try client.get("/truck/orderCount", observer: observer)
        _ = try client.get("/truck/orderCount?observer=\(observer)")
        _ = try client.get("/observers/\(observer)/changes?timeout=0")
        _ = try client.get("/observer/changes?timeout=0", headers: ["Observer": observer])
        _ = try client.request("DELETE", "/observers/\(observer)")
        let log = try String(contentsOfFile: server.logPath, encoding: .utf8)
        #expect(log.contains("GET /observers/…/changes 200"))
        #expect(log.contains("DELETE /observers/… 204"))
        #expect(!log.contains(observer))
    }

    /// Without the header the `/observer…` routes name no observer: `400`,
    /// and nothing is changed or deleted.
    @Test func theHeaderFormWithoutTheHeaderIsABadRequest() throws {
        let server = try TestServer()
        let client = server.client
        let observer = try client.observer()
        for (method, path) in [("GET", "/observer"), ("DELETE", "/observer"), ("DELETE", "/observer/reads"), ("GET", "/observer/changes?timeout=0")] {
            let answer = try client.request(method, path)
            #expect(answer.status == 400, "\(method) \(path)")
            #expect(answer.header("Content-Type") == "application/problem+json", "\(method) \(path)")
        }
        #expect(try client.get("/observers/\(observer)").status == 200)
    }
}
