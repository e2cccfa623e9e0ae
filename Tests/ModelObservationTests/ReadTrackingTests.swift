import ModelObservation
import Testing

/// A tracked read takes effect only once it is stored, so that an observer
/// is never told of a change through a read a restart would lose.
@Suite struct ReadTrackingTests {
    struct StorageFailed: Error {}

    static let list = PropertyKey("/list")
    static let name = PropertyKey("/list/7/name")

    /// A registry with observer "a" and, at seq 1, an insert into `/list`
    /// whose element's `name` its receivers count as read.
    static func registryWithInsert() -> ObservationRegistry {
        let registry = ObservationRegistry(retain: 100)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        let insert = PendingChange.insert(into: list.path, element: #"{"id":"7","name":"x"}"#, elementKeys: [name])
        _ = registry.publish([insert.committed(seq: 1, transaction: 1)])
        return registry
    }

    static func changes(_ registry: ObservationRegistry, since: Int64) -> [Change]? {
        guard case .changes(let changes, _) = registry.poll("a", since: since, limit: 10, now: 0).poll else { return nil }
        return changes
    }

    @Test func readsAndTheReadsImpliedByInsertsSinceTakeEffectOnlyWhenApplied() throws {
        let registry = Self.registryWithInsert()
        // Read in a response built before the insert.
        let plan = registry.planTrack("a", keys: [Self.list], at: 0, now: 0)
        guard case .reads(let added, let replayed, _) = plan else {
            Issue.record("expected reads to add")
            return
        }
        #expect(added.map { "\($0.0)@\($0.1)" } == ["/list@0", "/list/7/name@1"])
        #expect(replayed)
        // Planned, not yet stored: no poll delivers through them.
        #expect(Self.changes(registry, since: 0)?.isEmpty == true)
        #expect(registry.readers(of: Self.list).isEmpty)

        guard case .tracked(let tracked, _) = registry.applyTrack("a", plan) else {
            Issue.record("expected tracked")
            return
        }
        #expect(tracked.map(\.0) == added.map(\.0))
        #expect(Self.changes(registry, since: 0)?.map(\.seq) == [1])
        #expect(registry.observer("a")?.reads == [Self.list: 0, Self.name: 1])
    }

    @Test func aReadThatIsNeverAppliedIsNotTracked() {
        let registry = Self.registryWithInsert()
        _ = registry.planTrack("a", keys: [Self.list], at: 0, now: 0)
        #expect(registry.observer("a")?.reads.isEmpty == true)
        #expect(registry.readers(of: Self.list).isEmpty)
        #expect(Self.changes(registry, since: 0)?.isEmpty == true)
    }

    @Test func aRepeatedReadHasNothingToStore() {
        let registry = Self.registryWithInsert()
        let result1 = registry.touch("a", now: 5, hasRead: [Self.list])
        #expect(!result1)
        _ = registry.track("a", keys: [Self.list], at: 1, now: 0)
        let result2 = registry.touch("a", now: 5, hasRead: [Self.list])
        #expect(result2)
        #expect(registry.observer("a")?.lastUsed == 5)
        let result3 = registry.touch("nobody", now: 5, hasRead: [])
        #expect(!result3)
    }

    /// An insert whose element's keys include one its reader already read
    /// (an appended row implies the rows' membership) leaves that read's
    /// `seq` as it was: moved to the insert's, a poll from before would
    /// pass over every change in between, the insert among them.
    @Test func anImpliedReadOfAKeyAlreadyReadKeepsItsSeq() {
        let registry = ObservationRegistry(retain: 100)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        _ = registry.track("a", keys: [Self.list], at: 0, now: 0)
        let insert = PendingChange.insert(into: Self.list.path, element: "{}", elementKeys: [Self.list, Self.name])
        _ = registry.publish([insert.committed(seq: 1, transaction: 1), insert.committed(seq: 2, transaction: 2)])
        #expect(registry.observer("a")?.reads == [Self.list: 0, Self.name: 1])
        for since: Int64 in [0, 0] {  // the first poll answers from the inbox, the replay from the log
            #expect(Self.changes(registry, since: since)?.map(\.seq) == [1, 2])
        }
        #expect(Self.changes(registry, since: 1)?.map(\.seq) == [2])
    }
}
