import ModelObservation

/// What the change feed asks of the store: the consumers of observers'
/// changes (parked polls, open streams) and the changes they are answered
/// with. The registry behind it is the store's own; this is the one door
/// the feed goes through.
public struct ObserverFeed: Sendable {
    let registry: ObservationRegistry

    /// A new poll of observer `id`, its one consumer from now on (see
    /// `ObservationRegistry.pollAsConsumer`).
    public func poll(_ id: String, since: Int64?, limit: Int, coalesce: Bool, now: Double,
                     parking: ObservationRegistry.Parking) -> (poll: ObservationRegistry.Poll, displaced: ChangeWaiter?, ended: [ChangeWaiter])
    {
        registry.pollAsConsumer(id, since: since, limit: limit, coalesce: coalesce, now: now, parking: parking)
    }

    /// Asks again for a parked poll that a change woke (see
    /// `ObservationRegistry.repoll`).
    public func repoll(_ waiter: PollWaiter, parkAgain: Bool, now: Double) -> ObservationRegistry.Poll? {
        registry.repoll(waiter, parkAgain: parkAgain, now: now)
    }

    /// Answers a parked poll whose deadline passed (see
    /// `ObservationRegistry.answerAtDeadline`).
    public func answerAtDeadline(_ waiter: PollWaiter, now: Double) -> (poll: ObservationRegistry.Poll, cursorBefore: Int64?)? {
        registry.answerAtDeadline(waiter, now: now)
    }

    /// Where a stream of observer `id` from `since` (nil: its cursor) starts.
    public func resumePoint(of id: String, since: Int64?) -> ObservationRegistry.ResumePoint {
        registry.resumePoint(of: id, since: since)
    }

    /// Makes `stream` observer `id`'s open stream and its one consumer (see
    /// `ObservationRegistry.openStream`).
    public func openStream(_ stream: StreamWaiter, of id: String) -> (displaced: ChangeWaiter?, earlier: StreamWaiter?) {
        registry.openStream(stream, of: id)
    }

    /// The next changes for `stream` after its cursor (see
    /// `ObservationRegistry.pollStream`).
    public func pollStream(_ stream: StreamWaiter, of id: String, since: Int64, limit: Int, coalesce: Bool,
                           now: Double) -> ObservationRegistry.Poll?
    {
        registry.pollStream(stream, of: id, since: since, limit: limit, coalesce: coalesce, now: now)
    }

    /// Forgets `stream`, which ended: marked closed, then withdrawn.
    public func closeStream(_ stream: StreamWaiter, of id: String) {
        stream.close()
        registry.closeStream(stream, of: id)
    }

    /// Observer `id`'s cursor, the default `since`.
    public func cursor(of id: String) -> Int64? {
        registry.cursor(of: id)
    }

    /// Observer `id`'s cursor, or the newest `seq` for an observer it does
    /// not know (what a poll that gave way answers).
    public func cursorOrNewest(of id: String) -> Int64 {
        registry.cursorOrNewest(of: id)
    }
}

extension Store {
    /// The change feed's door to the observers.
    public var feed: ObserverFeed { ObserverFeed(registry: registry) }

    /// The `seq` of the newest change this instance has heard of.
    public var lastSeq: Int64 { registry.lastSeq }

    /// Whether observer `id` exists.
    public func knowsObserver(_ id: String) -> Bool {
        registry.knows(id)
    }

    /// Marks observer `id` used; false when there is no such observer.
    @discardableResult
    public func touchObserver(_ id: String, now: Double) -> Bool {
        registry.touch(id, now: now)
    }

    /// Marks observer `id` used and returns it; nil when there is none.
    public func touchedObserver(_ id: String, now: Double) -> ObserverSnapshot? {
        registry.touchedObserver(id, now: now)
    }

    /// What the registry holds: observers, the clients holding them, and
    /// the bytes it is estimated to take.
    public var observerFacts: (observers: Int, clients: Int, bytes: Int) {
        (registry.observerCount, registry.owners.count, registry.memoryBytes)
    }
}
