import Concurrency
import FoundationEssentials
import ModelObservation

extension Store {
    public static let defaultObserverTTL = 600
    public static let observerTTLRange = 1...86_400

    /// Creates an observer whose cursor is the current `seq`.
    public func createObserver(ttlSeconds: Int = Store.defaultObserverTTL, now: Double = ServerClock.wallSeconds) throws -> ObserverSnapshot {
        guard Self.observerTTLRange.contains(ttlSeconds) else {
            throw ModelError.unprocessable("ttlSeconds must be between 1 and 86400")
        }
        return try exclusive { storage in
            // Under the writer lock no commit can move `seq` meanwhile.
            let observer = ObserverSnapshot(id: Identifier.make(), cursor: registry.withLock { $0.lastSeq }, ttlSeconds: ttlSeconds, lastUsed: now)
            try storage.insertObserver(observer)
            registry.withLock { $0.add(observer) }
            return observer
        }
    }

    /// Deletes an observer and its reads; returns its parked waiter, if any.
    public func deleteObserver(_ id: String) throws -> (any ChangeWaiter)? {
        try exclusive { storage in
            let (existed, waiter) = registry.withLock { $0.remove(id) }
            guard existed else { throw ModelError.notFound("no observer \(id)") }
            try storage.deleteObserver(id)
            return waiter
        }
    }

    /// Forgets every read of an observer.
    public func clearReads(of id: String, now: Double = ServerClock.wallSeconds) throws {
        try exclusive { storage in
            guard registry.withLock({ $0.clearReads(id, now: now) }) else { throw ModelError.notFound("no observer \(id)") }
            try storage.clearReads(of: id)
        }
    }

    /// Records that observer `id` read `keys` in a response reflecting every
    /// change up to `seq`, persisting the reads that are new.
    public func track(_ keys: [PropertyKey], by id: String, at seq: Int64, now: Double = ServerClock.wallSeconds) throws {
        // A read that adds nothing (the same resource again) stores nothing.
        if registry.withLock({ $0.touch(id, now: now, hasRead: keys) }) { return }
        // Under the writer lock, so that no commit runs between the moment
        // the reads are worked out and the moment they take effect: a commit
        // stores the reads its inserts imply for the readers the registry
        // knows, and a read tracked after it replays those inserts and
        // stores what they imply with the read itself.
        let result = try exclusive { storage -> ObservationRegistry.TrackResult in
            switch registry.withLock({ $0.planTrack(id, keys: keys, at: seq, now: now) }) {
            case .refused(let result):
                return result
            case .reads(let added, let replayed):
                // Stored outside the registry's lock, before they take effect.
                if !added.isEmpty {
                    let reads = added.map { (id, $0.0, $0.1) }
                    if let shared {
                        // Inside the ordered transaction: the others replay the read itself.
                        try shared.addReads(reads)
                        shared.journalTrack(observer: id, keys: keys, seq: seq)
                    } else {
                        try storage.transaction { try storage.addReads(reads) }
                    }
                }
                return registry.withLock { $0.applyTrack(id, added, replayed: replayed) }
            }
        }
        switch result {
        case .unknownObserver:
            throw ModelError.notFound("no observer \(id)")
        case .tooManyReads(let limit):
            throw ModelError.unprocessable("observer \(id) would track more than \(limit) properties; clear its reads first")
        case .tracked(_, let waiter):
            if let waiter, let wake = wakeHandler { wake([(id, waiter)]) }
        }
    }
}
