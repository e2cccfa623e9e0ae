@testable import ModelObservation
import Testing

final class Waiter: ChangeWaiter {}

@Suite struct ObservationRegistryTests {
    func change(_ seq: Int64, _ path: String, transaction: Int64? = nil) -> Change {
        PendingChange.set(path, old: "0", new: "1").committed(seq: seq, transaction: transaction ?? seq)
    }

    @Test func changeReachesOnlyObserversThatReadItsKeyBeforeIt() {
        let registry = ObservationRegistry(retain: 100)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        registry.add(ObserverSnapshot(id: "b", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        _ = registry.track("a", keys: [PropertyKey("/x")], at: 0, now: 0)
        _ = registry.track("b", keys: [PropertyKey("/y")], at: 0, now: 0)
        let waiterA = Waiter()
        let waiterB = Waiter()
        _ = registry.poll("a", since: 0, limit: 10, now: 0, parking: .waiter(waiterA))
        _ = registry.poll("b", since: 0, limit: 10, now: 0, parking: .waiter(waiterB))
        let woken = registry.publish([change(1, "/x")])
        #expect(woken.map(\.observer) == ["a"])
        #expect(woken.first?.waiter === waiterA)
        #expect(registry.readers(of: PropertyKey("/x")) == ["a"])
    }

    /// The reverse index passes over the reads of observers that went or
    /// cleared their reads, also once their slots are given to new ones, and
    /// drops such entries when they pile up.
    @Test func readersAreThoseStillReadingAfterRemovalsClearsAndReuse() {
        let registry = ObservationRegistry(retain: 1000)
        let x = PropertyKey("/x"), y = PropertyKey("/y")
        for i in 0..<200 {
            registry.add(ObserverSnapshot(id: "o\(i)", cursor: 0, ttlSeconds: 60, lastUsed: 0))
            _ = registry.track("o\(i)", keys: [x, y], at: 0, now: 0)
        }
        var expected = Set((0..<200).map { "o\($0)" })
        for i in stride(from: 0, to: 200, by: 2) {
            _ = registry.remove("o\(i)")
            expected.remove("o\(i)")
        }
        for i in stride(from: 1, to: 200, by: 4) {
            let known = registry.clearReads("o\(i)", now: 0)
            #expect(known)
            _ = registry.track("o\(i)", keys: [y], at: 0, now: 0)
        }
        // New observers take the freed slots; each reads /y only.
        for i in 0..<50 {
            registry.add(ObserverSnapshot(id: "n\(i)", cursor: 0, ttlSeconds: 60, lastUsed: 0))
            _ = registry.track("n\(i)", keys: [y], at: 0, now: 0)
        }
        let readingX = expected.filter { id in !stride(from: 1, to: 200, by: 4).contains { "o\($0)" == id } }
        let readingY = expected.union((0..<50).map { "n\($0)" })
        #expect(registry.readers(of: x) == readingX)
        #expect(registry.readers(of: y) == readingY)
        #expect(Set(registry.readers(of: x, before: 1)) == readingX)
        // A change reaches each reader once, through either key.
        _ = registry.publish([PendingChange.set("/x", old: "0", new: "1").committed(seq: 1, transaction: 1)])
        for id in readingY {
            guard case .changes(let changes, _) = registry.poll(id, since: 0, limit: 10, now: 0).poll else {
                Issue.record("expected changes for \(id)")
                continue
            }
            #expect(changes.count == (readingX.contains(id) ? 1 : 0), "\(id)")
        }
    }

    /// Observers whose first read is the same are indexed as one group: a
    /// change reaches the members that read before it and still do, and
    /// a group whose members all went leaves nothing behind.
    @Test func observersWithTheSameFirstReadAreReachedAsAGroup() {
        let registry = ObservationRegistry(retain: 1000)
        let x = PropertyKey("/x"), y = PropertyKey("/y")
        _ = registry.publish((1...5).map { change($0, "/z") })
        for i in 0..<100 {
            registry.add(ObserverSnapshot(id: "g\(i)", cursor: 5, ttlSeconds: 60, lastUsed: 0))
            _ = registry.track("g\(i)", keys: [x, y], at: 5, now: 0)
        }
        #expect(registry.readers(of: x, before: 5).isEmpty)
        #expect(registry.readers(of: y, before: 6).count == 100)
        for i in 0..<100 where i % 3 != 0 { _ = registry.remove("g\(i)") }
        let left = Set((0..<100).filter { $0 % 3 == 0 }.map { "g\($0)" })
        #expect(registry.readers(of: x) == left)
        // One of them reads more: it stays in the group for what it read first.
        _ = registry.track("g0", keys: [PropertyKey("/w")], at: 5, now: 0)
        _ = registry.publish([change(6, "/x")])
        for id in left {
            guard case .changes(let changes, _) = registry.poll(id, since: 5, limit: 10, now: 0).poll else {
                Issue.record("expected changes for \(id)")
                continue
            }
            #expect(changes.map(\.path) == ["/x"], "\(id)")
        }
        for id in left { _ = registry.remove(id) }
        #expect(registry.readers(of: x).isEmpty)
        #expect(registry.readers(of: y).isEmpty)
        // A new observer reading the same starts afresh.
        registry.add(ObserverSnapshot(id: "n", cursor: 6, ttlSeconds: 60, lastUsed: 0))
        _ = registry.track("n", keys: [x, y], at: 6, now: 0)
        #expect(registry.readers(of: x) == ["n"])
        #expect(registry.readers(of: x, before: 7) == ["n"])
    }

    /// A read of the very array read before adds nothing, found by its
    /// identity; once the observer cleared its reads, it adds them again.
    @Test(arguments: [false, true]) func aReadOfTheSameArrayAfterAClearAddsItsKeysAgain(storing: Bool) {
        let registry = ObservationRegistry(retain: 100)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        let x = PropertyKey("/x"), y = PropertyKey("/y")
        let keys = [x, y]
        var stored: [[String]] = []
        func track(_ keys: [PropertyKey], at seq: Int64) -> [String] {
            let result: ObservationRegistry.TrackResult
            if storing {
                // Planned, stored, then applied.
                let plan = registry.planTrack("a", keys: keys, at: seq, now: 0)
                if case .reads(let added, _, _) = plan, !added.isEmpty { stored.append(added.map(\.0.path)) }
                result = registry.applyTrack("a", plan, keys: keys)
            } else {
                result = registry.track("a", keys: keys, at: seq, now: 0)
            }
            guard case .tracked(let added, _) = result else { return ["refused"] }
            return added.map(\.0.path)
        }
        #expect(track(keys, at: 0) == ["/x", "/y"])
        #expect(track(keys, at: 1).isEmpty)
        _ = registry.clearReads("a", now: 0)
        #expect(track([x], at: 2) == ["/x"])
        #expect(track(keys, at: 3) == ["/y"])
        #expect(registry.observer("a")?.reads == [x: 2, y: 3])
        #expect(registry.readers(of: y) == ["a"])
        if storing { #expect(stored == [["/x", "/y"], ["/x"], ["/y"]]) }
    }

    @Test func readAfterAChangeDoesNotReceiveIt() {
        let registry = ObservationRegistry(retain: 100)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        _ = registry.publish([change(1, "/x")])
        _ = registry.track("a", keys: [PropertyKey("/x")], at: 1, now: 0)
        guard case .changes(let changes, let cursor) = registry.poll("a", since: 0, limit: 10, now: 0).poll else {
            Issue.record("expected changes")
            return
        }
        #expect(changes.isEmpty)
        #expect(cursor == 1)
    }

    @Test func retentionDropsOldChangesAndOldCursorsAreGone() {
        let registry = ObservationRegistry(retain: 2)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        _ = registry.publish([change(1, "/x"), change(2, "/x"), change(3, "/x")])
        #expect(registry.oldestAvailableSeq == 1)
        if case .gone = registry.poll("a", since: 0, limit: 10, now: 0).poll {} else { Issue.record("expected gone") }
        if case .changes = registry.poll("a", since: 1, limit: 10, now: 0).poll {} else { Issue.record("expected changes") }
        if case .ahead = registry.poll("a", since: 4, limit: 10, now: 0).poll {} else { Issue.record("expected ahead") }
    }

    @Test func aUseIsSavedOnceItIsAQuarterOfTheTTLOldAndAnImplicitCursorEveryTime() {
        let registry = ObservationRegistry(retain: 10)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 40, lastUsed: 0))
        // Polls with `since`: the use is saved when 10 s (a quarter of 40) old.
        _ = registry.poll("a", since: 0, limit: 10, now: 9)
        #expect(registry.takeDirty(now: 9).isEmpty)
        #expect(registry.observer("a")?.lastUsed == 9)
        _ = registry.poll("a", since: 0, limit: 10, now: 10)
        let saved = registry.takeDirty(now: 10)
        #expect(saved.map(\.id) == ["a"])
        #expect(saved.first?.lastUsed == 10)
        _ = registry.poll("a", since: 0, limit: 10, now: 12)
        #expect(registry.takeDirty(now: 12).isEmpty)
        // A poll without `since` moves the implicit cursor: saved at once.
        _ = registry.publish([change(1, "/x")])
        _ = registry.poll("a", since: nil, limit: 10, now: 13)
        #expect(registry.takeDirty(now: 13).map(\.cursor) == [1])
        // Reads count as uses too.
        _ = registry.track("a", keys: [PropertyKey("/x")], at: 1, now: 14)
        #expect(registry.takeDirty(now: 14).isEmpty)
        _ = registry.track("a", keys: [PropertyKey("/y")], at: 1, now: 23)
        #expect(registry.takeDirty(now: 23).map(\.lastUsed) == [23])
    }

    @Test func aParkedObserverIsTouchedForOthersWhenItsSavedUseIsHalfItsTTLOld() {
        let registry = ObservationRegistry(retain: 10)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 40, lastUsed: 0))
        // Parked at 9: used, but not saved (the saved use is 0).
        _ = registry.poll("a", since: 0, limit: 10, now: 9, parking: .waiter(Waiter()))
        #expect(registry.takeDirty(now: 19, touchingParked: true).isEmpty)
        #expect(registry.takeDirty(now: 21, touchingParked: true).map(\.lastUsed) == [21])
        #expect(registry.takeDirty(now: 22, touchingParked: true).isEmpty)
    }

    @Test func expiryDropsIdleObserversButNotParkedOnes() {
        let registry = ObservationRegistry(retain: 10)
        registry.add(ObserverSnapshot(id: "idle", cursor: 0, ttlSeconds: 5, lastUsed: 0))
        registry.add(ObserverSnapshot(id: "parked", cursor: 0, ttlSeconds: 5, lastUsed: 0))
        _ = registry.track("idle", keys: [PropertyKey("/x")], at: 0, now: 0)
        _ = registry.poll("parked", since: 0, limit: 10, now: 0, parking: .waiter(Waiter()))
        let result1 = registry.expire(now: 4)
        #expect(result1.isEmpty)
        let result2 = registry.expire(now: 6)
        #expect(result2 == ["idle"])
        #expect(registry.readers(of: PropertyKey("/x")).isEmpty)
        #expect(registry.observer("parked") != nil)
    }

    /// Observers wait for expiry in the order of the time they could expire
    /// at: one used since it was queued is looked at again at its new time,
    /// a parked one every second until it leaves.
    @Test func anObserverUsedSinceItWasQueuedExpiresAtItsNewTimeAndAParkedOneOnceItLeaves() {
        let registry = ObservationRegistry(retain: 10)
        registry.add(ObserverSnapshot(id: "used", cursor: 0, ttlSeconds: 5, lastUsed: 0))
        registry.add(ObserverSnapshot(id: "parked", cursor: 0, ttlSeconds: 5, lastUsed: 0))
        registry.add(ObserverSnapshot(id: "idle", cursor: 0, ttlSeconds: 7, lastUsed: 0))
        let touched = registry.touch("used", now: 4)
        #expect(touched)
        _ = registry.poll("parked", since: 0, limit: 10, now: 0, parking: .waiter(Waiter()))
        var expired = registry.expire(now: 6)
        #expect(expired == [])
        expired = registry.expire(now: 7.5)
        #expect(expired == ["idle"])
        expired = registry.expire(now: 8.5)
        #expect(expired == [])
        expired = registry.expire(now: 9.5)
        #expect(expired == ["used"])
        #expect(registry.observer("parked") != nil)
        // Its poll gone without being answered: it was last used at 0.
        _ = registry.takeWaiter(of: "parked")
        expired = registry.expire(now: 11)
        #expect(expired == ["parked"])
        #expect(registry.observerCount == 0)
        expired = registry.expire(now: 100)
        #expect(expired == [])
    }

    /// Observers removed (by a client, or by another instance's expiry)
    /// leave their entries in the expiry queue only until it holds twice
    /// as many as there are observers.
    @Test func theExpiryQueueStaysWithinTwiceTheObserversWhenTheyAreRemovedOneByOne() {
        let registry = ObservationRegistry(retain: 10)
        for i in 0..<100 { registry.add(ObserverSnapshot(id: "kept\(i)", cursor: 0, ttlSeconds: 600, lastUsed: 0)) }
        var most = 0
        for i in 0..<10_000 {
            registry.add(ObserverSnapshot(id: "gone\(i)", cursor: 0, ttlSeconds: 600, lastUsed: 0))
            _ = registry.remove("gone\(i)")
            most = max(most, registry.queuedForExpiry)
        }
        #expect(most <= 2 * 101 + 1024 + 1)
        // The observers still there are still queued: each expires.
        let expired = registry.expire(now: 601)
        #expect(expired.count == 100)
    }

    @Test func tooManyReadsAreRefused() {
        let registry = ObservationRegistry(retain: 10, maxReadsPerObserver: 2)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        if case .tooManyReads = registry.track("a", keys: ["/1", "/2", "/3"].map(PropertyKey.init), at: 0, now: 0) {} else {
            Issue.record("expected tooManyReads")
        }
        #expect(registry.observer("a")?.reads.isEmpty == true)
    }
}

/// The log is bounded by what its changes weigh as well as by their count.
@Suite struct LogBytesTests {
    static func change(_ seq: Int64, size: Int) -> Change {
        PendingChange.set("/x", old: "", new: String(repeating: "y", count: size)).committed(seq: seq, transaction: seq)
    }

    @Test func theOldestGoWhenTheLogWeighsTooMuchButTheNewestStays() {
        let weight = Self.change(1, size: 1000).weight
        let registry = ObservationRegistry(retain: 100, retainBytes: 3 * weight)
        _ = registry.publish((1...5).map { Self.change($0, size: 1000) })
        #expect(registry.oldestAvailableSeq == 2)
        // One change heavier than the whole bound is still kept, alone.
        _ = registry.publish([Self.change(6, size: 10 * weight)])
        #expect(registry.oldestAvailableSeq == 5)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        guard case .gone(let oldest) = registry.poll("a", since: 4, limit: 10, now: 0).poll else {
            Issue.record("expected gone")
            return
        }
        #expect(oldest == 5)
        guard case .changes(_, let cursor) = registry.poll("a", since: 5, limit: 10, now: 0).poll else {
            Issue.record("expected changes")
            return
        }
        #expect(cursor == 6)
    }

    @Test func aRestoredLogIsCutToItsBytes() {
        let weight = Self.change(1, size: 500).weight
        let registry = ObservationRegistry(retain: 100, retainBytes: 2 * weight)
        registry.restore(observers: [], changes: (1...4).map { Self.change($0, size: 500) }, lastSeq: 4)
        #expect(registry.oldestAvailableSeq == 2)
    }
}
