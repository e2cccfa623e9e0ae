import ClientTestSupport
import Foundation
import Testing
@testable import ObservableClient
#if canImport(Glibc)
import Glibc
#endif

/// The client through faults: the feed resumes, repairs or starts over by
/// itself, and the objects show neither a missed nor a repeated change.
@Suite(.serialized) @MainActor
struct FaultTests {
    /// Orders placed around a SIGTERM and a `kill -9` of the client's
    /// server: each reaches the objects exactly once.
    @Test(arguments: Engine.allCases, [ObservableClient.Transport.automatic, .longPolling])
    func aRestartIsSurvivedWithNoChangeMissedOrRepeated(engine: Engine, transport: ObservableClient.Transport) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        var configuration = ObservableClient.Configuration.quick
        configuration.transport = transport
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: configuration)
        let truck = try await client.truck()
        let orderCount = Invalidations { _ = truck.orderCount }
        let observer = client.observerID
        let applied = client.changesApplied
        var placed: [String] = []
        func place() throws {
            let answer = Raw.send("POST", port: deployment.writerPort, "/truck/orders", Seed.order)
            try #require(answer.status == 201, "POST /truck/orders: \(String(decoding: answer.body, as: UTF8.self))")
            placed.append(try #require(answer.json["id"] as? String))
        }

        try place()
        try await eventually { truck.orderCount == 1 }
        #expect(orderCount.count == 1)

        for signal in [SIGTERM, SIGKILL] {
            try deployment.restartClientServer(signal: signal)
            try place()
            try place()
            try await eventually("orders placed after \(signal == SIGTERM ? "SIGTERM" : "kill -9") arrive") {
                truck.orderCount == placed.count
            }
        }
        try await eventually { client.connectionState == .live(transport == .longPolling ? .longPolling : .stream) }

        // Each order is an insert and a count: nothing missed, nothing twice.
        #expect(client.changesApplied - applied == 2 * placed.count)
        #expect(truck.orders.map(\.id) == placed.reversed())
        #expect(client.observerID == observer)
        // As a fresh read shows it.
        let fresh = Raw.send("GET", port: deployment.clientPort, "/truck").json
        #expect(fresh["orderCount"] as? Int == truck.orderCount)
        #expect((fresh["orders"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == placed)
        await client.close()
    }

    /// A client whose cursor fell behind the change log's retention is
    /// brought back in step by one repair, keeping its observer and objects.
    @Test(arguments: Engine.allCases)
    func retentionPassedIsRepaired(engine: Engine) async throws {
        let deployment = try Deployment(engine, arguments: ["--retain-changes", "2"])
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let truck = try await client.truck()
        let glazed = try #require(truck.donuts.first { $0.id == Seed.glazed })
        let chocolate = try #require(truck.donuts.first { $0.id == Seed.chocolate })
        let names = Invalidations { _ = glazed.name }
        let observer = client.observerID

        // While the client cannot reach its server, more changes than the log keeps.
        try deployment.takeClientServerAway()
        let port = deployment.writerPort
        #expect(Raw.send("PATCH", port: port, "/truck/donuts/\(Seed.glazed)", #"{"name": "Maple Glazed"}"#).status == 200)
        #expect(Raw.send("DELETE", port: port, "/truck/donuts/\(Seed.chocolate)").status == 204)
        let order = Raw.send("POST", port: port, "/truck/orders", Seed.order).json["id"] as? String
        #expect(Raw.send("PATCH", port: port, "/truck", #"{"name": "Donut Truck"}"#).status == 200)
        #expect(Raw.send("PATCH", port: port, "/truck", #"{"name": "Food Truck 2"}"#).status == 200)
        // Pruned: polling from the start is 410 for a fresh observer.
        let probe = try #require(Raw.send("POST", port: port, "/observers").json["id"] as? String)
        try await eventually("the log is pruned") {
            Raw.send("GET", port: port, "/observer/changes?since=0&timeout=0", headers: ["Observer": probe]).status == 410
        }
        try deployment.bringClientServerBack()

        try await eventually("the repair arrives") { truck.name == "Food Truck 2" }
        #expect(glazed.name == "Maple Glazed")
        #expect(names.count == 1)
        #expect(!truck.donuts.contains { $0 === chocolate })
        #expect(truck.donuts.first === glazed)
        #expect(truck.orders.map(\.id) == [order].compactMap { $0 })
        #expect(truck.orderCount == 1)
        #expect(client.observerID == observer)
        await client.close()
    }

    /// An observer that expired while the client could not reach the server
    /// is replaced; what the objects hold is read again, and changes made
    /// meanwhile show, once.
    @Test(arguments: Engine.allCases)
    func anExpiredObserverIsReplaced(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        var configuration = ObservableClient.Configuration.quick
        configuration.observerTTL = 1
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: configuration)
        let truck = try await client.truck()
        let grid = try await client.grid()
        let glazed = try #require(truck.donuts.first { $0.id == Seed.glazed })
        let dot = try #require(grid.rows.first?.first)
        let names = Invalidations { _ = glazed.name }
        let orderCount = Invalidations { _ = truck.orderCount }
        let old = try #require(client.observerID)

        try deployment.takeClientServerAway()
        let port = deployment.writerPort
        // Asked without using the observer, which would keep it alive.
        try await eventually("the observer expires") { !deployment.observerExists(old) }
        #expect(Raw.send("PATCH", port: port, "/truck/donuts/\(Seed.glazed)", #"{"name": "Meanwhile"}"#).status == 200)
        #expect(Raw.send("POST", port: port, "/truck/orders", Seed.order).status == 201)
        try deployment.bringClientServerBack()

        try await eventually("read again with a new observer") { truck.orderCount == 1 && glazed.name == "Meanwhile" }
        #expect(client.observerID != old)
        #expect(names.count == 1)
        #expect(orderCount.count == 1)
        #expect(truck.donuts.first === glazed && grid.rows.first?.first === dot)

        // And the new observer tracks them.
        #expect(Raw.send("PATCH", port: deployment.writerPort, "/truck/donuts/\(Seed.glazed)", #"{"name": "Afterwards"}"#).status == 200)
        #expect(Raw.send("PATCH", port: deployment.writerPort, "/grid/dots/\(dot.id)", #"{"isRandomAnimated": true}"#).status == 200)
        try await eventually { glazed.name == "Afterwards" && dot.isRandomAnimated }
        #expect(names.count == 2)
        await client.close()
    }

    /// A deleted observer is replaced the same way, while the server runs.
    @Test(arguments: Engine.allCases)
    func aDeletedObserverIsReplaced(engine: Engine) async throws {
        let deployment = try Deployment(engine)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let truck = try await client.truck()
        let old = try #require(client.observerID)
        #expect(Raw.send("DELETE", port: deployment.writerPort, "/observer", headers: ["Observer": old]).status == 204)
        try await eventually("a new observer") { client.observerID != nil && client.observerID != old }
        #expect(Raw.send("POST", port: deployment.writerPort, "/truck/orders", Seed.order).status == 201)
        try await eventually { truck.orderCount == 1 && truck.orders.count == 1 }
        await client.close()
    }

    /// A stream that goes silent (its server frozen with SIGSTOP: the
    /// connection stays open, nothing arrives, not even heartbeats) is
    /// given up and reconnected; the client resumes once the server answers.
    @Test(arguments: Engine.allCases)
    func aSilentStreamIsReconnected(engine: Engine) async throws {
        let deployment = try Deployment(engine, arguments: ["--heartbeat", "1"])
        defer { deployment.stopAll() }
        var configuration = ObservableClient.Configuration.quick
        configuration.silenceTimeout = .seconds(5)
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: configuration)
        let truck = try await client.truck()
        try await eventually { client.connectionState == .live(.stream) }
        // Heartbeats keep a quiet stream open past the silence timeout.
        try await holds(for: 6, "the quiet stream stays live") { client.connectionState == .live(.stream) }

        deployment.signalClientServer(SIGSTOP)
        try await eventually("the watchdog gives the stream up") {
            if case .reconnecting = client.connectionState { return true }
            return false
        }
        deployment.signalClientServer(SIGCONT)
        #expect(Raw.send("POST", port: deployment.writerPort, "/truck/orders", Seed.order).status == 201)
        try await eventually { truck.orderCount == 1 && client.connectionState == .live(.stream) }
        #expect(truck.orders.count == 1)
        await client.close()
    }

    /// A client whose stream is refused (the server's streams per client
    /// are used up by another client at the same address) long-polls
    /// instead, and misses nothing.
    @Test func aRefusedStreamFallsBackToLongPolling() async throws {
        let deployment = try Deployment(.sqlite, arguments: ["--max-streams-per-client", "1"])
        defer { deployment.stopAll() }
        let streaming = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let first = try await streaming.truck()
        try await eventually { streaming.connectionState == .live(.stream) }
        let polling = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let second = try await polling.truck()
        try await eventually("the second client polls") { polling.connectionState == .live(.longPolling) }
        #expect(Raw.send("POST", port: deployment.writerPort, "/truck/orders", Seed.order).status == 201)
        try await eventually { first.orderCount == 1 && second.orderCount == 1 }
        #expect(streaming.connectionState == .live(.stream))
        await polling.close()
        await streaming.close()
    }
}
