import ModelObservation
import Testing

/// A coalesced poll answers only with something to say, and its cursor
/// moves past what folded away.
@Suite struct CoalescedPollTests {
    final class Waiter: ChangeWaiter {}

    /// A registry whose observer "a" read `/x`, then `/x` went 0 → 1 → 0
    /// (seqs 1 and 2), each change its own transaction.
    static func registry() -> ObservationRegistry {
        let registry = ObservationRegistry(retain: 100)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        _ = registry.track("a", keys: [PropertyKey("/x")], at: 0, now: 0)
        _ = registry.publish([
            PendingChange.set("/x", old: "0", new: "1").committed(seq: 1, transaction: 1),
            PendingChange.set("/x", old: "1", new: "0").committed(seq: 2, transaction: 2),
        ])
        return registry
    }

    @Test func aPageThatFoldsToNothingIsPassedOverAndAPollWithOnlySuchChangesParks() {
        let registry = Self.registry()
        let waiter = Waiter()
        let (parked, _) = registry.poll("a", since: 0, limit: 2, coalesce: true, now: 0, parking: .waiter(waiter))
        guard case .parked = parked else {
            Issue.record("expected parked, got \(parked)")
            return
        }
        registry.withdraw(waiter, of: "a")
        guard case .changes(let none, let past) = registry.poll("a", since: 0, limit: 2, coalesce: true, now: 0).poll else {
            Issue.record("expected changes")
            return
        }
        #expect(none.isEmpty && past == 2)

        _ = registry.publish([PendingChange.set("/x", old: "0", new: "2").committed(seq: 3, transaction: 3)])
        guard case .changes(let changes, let cursor) = registry.poll("a", since: 0, limit: 2, coalesce: true, now: 0).poll else {
            Issue.record("expected changes")
            return
        }
        #expect(changes.map { "\($0.seq):\($0.old ?? "")→\($0.new ?? "")" } == ["3:0→2"])
        #expect(cursor == 3)
    }

    @Test func aWokenPollParkingAgainYieldsToANewerPoll() {
        let registry = Self.registry()
        let older = Waiter()
        let newer = Waiter()
        _ = registry.poll("a", since: 2, limit: 10, coalesce: true, now: 0, parking: .waiter(older))
        // Woken by two changes committed together that fold away (removed
        // by publish), and meanwhile a newer poll parked.
        let woken = registry.publish([
            PendingChange.set("/x", old: "0", new: "1").committed(seq: 3, transaction: 3),
            PendingChange.set("/x", old: "1", new: "0").committed(seq: 4, transaction: 4),
        ])
        #expect(woken.first?.waiter === older)
        _ = registry.poll("a", since: 4, limit: 10, coalesce: true, now: 0, parking: .waiter(newer))
        let (again, displaced) = registry.poll("a", since: 2, limit: 10, coalesce: true, now: 0, displacing: false, parking: .waiter(older))
        guard case .changes(let changes, let cursor) = again else {
            Issue.record("expected an answer, got \(again)")
            return
        }
        #expect(changes.isEmpty && cursor == 4)
        #expect(displaced == nil)
        // The newer poll is still the one parked.
        let (_, replaced) = registry.poll("a", since: 4, limit: 10, now: 0, parking: .waiter(Waiter()))
        #expect(replaced === newer)
    }
}
