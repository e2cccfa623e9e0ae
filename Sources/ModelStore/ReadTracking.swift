import Concurrency
import Logging
import ModelObservation

/// Observers' reads, kept in the registry and made durable by the engine's
/// `ReadDurability`, in one order.
///
/// Its lock (the reads lock) orders what changes reads in the registry and
/// what the journal records of them: a read planned, journaled and applied;
/// a commit published, with the reads its inserts imply journaled; a clear;
/// a swap of the journal's parts. The registry takes its own lock inside
/// this one, and runs nothing of this type's under it. The writer lock,
/// where it is held too, is taken before this one.
final class ReadTracking: Sendable {
    let registry: ObservationRegistry
    let durability: any ReadDurability
    /// Whether reads go to a journal on the reading thread.
    let journals: Bool
    private let lock = Locked(())
    /// Folds the journal into the database (set once, in `start`).
    private let folder = Locked<ServiceThread?>(nil)
    /// The registry's `droppedReadRecords` when the stored reads were last
    /// compacted.
    private let droppedAtCompaction = Locked(0)
    private let logger: Logger

    init(registry: ObservationRegistry, durability: any ReadDurability, logger: Logger) {
        self.registry = registry
        self.durability = durability
        journals = durability.journals
        self.logger = logger
    }

    // MARK: - Reads

    /// Tracks a read on the reading thread, when reads are journaled: its
    /// new reads, with those implied by inserts published since `seq`, are
    /// journaled before they take effect, with no commit published in
    /// between. Nil when it is not tracked here: the journal is not used,
    /// or could not take them; the read then waits for the group commit.
    func track(_ keys: [PropertyKey], by id: String, at seq: Int64, now: Double) -> ObservationRegistry.TrackResult? {
        guard journals else { return nil }
        var foldAsked = false
        let result: ObservationRegistry.TrackResult? = lock.withLock { _ in
            let plan = registry.planTrack(id, keys: keys, at: seq, now: now)
            let added: [(PropertyKey, Int64)], firstRead: [PropertyKey]?
            switch plan {
            case .refused(let result): return result
            case .reads(let reads, _, let first): (added, firstRead) = (reads, first)
            }
            // Every key read before: nothing to store or add, and the
            // registry's lock is not taken again.
            if added.isEmpty, firstRead == nil { return .tracked(added: [], wake: nil) }
            if !added.isEmpty {
                do {
                    if let firstRead, let seq = added.first?.1 {
                        foldAsked = try durability.journal([ObserverReads(observer: id, seq: seq, keys: firstRead)])
                    } else {
                        foldAsked = try durability.journal(ObserverReads.runs(of: id, added))
                    }
                } catch {
                    logger.error("the read journal failed, reads go to the database: \(error)")
                    return nil
                }
            }
            return registry.applyTrack(id, plan, keys: keys)
        }
        if foldAsked { folder.withLock { $0 }?.wake() }
        return result
    }

    /// Publishes `committed` to the registry, after their commit and before
    /// the state that holds them is visible; returns the parked waiters to
    /// wake. With a journal, a read can be tracked between the moment an
    /// insert's receivers were stored (`storedImplied`, by `seq`) and this
    /// one: the reads the insert implies for it are journaled here, before
    /// any poll can deliver through them. Holding the writer lock.
    func publish(_ committed: [Change], storedImplied: [Int64: Set<String>]) -> [(observer: String, waiter: ChangeWaiter)] {
        guard journals else { return registry.publish(committed) }
        return lock.withLock { _ in
            let (woken, implied) = registry.publishCollectingImplied(committed)
            let unstored = implied.filter { storedImplied[$0.seq]?.contains($0.observer) != true }
            if !unstored.isEmpty {
                do {
                    _ = try durability.journal(unstored)
                } catch {
                    logger.error("the read journal failed: \(error)")
                }
            }
            return woken
        }
    }

    /// Forgets every read of observer `id`, in the registry and stored, so
    /// that none stored before counts again; throws `notFound` for an
    /// unknown observer. Holding the writer lock.
    func clearReads(of id: String, now: Double) throws {
        // The reads journaled before the clear are stored, then deleted
        // with the others: none is folded in after it.
        try durability.prepareClear()
        let cleared = lock.withLock { _ in
            guard registry.clearReads(id, now: now) else { return false }
            durability.markClear()
            return true
        }
        guard cleared else { throw ModelError.notFound("no observer \(id)") }
        try durability.clearStored(of: id)
    }

    // MARK: - Folding and compacting

    /// Starts the thread that folds the journal, when there is one: woken
    /// when the journal asks, and every few seconds.
    func start(_ writer: Exclusive<any ModelStorage>) {
        guard journals else { return }
        let thread = ServiceThread.start(name: "observable.fold") { [weak self, writer] thread in
            while !thread.sleep(seconds: 5) {
                guard let self else { return }
                self.fold(all: false, writer)
                self.compactIfDue(writer)
            }
        }
        folder.withLock { $0 = thread }
    }

    /// Stops the folding thread, waiting for it at most `timeout` (nil:
    /// until it has ended).
    func stop(timeout: Duration?) {
        folder.withLock { $0 }?.stop(timeout: timeout)
    }

    /// Folds the journal into the database when its active part is large,
    /// or holds anything and `all` is asked: what a fold cut short left in
    /// the idle part first, then the active part once it is the idle one,
    /// a few thousand reads a transaction (the writer lock is let go
    /// between them).
    func fold(all: Bool, _ writer: Exclusive<any ModelStorage>) {
        guard journals else { return }
        do {
            try foldIdle(writer)
            // Under the writer lock: a clear folds too.
            let swapped = writer.withLock { _ in lock.withLock { _ in durability.swapIfDue(all: all) } }
            if swapped { try foldIdle(writer) }
        } catch {
            logger.error("folding the read journal failed: \(error)")
        }
    }

    private func foldIdle(_ writer: Exclusive<any ModelStorage>) throws {
        while try writer.withLock({ _ in try durability.foldIdleChunk() }) {}
    }

    /// Rewrites the stored batches of reads once about as many of their
    /// entries no longer count as are stored (see `compactionDue`): a few
    /// batches a transaction, the writer lock let go between them, an
    /// entry kept when its observer still reads each of its keys at its
    /// seq. So what is stored stays within about twice what counts, and
    /// each entry is rewritten a bounded number of times on average.
    func compactIfDue(_ writer: Exclusive<any ModelStorage>) {
        guard journals else { return }
        do {
            let dropped = registry.droppedReadRecords
            let since = dropped - droppedAtCompaction.withLock { $0 }
            guard let through = try writer.withLock({ _ in try durability.compactionDue(dropped: since) }) else { return }
            var after: Int64 = 0
            while let last = try writer.withLock({ _ -> Int64? in
                guard let batches = try durability.batchesToCompact(after: after, through: through) else { return nil }
                try durability.compact(batches, keeping: registry.stillReads(batches.entries))
                return batches.last
            }) {
                after = last
            }
            writer.withLock { _ in durability.compactionEnded() }
            droppedAtCompaction.withLock { $0 = dropped }
        } catch {
            logger.error("compacting the stored reads failed: \(error)")
        }
    }
}

extension ObserverReads {
    /// The reads `added` by one observer, one for each run of one `seq`:
    /// the read's own, then those of a replay.
    package static func runs(of observer: String, _ added: [(PropertyKey, Int64)]) -> [ObserverReads] {
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
