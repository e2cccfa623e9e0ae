import Foundation
import Testing

/// A `HEAD` shows no values, so it tracks no reads; otherwise it answers as
/// a `GET` does.
@Suite struct HeadTests {
    @Test func headWithAnObserverTracksNoReadsAndStillCarriesETagAndCursor() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.patch("/truck", ["name": "Before"])
        for path in ["/truck", "/truck/donuts", "/truck/donuts/\(Seed.glazed)?fields=name", "/truck/orderCount", "/account", "/grid"] {
            let head = try client.request("HEAD", path, headers: ["Observer": id])
            let get = try client.get(path)
            #expect(head.status == 200, "\(path)")
            #expect(head.body.isEmpty, "\(path)")
            #expect(head.header("ETag") != nil && head.header("ETag") == get.header("ETag"), "\(path)")
            #expect(head.header("Observation-Cursor") == "1", "\(path)")
        }
        let viaQuery = try client.request("HEAD", "/truck?observer=\(id)")
        #expect(viaQuery.status == 200)
        #expect(try client.get("/observers/\(id)").json["reads"] == [])
        // Nothing was read, so a change to what the HEADs named reaches nobody.
        _ = try client.patch("/truck", ["name": "After"])
        let poll = try client.changes(id, since: 1).json
        #expect(poll == ["cursor": 2, "changes": []])
    }

    @Test func headNamingAnUnknownObserverIsNotFoundLikeGet() throws {
        let server = try TestServer()
        let client = server.client
        let unknown = "00000000-0000-0000-0000-000000000000"
        #expect(try client.request("HEAD", "/truck", headers: ["Observer": unknown]).status == 404)
        #expect(try client.request("HEAD", "/truck?observer=\(unknown)").status == 404)
        #expect(try client.get("/truck", observer: unknown).status == 404)
    }
}
