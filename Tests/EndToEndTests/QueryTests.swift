import API
import Testing

/// Query reads (SPEC §3d): filters and a sort on queryable fields, read as
/// one query shape whose reader hears exactly what keeps its copy equal to
/// a fresh read: an element coming to match is an `insert`, one that stops
/// matching a `remove`, a shown field of one that stays a `set`, and
/// nothing else.
@Suite struct QueryTests {
    static func ids(_ response: TestResponse, _ name: String) -> [String] {
        (response.json[name]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
    }

    /// The changes `observer` has after `since`, each as `op path`.
    static func heard(_ client: TestClient, _ observer: String, since: Int64) throws -> [JSONValue] {
        let answer = try client.changes(observer, since: since, extra: "&limit=1000")
        #expect(answer.status == 200)
        return answer.json["changes"]?.arrayValue ?? []
    }

    @Test func malformedQueriesAreRefusedNamingTheFieldAndTrackNothing() throws {
        let server = try TestServer()
        let client = server.client
        let reader = try client.observer()
        let refused: [(String, String)] = [
            ("/truck/orders?name=eq.x", "name"),
            ("/truck/orders?bogus=eq.1", "bogus"),
            ("/truck/orders?quantity=eq.abc", "quantity"),
            ("/truck/orders?quantity=eq.1.5", "quantity"),
            ("/truck/orders?quantity=like.1", "quantity"),
            ("/truck/orders?quantity=eq", "quantity"),
            ("/truck/orders?quantity=is.nothing", "quantity"),
            ("/truck/orders?quantity=in.1,2", "quantity"),
            ("/truck/orders?quantity=in.(1,x)", "quantity"),
            ("/truck/donuts?glaze=in.(\"a\"b)", "glaze"),
            ("/posts?height=gt.tall", "height"),
            ("/jobs?isComplete=eq.yes", "isComplete"),
            ("/truck/orders?sort=name", "name"),
            ("/truck/orders?sort=quantity&order=desc", "order"),
            ("/truck/orders?sort=quantity&after=%%%", "after"),
            ("/truck/orders?quantity=gt.1&limit=0", "limit"),
        ]
        for (path, field) in refused {
            let answer = try client.get(path, observer: reader)
            #expect(answer.status == 400, "\(path)")
            #expect(answer.header("Content-Type") == "application/problem+json", "\(path)")
            #expect(answer.json["detail"]?.stringValue?.contains(field) == true, "\(path): \(answer.text)")
        }
        let listing = try client.get("/observers/\(reader)").json
        #expect(listing["reads"] == [])
        #expect(listing["shapes"] == [])
    }

    @Test func filtersAndSortsAnswerWhatMatchesInOrder() throws {
        let server = try TestServer()
        let client = server.client
        var byQuantity: [(quantity: Int64, id: String)] = []
        for quantity: Int64 in [3, 5, 1, 7, 2, 9, 5] {
            let created = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": .int(quantity)])
            byQuantity.append((quantity, try #require(created.json["id"]?.stringValue)))
        }
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.maple), "quantity": 4])
        let glazed = try client.get("/truck/orders?donutId=eq.\(Seed.glazed)")
        #expect(Self.ids(glazed, "orders") == byQuantity.map(\.id))
        // Descending: quantity, then the newest first among ties.
        let sorted = byQuantity.enumerated().sorted { ($0.element.quantity, $0.offset) > ($1.element.quantity, $1.offset) }.map(\.element.id)
        #expect(Self.ids(try client.get("/truck/orders?donutId=eq.\(Seed.glazed)&sort=-quantity"), "orders") == sorted)
        let range = try client.get("/truck/orders?quantity=gte.3&quantity=lte.5&donutId=neq.\(Seed.maple)&sort=quantity")
        #expect(range.json["orders"]?.arrayValue?.compactMap { $0["quantity"]?.intValue } == [3, 5, 5])
        #expect(Self.ids(try client.get("/truck/orders?quantity=in.(9,4)"), "orders").count == 2)
        #expect(Self.ids(try client.get("/truck/donuts?topping=is.null"), "donuts") == [Seed.glazed, Seed.maple])
        #expect(Self.ids(try client.get("/truck/donuts?topping=not.is.null&glaze=neq.chocolate"), "donuts") == [Seed.strawberry])
        // Pages follow the sort: every match once, in order.
        var target: String? = "/truck/orders?donutId=eq.\(Seed.glazed)&sort=-quantity&limit=3&fields=quantity"
        var paged: [String] = []
        while let path = target {
            let page = try client.get(path)
            #expect(page.status == 200, "\(path)")
            paged += Self.ids(page, "orders")
            target = PaginationTests.next(page)
            #expect(paged.count <= sorted.count)
        }
        #expect(paged == sorted)
        // Without the new parameters, a read is as it was.
        #expect(try client.get("/truck/orders?limit=2").header("Link")?.hasPrefix("</truck/orders?limit=2&after=") == true)
    }

    @Test func aPatchMovesADonutOutOfOneFilterAndIntoAnother() throws {
        let server = try TestServer()
        let client = server.client
        let sugar = try client.observer(), maple = try client.observer(), plain = try client.observer()
        let cursor = try #require(try client.get("/truck/donuts?glaze=eq.sugar&fields=name", observer: sugar).cursor)
        #expect(try client.get("/truck/donuts?glaze=eq.maple&fields=name,glaze", observer: maple).status == 200)
        #expect(try client.get("/truck/donuts?dough=eq.chocolate", observer: plain).status == 200)
        // A field no condition looks at, of a donut no reader shows: nothing.
        #expect(try client.patch("/truck/donuts/\(Seed.strawberry)", ["name": "Berry"]).status == 200)
        // Glazed goes from sugar to maple: out of one, into the other.
        #expect(try client.patch("/truck/donuts/\(Seed.glazed)", ["glaze": "maple"]).status == 200)
        let left = try Self.heard(client, sugar, since: cursor)
        #expect(left.count == 1)
        #expect(left.first?["op"] == "remove")
        #expect(left.first?["path"] == "/truck/donuts")
        #expect(left.first?["old"] == ["id": .string(Seed.glazed), "name": "Glazed"])
        #expect(left.first?["query"] == "glaze=eq.sugar")
        let entered = try Self.heard(client, maple, since: cursor)
        #expect(entered.count == 1)
        #expect(entered.first?["op"] == "insert")
        #expect(entered.first?["new"] == ["id": .string(Seed.glazed), "name": "Glazed", "glaze": "maple"])
        #expect(try Self.heard(client, plain, since: cursor).isEmpty)
        // A shown field of one that stays is a set; one not shown is nothing.
        #expect(try client.patch("/truck/donuts/\(Seed.glazed)", ["name": "Maple Glazed", "topping": "nuts"]).status == 200)
        let set = try Self.heard(client, maple, since: cursor).dropFirst()
        #expect(set.map { $0["op"] } == ["set"])
        #expect(set.first?["path"] == .string("/truck/donuts/\(Seed.glazed)/name"))
        #expect(try Self.heard(client, sugar, since: cursor).count == 1)
    }

    @Test func aSortedPageHearsWhatLandsInItsWindowAndNothingPastIt() throws {
        let server = try TestServer()
        let client = server.client
        for quantity: Int64 in [10, 20, 30, 40, 50] {
            _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": .int(quantity)])
        }
        let top = try client.observer(), rest = try client.observer()
        let first = try client.get("/truck/orders?sort=-quantity&limit=2&fields=quantity", observer: top)
        let cursor = try #require(first.cursor)
        #expect(first.json["orders"]?.arrayValue?.compactMap { $0["quantity"]?.intValue } == [50, 40])
        let link = try #require(PaginationTests.next(first))
        let second = try client.get(link, observer: rest)
        #expect(second.json["orders"]?.arrayValue?.compactMap { $0["quantity"]?.intValue } == [30, 20])
        // Above the first page's top: in its window (open upward), not the second's.
        let big = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 60]).json["id"]?.stringValue
        // Below the first page's last: the second's.
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 35])
        // Below the second page's last, which has more after it: nobody's.
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 15])
        let topHeard = try Self.heard(client, top, since: cursor)
        #expect(topHeard.map { $0["op"] } == ["insert"])
        #expect(topHeard.first?["new"] == ["id": .string(big ?? ""), "quantity": 60])
        let restHeard = try Self.heard(client, rest, since: cursor)
        #expect(restHeard.map { $0["new"]?["quantity"] } == [35])
        // A deletion in a window is that window's remove.
        let forty = try #require(first.json["orders"]?.arrayValue?.last?["id"]?.stringValue)
        #expect(try client.delete("/truck/orders/\(forty)").status == 204)
        #expect(try Self.heard(client, top, since: cursor).map { $0["op"] } == ["insert", "remove"])
        #expect(try Self.heard(client, rest, since: cursor).count == 1)
    }

    @Test func aJobCompletingLeavesTheRunningAndJoinsTheFinished() throws {
        let server = try TestServer()
        let client = server.client
        let id = try #require(try client.post("/jobs", ["total": 2]).json["id"]?.stringValue)
        let running = try client.observer(), finished = try client.observer()
        let cursor = try #require(try client.get("/jobs?isComplete=eq.false", observer: running).cursor)
        #expect(Self.ids(try client.get("/jobs?isComplete=eq.true", observer: finished), "jobs").isEmpty)
        _ = try client.post("/jobs/\(id)/progress", ["current": 1])
        #expect(try Self.heard(client, running, since: cursor).map { $0["path"] } == [.string("/jobs/\(id)/progress")])
        #expect(try Self.heard(client, finished, since: cursor).isEmpty)
        _ = try client.post("/jobs/\(id)/progress", ["current": 2])
        // Its completing write is one remove for the running reader: its
        // progress then is not said, the job being gone from the copy.
        #expect(try Self.heard(client, running, since: cursor).map { $0["op"] } == ["set", "remove"])
        let joined = try Self.heard(client, finished, since: cursor)
        #expect(joined.map { $0["op"] } == ["insert"])
        #expect(joined.first?["new"]?["isComplete"] == true)
        #expect(joined.first?["new"]?["progress"] == ["current": 2, "total": 2])
    }

    /// Random patches and orders against readers of random queries: every
    /// reader's copy, with what it heard applied, equals a fresh read, and
    /// a replay from its first cursor says the same again.
    @Test func randomWritesKeepEveryCopyEqualToAFreshRead() throws {
        let server = try TestServer()
        let client = server.client
        var generator = SystemRandomNumberGenerator()
        let glazes = ["sugar", "maple", "chocolate"], doughs = ["plain", "chocolate"]
        let donuts = [Seed.glazed, Seed.chocolate, Seed.strawberry, Seed.maple]
        let queries = [
            "/truck/donuts?glaze=eq.sugar", "/truck/donuts?glaze=in.(maple,chocolate)&fields=name,glaze",
            "/truck/donuts?dough=eq.plain&glaze=neq.maple&sort=glaze", "/truck/donuts?topping=is.null&sort=-dough",
            "/truck/orders?quantity=gte.3&quantity=lt.7", "/truck/orders?donutId=eq.\(Seed.glazed)&sort=-quantity",
            "/truck/orders?donutId=in.(\(Seed.maple),\(Seed.chocolate))&fields=quantity",
        ]
        var readers: [(observer: String, query: String, cursor: Int64, copy: [String: JSONValue])] = []
        for query in queries {
            let observer = try client.observer()
            let answer = try client.get(query, observer: observer)
            let name = query.hasPrefix("/truck/donuts") ? "donuts" : "orders"
            var copy: [String: JSONValue] = [:]
            for element in answer.json[name]?.arrayValue ?? [] { copy[element["id"]?.stringValue ?? ""] = element }
            readers.append((observer, query, try #require(answer.cursor), copy))
        }
        var orders: [String] = []
        for _ in 0..<80 {
            switch Int.random(in: 0..<4, using: &generator) {
            case 0:
                let fields: JSONValue = ["glaze": .string(glazes.randomElement(using: &generator)!),
                                         "dough": .string(doughs.randomElement(using: &generator)!)]
                _ = try client.patch("/truck/donuts/\(donuts.randomElement(using: &generator)!)", fields)
            case 1:
                let topping: JSONValue = Bool.random(using: &generator) ? .null : "nuts"
                _ = try client.patch("/truck/donuts/\(donuts.randomElement(using: &generator)!)", ["topping": topping])
            case 2 where !orders.isEmpty:
                let id = orders.remove(at: Int.random(in: 0..<orders.count, using: &generator))
                #expect(try client.delete("/truck/orders/\(id)").status == 204)
            default:
                let order: JSONValue = ["donutId": .string(donuts.randomElement(using: &generator)!),
                                        "quantity": .int(Int64.random(in: 1...9, using: &generator))]
                if let id = try client.post("/truck/orders", order).json["id"]?.stringValue { orders.append(id) }
            }
        }
        for reader in readers {
            var copy = reader.copy
            let heard = try Self.heard(client, reader.observer, since: reader.cursor)
            for change in heard {
                #expect(change["query"] != nil, "\(reader.query): \(change)")
                switch change["op"]?.stringValue {
                case "insert":
                    let id = change["new"]?["id"]?.stringValue ?? ""
                    #expect(copy[id] == nil, "\(reader.query): inserted twice \(change)")
                    copy[id] = change["new"]
                case "remove":
                    let id = change["old"]?["id"]?.stringValue ?? ""
                    #expect(copy.removeValue(forKey: id) != nil, "\(reader.query): removed what it had not \(change)")
                case "set":
                    let parts = (change["path"]?.stringValue ?? "").split(separator: "/").map(String.init)
                    let id = parts[parts.count - 2], field = parts[parts.count - 1]
                    guard case .object(var element)? = copy[id] else {
                        Issue.record("\(reader.query): a set of what it does not hold \(change)")
                        continue
                    }
                    #expect(element[field] == change["old"], "\(reader.query): \(change)")
                    #expect(element[field] != change["new"], "\(reader.query): a set that changes nothing \(change)")
                    element[field] = change["new"]
                    copy[id] = .object(element)
                default:
                    Issue.record("\(reader.query): \(change)")
                }
            }
            let name = reader.query.hasPrefix("/truck/donuts") ? "donuts" : "orders"
            let fresh = try client.get(reader.query).json[name]?.arrayValue ?? []
            #expect(Set(copy.keys) == Set(fresh.compactMap { $0["id"]?.stringValue }), "\(reader.query)")
            for element in fresh { #expect(copy[element["id"]?.stringValue ?? ""] == element, "\(reader.query)") }
            // The same again from the same cursor.
            #expect(try Self.heard(client, reader.observer, since: reader.cursor) == heard, "\(reader.query)")
        }
    }
    /// A write judged whole: a patch that moves a donut into a filter by
    /// one field and out by another says nothing; a job completing is one
    /// `remove`, not its progress and then its leaving.
    @Test func aQueryReaderHearsWhatTheWholeWriteDoesNotAStateHalfWayThroughIt() throws {
        let server = try TestServer()
        let client = server.client
        let donut = try #require(try client.post("/truck/donuts", ["name": "Jelly", "glaze": "sugar"]).json["id"]?.stringValue)
        let reader = try client.observer()
        let cursor = try #require(try client.get("/truck/donuts?dough=eq.cake&glaze=eq.sugar", observer: reader).cursor)
        #expect(try client.patch("/truck/donuts/\(donut)", ["dough": "cake", "glaze": "honey"]).status == 200)
        #expect(try Self.heard(client, reader, since: cursor).isEmpty)

        let job = try #require(try client.post("/jobs", ["total": 1]).json["id"]?.stringValue)
        let running = try client.observer()
        let since = try #require(try client.get("/jobs?isComplete=eq.false", observer: running).cursor)
        _ = try client.post("/jobs/\(job)/progress", ["current": 1])
        let heard = try Self.heard(client, running, since: since)
        #expect(heard.map { $0["op"] } == ["remove"])
        #expect(heard.first?["old"] == ["id": .string(job), "progress": ["current": 0, "total": 1], "isComplete": false])
    }

    /// A window that starts past a cursor whose sort value is null (a
    /// descending sort of a text field) hears the changes in it.
    @Test func aPageAfterANullCursorHearsTheChangesInItsWindow() throws {
        let server = try TestServer()
        let client = server.client
        let first = try client.get("/truck/donuts?sort=-topping&limit=1&fields=glaze,topping")
        let reader = try client.observer()
        let link = try #require(PaginationTests.next(first))
        let rest = try client.get(link.replacingOccurrences(of: "&limit=1", with: ""), observer: reader)
        let cursor = try #require(rest.cursor)
        #expect(Self.ids(rest, "donuts") == [Seed.glazed, Seed.strawberry, Seed.chocolate])
        #expect(try client.patch("/truck/donuts/\(Seed.chocolate)", ["glaze": "honey"]).status == 200)
        #expect(try client.delete("/truck/donuts/\(Seed.strawberry)").status == 204)
        let heard = try Self.heard(client, reader, since: cursor)
        #expect(heard.map { $0["op"] } == ["set", "remove"])
    }

    /// An element that moves from one page of a query to another is
    /// removed from the first before it is inserted into the second.
    @Test func anElementMovingBetweenPagesOfOneQueryLeavesBeforeItEnters() throws {
        let server = try TestServer()
        let client = server.client
        let job = try #require(try client.post("/jobs", ["total": 1]).json["id"]?.stringValue)
        _ = try client.post("/jobs", ["total": 1])
        let reader = try client.observer()
        let first = try client.get("/jobs?sort=-isComplete&limit=1", observer: reader)
        let link = try #require(PaginationTests.next(first))
        let cursor = try #require(try client.get(link, observer: reader).cursor)
        _ = try client.post("/jobs/\(job)/progress", ["current": 1])
        let heard = try Self.heard(client, reader, since: cursor)
        #expect(heard.map { $0["op"] } == ["remove", "insert"])
        #expect(Set(heard.compactMap { $0["seq"]?.intValue }).count == 1)
    }
}
