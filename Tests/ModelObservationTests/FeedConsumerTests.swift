import ModelObservation
import Testing

/// An observer has one consumer of its feed at a time, and a parked poll
/// is answered by exactly one of those who would answer it: the registry's
/// own operations decide both, each under one hold of its lock.
@Suite struct FeedConsumerTests {
    final class Poll: PollWaiter, @unchecked Sendable {
        init() {
            super.init(observer: "a", since: nil, limit: 10, coalesce: false)
        }
    }

    final class Stream: StreamWaiter, @unchecked Sendable {}

    /// Observer "a", which read `/x`; nothing changed yet.
    static func registry() -> ObservationRegistry {
        let registry = ObservationRegistry(retain: 100)
        registry.add(ObserverSnapshot(id: "a", cursor: 0, ttlSeconds: 60, lastUsed: 0))
        _ = registry.track("a", keys: [PropertyKey("/x")], at: 0, now: 0)
        return registry
    }

    static func change(_ seq: Int64) -> Change {
        PendingChange.set("/x", old: String(seq - 1), new: String(seq)).committed(seq: seq, transaction: seq)
    }

    @Test func aPollEndsTheObserversStreamWhetherParkedOrDelivering() {
        let registry = Self.registry()
        let stream = Stream()
        #expect(registry.openStream(stream, of: "a").displaced == nil)
        // Parked: nothing to send.
        guard case .parked = registry.pollStream(stream, of: "a", since: 0, limit: 10, coalesce: false, now: 0) else {
            Issue.record("expected the stream parked")
            return
        }
        let (poll, displaced, ended) = registry.pollAsConsumer("a", since: nil, limit: 10, coalesce: false, now: 0, parking: .never)
        guard case .changes(let changes, _) = poll else {
            Issue.record("expected an answer, got \(poll)")
            return
        }
        #expect(changes.isEmpty)
        #expect(displaced == nil)
        // Taken as the waiter and as the open stream: named once.
        #expect(ended.count == 1 && ended.first === stream)
        #expect(stream.isSuperseded)
        // A change now does not reach it, and it answers nothing more.
        #expect(registry.publish([Self.change(1)]).isEmpty)
        #expect(registry.pollStream(stream, of: "a", since: 0, limit: 10, coalesce: false, now: 0) == nil)
    }

    /// A stream asked again while it is parked already (a delivery queued
    /// behind the one that parked it: its socket drained meanwhile) stays
    /// parked; it is no other consumer that parked meanwhile.
    @Test func aStreamAskedAgainWhileParkedStaysParked() {
        let registry = Self.registry()
        let stream = Stream()
        _ = registry.openStream(stream, of: "a")
        for round in 1...2 {
            guard case .parked = registry.pollStream(stream, of: "a", since: 0, limit: 10, coalesce: false, now: 0) else {
                Issue.record("round \(round): expected the stream parked")
                return
            }
        }
        // Still the observer's consumer: a change wakes it.
        let woken = registry.publish([Self.change(1)])
        #expect(woken.count == 1 && woken.first?.waiter === stream)
    }

    @Test func aNewerStreamSupersedesTheOlderAndTakesAParkedPollsPlace() {
        let registry = Self.registry()
        let poll = Poll()
        _ = registry.poll("a", since: nil, limit: 10, now: 0, parking: .waiter(poll))
        let older = Stream()
        let first = registry.openStream(older, of: "a")
        #expect(first.displaced === poll)
        #expect(first.earlier == nil)
        let newer = Stream()
        let second = registry.openStream(newer, of: "a")
        #expect(second.earlier === older)
        #expect(older.isSuperseded && !newer.isSuperseded)
        // The older one ending does not take the newer one's place away.
        registry.closeStream(older, of: "a")
        let (_, _, ended) = registry.pollAsConsumer("a", since: nil, limit: 10, coalesce: false, now: 0, parking: .never)
        #expect(ended.count == 1 && ended.first === newer)
    }

    @Test func aParkedPollIsAnsweredByTheFirstToClaimItOnly() {
        let registry = Self.registry()
        let poll = Poll()
        _ = registry.poll("a", since: nil, limit: 10, now: 0, parking: .waiter(poll))
        let woken = registry.publish([Self.change(1)])
        #expect(woken.count == 1 && woken.first?.waiter === poll)
        // Its deadline passes while the wake is under way: the deadline
        // claims it first, so the wake answers nothing.
        guard let (answer, before) = registry.answerAtDeadline(poll, now: 0), case .changes(let changes, let cursor) = answer else {
            Issue.record("expected the deadline to answer")
            return
        }
        #expect(changes.map(\.seq) == [1] && cursor == 1 && before == 0)
        #expect(registry.repoll(poll, parkAgain: true, now: 0) == nil)
        #expect(registry.cursor(of: "a") == 1)
    }

    @Test func aWokenPollWithNothingToSayParksAgainAndGivesItsClaimBack() {
        let registry = Self.registry()
        let poll = Poll()
        _ = registry.poll("a", since: nil, limit: 10, now: 0, parking: .waiter(poll))
        // Woken by nothing it reads (as after another instance's reload): parked again.
        #expect(registry.takeWaiter(of: "a") === poll)
        guard case .parked = registry.repoll(poll, parkAgain: true, now: 0) else {
            Issue.record("expected parked again")
            return
        }
        #expect(registry.waiter(of: "a") === poll)
        #expect(!poll.isClaimed)
        // Expired: not parked again, answered with nothing at its cursor.
        poll.expire()
        guard case .changes(let changes, let cursor) = registry.repoll(poll, parkAgain: true, now: 0) else {
            Issue.record("expected an answer")
            return
        }
        #expect(changes.isEmpty && cursor == 0)
        #expect(poll.isClaimed)
    }
}
