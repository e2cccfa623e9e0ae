import ClientTestSupport
import Foundation
import Testing
@testable import ObservableClient

/// The seed's donuts, from the first migration.
enum Seed {
    static let glazed = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"
    static let chocolate = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0002"
    static let strawberry = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0003"
    static let order = #"{"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": 2}"#
}

extension ObservableClient.Configuration {
    /// Reconnects quickly, so a restart costs a test little time.
    static var quick: Self {
        var configuration = Self()
        configuration.reconnectDelay = 0.05...0.5
        return configuration
    }
}

/// The client against live servers: what `withObservationTracking` sees
/// when other clients write.
@Suite(.serialized) @MainActor
struct ObservingTests {
    /// An observer of `orderCount` is told of an order another client
    /// placed, once, and not of a donut's rename.
    @Test(arguments: Engine.allCases)
    func orderCountFiresOnAnOrderNotOnARename(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let truck = try await client.truck()
        let orderCount = Invalidations { _ = truck.orderCount }
        let glazed = try #require(truck.donuts.first { $0.id == Seed.glazed })
        let names = Invalidations { _ = glazed.name }

        #expect(Raw.send("PATCH", port: deployment.writerPort, "/truck/donuts/\(Seed.glazed)", #"{"name": "Honey Glazed"}"#).status == 200)
        try await eventually("the rename arrives") { glazed.name == "Honey Glazed" }
        #expect(orderCount.count == 0)
        #expect(names.count == 1)

        #expect(Raw.send("POST", port: deployment.writerPort, "/truck/orders", Seed.order).status == 201)
        try await eventually("the order arrives") { truck.orderCount == 1 }
        #expect(orderCount.count == 1)
        // Whatever comes after arrives after the order: it was not told twice.
        #expect(Raw.send("PATCH", port: deployment.writerPort, "/truck", #"{"name": "Barrier"}"#).status == 200)
        try await eventually { truck.name == "Barrier" }
        #expect(orderCount.count == 1)
        #expect(names.count == 1)
        #expect(truck.orders.count == 1)
        await client.close()
    }

    /// A tap is two transactions (the flag up, then down): a stream shows
    /// both to code that tracks again after each, and the dots beside it
    /// hear nothing.
    @Test(arguments: Engine.allCases)
    func aTapIsTwoInvalidationsOfThatDotOnly(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let grid = try await client.grid()
        let row = try #require(grid.rows.first)
        let tapped = Invalidations { _ = row[0].isTapAnimated }
        let neighbour = Invalidations { _ = row[1].isTapAnimated; _ = row[1].isRandomAnimated }
        let rows = Invalidations { _ = grid.rows }
        try await eventually { client.connectionState == .live(.stream) }
        let applied = client.changesApplied

        #expect(Raw.send("POST", port: deployment.writerPort, "/grid/dots/\(row[0].id)/tap").status == 200)
        try await eventually("both changes arrive") { client.changesApplied == applied + 2 }
        try await eventually { tapped.count == 2 }
        #expect(!row[0].isTapAnimated)
        #expect(neighbour.count == 0)
        #expect(rows.count == 0)
        await client.close()
    }

    /// A donut's tracked name fires for that donut only.
    @Test(arguments: Engine.allCases)
    func aDonutsNameFiresForThatDonutOnly(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let truck = try await client.truck()
        let glazed = try #require(truck.donuts.first { $0.id == Seed.glazed })
        let chocolate = try #require(truck.donuts.first { $0.id == Seed.chocolate })
        let glazedNames = Invalidations { _ = glazed.name }
        let chocolateNames = Invalidations { _ = chocolate.name }
        let chocolateDough = Invalidations { _ = chocolate.dough }

        #expect(Raw.send("PATCH", port: deployment.writerPort, "/truck/donuts/\(Seed.chocolate)", #"{"name": "Double Chocolate"}"#).status == 200)
        try await eventually { chocolate.name == "Double Chocolate" }
        #expect(Raw.send("PATCH", port: deployment.writerPort, "/truck", #"{"name": "Barrier"}"#).status == 200)
        try await eventually { truck.name == "Barrier" }
        #expect(chocolateNames.count == 1)
        #expect(glazedNames.count == 0)
        #expect(chocolateDough.count == 0)
        await client.close()
    }

    /// Inserts and removes reach the collections; every element stays one
    /// object, the same through every way of reaching it.
    @Test(arguments: Engine.allCases)
    func collectionsFollowInsertsAndRemovesKeepingIdentity(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let truck = try await client.truck()
        let grid = try await client.grid()
        let before = truck.donuts
        let firstDot = try #require(grid.rows.first?.first)
        let menu = Invalidations { _ = truck.donuts }

        let made = Raw.send("POST", port: deployment.writerPort, "/truck/donuts", #"{"name": "Cruller"}"#)
        #expect(made.status == 201)
        let crullerID = try #require(made.json["id"] as? String)
        try await eventually("the insert arrives") { truck.donuts.count == before.count + 1 }
        #expect(menu.count == 1)
        #expect(zip(before, truck.donuts).allSatisfy { $0 === $1 })
        let cruller = try #require(truck.donuts.last)
        #expect(cruller.id == crullerID && cruller.name == "Cruller")
        #expect(try await client.donut(id: crullerID) === cruller)
        #expect(try await client.donut(id: Seed.glazed) === before[0])

        // A later change of the new donut reaches it: the insert carried it whole.
        #expect(Raw.send("PATCH", port: deployment.writerPort, "/truck/donuts/\(crullerID)", #"{"topping": "oats"}"#).status == 200)
        try await eventually { cruller.topping == "oats" }

        #expect(Raw.send("DELETE", port: deployment.writerPort, "/truck/donuts/\(Seed.chocolate)").status == 204)
        try await eventually("the remove arrives") { !truck.donuts.contains { $0.id == Seed.chocolate } }
        #expect(truck.donuts.map(\.id) == [Seed.glazed, Seed.strawberry, before[3].id, crullerID])
        #expect(truck.donuts[0] === before[0])

        // Orders: newest first; a cancelled one leaves.
        let first = try await truck.placeOrder(before[0], quantity: 1)
        let second = try await truck.placeOrder(before[0], quantity: 2)
        try await eventually { truck.orders.count == 2 }
        #expect(truck.orders[0] === second && truck.orders[1] === first)
        try await first.cancel()
        try await eventually { truck.orders.count == 1 && truck.orderCount == 1 }
        #expect(truck.orders[0] === second)

        // The grid grows by rows and dots; the dots already there stay.
        #expect(Raw.send("POST", port: deployment.writerPort, "/grid/rows", #"{"dots": 2}"#).status == 201)
        #expect(Raw.send("POST", port: deployment.writerPort, "/grid/rows/0/dots").status == 200)
        try await eventually { grid.rows.count == 4 && grid.rows[0].count == 4 }
        #expect(grid.rows[0][0] === firstDot)
        try await firstDot.tap()
        #expect(grid.rows[3].count == 2)
        await client.close()
    }

    /// A big collection is loaded a page at a time, newest first: the first
    /// page hears new elements, every loaded page its removals, and older
    /// pages come on demand; the truck's orders likewise.
    @Test(arguments: Engine.allCases)
    func pagesLoadOnDemandAndFollowTheirWindows(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        var ids: [String] = []
        for height in 1...5 {
            let made = Raw.send("POST", port: deployment.writerPort, "/posts", #"{"imageURL": "https://images.example/\#(height).jpg", "height": \#(height)}"#)
            ids.append(try #require(made.json["id"] as? String))
        }
        var configuration = ObservableClient.Configuration.quick
        configuration.ordersPageSize = 2
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: configuration)
        let posts = try await client.posts(pageSize: 2)
        #expect(posts.posts.map(\.id) == [ids[4], ids[3]])
        #expect(posts.hasMore)
        let newest = posts.posts[0]
        try await posts.loadMore()
        #expect(posts.posts.map(\.id) == [ids[4], ids[3], ids[2], ids[1]])
        #expect(posts.posts[0] === newest)

        let made = Raw.send("POST", port: deployment.writerPort, "/posts", #"{"imageURL": "https://images.example/6.jpg", "height": 6}"#)
        let sixth = try #require(made.json["id"] as? String)
        #expect(Raw.send("DELETE", port: deployment.writerPort, "/posts/\(ids[2])").status == 204)
        try await eventually("the insert and the remove arrive") {
            posts.posts.map(\.id) == [sixth, ids[4], ids[3], ids[1]]
        }
        try await posts.loadMore()
        #expect(posts.posts.map(\.id) == [sixth, ids[4], ids[3], ids[1], ids[0]])
        #expect(!posts.hasMore)
        #expect(posts.posts[1] === newest && posts.posts[4].height == 1)

        // Orders: the newest page of the truck, then older ones.
        var orders: [String] = []
        for _ in 0..<5 {
            let placed = Raw.send("POST", port: deployment.writerPort, "/truck/orders", Seed.order)
            #expect(placed.status == 201)
            orders.append(try #require(placed.json["id"] as? String))
        }
        let truck = try await client.truck()
        #expect(truck.orders.count == 2 && truck.orderCount == 5 && truck.hasMoreOrders)
        try await truck.loadMoreOrders()
        try await truck.loadMoreOrders()
        #expect(truck.orders.count == 5 && !truck.hasMoreOrders)
        // Newest first, in the order they were placed (not their ids').
        #expect(truck.orders.map(\.id) == orders.reversed())
        await client.close()
    }

    /// A write against a version the object has not caught up with fails
    /// with a typed conflict; the other client's change then arrives once.
    @Test(arguments: Engine.allCases)
    func aWriteConflictIsATypedError(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let truck = try await client.truck()
        let glazed = try #require(truck.donuts.first { $0.id == Seed.glazed })
        let names = Invalidations { _ = glazed.name }

        // A rename the client agrees with succeeds; its change comes through the feed.
        try await glazed.rename(to: "Mine")
        try await eventually { glazed.name == "Mine" }
        #expect(names.count == 1)

        // Another client renames; this (blocking) call keeps the feed from
        // applying it before the client's own rename is sent.
        #expect(Raw.send("PATCH", port: deployment.writerPort, "/truck/donuts/\(Seed.glazed)", #"{"name": "Theirs"}"#).status == 200)
        await #expect {
            try await glazed.rename(to: "Mine again")
        } throws: { error in
            guard case .conflict(let problem) = error as? ObservableClientError else { return false }
            return problem.status == 412
        }
        try await eventually { glazed.name == "Theirs" }
        #expect(names.count == 2)

        await #expect(throws: ObservableClientError.self) { _ = try await truck.placeOrder(donutId: "no-such-donut", quantity: 1) }
        do {
            try await truck.placeOrder(glazed, quantity: 5000)
            Issue.record("a quantity of 5000 was accepted")
        } catch ObservableClientError.rejected(let problem) {
            #expect(problem.status == 422)
        }
        await client.close()
    }

    /// After `narrow()`, an observer that showed only `orderCount` is no
    /// longer sent renames (nor orders' inserts): the server tracks only it.
    @Test(arguments: Engine.allCases)
    func narrowingStopsTheRenames(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let truck = try await client.truck()
        let orderCount = Invalidations { _ = truck.orderCount }
        try await client.narrow()
        let observer = try #require(client.observerID)
        let reads = Raw.send("GET", port: deployment.writerPort, "/observer", headers: ["Observer": observer]).json["reads"] as? [String]
        #expect(reads == ["/truck/orderCount"])

        let applied = client.changesApplied
        #expect(Raw.send("PATCH", port: deployment.writerPort, "/truck/donuts/\(Seed.glazed)", #"{"name": "Renamed"}"#).status == 200)
        #expect(Raw.send("POST", port: deployment.writerPort, "/truck/orders", Seed.order).status == 201)
        try await eventually { truck.orderCount == 1 }
        #expect(orderCount.count == 1)
        // The order brought one change: its count. Not the rename, not the insert.
        #expect(client.changesApplied == applied + 1)

        // Read again after narrowing, a property is brought up to date and tracked again.
        let glazed = try #require(truck._donuts.first { $0.id == Seed.glazed })
        #expect(glazed.name == "Glazed")
        try await eventually("the name is read again") { glazed.name == "Renamed" }
        let names = Invalidations { _ = glazed.name }
        #expect(Raw.send("PATCH", port: deployment.writerPort, "/truck/donuts/\(Seed.glazed)", #"{"name": "Renamed again"}"#).status == 200)
        try await eventually { glazed.name == "Renamed again" }
        #expect(names.count == 1)
        await client.close()
    }

    /// Narrowing counts what was read since the last narrowing: after the
    /// grid was walked once to find a dot, a second narrowing keeps only
    /// that dot's flag; taps of other dots no longer reach the client.
    @Test(arguments: Engine.allCases)
    func narrowingKeepsWhatWasReadSinceTheLastNarrowing(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let grid = try await client.grid()
        let dot = try #require(grid.rows.last?.last)
        let other = try #require(grid.rows.first?.first)
        try await client.narrow()
        let observer = try #require(client.observerID)
        var reads = Raw.send("GET", port: deployment.writerPort, "/observer", headers: ["Observer": observer]).json["reads"] as? [String]
        // The walk read the rows (so every dot's membership), and no flag.
        #expect(reads?.contains("/grid/rows") == true)
        #expect(reads?.contains { $0.hasSuffix("/isTapAnimated") } == false)

        let taps = Invalidations { _ = dot.isTapAnimated }
        try await client.narrow()
        reads = Raw.send("GET", port: deployment.writerPort, "/observer", headers: ["Observer": observer]).json["reads"] as? [String]
        #expect(reads == ["/grid/dots/\(dot.id)/isTapAnimated"])

        let applied = client.changesApplied
        #expect(Raw.send("POST", port: deployment.writerPort, "/grid/dots/\(other.id)/tap").status == 200)
        #expect(Raw.send("POST", port: deployment.writerPort, "/grid/dots/\(dot.id)/tap").status == 200)
        try await eventually { client.changesApplied == applied + 2 }
        try await eventually { taps.count == 2 }
        await client.close()
    }
}
