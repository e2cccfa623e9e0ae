import Foundation
import Testing

/// A read asked again while nothing changed is answered as it was the first
/// time (the server keeps that answer), and a write, a different `fields`,
/// an observer or `If-None-Match` each get the answer that is theirs.
@Suite struct ReadAnswerTests {
    @Test func aReadAskedAgainIsTheSameUntilAWriteAndEachVariantGetsItsOwn() throws {
        let server = try TestServer()
        let client = server.client
        let first = try client.get("/truck?fields=name")
        let again = try client.get("/truck?fields=name")
        #expect(first.json == ["name": "Food Truck"])
        #expect(again.body == first.body)
        #expect(again.header("ETag") == first.header("ETag"))
        #expect(again.header("Observation-Cursor") == "0")
        // Another selection of the same resource is not the kept answer.
        let whole = try client.get("/truck")
        #expect(whole.json["orderCount"] == 0)
        #expect(whole.header("ETag") != first.header("ETag"))
        // A conditional read still gets its 304, and a HEAD its headers alone.
        let etag = try #require(first.header("ETag"))
        #expect(try client.get("/truck?fields=name", headers: ["If-None-Match": etag]).status == 304)
        let head = try client.request("HEAD", "/truck?fields=name")
        #expect(head.body.isEmpty && head.header("ETag") == etag)
        // A read with an observer tracks what the kept answer shows.
        let observer = try client.observer()
        #expect(try client.get("/truck?fields=name", observer: observer).body == first.body)
        #expect(try client.get("/observers/\(observer)").json["reads"] == ["/truck/name"])
        // After a write the answer is new, and so is its cursor.
        _ = try client.patch("/truck", ["name": "Renamed"])
        let after = try client.get("/truck?fields=name")
        #expect(after.json == ["name": "Renamed"])
        #expect(after.header("ETag") != etag)
        #expect(after.header("Observation-Cursor") == "1")
        #expect(try client.changes(observer, since: 0).json.changePaths == ["/truck/name"])
    }
}
