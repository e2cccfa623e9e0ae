import Testing

/// An observer hears about exactly the properties it read.
@Suite struct PrecisionTests {
    @Test func readerOfDonutsIsNotWokenByANewOrder() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        let cursor = try #require(try client.get("/truck/donuts", observer: id).cursor)
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        let poll = try client.changes(id, since: cursor, timeout: 0.5)
        #expect(poll.json.changeList.isEmpty)
        #expect(poll.json["cursor"] == 2)
    }

    @Test func readerOfOneDonutsNameIsNotWokenByRenamingAnother() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        let cursor = try #require(try client.get("/truck/donuts/\(Seed.glazed)?fields=name", observer: id).cursor)
        _ = try client.patch("/truck/donuts/\(Seed.chocolate)", ["name": "Double Chocolate"])
        _ = try client.patch("/truck/donuts/\(Seed.glazed)", ["dough": "brioche"])
        #expect(try client.changes(id, since: cursor, timeout: 0.3).json.changeList.isEmpty)
        _ = try client.patch("/truck/donuts/\(Seed.glazed)", ["name": "Honey Glazed"])
        let poll = try client.changes(id, since: cursor, timeout: 0)
        #expect(poll.json.changeList == [[
            "seq": 3, "path": .string("/truck/donuts/\(Seed.glazed)/name"), "op": "set", "old": "Glazed", "new": "Honey Glazed",
        ]])
    }

    @Test func readerOfOrderCountGetsOldAndNewCounts() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        let cursor = try #require(try client.get("/truck/orderCount", observer: id).cursor)
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.maple), "quantity": 2])
        let poll = try client.changes(id, since: cursor, timeout: 0)
        #expect(poll.json.changeList == [
            ["seq": 2, "path": "/truck/orderCount", "op": "set", "old": 0, "new": 1],
            ["seq": 4, "path": "/truck/orderCount", "op": "set", "old": 1, "new": 2],
        ])
        #expect(poll.json["cursor"] == 4)
    }

    @Test func observerThatReadNothingGetsNothing() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck")  // read without the observer
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        _ = try client.patch("/truck", ["name": "Other"])
        _ = try client.post("/account/login", ["userName": "ada"])
        let poll = try client.changes(id, since: 0, timeout: 0.3)
        #expect(poll.json.changeList.isEmpty)
        #expect(poll.json["cursor"] == 4)
    }

    @Test func noOpWritesAreSilent() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck", observer: id)
        _ = try client.get("/account", observer: id)
        #expect(try client.patch("/truck", ["name": "Food Truck"]).status == 200)
        #expect(try client.patch("/truck/donuts/\(Seed.glazed)", ["name": "Glazed", "topping": nil]).status == 200)
        #expect(try client.post("/account/logout").status == 200)
        let poll = try client.changes(id, since: 0, timeout: 0.3)
        #expect(poll.json.changeList.isEmpty)
        #expect(poll.json["cursor"] == 0)
        #expect(try client.get("/healthz").json["seq"] == 0)
    }

    @Test func collectionReaderHearsInsertsRemovesAndLaterChangesOfInsertedElements() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        let cursor = try #require(try client.get("/truck/donuts", observer: id).cursor)
        let created = try client.post("/truck/donuts", ["name": "Cruller"])
        let newID = try #require(created.json["id"]?.stringValue)
        _ = try client.patch("/truck/donuts/\(newID)", ["name": "French Cruller"])
        _ = try client.delete("/truck/donuts/\(Seed.maple)")
        let poll = try client.changes(id, since: cursor, timeout: 0)
        let changes = poll.json.changeList
        #expect(changes.count == 3)
        #expect(changes[0]["op"] == "insert")
        #expect(changes[0]["path"] == "/truck/donuts")
        #expect(changes[0]["new"] == created.json)
        #expect(changes[0]["old"] == nil)
        #expect(changes[1]["path"] == .string("/truck/donuts/\(newID)/name"))
        #expect(changes[1]["old"] == "Cruller")
        #expect(changes[2]["op"] == "remove")
        #expect(changes[2]["old"]?["name"] == "Maple Bar")
        #expect(changes[2]["new"] == nil)
        let reads = try client.get("/observers/\(id)").json["reads"]?.arrayValue ?? []
        #expect(reads.contains(.string("/truck/donuts/\(newID)/name")))
    }

    @Test func readerOfAnElementHearsItsRemoval() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck/donuts/\(Seed.maple)?fields=name", observer: id)
        _ = try client.delete("/truck/donuts/\(Seed.glazed)")
        _ = try client.delete("/truck/donuts/\(Seed.maple)")
        let changes = try client.changes(id, since: 0).json.changeList
        #expect(changes.count == 1)
        #expect(changes.first?["old"]?["id"] == .string(Seed.maple))
    }
}
