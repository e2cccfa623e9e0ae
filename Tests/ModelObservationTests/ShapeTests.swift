import ModelObservation
import Testing

/// A read of a collection is one entry, a shape: the changes landing in
/// its window reach its reader, and nothing else does.
@Suite struct ShapeTests {
    static let orders = "/orders"
    var orders: String { Self.orders }

    static func insert(at position: Int64) -> PendingChange {
        PendingChange.insert(into: orders, element: "{}", elementKeys: [PropertyKey("\(orders)/\(position)/quantity")])
            .landing(at: [Place(collection: orders, position: position)])
    }

    static func set(_ field: String, at position: Int64) -> PendingChange {
        PendingChange.set("\(orders)/\(position)/\(field)", old: "1", new: "2")
            .landing(at: [Place(collection: orders, position: position, field: field)])
    }

    /// Observers named by `shapes`, each having read its shape at seq 0.
    static func registry(_ shapes: [String: Shape]) -> ObservationRegistry {
        let registry = ObservationRegistry(retain: 100)
        for (id, shape) in shapes {
            registry.add(ObserverSnapshot(id: id, cursor: 0, ttlSeconds: 60, lastUsed: 0))
            _ = registry.track(id, keys: [shape.key], at: 0, now: 0)
        }
        return registry
    }

    /// Who a change committed at `seq` reaches, by polling each observer.
    static func reached(_ registry: ObservationRegistry, by change: PendingChange, seq: Int64, among ids: [String]) -> Set<String> {
        _ = registry.publish([change.committed(seq: seq, transaction: seq)])
        var found = Set<String>()
        for id in ids {
            if case .changes(let changes, _) = registry.poll(id, since: seq - 1, limit: 10, now: 0).poll, !changes.isEmpty { found.insert(id) }
        }
        return found
    }

    @Test func aShapeKeyAndAPlaceKeyRoundTrip() throws {
        let shape = Shape(collection: orders, fields: ["quantity", "donutId"], from: 3, through: 40, newest: 90)
        let parsed = try #require(Shape(key: shape.key))
        #expect(parsed == shape)
        #expect(parsed.fields == ["donutId", "quantity"])
        #expect(Shape(key: PropertyKey("/orders/7/quantity")) == nil)
        let place = Place(collection: "/games/9/cards", position: 12, field: "isFaceUp")
        #expect(Place(key: place.key) == place)
        #expect(Place(key: PropertyKey("/orders")) == nil)
        let change = Self.set("quantity", at: 5).committed(seq: 1, transaction: 1)
        #expect(change.places == [Place(collection: orders, position: 5, field: "quantity")])
        // Stored and loaded again, a change finds its places among its keys.
        let loaded = Change(seq: 1, transaction: 1, path: change.path, operation: .set, old: "1", new: "2", keys: change.keys)
        #expect(loaded.places == change.places)
        #expect(shape.key.isShape && !shape.key.isPlace)
        #expect(place.key.isPlace && !place.key.isShape)
        let property = PropertyKey("/orders/7/quantity")
        #expect(!property.isShape && !property.isPlace && property == PropertyKey("/orders/7/quantity"))
    }

    @Test func aChangeReachesExactlyTheWindowsThatHoldIt() {
        let shapes: [String: Shape] = [
            "whole": Shape(collection: orders),
            "upward": Shape(collection: orders, from: 50),
            "downward": Shape(collection: orders, through: 20),
            "middle": Shape(collection: orders, from: 21, through: 40),
            "point": Shape(collection: orders, from: 30, through: 30),
            "wide": Shape(collection: orders, from: 1, through: 1 << 40),
            "other": Shape(collection: "/donuts"),
        ]
        let registry = Self.registry(shapes)
        let ids = Array(shapes.keys)
        var seq: Int64 = 0
        func reached(_ change: PendingChange) -> Set<String> {
            seq += 1
            return Self.reached(registry, by: change, seq: seq, among: ids)
        }
        #expect(reached(Self.insert(at: 60)) == ["whole", "upward", "wide"])
        #expect(reached(Self.set("quantity", at: 30)) == ["whole", "middle", "point", "wide"])
        #expect(reached(Self.set("quantity", at: 20)) == ["whole", "downward", "wide"])
        #expect(reached(Self.set("quantity", at: 21)) == ["whole", "middle", "wide"])
        #expect(reached(Self.set("quantity", at: 50)) == ["whole", "upward", "wide"])
        #expect(reached(Self.set("quantity", at: 45)) == ["whole", "wide"])
        #expect(reached(Self.set("quantity", at: 0)) == ["whole", "downward"])
    }

    @Test func aShapeWithFieldsHearsOnlyThoseOfElementsThatWereThereAndEveryFieldOfLaterOnes() {
        let registry = Self.registry(["some": Shape(collection: orders, fields: ["quantity"], newest: 10)])
        #expect(Self.reached(registry, by: Self.set("donutId", at: 10), seq: 1, among: ["some"]).isEmpty)
        #expect(Self.reached(registry, by: Self.set("quantity", at: 10), seq: 2, among: ["some"]) == ["some"])
        #expect(Self.reached(registry, by: Self.set("donutId", at: 11), seq: 3, among: ["some"]) == ["some"])
    }

    @Test func aChangeAtOrBeforeTheReadIsNotDelivered() {
        let registry = ObservationRegistry(retain: 100)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        _ = registry.publish([Self.insert(at: 5).committed(seq: 1, transaction: 1)])
        // Read at seq 1: the insert at 1 was in the answer already.
        _ = registry.track("a", keys: [Shape(collection: Self.orders).key], at: 1, now: 0)
        #expect(Self.reached(registry, by: Self.set("quantity", at: 5), seq: 2, among: ["a"]) == ["a"])
        guard case .changes(let changes, _) = registry.poll("a", since: 0, limit: 10, now: 0).poll else {
            Issue.record("expected changes")
            return
        }
        #expect(changes.map(\.seq) == [2])
    }

    @Test func eachShapeReadIsOneEntryAndTheSameShapeAgainIsNone() {
        let registry = Self.registry(["a": Shape(collection: orders, from: 10)])
        _ = registry.track("a", keys: [Shape(collection: orders, from: 10).key], at: 1, now: 0)
        #expect(registry.observer("a")?.reads.count == 1)
        // Another window, even one inside the first, is an entry of its own:
        // what is listed and counted never depends on what an instance knows yet.
        _ = registry.track("a", keys: [Shape(collection: orders, from: 20).key], at: 1, now: 0)
        #expect(registry.observer("a")?.reads.count == 2)
    }

    @Test func observersThatReadTheSameShapeShareItAndLeaveItOneByOne() {
        let registry = ObservationRegistry(retain: 100)
        let shape = Shape(collection: orders, through: 100)
        for id in ["a", "b", "c"] {
            registry.add(ObserverSnapshot(id: id, cursor: 0, ttlSeconds: 60, lastUsed: 0))
            _ = registry.track(id, keys: [shape.key], at: 0, now: 0)
        }
        #expect(Self.reached(registry, by: Self.set("quantity", at: 7), seq: 1, among: ["a", "b", "c"]) == ["a", "b", "c"])
        _ = registry.remove("b")
        let cleared = registry.clearReads("c", now: 0)
        #expect(cleared)
        #expect(Self.reached(registry, by: Self.set("quantity", at: 7), seq: 2, among: ["a", "c"]) == ["a"])
        _ = registry.remove("a")
        #expect(Self.reached(registry, by: Self.set("quantity", at: 7), seq: 3, among: ["c"]).isEmpty)
    }

    @Test func anObserverReachedThroughTwoShapesHearsAChangeOnce() {
        let registry = Self.registry(["a": Shape(collection: orders, from: 3, through: 9)])
        _ = registry.track("a", keys: [Shape(collection: orders, fields: ["quantity"], from: 1, through: 9, newest: 9).key], at: 0, now: 0)
        _ = registry.track("a", keys: [Shape(collection: orders).key], at: 0, now: 0)
        #expect(registry.observer("a")?.reads.count == 3)
        _ = registry.publish([Self.set("quantity", at: 5).committed(seq: 1, transaction: 1)])
        guard case .changes(let changes, _) = registry.poll("a", since: 0, limit: 10, now: 0).poll else {
            Issue.record("expected changes")
            return
        }
        #expect(changes.map(\.seq) == [1])
    }
}
