import ClientTestSupport
import Foundation
import ObservableClient
import Testing

// Models of the server declared here, as an app declares its own: with
// `@RemoteModel` and nothing of the library's shipped models. Only the
// fields an app wants are declared (`MenuItem` has no topping), in the
// server's order.

/// The truck, as this app sees it.
@RemoteModel("/truck")
final class FoodTruck {
    var name: String
    var donuts: [MenuItem]
    @Paged var orders: [Ticket]
    var orderCount: Int
    /// Not a field: kept by the app.
    @RemoteIgnored var openedByApp = 0
}

/// A donut of the truck's menu.
@RemoteModel("/truck/donuts/{id}")
final class MenuItem {
    let id: String
    var name: String
    var dough: String = "plain"
    var glaze: String?
    var topping: String?
}

/// An order.
@RemoteModel("/truck/orders/{id}")
final class Ticket {
    let id: String
    var donutId: String
    var quantity: Int
}

/// A job's progress, a `Codable` value of the app's own.
struct Advance: Codable, Equatable, RemoteValue {
    var current: Int
    var total: Int
}

/// A job, with its progress decoded as `Advance`.
@RemoteModel("/jobs/{id}")
final class Work {
    let id: String
    var progress: Advance?
    var isComplete: Bool
}

enum Seed {
    static let glazed = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"
    static let order = #"{"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": 2}"#
}

extension ObservableClient.Configuration {
    static var quick: Self { Self(reconnectDelay: 0.05...0.5) }
}

/// A fresh read of `path`, by another client.
func fresh(_ port: UInt16, _ path: String) -> [String: Any] { Raw.send("GET", port: port, path).json }

@Suite(.serialized) @MainActor
struct ClientModelDeclarationTests {
    /// The truck declared here: loaded, its menu and orders the client's
    /// objects, told of exactly the changes another client makes to what
    /// was read, written with `If-Match`, and equal to a fresh read at the end.
    @Test(arguments: Engine.allCases)
    func aDeclaredTruckIsFollowedEndToEnd(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let port = deployment.writerPort
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let truck = try await client.load(FoodTruck.self)
        #expect(try await client.load(FoodTruck.self) === truck)
        let seeded = try #require(fresh(port, "/truck")["donuts"] as? [[String: Any]])
        #expect(truck.donuts.map(\.id) == seeded.compactMap { $0["id"] as? String })
        let glazed = try #require(truck.donuts.first { $0.id == Seed.glazed })
        #expect(try await client.load(MenuItem.self, id: Seed.glazed) === glazed)
        #expect(glazed.name == "Glazed")

        let names = Invalidations { _ = glazed.name }
        let doughs = Invalidations { _ = glazed.dough }
        let counts = Invalidations { _ = truck.orderCount }

        // Another client renames the donut: its name, and nothing else.
        #expect(Raw.send("PATCH", port: port, "/truck/donuts/\(Seed.glazed)", #"{"name": "Honey"}"#).status == 200)
        try await eventually("the rename arrives") { glazed.name == "Honey" }
        // ... and places an order: the count, and a ticket at the front.
        #expect(Raw.send("POST", port: port, "/truck/orders", Seed.order).status == 201)
        try await eventually("the order arrives") { truck.orderCount == 1 && truck.orders.count == 1 }
        #expect(names.count == 1 && doughs.count == 0 && counts.count == 1)
        #expect(truck.orders.first?.quantity == 2)

        // Writes from the declaration: a change with If-Match, a refused
        // stale one, an element made and one deleted.
        try await glazed.update(.set(\.glaze, "maple"), .set(\.topping, nil))
        try await eventually("the glaze arrives") { glazed.glaze == "maple" }
        #expect(doughs.count == 0)
        #expect(Raw.send("PATCH", port: port, "/truck/donuts/\(Seed.glazed)", #"{"name": "Theirs"}"#).status == 200)
        // (The rename is not applied yet: the main actor was held while it was sent.)
        await #expect {
            try await glazed.update(.set(\.name, "Mine"))
        } throws: { error in
            guard case .conflict = error as? ObservableClientError else { return false }
            return true
        }
        try await eventually { glazed.name == "Theirs" }
        // A singleton's write names no version (the truck's covers orders the client may not hold).
        try await truck.update(.set(\.name, "Renamed by the app"))
        try await eventually("the truck's new name arrives") { truck.name == "Renamed by the app" }
        let cruller = try await client.create(MenuItem.self, .set(\.name, "Cruller"), .set(\.dough, "choux"))
        try await eventually("the new donut joins the menu") { truck.donuts.last === cruller }
        #expect(cruller.dough == "choux" && cruller.glaze == nil)
        let ticket = try #require(truck.orders.first)
        try await ticket.delete()
        try await eventually("the cancelled order leaves") { truck.orders.isEmpty && truck.orderCount == 0 }

        // The client's copy equals a fresh read.
        let now = fresh(port, "/truck")
        #expect(truck.name == now["name"] as? String)
        #expect(truck.orderCount == now["orderCount"] as? Int)
        let menu = try #require(now["donuts"] as? [[String: Any]])
        #expect(truck.donuts.map(\.id) == menu.compactMap { $0["id"] as? String })
        for (donut, row) in zip(truck.donuts, menu) {
            #expect(donut.name == row["name"] as? String && donut.dough == row["dough"] as? String)
            #expect(donut.glaze == row["glaze"] as? String && donut.topping == row["topping"] as? String)
        }
        #expect(truck.openedByApp == 0)
        await client.close()
    }

    /// A collection of a declared model, its `Codable` field decoded, as a
    /// list and as a query: a job another client advances moves on, and
    /// leaves the query of the jobs still running when it completes.
    @Test(arguments: Engine.allCases)
    func aDeclaredCollectionAndQueryKeepUp(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let port = deployment.writerPort
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let works = try await client.list(Work.self)
        let running = try await client.query(Work.self, where: [.equal("isComplete", .boolean(false))])
        #expect(works.elements.isEmpty && running.elements.isEmpty)

        let id = try #require(Raw.send("POST", port: port, "/jobs", #"{"total": 10}"#).json["id"] as? String)
        try await eventually("the job joins the list and the query") { works.elements.count == 1 && running.elements.count == 1 }
        let work = try #require(works.elements.first)
        #expect(work.id == id && running.elements.first === work)
        #expect(work.progress == Advance(current: 0, total: 10) && !work.isComplete)

        let progress = Invalidations { _ = work.progress }
        #expect(Raw.send("POST", port: port, "/jobs/\(id)/progress", #"{"current": 4}"#).status == 200)
        try await eventually("the progress arrives") { work.progress?.current == 4 }
        #expect(progress.count == 1)
        #expect(Raw.send("POST", port: port, "/jobs/\(id)/progress", #"{"current": 10}"#).status == 200)
        try await eventually("the job completes and leaves the query") { work.isComplete && running.elements.isEmpty }
        #expect(works.elements.first === work && work.progress == Advance(current: 10, total: 10))
        #expect(try await client.load(Work.self, id: id) === work)
        await client.close()
    }
}
