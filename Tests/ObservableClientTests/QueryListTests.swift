import ClientTestSupport
import Foundation
import Testing
@testable import ObservableClient

/// Query reads as live lists: each stays equal to a fresh read of its query
/// over its window while other clients write, elements entering and
/// leaving as the server says, each the client's one object for its element.
@Suite(.serialized) @MainActor
struct QueryListTests {
    /// The ids a fresh read of `path` (a query, `limit` included) shows under `key`.
    static func freshIDs(_ deployment: Deployment, _ path: String, _ key: String) -> [String] {
        let json = Raw.send("GET", port: deployment.clientPort, path).json
        return (json[key] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
    }

    static func order(_ donut: String, _ quantity: Int) -> String {
        #"{"donutId": "\#(donut)", "quantity": \#(quantity)}"#
    }

    /// One donut's orders, biggest first: an order of that donut joins at its
    /// place, another donut's does not, a deleted one leaves; the objects are
    /// those of `truck.orders`.
    @Test(arguments: Engine.allCases)
    func oneDonutsOrdersBiggestFirst(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let port = deployment.writerPort
        for quantity in [2, 7, 4] {
            #expect(Raw.send("POST", port: port, "/truck/orders", Self.order(Seed.glazed, quantity)).status == 201)
        }
        #expect(Raw.send("POST", port: port, "/truck/orders", Self.order(Seed.chocolate, 9)).status == 201)
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let truck = try await client.truck()
        let biggest = try await client.orders(where: [.equal("donutId", .text(Seed.glazed))], sortedBy: .descending("quantity"))
        #expect(biggest.query == "donutId=eq.\(Seed.glazed)&sort=-quantity")
        #expect(biggest.elements.map(\.quantity) == [7, 4, 2])
        #expect(biggest.elements.allSatisfy { order in truck.orders.contains { $0 === order } })
        let changes = Invalidations { _ = biggest.elements }
        try await eventually { client.connectionState == .live(.stream) }

        let five = Raw.send("POST", port: port, "/truck/orders", Self.order(Seed.glazed, 5)).json["id"] as? String
        #expect(Raw.send("POST", port: port, "/truck/orders", Self.order(Seed.chocolate, 6)).status == 201)
        try await eventually("the order of five joins") { biggest.elements.map(\.quantity) == [7, 5, 4, 2] }
        try await eventually { truck.orderCount == 6 }
        #expect(biggest.elements[1].id == five)
        #expect(changes.count == 1)

        let seven = biggest.elements[0]
        #expect(Raw.send("DELETE", port: port, "/truck/orders/\(seven.id)").status == 204)
        try await eventually("the order of seven leaves") { biggest.elements.map(\.quantity) == [5, 4, 2] }
        #expect(biggest.elements.map(\.id) == Self.freshIDs(deployment, "/truck/orders?\(biggest.read.split(separator: "?")[1])", "orders"))
        await client.close()
    }

    /// The donuts with a glaze, by glaze: a glaze changed to another moves
    /// its donut to its new place, one cleared leaves, and the list stays
    /// what a fresh read shows.
    @Test(arguments: Engine.allCases)
    func donutsByGlazeMoveWhenTheirGlazeChanges(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let glazed = try await client.donuts(where: [.isNotNull("glaze")], sortedBy: .ascending("glaze"))
        #expect(glazed.elements.map(\.glaze) == ["chocolate", "maple", "strawberry", "sugar"])
        try await eventually { client.connectionState == .live(.stream) }
        let port = deployment.writerPort
        #expect(Raw.send("PATCH", port: port, "/truck/donuts/\(Seed.glazed)", #"{"glaze": "apple"}"#).status == 200)
        try await eventually("the donut moves first") { glazed.elements.first?.id == Seed.glazed }
        #expect(glazed.elements.map(\.glaze) == ["apple", "chocolate", "maple", "strawberry"])
        #expect(Raw.send("PATCH", port: port, "/truck/donuts/\(Seed.chocolate)", #"{"glaze": null}"#).status == 200)
        try await eventually("the donut without a glaze leaves") { glazed.elements.count == 3 }
        #expect(glazed.elements.map(\.id) == Self.freshIDs(deployment, "/truck/donuts?glaze=not.is.null&sort=glaze", "donuts"))
        await client.close()
    }

    /// The jobs still running: a new one joins, one that completes leaves.
    @Test(arguments: Engine.allCases)
    func theJobsStillRunning(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let running = try await client.jobs(where: [.equal("isComplete", false)])
        #expect(running.elements.isEmpty)
        try await eventually { client.connectionState == .live(.stream) }
        let first = try #require(Raw.send("POST", port: deployment.writerPort, "/jobs", #"{"total": 10}"#).json["id"] as? String)
        let second = try #require(Raw.send("POST", port: deployment.writerPort, "/jobs", #"{"total": 10}"#).json["id"] as? String)
        try await eventually("both jobs join") { running.elements.map(\.id) == [first, second] }
        let job = running.elements[0]
        try await job.report(current: 10)
        try await eventually("the finished job leaves") { running.elements.map(\.id) == [second] }
        // Loaded on its own, the same object, tracked again: finished.
        #expect(try await client.job(id: job.id) === job)
        #expect(job.isComplete)
        #expect(running.elements.map(\.id) == Self.freshIDs(deployment, "/jobs?isComplete=eq.false", "jobs"))
        await client.close()
    }

    /// The three tallest posts: the window ends at the third; a taller post
    /// joins before it, a shorter one beyond it is not heard, a deleted one
    /// leaves, and the next page widens the window.
    @Test(arguments: Engine.allCases)
    func theTallestPosts(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let port = deployment.writerPort
        for height in [100, 300, 200, 50, 250] {
            #expect(Raw.send("POST", port: port, "/posts", #"{"imageURL": "https://images.example/\#(height).jpg", "height": \#(height)}"#).status == 201)
        }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let tallest = try await client.posts(sortedBy: .descending("height"), limit: 3)
        #expect(tallest.elements.map(\.height) == [300, 250, 200])
        #expect(tallest.hasMore)
        try await eventually { client.connectionState == .live(.stream) }
        #expect(Raw.send("POST", port: port, "/posts", #"{"imageURL": "https://images.example/10.jpg", "height": 10}"#).status == 201)
        #expect(Raw.send("POST", port: port, "/posts", #"{"imageURL": "https://images.example/275.jpg", "height": 275}"#).status == 201)
        try await eventually("the taller post joins") { tallest.elements.map(\.height) == [300, 275, 250, 200] }
        let top = tallest.elements[0]
        #expect(Raw.send("DELETE", port: port, "/posts/\(top.id)").status == 204)
        try await eventually("the tallest leaves") { tallest.elements.map(\.height) == [275, 250, 200] }
        try await tallest.loadMore()
        #expect(tallest.elements.map(\.height) == [275, 250, 200, 100, 50, 10])
        #expect(!tallest.hasMore)
        await client.close()
    }

    /// A client whose cursor fell behind the change log's retention gets its
    /// query list repaired: the window as it stands, the objects' values
    /// those of now.
    @Test(arguments: Engine.allCases)
    func aQueryListPastRetentionIsRepaired(engine: Engine) async throws {
        let deployment = try Deployment(engine, arguments: ["--retain-changes", "2"])
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let plain = try await client.donuts(where: [.equal("dough", "plain")])
        let glazed = try #require(plain.elements.first { $0.id == Seed.glazed })
        try await eventually { client.connectionState == .live(.stream) }

        try deployment.takeClientServerAway()
        let port = deployment.writerPort
        #expect(Raw.send("PATCH", port: port, "/truck/donuts/\(Seed.glazed)", #"{"name": "Maple Glazed"}"#).status == 200)
        #expect(Raw.send("PATCH", port: port, "/truck/donuts/\(Seed.strawberry)", #"{"dough": "chocolate"}"#).status == 200)
        #expect(Raw.send("PATCH", port: port, "/truck", #"{"name": "Donut Truck"}"#).status == 200)
        #expect(Raw.send("PATCH", port: port, "/truck", #"{"name": "Food Truck 2"}"#).status == 200)
        let probe = try #require(Raw.send("POST", port: port, "/observers").json["id"] as? String)
        try await eventually("the log is pruned") {
            Raw.send("GET", port: port, "/observer/changes?since=0&timeout=0", headers: ["Observer": probe]).status == 410
        }
        try deployment.bringClientServerBack()

        try await eventually("the repair arrives") { !plain.elements.contains { $0.id == Seed.strawberry } }
        #expect(plain.elements.first === glazed)
        #expect(glazed.name == "Maple Glazed")
        #expect(plain.elements.map(\.id) == Self.freshIDs(deployment, "/truck/donuts?dough=eq.plain", "donuts"))
        await client.close()
    }

    /// A field that cannot be queried, or a value of the wrong type, is the
    /// server's `400`, and loads nothing.
    @Test func aQueryTheServerRefusesIsABadRequest() async throws {
        let deployment = try Deployment(.sqlite)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        for load in [{ _ = try await client.orders(where: [.equal("name", "x")]) },
                     { _ = try await client.orders(where: [.atLeast("quantity", "many")]) },
                     { _ = try await client.posts(sortedBy: .ascending("imageURL")) }] as [() async throws -> Void]
        {
            do {
                try await load()
                Issue.record("a refused query loaded")
            } catch let error as ObservableClientError {
                guard case .badRequest(let problem) = error else {
                    Issue.record("expected .badRequest, got \(error)")
                    continue
                }
                #expect(problem.status == 400)
            }
        }
        #expect(client.queryLists.isEmpty)
        await client.close()
    }
}
