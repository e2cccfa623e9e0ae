import Concurrency
import FoundationEssentials
import ModelObservation

extension Store {
    public static let defaultObserverTTL = 600
    public static let observerTTLRange = 1...86_400

    /// Creates an observer whose cursor is the current `seq`, for the
    /// client `owner` (nil: one counted toward no client's quota). Refused,
    /// with nothing changed, past its quotas: the configured longest TTL
    /// (`422`), the observers one client may hold (`429`), the observers in
    /// all and the registry's memory (`507`).
    public func createObserver(ttlSeconds: Int = Store.defaultObserverTTL, owner: String? = nil,
                               now: Double = ServerClock.wallSeconds) throws -> ObserverSnapshot
    {
        guard Self.observerTTLRange.contains(ttlSeconds) else {
            throw ModelError.unprocessable("ttlSeconds must be between 1 and 86400")
        }
        guard ttlSeconds <= quotas.maxTTL else {
            quotas.ttlRefusals.record()
            throw ModelError.unprocessable("ttlSeconds must be at most \(quotas.maxTTL), the longest this server keeps an unused observer (--max-observer-ttl)")
        }
        return try exclusive { storage in
            // Under the writer lock no other observer is made meanwhile.
            if let refusal = registry.admission(of: owner, maxPerOwner: quotas.maxPerClient, maxObservers: quotas.maxObservers) {
                throw self.refusal(refusal)
            }
            // Under the writer lock no commit can move `seq` meanwhile.
            let observer = ObserverSnapshot(id: Identifier.makeRandom(), cursor: registry.lastSeq, ttlSeconds: ttlSeconds, lastUsed: now,
                                            owner: owner)
            try storage.insertObserver(observer)
            registry.add(observer)
            return observer
        }
    }

    /// Deletes an observer and its reads; returns its parked waiter, if any.
    public func deleteObserver(_ id: String) throws -> ChangeWaiter? {
        try exclusive { storage in
            let (existed, waiter) = registry.remove(id)
            guard existed else { throw ModelError.notFound("no observer \(id)") }
            try storage.deleteObserver(id)
            return waiter
        }
    }

    /// Forgets every read of an observer.
    public func clearReads(of id: String, now: Double = ServerClock.wallSeconds) throws {
        try exclusive { _ in try reads.clearReads(of: id, now: now) }
    }

    /// Records that observer `id` read `keys` in a response reflecting every
    /// change up to `seq`, persisting the reads that are new, on this thread.
    public func track(_ keys: [PropertyKey], by id: String, at seq: Int64, now: Double = ServerClock.wallSeconds) throws {
        guard let outcome = submitTrack(keys, by: id, at: seq, now: now, wait: { false }, then: { { _ in } }) else {
            preconditionFailure("a track that cannot wait is stored at once")
        }
        try outcome.get()
    }

    /// Records that observer `id` read `keys` in a response reflecting every
    /// change up to `seq`. The reads that are new are made durable on this
    /// thread when the engine's `ReadDurability` does so (SQLite's read
    /// journal); else they are stored with those of other requests that
    /// wait beside them, in one transaction (group commit, as `submit`
    /// does for writes): the outcome is returned when they were stored on
    /// this thread, and nil when they were queued (`wait` agreed), for the
    /// closure `completion` makes to get on the committing thread.
    /// `completion` is called only when the reads are to be stored by the
    /// committing thread, before `wait`.
    /// A read that adds nothing (the same resource again) stores nothing.
    public func submitTrack(_ keys: [PropertyKey], by id: String, at seq: Int64, now: Double = ServerClock.wallSeconds,
                            wait: () -> Bool, then completion: () -> @Sendable (Result<Void, any Error>) -> Void)
        -> Result<Void, any Error>?
    {
        if let result = reads.track(keys, by: id, at: seq, now: now) {
            if case .tracked(_, let waiter?) = result, let wake = wakeHandler { wake([(id, waiter)]) }
            if case .overMemoryLimit = result { quotas.memoryRefusals.record() }
            return PendingTrack.outcome(of: result, observer: id)
        }
        if registry.touch(id, now: now, hasRead: keys) { return .success(()) }
        let track = PendingTrack(observer: id, keys: keys, seq: seq, now: now, completion: completion())
        return commitOrQueue(track, wait: wait) ? track.outcome : nil
    }

    /// Stores the new reads of `tracks` in one transaction, then lets them
    /// take effect; parked waiters that a replay reached go to `woken`.
    /// Call holding the writer lock, so that no commit runs between the
    /// moment the reads are worked out and the moment they take effect: a
    /// commit stores the reads its inserts imply for the readers the
    /// registry knows, and a read tracked after it replays those inserts and
    /// stores what they imply with the read itself. Stored before they take
    /// effect, so no poll delivers a change through a read not stored.
    ///
    /// They take effect in the order of the `seq` each read saw, not the
    /// order they came in: a key two of them read keeps the earlier `seq`
    /// (a key already read keeps its own), so the changes between the two
    /// reach its observer, and the stored row (the first one stored) says
    /// the same.
    func store(_ tracks: [PendingTrack], on storage: any ModelStorage, woken: inout [(observer: String, waiter: ChangeWaiter)]) {
        let tracks = tracks.enumerated().sorted { ($0.element.seq, $0.offset) < ($1.element.seq, $1.offset) }.map(\.element)
        var planned: [(track: PendingTrack, plan: ObservationRegistry.TrackPlan)] = []
        do {
            try transaction(on: storage, woken: &woken) {
                // Worked out under one hold of the registry's lock for all.
                let plans = registry.planTracks(tracks.map { ($0.observer, $0.keys, $0.seq, $0.now) })
                var reads: [ObserverReads] = []
                reads.reserveCapacity(tracks.count)
                var adding: [PendingTrack] = []
                for (track, plan) in zip(tracks, plans) {
                    switch plan {
                    case .refused(let result):
                        if case .overMemoryLimit = result { quotas.memoryRefusals.record() }
                        track.conclude(result)
                    case .reads(let added, _, _):
                        planned.append((track, plan))
                        guard !added.isEmpty else { continue }
                        reads += ObserverReads.runs(of: track.observer, added)
                        adding.append(track)
                    }
                }
                try self.reads.durability.store(reads, addedBy: adding)
            }
        } catch {
            for track in tracks { track.fail(error) }
            return
        }
        let results = registry.applyTracks(planned.map { ($0.track.observer, $0.plan, $0.track.keys) })
        for ((track, _), result) in zip(planned, results) {
            if case .tracked(_, let waiter?) = result { woken.append((track.observer, waiter)) }
            track.conclude(result)
        }
    }
}
