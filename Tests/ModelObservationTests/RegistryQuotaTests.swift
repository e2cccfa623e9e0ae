@testable import ModelObservation
import Testing

/// What the registry keeps for the quotas: observers per owner, and the
/// bytes it is estimated to hold, each going down as observers and their
/// reads go; and the refusal of a read past the estimate's limit.
@Suite struct RegistryQuotaTests {
    func observer(_ id: String, owner: String?, ttl: Int = 60) -> ObserverSnapshot {
        ObserverSnapshot(id: id, cursor: 0, ttlSeconds: ttl, lastUsed: 0, owner: owner)
    }

    func set(_ seq: Int64, _ path: String) -> Change {
        PendingChange.set(path, old: "0", new: "1").committed(seq: seq, transaction: seq)
    }

    @Test func observersAreCountedByOwnerAndCountedOutWhenTheyGo() {
        let registry = ObservationRegistry(retain: 100)
        registry.add(observer("a", owner: "x", ttl: 10))
        registry.add(observer("b", owner: "x", ttl: 1000))
        registry.add(observer("c", owner: "y", ttl: 1000))
        registry.add(observer("d", owner: nil, ttl: 1000))
        #expect(registry.observers(of: "x") == 2)
        #expect(registry.owners == (2, 2))
        #expect(registry.admission(of: "x", maxPerOwner: 2, maxObservers: 10) == .ownerAtLimit(limit: 2))
        #expect(registry.admission(of: "y", maxPerOwner: 2, maxObservers: 10) == nil)
        #expect(registry.admission(of: nil, maxPerOwner: 0, maxObservers: 10) == nil)
        #expect(registry.admission(of: "y", maxPerOwner: 2, maxObservers: 4) == .atLimit(limit: 4))

        _ = registry.remove("b")
        #expect(registry.observers(of: "x") == 1)
        #expect(registry.expire(now: 20) == ["a"])
        #expect(registry.observers(of: "x") == 0)
        #expect(registry.owners == (1, 1))
        // An observer added again under its id (another instance's) replaces it, owner and all.
        registry.add(observer("c", owner: "z"))
        #expect(registry.observers(of: "y") == 0)
        #expect(registry.observers(of: "z") == 1)
        // Loaded again: counted from what was loaded.
        _ = registry.reload(observers: [observer("e", owner: "x"), observer("f", owner: "x")], changes: [], lastSeq: 0)
        #expect(registry.observers(of: "x") == 2)
        #expect(registry.observers(of: "z") == 0)
    }

    /// Whatever the observers did (reads of their own, reads shared in a
    /// group and copied, shapes, reads implied by inserts, clears, inboxes),
    /// once they are gone the estimate holds the change log alone.
    @Test func theEstimateComesBackToTheLogAloneWhenObserversGo() {
        let registry = ObservationRegistry(retain: 1000)
        #expect(registry.memoryBytes == 0)
        let keys = ["/truck/name", "/truck/orderCount", "/truck/donuts"].map(PropertyKey.init)
        let shape = Shape(collection: "/truck/orders").key
        for id in ["a", "b", "c", "d"] { registry.add(observer(id, owner: "x")) }
        let one = registry.memoryBytes
        #expect(one == 4 * MemoryEstimate.observer)
        // The same first read at the same seq: b and c share a's table.
        for id in ["a", "b", "c"] { _ = registry.track(id, keys: keys, at: 0, now: 0) }
        _ = registry.track("d", keys: [shape], at: 0, now: 0)
        let shared = registry.memoryBytes
        // c reads more: it copies the group's table.
        _ = registry.track("c", keys: [PropertyKey("/account/userName")], at: 0, now: 0)
        #expect(registry.memoryBytes == shared + keys.count * MemoryEstimate.copiedRead + MemoryEstimate.read(PropertyKey("/account/userName")))
        // An insert into /truck/donuts: its readers have read the new donut's name.
        let insert = PendingChange.insert(into: "/truck/donuts", element: #"{"id":"7","name":"Maple"}"#,
                                          elementKeys: [PropertyKey("/truck/donuts/7/name")]).committed(seq: 1, transaction: 1)
        var log = [insert]
        _ = registry.publish([insert])
        for seq in Int64(2)...20 {
            log.append(set(seq, "/truck/name"))
            _ = registry.publish([log.last!])
        }
        let logBytes = log.reduce(0) { $0 + MemoryEstimate.of($1) }
        #expect(registry.memoryBytes > shared + logBytes)
        _ = registry.poll("a", since: 0, limit: 5, now: 0)
        #expect(registry.clearReads("b", now: 0))
        for id in ["a", "b", "c", "d"] { _ = registry.remove(id) }
        #expect(registry.memoryBytes == logBytes)
        #expect(registry.owners == (0, 0))
    }

    /// A read that would pass the limit is refused before anything is
    /// recorded: a change to what it showed does not reach its reader.
    /// What another instance tracked is tracked whatever the limit.
    @Test func aReadPastTheMemoryLimitIsRefusedAndTracksNothing() {
        let limit = 2 * MemoryEstimate.observer + 3 * MemoryEstimate.read(PropertyKey("/1"))
        let registry = ObservationRegistry(retain: 100, maxBytes: limit)
        registry.add(observer("a", owner: nil))
        registry.add(observer("b", owner: nil))
        guard case .tracked = registry.track("a", keys: ["/1", "/2", "/3"].map(PropertyKey.init), at: 0, now: 0) else {
            Issue.record("a's reads fit")
            return
        }
        guard case .overMemoryLimit(let refusedAt) = registry.track("b", keys: [PropertyKey("/4")], at: 0, now: 0) else {
            Issue.record("expected overMemoryLimit")
            return
        }
        #expect(refusedAt == limit)
        #expect(registry.readers(of: PropertyKey("/4")).isEmpty)
        #expect(registry.observer("b")?.reads.isEmpty == true)
        _ = registry.publish([set(1, "/4")])
        guard case .changes(let heard, _) = registry.poll("b", since: 0, limit: 10, now: 0).poll else {
            Issue.record("b polls")
            return
        }
        #expect(heard.isEmpty)
        #expect(registry.admission(of: nil, maxPerOwner: 10, maxObservers: 10) == .overMemoryLimit(limit: limit))

        _ = registry.apply([.tracked("b", keys: [PropertyKey("/5")], seq: 1, now: 0)])
        #expect(registry.readers(of: PropertyKey("/5")) == ["b"])
        _ = registry.remove("a")
        guard case .tracked = registry.track("b", keys: [PropertyKey("/4")], at: 1, now: 0) else {
            Issue.record("room again once a is gone")
            return
        }
    }

    /// An observer that never polls holds at most `Inbox.limit` seqs, and
    /// a poll from far back still gets every change it read, once, in order.
    @Test func anObserverThatNeverPollsHasABoundedInboxAndMissesNothing() {
        let registry = ObservationRegistry(retain: 20_000)
        registry.add(observer("a", owner: nil))
        _ = registry.track("a", keys: [PropertyKey("/x")], at: 0, now: 0)
        var logBytes = 0
        let count = Int64(3 * RegistryCore.Inbox.limit + 17)
        for seq in 1...count {
            let change = seq % 3 == 0 ? set(seq, "/y") : set(seq, "/x")
            logBytes += MemoryEstimate.of(change)
            _ = registry.publish([change])
        }
        let inboxBytes = registry.memoryBytes - logBytes - MemoryEstimate.observer - MemoryEstimate.read(PropertyKey("/x"))
        #expect(inboxBytes > 0)
        #expect(inboxBytes <= RegistryCore.Inbox.limit * MemoryEstimate.inboxEntry)
        var seen: [Int64] = []
        var cursor: Int64 = 0
        while cursor < count {
            guard case .changes(let changes, let next) = registry.poll("a", since: cursor, limit: 1000, now: 0).poll else {
                Issue.record("a polls")
                return
            }
            seen += changes.map(\.seq)
            cursor = next
        }
        #expect(seen == (1...count).filter { $0 % 3 != 0 })
    }

    /// Past its cap, a write that reaches every observer leaves each that
    /// does not poll a backlog of at most `Inbox.limitPastCap` seqs, so the
    /// estimate stays within the cap plus that much an observer; and a poll
    /// from far back still gets every change it read, once, in order.
    @Test func pastTheCapAFanOutKeepsSmallBacklogsAndMissesNothing() {
        let observers = 300
        let cap = 1 << 20
        let registry = ObservationRegistry(retain: 20_000, maxBytes: cap)
        for index in 0..<observers {
            registry.add(observer("o\(index)", owner: nil))
            _ = registry.track("o\(index)", keys: [PropertyKey("/x")], at: 0, now: 0)
        }
        let count: Int64 = 2_000
        var peak = 0
        for seq in 1...count {
            _ = registry.publish([set(seq, seq % 4 == 0 ? "/y" : "/x")])
            peak = max(peak, registry.memoryBytes)
        }
        // Without the bound each would hold 1,500 seqs: 18 KB an observer, 5.4 MB in all.
        let slack = observers * (RegistryCore.Inbox.limitPastCap + 1) * MemoryEstimate.inboxEntry
        #expect(peak <= cap + slack, "peak \(peak) past \(cap) + \(slack)")
        for name in ["o0", "o\(observers - 1)"] {
            var seen: [Int64] = []
            var cursor: Int64 = 0
            while cursor < count {
                guard case .changes(let changes, let next) = registry.poll(name, since: cursor, limit: 1000, now: 0).poll else {
                    Issue.record("\(name) polls")
                    return
                }
                seen += changes.map(\.seq)
                cursor = next
            }
            #expect(seen == (1...count).filter { $0 % 4 != 0 })
        }
    }
}
