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
            let observer = ObserverSnapshot(id: Identifier.make(), cursor: registry.lastSeq, ttlSeconds: ttlSeconds, lastUsed: now)
            try storage.insertObserver(observer)
            registry.add(observer)
            return observer
        }
    }

    /// Deletes an observer and its reads; returns its parked waiter, if any.
    public func deleteObserver(_ id: String) throws -> (any ChangeWaiter)? {
        try exclusive { storage in
            let (existed, waiter) = registry.remove(id)
            guard existed else { throw ModelError.notFound("no observer \(id)") }
            try storage.deleteObserver(id)
            return waiter
        }
    }

    /// Forgets every read of an observer.
    public func clearReads(of id: String, now: Double = ServerClock.wallSeconds) throws {
        try exclusive { storage in
            guard let readJournal else {
                guard registry.clearReads(id, now: now) else { throw ModelError.notFound("no observer \(id)") }
                try storage.clearReads(of: id)
                return
            }
            // The reads journaled before the clear are stored, then deleted
            // with the others: none is folded in after it.
            try foldIdleReads(readJournal, on: storage)
            let cleared = registry.clearReads(id, now: now) { readJournal.swap() }
            guard cleared else { throw ModelError.notFound("no observer \(id)") }
            try foldIdleReads(readJournal, on: storage)
            try storage.clearReads(of: id)
        }
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
    /// change up to `seq`. The reads that are new are stored with those of
    /// other requests that wait beside them, in one transaction (group
    /// commit, as `submit` does for writes): the outcome is returned when
    /// they were stored on this thread, and nil when they were queued
    /// (`wait` agreed), for the closure `completion` makes to get on the
    /// committing thread. `completion` is called only when the reads are
    /// to be stored by the committing thread, before `wait`.
    /// A read that adds nothing (the same resource again) stores nothing.
    public func submitTrack(_ keys: [PropertyKey], by id: String, at seq: Int64, now: Double = ServerClock.wallSeconds,
                            wait: () -> Bool, then completion: () -> @Sendable (Result<Void, any Error>) -> Void)
        -> Result<Void, any Error>?
    {
        if let readJournal, let result = journal(keys, by: id, at: seq, now: now, in: readJournal) {
            if case .tracked(_, let waiter?) = result, let wake = wakeHandler { wake([(id, waiter)]) }
            return PendingTrack.outcome(of: result, observer: id)
        }
        if registry.touch(id, now: now, hasRead: keys) { return .success(()) }
        let track = PendingTrack(observer: id, keys: keys, seq: seq, now: now, completion: completion())
        return commitOrQueue(track, wait: wait) ? track.outcome : nil
    }

    /// Tracks the read on this thread, its new reads appended to the read
    /// journal before they take effect, all under the registry's lock: so
    /// no commit publishes in between, and no poll can deliver a change
    /// through a read not stored. Nil when the journal could not take them
    /// (a full disk): they are then stored in the database.
    private func journal(_ keys: [PropertyKey], by id: String, at seq: Int64, now: Double,
                         in readJournal: ReadJournal) -> ObservationRegistry.TrackResult?
    {
        do {
            return try registry.track(id, keys: keys, at: seq, now: now) { added, keys in
                if let keys, let seq = added.first?.1 {
                    try readJournal.append([ObserverReads(observer: id, seq: seq, keys: keys)])
                } else {
                    try readJournal.append(ObserverReads.runs(of: id, added))
                }
                if readJournal.askFold() { folder.withLock { $0 }?.wake() }
            }
        } catch {
            logger.error("the read journal failed, reads go to the database: \(error)")
            return nil
        }
    }

    /// Stores the next reads of the read journal's idle file, at most
    /// `foldChunk`, in one transaction; returns false when none was left.
    /// Holding the writer lock.
    private func storeNextIdle(_ readJournal: ReadJournal, on storage: any ModelStorage) throws -> Bool {
        let (reads, end) = readJournal.nextIdle(limit: Self.foldChunk)
        guard !reads.isEmpty else { return false }
        try storage.transaction { try storage.addReads(reads) }
        // Only once they are stored: a fold that failed starts there again.
        readJournal.folded(through: end)
        return true
    }

    /// Stores what the idle file of the read journal holds, then empties
    /// it. Holding the writer lock.
    func foldIdleReads(_ readJournal: ReadJournal, on storage: any ModelStorage) throws {
        while try storeNextIdle(readJournal, on: storage) {}
        try readJournal.resetIdle()
    }

    /// Starts the thread that folds the read journal: woken when the active
    /// file passes the threshold, and every few seconds.
    func startFolding() {
        let thread = ServiceThread.start(name: "observable.fold") { [weak self] thread in
            while !thread.sleep(seconds: 5) {
                guard let self else { return }
                self.foldReads()
                self.compactReadsIfDue()
            }
        }
        folder.withLock { $0 = thread }
    }

    /// Folds the read journal into the database when the active file is
    /// large or `all` is asked: what a fold cut short left in the idle file
    /// first, then the active file once it is the idle one, a few thousand
    /// reads a transaction (the writer lock is let go between them).
    func foldReads(all: Bool = false) {
        guard let readJournal else { return }
        do {
            try foldIdleInChunks(readJournal)
            // Under the writer lock: `clearReads` swaps too.
            let swapped = try exclusive { _ in
                registry.quiesced {
                    guard readJournal.idleIsEmpty,
                          all ? readJournal.activeSize > 0 : readJournal.activeSize >= ReadJournal.foldThreshold
                    else { return false }
                    readJournal.swap()
                    return true
                }
            }
            if swapped { try foldIdleInChunks(readJournal) }
        } catch {
            logger.error("folding the read journal failed: \(error)")
        }
    }

    private func foldIdleInChunks(_ readJournal: ReadJournal) throws {
        while try exclusive({ storage in try storeNextIdle(readJournal, on: storage) }) {}
        try exclusive { _ in try readJournal.resetIdle() }
    }

    static let foldChunk = 4096

    /// Rewrites the stored batches of reads (`SQLiteStorage`) once about as
    /// many of their entries no longer count (their observers deleted,
    /// expired or cleared) as are stored, and at least
    /// `compactionMinimum`: a few batches a transaction, the writer lock
    /// let go between them, an entry kept when its observer still reads
    /// each of its keys at its seq. So what is stored stays within about
    /// twice what counts, and each entry is rewritten a bounded number of
    /// times on average.
    func compactReadsIfDue() {
        guard readJournal != nil else { return }
        do {
            let dropped = registry.droppedReadRecords
            let through: Int64? = try exclusive { storage in
                guard let storage = storage as? SQLiteStorage else { return nil }
                let dead = dropped - readCompaction.withLock { $0 } + storage.deadBatchedReads
                guard dead >= Self.compactionMinimum, dead * 2 >= storage.batchedReads else { return nil }
                return try storage.lastReadBatch()
            }
            guard let through else { return }
            var after: Int64 = 0
            while let last = try exclusive({ storage in
                try storage.transaction {
                    try (storage as! SQLiteStorage).compactReadBatches(after: after, through: through, limit: 2) { entries in
                        registry.stillReads(entries)
                    }
                }
            }) {
                after = last
            }
            try exclusive { storage in (storage as? SQLiteStorage)?.deadBatchedReads = 0 }
            readCompaction.withLock { $0 = dropped }
        } catch {
            logger.error("compacting the stored reads failed: \(error)")
        }
    }

    static let compactionMinimum = 4096

    /// Stores the new reads of `tracks` in one transaction, then lets them
    /// take effect; parked waiters that a replay reached go to `woken`.
    /// Call holding the writer lock, so that no commit runs between the
    /// moment the reads are worked out and the moment they take effect: a
    /// commit stores the reads its inserts imply for the readers the
    /// registry knows, and a read tracked after it replays those inserts and
    /// stores what they imply with the read itself. Stored before they take
    /// effect, so no poll delivers a change through a read not stored.
    func store(_ tracks: [PendingTrack], on storage: any ModelStorage, woken: inout [(observer: String, waiter: any ChangeWaiter)]) {
        var planned: [(track: PendingTrack, added: [(PropertyKey, Int64)], replayed: Bool)] = []
        do {
            try transaction(on: storage, woken: &woken) {
                // Worked out under one hold of the registry's lock for all.
                let plans = registry.planTracks(tracks.map { ($0.observer, $0.keys, $0.seq, $0.now) })
                var reads: [ObserverReads] = []
                reads.reserveCapacity(tracks.count)
                for (track, plan) in zip(tracks, plans) {
                    switch plan {
                    case .refused(let result):
                        track.conclude(result)
                    case .reads(let added, let replayed):
                        planned.append((track, added, replayed))
                        guard !added.isEmpty else { continue }
                        reads += ObserverReads.runs(of: track.observer, added)
                        // Inside the ordered transaction: the others replay the read itself.
                        shared?.journalTrack(observer: track.observer, keys: track.keys, seq: track.seq)
                    }
                }
                try storage.addReads(reads)
            }
        } catch {
            for track in tracks { track.fail(error) }
            return
        }
        let results = registry.applyTracks(planned.map { ($0.track.observer, $0.added, $0.replayed) })
        for ((track, _, _), result) in zip(planned, results) {
            if case .tracked(_, let waiter?) = result { woken.append((track.observer, waiter)) }
            track.conclude(result)
        }
    }
}

extension ObserverReads {
    /// The reads `added` by one observer, one for each run of one `seq`:
    /// the read's own, then those of a replay.
    static func runs(of observer: String, _ added: [(PropertyKey, Int64)]) -> [ObserverReads] {
        var reads: [ObserverReads] = []
        var start = added.startIndex
        while start < added.endIndex {
            let seq = added[start].1
            let end = added[start...].firstIndex { $0.1 != seq } ?? added.endIndex
            reads.append(ObserverReads(observer: observer, seq: seq, keys: added[start..<end].map(\.0)))
            start = end
        }
        return reads
    }
}
