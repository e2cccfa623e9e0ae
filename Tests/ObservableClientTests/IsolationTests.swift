import ClientTestSupport
import Foundation
import ObservableClient
import Observation
import Synchronization
import Testing

/// Where a client lives: the actor it is made on (the main actor in the
/// other suites), else the main actor; there its loads run and every
/// transaction of its feed is applied.
@Suite(.serialized)
struct IsolationTests {
    /// An actor on a thread of its own: a client made on it loads there,
    /// and a change another client makes reaches its objects there, so an
    /// observer of them is told on that thread, never on the main one.
    actor Watcher {
        let executor = ThreadExecutor(name: "watcher")
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

        /// The threads invalidations of `orderCount` came on: whether each was the watcher's.
        let told = Told()
        private var truck: Truck?

        final class Told: Sendable {
            let threads = Mutex<[Bool]>([])
        }

        func watch(_ url: URL, writerPort: UInt16) async throws {
            #expect(executor.isCurrent)
            let client = ObservableClient(baseURL: url, configuration: .quick)
            #expect(client.isolation === self)
            let truck = try await client.truck()
            #expect(executor.isCurrent)
            #expect(truck.orderCount == 0)
            self.truck = truck
            track()
            try await eventually { client.connectionState == .live(.stream) }

            #expect(Raw.send("POST", port: writerPort, "/truck/orders", Seed.order).status == 201)
            try await eventually("the order arrives") { truck.orderCount == 1 }
            // One transaction: the order is in the list in the same turn as the count.
            #expect(truck.orders.count == 1)
            #expect(Raw.send("POST", port: writerPort, "/truck/orders", Seed.order).status == 201)
            try await eventually("the second order arrives") { truck.orderCount == 2 }
            #expect(truck.orders.count == 2)
            #expect(told.threads.withLock { $0 } == [true, true])

            // A write through the client, from this actor, comes back through the feed.
            let order = try #require(truck.orders.first)
            try await order.cancel()
            try await eventually("the delete arrives") { truck.orderCount == 1 }
            #expect(told.threads.withLock { $0 } == [true, true, true])
            await client.close()
            #expect(client.connectionState == .closed)
        }

        /// Tracks `orderCount`, noting for each change whether it came on
        /// the watcher's thread, and tracks again after.
        private func track() {
            withObservationTracking { _ = truck?.orderCount } onChange: { [executor, told] in
                told.threads.withLock { $0.append(executor.isCurrent) }
                Task { await self.track() }
            }
        }
    }

    @Test func aClientMadeOnAnActorLivesOnIt() async throws {
        let deployment = try Deployment(.sqlite)
        defer { deployment.stopAll() }
        let watcher = Watcher()
        try await watcher.watch(deployment.clientURL, writerPort: deployment.writerPort)
        watcher.executor.stop()
    }

    /// The objects go where a closure or a task takes them back to the
    /// client's actor: an `onChange` that reads the new value there, an
    /// `Observations` sequence of a property, a detached task that hops
    /// back; each sees what another client wrote.
    @Test @MainActor func theObjectsAreCarriedBackToTheirActor() async throws {
        let deployment = try Deployment(.sqlite)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)
        let truck = try await client.truck()
        let glazed = try #require(truck.donuts.first { $0.id == Seed.glazed })
        let seen = Seen()
        withObservationTracking { _ = truck.orderCount } onChange: {
            Task { @MainActor in seen.values.withLock { $0.append(truck.orderCount) } }
        }
        let counts = Observations { truck.orderCount }
        var iterator = counts.makeAsyncIterator()
        #expect(await iterator.next() == 0)
        try await eventually { client.connectionState == .live(.stream) }
        #expect(Raw.send("POST", port: deployment.writerPort, "/truck/orders", Seed.order).status == 201)
        #expect(await iterator.next() == 1)
        try await eventually("onChange's task read the new count") { seen.values.withLock { $0 } == [1] }
        #expect(Raw.send("PATCH", port: deployment.writerPort, "/truck/donuts/\(Seed.glazed)", #"{"name": "Maple"}"#).status == 200)
        try await eventually { glazed.name == "Maple" }
        let name = await Task.detached { await MainActor.run { glazed.name } }.value
        #expect(name == "Maple")
        await client.close()
    }

    final class Seen: Sendable {
        let values = Mutex<[Int]>([])
    }

    /// Outside any actor there is no caller's actor to take: the main one.
    @Test func aClientMadeOutsideAnyActorLivesOnTheMainActor() async throws {
        let client = ObservableClient(baseURL: URL(string: "http://127.0.0.1:9")!)
        #expect(client.isolation === MainActor.shared)
    }
}
