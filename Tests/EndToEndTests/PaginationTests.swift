import API
import Testing

/// Lists a page at a time (`limit`, `after`, `order`, `Link: rel="next"`),
/// and what a read of a page or a collection tracks: one shape, the
/// collection, the fields shown and the window of positions it covers.
@Suite struct PaginationTests {
    /// The target of a `Link: <…>; rel="next"` header, or nil without one.
    static func next(_ response: TestResponse) -> String? {
        guard let link = response.header("Link"), link.hasPrefix("<"), let end = link.firstIndex(of: ">") else { return nil }
        return String(link[link.index(after: link.startIndex)..<end])
    }

    static func ids(_ response: TestResponse, _ name: String) -> [String] {
        (response.json[name]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
    }

    /// Follows `Link` from `first` to the page without one; answers the ids
    /// of every page, in the order read.
    static func readAllPages(_ client: TestClient, _ first: String, _ name: String) throws -> [[String]] {
        var pages: [[String]] = []
        var target: String? = first
        while let path = target {
            let page = try client.get(path)
            #expect(page.status == 200, "\(path)")
            pages.append(ids(page, name))
            target = next(page)
            if pages.count > 20 { Issue.record("Link never ends: \(path)"); break }
        }
        return pages
    }

    /// Five more donuts than the four of the seed: nine, in creation order.
    static func nineDonuts(_ client: TestClient) throws -> [String] {
        for i in 1...5 { _ = try client.post("/truck/donuts", ["name": .string("Donut \(i)")]) }
        let all = ids(try client.get("/truck/donuts"), "donuts")
        #expect(all.count == 9)
        return all
    }

    @Test func followingLinkOldestFirstReadsEveryElementOnceInCreationOrder() throws {
        let server = try TestServer()
        let client = server.client
        let all = try Self.nineDonuts(client)
        let pages = try Self.readAllPages(client, "/truck/donuts?limit=2", "donuts")
        #expect(pages.map(\.count) == [2, 2, 2, 2, 1])
        #expect(pages.flatMap { $0 } == all)
        #expect(try Self.readAllPages(client, "/truck/donuts?limit=3", "donuts").map(\.count) == [3, 3, 3])
    }

    @Test func followingLinkNewestFirstReadsEveryElementOnceInReverseCreationOrder() throws {
        let server = try TestServer()
        let client = server.client
        let all = try Self.nineDonuts(client)
        let pages = try Self.readAllPages(client, "/truck/donuts?limit=4&order=desc", "donuts")
        #expect(pages.map(\.count) == [4, 4, 1])
        #expect(pages.flatMap { $0 } == Array(all.reversed()))
        // Without a limit, a page is everything after `after` in its order.
        let first = try client.get("/truck/donuts?order=desc&limit=4")
        let link = try #require(Self.next(first))
        let rest = try client.get(link.replacingOccurrences(of: "limit=4&", with: ""))
        #expect(Self.ids(rest, "donuts") == Array(all.reversed().dropFirst(4)))
        #expect(rest.header("Link") == nil)
    }

    @Test func theLastPageHasNoLinkAndAPageWithoutParametersIsTheWholeList() throws {
        let server = try TestServer()
        let client = server.client
        let whole = try client.get("/truck/donuts")
        #expect(whole.header("Link") == nil)
        let exactlyAll = try client.get("/truck/donuts?limit=4")
        #expect(exactlyAll.header("Link") == nil)
        #expect(exactlyAll.json == whole.json)
        let firstTwo = try client.get("/truck/donuts?limit=2")
        #expect(firstTwo.header("Link") == #"</truck/donuts?limit=2&after=2>; rel="next""#)
        let lastTwo = try client.get("/truck/donuts?limit=2&after=2")
        #expect(Self.ids(lastTwo, "donuts") == [Seed.strawberry, Seed.maple])
        #expect(lastTwo.header("Link") == nil)
        #expect(try client.get("/truck/donuts?after=4").json == ["donuts": []])
        #expect(try client.get("/truck/donuts?order=asc").body == whole.body)
    }

    @Test func fieldsAreCarriedIntoTheLink() throws {
        let server = try TestServer()
        let client = server.client
        let first = try client.get("/truck/donuts?fields=name&limit=2")
        #expect(first.header("Link") == #"</truck/donuts?fields=name&limit=2&after=2>; rel="next""#)
        #expect(first.json == ["donuts": [["id": .string(Seed.glazed), "name": "Glazed"],
                                          ["id": .string(Seed.chocolate), "name": "Chocolate Frosted"]]])
        let second = try client.get(try #require(Self.next(first)))
        #expect(second.json == ["donuts": [["id": .string(Seed.strawberry), "name": "Strawberry Sprinkle"],
                                           ["id": .string(Seed.maple), "name": "Maple Bar"]]])
        let desc = try client.get("/truck/donuts?fields=name,dough&order=desc&limit=3")
        #expect(desc.header("Link") == #"</truck/donuts?fields=dough,name&limit=3&order=desc&after=2>; rel="next""#)
    }

    @Test func badPageValuesAreBadRequestsAsProblems() throws {
        let server = try TestServer()
        let client = server.client
        let bad = ["limit=0", "limit=1001", "limit=x", "limit=", "after=-1", "after=x", "order=up", "order=DESC"]
        for path in ["/truck/donuts", "/truck/orders", "/posts", "/jobs", "/games"] {
            for query in bad {
                let answer = try client.get("\(path)?\(query)")
                #expect(answer.status == 400, "\(path)?\(query)")
                #expect(answer.header("Content-Type") == "application/problem+json", "\(path)?\(query)")
                #expect(answer.json["status"] == 400)
            }
            #expect(try client.get("\(path)?limit=1000&after=0&order=desc").status == 200)
        }
        for query in ["orders.limit=0", "orders.after=x", "orders.order=up", "donuts.limit=1001"] {
            let answer = try client.get("/truck?\(query)")
            #expect(answer.status == 400, "/truck?\(query)")
            #expect(answer.header("Content-Type") == "application/problem+json")
            #expect(answer.json["detail"]?.stringValue?.hasPrefix(String(query.prefix { $0 != "=" })) == true, "\(answer.text)")
        }
    }

    @Test func theTruckShowsAPageOfItsOrdersWithATitledLinkToTheOrdersResource() throws {
        let server = try TestServer()
        let client = server.client
        var orders: [String] = []
        for quantity in 1...3 {
            let made = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": .int(Int64(quantity))])
            orders.append(try #require(made.json["id"]?.stringValue))
        }
        let truck = try client.get("/truck?orders.limit=2&orders.order=desc")
        #expect(truck.status == 200)
        #expect(Self.ids(truck, "orders") == [orders[2], orders[1]])
        #expect(Self.ids(truck, "donuts") == [Seed.glazed, Seed.chocolate, Seed.strawberry, Seed.maple])
        #expect(truck.json["orderCount"] == 3)
        let link = try #require(truck.header("Link"))
        #expect(link.hasPrefix("</truck/orders?limit=2&order=desc&after="), "\(link)")
        #expect(link.hasSuffix(#">; rel="next"; title="orders""#), "\(link)")
        let rest = try client.get(try #require(Self.next(truck)))
        #expect(Self.ids(rest, "orders") == [orders[0]])
        #expect(rest.header("Link") == nil)

        let donuts = try client.get("/truck?donuts.limit=3&fields=donuts")
        #expect(donuts.header("Link") == #"</truck/donuts?limit=3&after=3>; rel="next"; title="donuts""#)
        #expect(Self.ids(donuts, "donuts") == [Seed.glazed, Seed.chocolate, Seed.strawberry])
        #expect(try client.get("/truck").header("Link") == nil)
    }

    @Test func linkIsExposedToBrowsers() throws {
        let server = try TestServer { $0.access = AccessPolicy(corsOrigins: ["https://dash.example"]) }
        let page = try server.client.get("/truck/donuts?limit=1", headers: ["Origin": "https://dash.example"])
        #expect(page.header("Access-Control-Expose-Headers") == "ETag, Observation-Cursor, Location, Link")
        #expect(page.header("Link") != nil)
    }

    // MARK: - Shapes

    /// The first page newest-first is open at its newest end and hears a
    /// new element; a middle page, and the first page oldest-first, do not.
    @Test func aNewOrderReachesTheFirstPageNewestFirstButNotAMiddlePage() throws {
        let server = try TestServer()
        let client = server.client
        for quantity in 1...5 {
            _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": .int(Int64(quantity))])
        }
        let newest = try client.observer(), middle = try client.observer(), oldest = try client.observer()
        let first = try client.get("/truck/orders?order=desc&limit=2", observer: newest)
        let cursor = try #require(first.cursor)
        let middlePage = try client.get(try #require(Self.next(first)), observer: middle)
        #expect(Self.next(middlePage) != nil, "the second of three pages is a middle page")
        _ = try client.get("/truck/orders?limit=2", observer: oldest)

        let made = try client.post("/truck/orders", ["donutId": .string(Seed.maple), "quantity": 6])
        #expect(try client.changes(newest, since: cursor, timeout: 0).json.changeList == [
            ["seq": .int(cursor + 1), "path": "/truck/orders", "op": "insert", "new": made.json],
        ])
        #expect(try client.changes(middle, since: cursor, timeout: 0.3).json.changeList == [])
        #expect(try client.changes(oldest, since: cursor, timeout: 0).json.changeList == [])
    }

    /// The last page oldest-first is open at its far end too.
    @Test func aNewDonutReachesTheLastPageOldestFirst() throws {
        let server = try TestServer()
        let client = server.client
        let last = try client.observer()
        let page = try client.get("/truck/donuts?limit=3&after=2", observer: last)
        #expect(page.header("Link") == nil)
        let cursor = try #require(page.cursor)
        let made = try client.post("/truck/donuts", ["name": "Cruller"])
        #expect(try client.changes(last, since: cursor, timeout: 0).json.changeList == [
            ["seq": .int(cursor + 1), "path": "/truck/donuts", "op": "insert", "new": made.json],
        ])
    }

    /// The largest cursor there is: an empty page oldest-first (nothing
    /// follows it, and nothing made later lands in its window), every
    /// element newest-first; with or without `limit`, embedded or not.
    @Test func aCursorAtTheLargestPositionIsAnEmptyPageOldestFirst() throws {
        let server = try TestServer()
        let client = server.client
        let largest = Int64.max
        for query in ["after=\(largest)", "limit=1&after=\(largest)"] {
            let id = try client.observer()
            let page = try client.get("/truck/donuts?\(query)", observer: id)
            #expect(page.status == 200, "\(query): \(page.text)")
            #expect(page.json == ["donuts": []], "\(query)")
            #expect(page.header("Link") == nil)
            let cursor = try #require(page.cursor)
            _ = try client.post("/truck/donuts", ["name": "Cruller"])
            #expect(try client.changes(id, since: cursor, timeout: 0.3).json.changeList == [], "\(query)")
        }
        let all = Self.ids(try client.get("/truck/donuts?order=desc"), "donuts")
        #expect(Self.ids(try client.get("/truck/donuts?order=desc&after=\(largest)"), "donuts") == all)
        let embedded = try client.get("/truck?fields=orders,donuts&donuts.after=\(largest)&donuts.limit=1")
        #expect(embedded.status == 200, "\(embedded.text)")
        #expect(embedded.json["donuts"] == [])
        let embeddedNewest = try client.get("/truck?fields=donuts&donuts.after=\(largest)&donuts.order=desc&donuts.limit=1")
        #expect(Self.ids(embeddedNewest, "donuts") == [all[0]])
    }

    @Test func aPageHearsTheRemoveOfAnElementInItsWindowOnly() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        let page = try client.get("/truck/donuts?limit=2", observer: id)
        #expect(Self.ids(page, "donuts") == [Seed.glazed, Seed.chocolate])
        let cursor = try #require(page.cursor)
        let chocolate = try client.get("/truck/donuts/\(Seed.chocolate)").json
        #expect(try client.delete("/truck/donuts/\(Seed.strawberry)").status == 204)
        #expect(try client.changes(id, since: cursor, timeout: 0.3).json.changeList == [])
        #expect(try client.delete("/truck/donuts/\(Seed.chocolate)").status == 204)
        #expect(try client.changes(id, since: cursor, timeout: 0).json.changeList == [
            ["seq": .int(cursor + 2), "path": "/truck/donuts", "op": "remove", "old": chocolate],
        ])
        // The window is fixed: the page is not refilled, and Maple (after it) is not in it.
        _ = try client.patch("/truck/donuts/\(Seed.maple)", ["name": "Maple Long John"])
        #expect(try client.changes(id, since: cursor + 2, timeout: 0.3).json.changeList == [])
    }

    /// The last element of a bounded page is inside its window.
    @Test func aBoundedPageHearsASetOfItsLastElementAndNotOfTheNext() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        let cursor = try #require(try client.get("/truck/donuts?limit=2", observer: id).cursor)
        _ = try client.patch("/truck/donuts/\(Seed.strawberry)", ["name": "Strawberry Dream"])
        _ = try client.patch("/truck/donuts/\(Seed.chocolate)", ["topping": "nuts"])
        #expect(try client.changes(id, since: cursor, timeout: 0).json.changeList == [
            ["seq": .int(cursor + 2), "path": .string("/truck/donuts/\(Seed.chocolate)/topping"), "op": "set", "old": "sprinkles", "new": "nuts"],
        ])

        let desc = try client.observer()
        let second = try #require(try client.get("/truck/donuts?limit=2&order=desc", observer: desc).cursor)
        _ = try client.patch("/truck/donuts/\(Seed.chocolate)", ["topping": "sugar"])
        _ = try client.patch("/truck/donuts/\(Seed.strawberry)", ["topping": "sugar"])
        #expect(try client.changes(desc, since: second, timeout: 0).json.changeList == [
            ["seq": .int(second + 2), "path": .string("/truck/donuts/\(Seed.strawberry)/topping"), "op": "set", "old": "sprinkles", "new": "sugar"],
        ])
    }

    /// A reader of `fields=name` hears sets of `name` only, for the donuts
    /// it saw; a donut made after the read was shown whole by its insert,
    /// so every field of it counts as read.
    @Test func aReaderOfSomeFieldsHearsThoseFieldsAndEveryFieldOfLaterElements() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        let cursor = try #require(try client.get("/truck/donuts?fields=name", observer: id).cursor)
        _ = try client.patch("/truck/donuts/\(Seed.glazed)", ["dough": "brioche"])
        #expect(try client.changes(id, since: cursor, timeout: 0.3).json.changeList == [])
        _ = try client.patch("/truck/donuts/\(Seed.glazed)", ["name": "Honey Glazed"])
        let made = try client.post("/truck/donuts", ["name": "Cruller"])
        let cruller = try #require(made.json["id"]?.stringValue)
        _ = try client.patch("/truck/donuts/\(cruller)", ["dough": "choux"])
        #expect(try client.changes(id, since: cursor, timeout: 0).json.changeList == [
            ["seq": .int(cursor + 2), "path": .string("/truck/donuts/\(Seed.glazed)/name"), "op": "set", "old": "Glazed", "new": "Honey Glazed"],
            ["seq": .int(cursor + 3), "path": "/truck/donuts", "op": "insert", "new": made.json],
            ["seq": .int(cursor + 4), "path": .string("/truck/donuts/\(cruller)/dough"), "op": "set", "old": "plain", "new": "choux"],
        ])
    }

    @Test func anObserverShowsItsShapes() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck/donuts?fields=name&limit=2", observer: id)
        _ = try client.get("/truck?orders.limit=5&orders.order=desc&fields=name,orders", observer: id)
        let observer = try client.get("/observers/\(id)")
        #expect(observer.status == 200)
        let shapes = try #require(observer.json["shapes"]?.arrayValue)
        let expected: [JSONValue] = [
            ["collection": "/truck/donuts", "fields": ["name"], "from": nil, "through": 2],
            ["collection": "/truck/orders", "fields": nil, "from": nil, "through": nil],
        ]
        #expect(Set(shapes.map(\.text)) == Set(expected.map(\.text)))
        #expect(shapes.count == 2)
        let reads = ["/truck/donuts", "/truck/donuts/\(Seed.glazed)/name", "/truck/donuts/\(Seed.chocolate)/name", "/truck/name", "/truck/orders"]
        #expect(observer.json["reads"] == .array(reads.sorted().map(JSONValue.string)))
    }

    /// The read limit counts entries: a shape is one, whatever it covers.
    @Test func aShapeIsOneReadWhateverItsSize() throws {
        let server = try TestServer { $0.store.maxReadsPerObserver = 4 }
        let client = server.client
        _ = try Self.nineDonuts(client)
        for quantity in 1...3 { _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": .int(Int64(quantity))]) }
        let id = try client.observer()
        #expect(try client.get("/truck", observer: id).status == 200)  // name, orderCount, donuts, orders
        let tooMany = try client.get("/posts?limit=2", observer: id)
        #expect(tooMany.status == 422)
        #expect(tooMany.header("Content-Type") == "application/problem+json")
        let other = try client.observer()
        for path in ["/truck/donuts?limit=2", "/truck/orders?order=desc", "/posts", "/jobs"] {
            #expect(try client.get(path, observer: other).status == 200, "\(path)")
        }
        #expect(try client.get("/games", observer: other).status == 422)
    }
}
