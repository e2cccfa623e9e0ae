import Foundation
import Testing
import TestSupport

/// Creates posts of these heights in order; returns their ids.
private func createPosts(_ client: TestClient, heights: [JSONValue]) throws -> [String] {
    try heights.enumerated().map { index, height in
        let response = try client.post("/posts", ["imageURL": .string("https://images.example/\(index).jpg"), "height": height])
        guard response.status == 201, let id = response.json["id"]?.stringValue else {
            throw TestHTTPError.io("cannot create post: \(response.status) \(response.text)")
        }
        return id
    }
}

/// The ids in each column of a staggered answer.
private func columnIDs(_ response: TestResponse) -> [[String]] {
    (response.json["columns"]?.arrayValue ?? []).map { ($0.arrayValue ?? []).compactMap { $0["id"]?.stringValue } }
}

@Suite struct PostsTests {
    @Test func postsCanBeCreatedListedReadAndDeleted() throws {
        let server = try TestServer()
        let client = server.client
        #expect(try client.get("/posts").json == ["posts": []])

        let created = try client.post("/posts", ["imageURL": "https://images.example/cat.jpg", "height": 240])
        #expect(created.status == 201)
        let id = try #require(created.json["id"]?.stringValue)
        #expect(created.header("Location") == "/posts/\(id)")
        #expect(created.json == ["id": .string(id), "imageURL": "https://images.example/cat.jpg", "height": 240])
        let fraction = try client.post("/posts", ["imageURL": "http://images.example/dog.png?size=large", "height": 150.5])
        #expect(fraction.status == 201)
        #expect(fraction.json["height"] == 150.5)

        let read = try client.get("/posts/\(id)")
        #expect(read.status == 200)
        #expect(read.json == created.json)
        #expect(read.header("ETag") != nil)
        #expect(read.cursor == 2)
        #expect(try client.get("/posts/\(id)?fields=height").json == ["id": .string(id), "height": 240])
        #expect(try client.get("/posts?fields=imageURL").json["posts"]?.arrayValue?.first == ["id": .string(id), "imageURL": "https://images.example/cat.jpg"])
        #expect(try client.get("/posts?fields=width").status == 400)
        #expect(try client.get("/posts").json == ["posts": [created.json, fraction.json]])

        #expect(try client.delete("/posts/\(id)").status == 204)
        #expect(try client.get("/posts/\(id)").status == 404)
        #expect(try client.delete("/posts/\(id)").status == 404)
        #expect(try client.get("/posts").json == ["posts": [fraction.json]])
        #expect(try client.get("/posts/no-such-post").status == 404)
    }

    @Test func postValidationRefusesBadInputAndChangesNothing() throws {
        let server = try TestServer()
        let client = server.client
        let longest = "https://images.example/" + String(repeating: "a", count: 2048 - 23)
        #expect(longest.count == 2048)
        let unprocessable: [JSONValue] = [
            ["imageURL": "ftp://images.example/a.jpg", "height": 10],
            ["imageURL": "images.example/a.jpg", "height": 10],
            ["imageURL": "http://", "height": 10],
            ["imageURL": "https:///a.jpg", "height": 10],
            ["imageURL": "", "height": 10],
            ["imageURL": " https://images.example/a.jpg", "height": 10],
            ["imageURL": "https://images example/a.jpg", "height": 10],
            ["imageURL": "https://images.example/a\n.jpg", "height": 10],
            ["imageURL": .string(longest + "a"), "height": 10],
            ["imageURL": "https://images.example/a.jpg", "height": 0],
            ["imageURL": "https://images.example/a.jpg", "height": -5],
            ["imageURL": "https://images.example/a.jpg", "height": 0.0],
            ["imageURL": "https://images.example/a.jpg", "height": 100000.5],
            ["imageURL": "https://images.example/a.jpg", "height": 1e9],
            ["height": 10],
            ["imageURL": "https://images.example/a.jpg"],
            [:],
        ]
        for body in unprocessable {
            let response = try client.post("/posts", body)
            #expect(response.status == 422, "\(body)")
            #expect(response.header("Content-Type") == "application/problem+json", "\(body)")
        }
        let badRequests: [JSONValue] = [
            ["imageURL": 5, "height": 10],
            ["imageURL": nil, "height": 10],
            ["imageURL": "https://images.example/a.jpg", "height": "10"],
            ["imageURL": "https://images.example/a.jpg", "height": nil],
            ["imageURL": "https://images.example/a.jpg", "height": true],
            ["imageURL": "https://images.example/a.jpg", "height": [10]],
            ["imageURL": "https://images.example/a.jpg", "height": 10, "width": 5],
            ["https://images.example/a.jpg", 10],
        ]
        for body in badRequests {
            #expect(try client.post("/posts", body).status == 400, "\(body)")
        }
        #expect(try client.request("POST", "/posts", body: Array(#"{"imageURL": "https://a.example", "height": }"#.utf8)).status == 400)
        #expect(try client.request("POST", "/posts", body: []).status == 400)
        #expect(try client.get("/posts").json == ["posts": []])
        #expect(try client.get("/healthz").json["seq"] == 0)

        #expect(try client.post("/posts", ["imageURL": .string(longest), "height": 100000]).status == 201)
        #expect(try client.post("/posts", ["imageURL": "HTTPS://images.example/b.jpg", "height": 0.25]).status == 201)
        #expect(try client.post("/posts", ["imageURL": "http://localhost:8080/c.jpg", "height": 1]).status == 201)
    }

    @Test func deleteHonoursIfMatch() throws {
        let server = try TestServer()
        let client = server.client
        let id = try #require(try createPosts(client, heights: [100]).first)
        let etag = try #require(try client.get("/posts/\(id)").header("ETag"))
        #expect(try client.get("/posts/\(id)", headers: ["If-None-Match": etag]).status == 304)
        let stale = try client.delete("/posts/\(id)", headers: ["If-Match": "\"0000000000000000\""])
        #expect(stale.status == 412)
        #expect(stale.header("Content-Type") == "application/problem+json")
        #expect(try client.get("/posts/\(id)").status == 200)
        #expect(try client.delete("/posts/\(id)", headers: ["If-Match": etag]).status == 204)
        #expect(try client.get("/posts/\(id)").status == 404)
    }

    @Test func staggeredDealsRoundRobinInCreationOrder() throws {
        let server = try TestServer()
        let client = server.client
        let ids = try createPosts(client, heights: [100, 50, 30, 40, 80, 10, 70])
        let three = try client.get("/posts/staggered?columns=3")
        #expect(three.status == 200)
        #expect(three.cursor == 7)
        #expect(columnIDs(three) == [[ids[0], ids[3], ids[6]], [ids[1], ids[4]], [ids[2], ids[5]]])
        #expect(three.json["columns"]?.arrayValue?.first?.arrayValue?.first == ["id": .string(ids[0]), "imageURL": "https://images.example/0.jpg", "height": 100])
        #expect(try client.get("/posts/staggered?columns=3&layout=roundRobin").json == three.json)
        // Columns default to two.
        #expect(columnIDs(try client.get("/posts/staggered")) == [[ids[0], ids[2], ids[4], ids[6]], [ids[1], ids[3], ids[5]]])
        #expect(columnIDs(try client.get("/posts/staggered?columns=1")) == [ids])
        let twelve = columnIDs(try client.get("/posts/staggered?columns=12"))
        #expect(twelve == ids.map { [$0] } + Array(repeating: [], count: 5))
        #expect(try client.get("/posts/staggered?columns=2&fields=height").json["columns"]?.arrayValue?.last?.arrayValue?.first == ["id": .string(ids[1]), "height": 50])
        // Deleting a post deals the rest again.
        _ = try client.delete("/posts/\(ids[0])")
        #expect(columnIDs(try client.get("/posts/staggered?columns=3")) == [[ids[1], ids[4]], [ids[2], ids[5]], [ids[3], ids[6]]])
    }

    @Test func staggeredBalancedPutsEachPostInTheShortestColumnLeftmostOnTies() throws {
        let server = try TestServer()
        let client = server.client
        let ids = try createPosts(client, heights: [100, 50, 30, 40, 80, 10])
        // Heights so far: [100, 0] [100, 50] [100, 80] [100, 120] [180, 120] [180, 130].
        let two = try client.get("/posts/staggered?columns=2&layout=balanced")
        #expect(two.status == 200)
        #expect(columnIDs(two) == [[ids[0], ids[4]], [ids[1], ids[2], ids[3], ids[5]]])
        #expect(columnIDs(try client.get("/posts/staggered?columns=2")) == [[ids[0], ids[2], ids[4]], [ids[1], ids[3], ids[5]]])

        let server2 = try TestServer()
        let tied = try createPosts(server2.client, heights: [10, 10, 10, 5, 2.5, 2.5, 7.5])
        // [10,0,0] [10,10,0] [10,10,10] [15,10,10] [15,12.5,10] [15,12.5,12.5] [15,20,12.5]
        #expect(columnIDs(try server2.client.get("/posts/staggered?columns=3&layout=balanced"))
            == [[tied[0], tied[3]], [tied[1], tied[4], tied[6]], [tied[2], tied[5]]])
        #expect(columnIDs(try server2.client.get("/posts/staggered?layout=balanced&columns=1")) == [tied])
    }

    @Test func staggeredParametersAreValidated() throws {
        let server = try TestServer()
        let client = server.client
        _ = try createPosts(client, heights: [10])
        for query in ["columns=0", "columns=13", "columns=-1", "columns=%2B3", "columns=1.5", "columns=2e0", "columns=abc", "columns=",
                      "columns=99999999999999999999", "layout=Balanced", "layout=shortest", "layout=", "columns=2&layout=round-robin",
                      "fields=width"]
        {
            let response = try client.get("/posts/staggered?\(query)")
            #expect(response.status == 400, "\(query)")
            #expect(response.header("Content-Type") == "application/problem+json", "\(query)")
        }
        #expect(try client.get("/posts/staggered?columns=12&layout=balanced").status == 200)
        #expect(try client.request("POST", "/posts/staggered", json: [:]).status == 405)
        #expect(try client.delete("/posts/staggered").status == 405)
        #expect(try client.request("PATCH", "/posts/x", json: ["height": 1]).status == 405)
        #expect(try client.request("PUT", "/posts", json: [:]).header("Allow") == "GET, POST, HEAD")
    }

    @Test func staggeredReaderIsWokenByAddingAndRemovingAPost() throws {
        let server = try TestServer()
        let client = server.client
        let first = try #require(try createPosts(client, heights: [120]).first)
        let reader = try client.observer()
        let cursor = try #require(try client.get("/posts/staggered?columns=3&layout=balanced", observer: reader).cursor)
        let reads = try client.get("/observers/\(reader)").json["reads"]
        #expect(reads == ["/posts", .string("/posts/\(first)/height"), .string("/posts/\(first)/imageURL")])

        var poll = try TestConnection(port: server.port)
        try poll.send("GET", "/observers/\(reader)/changes?since=\(cursor)&timeout=5")
        try server.waitUntil(parked: 1)
        var start = Date()
        let added = try client.post("/posts", ["imageURL": "https://images.example/new.jpg", "height": 60])
        let addedID = try #require(added.json["id"]?.stringValue)
        var answer = try poll.receive()
        #expect(Date().timeIntervalSince(start) < 3)
        #expect(answer.json.changeList == [["seq": .int(cursor + 1), "path": "/posts", "op": "insert", "new": added.json]])
        #expect(try client.get("/observers/\(reader)").json["reads"]?.arrayValue?.contains(.string("/posts/\(addedID)/height")) == true)

        poll = try TestConnection(port: server.port)
        try poll.send("GET", "/observers/\(reader)/changes?since=\(cursor + 1)&timeout=5")
        try server.waitUntil(parked: 1)
        start = Date()
        #expect(try client.delete("/posts/\(first)").status == 204)
        answer = try poll.receive()
        #expect(Date().timeIntervalSince(start) < 3)
        #expect(answer.json.changeList == [[
            "seq": .int(cursor + 2), "path": "/posts", "op": "remove",
            "old": ["id": .string(first), "imageURL": "https://images.example/0.jpg", "height": 120],
        ]])
    }

    /// A post made after a staggered read with `fields=` was inserted
    /// whole, so all its fields count as read, as for any shape: the
    /// listing names them, and the other posts' only as shown.
    @Test func aStaggeredReadWithFieldsListsEveryFieldOfAPostMadeAfterIt() throws {
        let server = try TestServer()
        let client = server.client
        let first = try #require(try createPosts(client, heights: [120]).first)
        let reader = try client.observer()
        #expect(try client.get("/posts/staggered?columns=2&fields=height", observer: reader).status == 200)
        let added = try #require(try client.post("/posts", ["imageURL": "https://images.example/new.jpg", "height": 60]).json["id"]?.stringValue)
        let reads = try client.get("/observers/\(reader)").json["reads"]
        let expected = ["/posts", "/posts/\(added)/height", "/posts/\(added)/imageURL", "/posts/\(first)/height"]
        #expect(reads == .array(expected.sorted().map(JSONValue.string)))
    }

    @Test func readerOfOnePostHearsOnlyItsOwnRemoval() throws {
        let server = try TestServer()
        let client = server.client
        let ids = try createPosts(client, heights: [10, 20])
        let reader = try client.observer()
        let cursor = try #require(try client.get("/posts/\(ids[1])?fields=height", observer: reader).cursor)
        #expect(try client.get("/observers/\(reader)").json["reads"] == [.string("/posts/\(ids[1])/height")])
        _ = try createPosts(client, heights: [30])
        _ = try client.delete("/posts/\(ids[0])")
        #expect(try client.changes(reader, since: cursor, timeout: 0.3).json.changeList.isEmpty)
        _ = try client.delete("/posts/\(ids[1])")
        let changes = try client.changes(reader, since: cursor).json.changeList
        #expect(changes.count == 1)
        #expect(changes.first?["op"] == "remove")
        #expect(changes.first?["old"]?["id"] == .string(ids[1]))
    }

    @Test func postsAndTheirOrderSurviveARestart() throws {
        let folder = temporaryFolder()
        var first: TestServer? = try TestServer(folder: folder)
        let client = first!.client
        let ids = try createPosts(client, heights: [100, 50.5, 30, 40])
        _ = try client.delete("/posts/\(ids[1])")
        let reader = try client.observer()
        _ = try client.get("/posts/staggered", observer: reader)
        let before = try client.get("/posts")
        first!.stop()
        first = nil

        let second = try TestServer(folder: folder)
        let again = second.client
        let after = try again.get("/posts")
        #expect(after.json == before.json)
        #expect(after.json["posts"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [ids[0], ids[2], ids[3]])
        // A post made after the restart comes after every earlier one.
        let later = try createPosts(again, heights: [25])
        #expect(try again.get("/posts").json["posts"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [ids[0], ids[2], ids[3]] + later)
        #expect(columnIDs(try again.get("/posts/staggered?layout=balanced")) == [[ids[0]], [ids[2], ids[3], later[0]]])
        // The staggered reader still hears membership changes.
        let changes = try again.changes(reader, since: try #require(after.cursor)).json.changeList
        #expect(changes.map { $0["op"] } == ["insert"])
        #expect(changes.first?["new"]?["id"] == .string(later[0]))
    }
}
