import Concurrency
import ModelObservation

/// A write's way from `write` or `submit` to a committed, published,
/// current state; `GroupCommit` decides who commits it, and when.
extension Store {
    /// Transactions committed by writes, and the writes committed in them.
    public var commitCounts: (transactions: Int64, writes: Int64) { groupCommit.counts }

    /// Sets who is told about observers to wake after each commit.
    public func onWake(_ wake: @escaping Wake) {
        groupCommit.onWake(wake)
    }

    var wakeHandler: Wake? { groupCommit.wakeHandler }

    /// Runs `body` as one transaction. Its changes, plus those of computed
    /// properties whose value moved, are committed with the model's rows,
    /// then published and their observers woken.
    public func write<T: Sendable>(_ body: (inout WriteTransaction) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            let write = PendingWrite(body, completion: nil)
            commit([write])
            return try write.outcome.get()
        }
    }

    /// Commits `prepared` alone, as `write(_:)` does.
    public func write<T: Sendable>(_ prepared: PreparedWrite<T>) throws -> T {
        let write = PendingWrite(prepared.body, afterCommit: prepared.afterCommit, completion: nil)
        commit([write])
        return try write.outcome.get()
    }

    /// Commits `prepared` together with the writes that wait beside it.
    ///
    /// When nobody is committing, it is committed at once on this thread and
    /// its outcome returned. Otherwise `wait` is asked whether the caller
    /// can wait (a suspended connection can; it is called under the queue's
    /// lock, so the commit running cannot end in between): if so, the write
    /// is queued, nil is returned, and `completion` gets the outcome on the
    /// committing thread once the group it joined is committed. If not, it
    /// is committed on its own, as `write` does. Each write keeps its own
    /// changes, seqs and transaction number, and fails alone.
    public func submit<T: Sendable>(_ prepared: PreparedWrite<T>, wait: () -> Bool,
                                    then completion: @escaping @Sendable (Result<T, any Error>) -> Void) -> Result<T, any Error>?
    {
        let write = PendingWrite(prepared.body, afterCommit: prepared.afterCommit, completion: completion)
        return commitOrQueue(write, wait: wait) ? write.outcome : nil
    }

    /// Commits `write` on this thread, or queues it for the committing
    /// thread (see `GroupCommit.commitOrQueue`): true when its outcome is
    /// the caller's to read.
    func commitOrQueue(_ write: any QueuedWrite, wait: () -> Bool) -> Bool {
        groupCommit.commitOrQueue(write, wait: wait, commit: commit)
    }

    /// Commits `batch`: in one transaction when it can, else each write in
    /// its own. Then wakes the observers of the changes and hands each
    /// write its outcome, after the writer lock.
    func commit(_ batch: [any QueuedWrite]) {
        // Reads to store wait in the same queue; they are stored apart from
        // the models' writes, after them (`store(_:on:woken:)`).
        var writes: [any QueuedWrite] = []
        var tracks: [PendingTrack] = []
        for write in batch {
            if let track = write as? PendingTrack { tracks.append(track) } else { writes.append(write) }
        }
        // `replaced` is the state before the batch: kept so that the last
        // reference to what the writes replaced is dropped after the lock.
        let (woken, replaced) = writer.withLock { storage in
            let replaced = snapshot
            var woken: [(observer: String, waiter: ChangeWaiter)] = []
            if !writes.isEmpty && !transact(writes, on: storage, woken: &woken) && writes.count > 1 {
                // The transaction failed as a whole (a write failed after
                // changing rows, or the commit failed): each write again on
                // its own, so that only the one at fault fails.
                for write in writes { _ = transact([write], on: storage, woken: &woken) }
            }
            if !tracks.isEmpty { store(tracks, on: storage, woken: &woken) }
            return (woken, replaced)
        }
        // Observers first: a write's answer may take long to render (a
        // whole singleton), and the parked polls need only their changes.
        if !woken.isEmpty, let wake = wakeHandler { wake(woken) }
        for write in batch { write.finish(self) }
        withExtendedLifetime(replaced) {}
    }

    /// Runs the writes of `batch` in one transaction, each on the state the
    /// one before it left, commits, publishes and makes the result the
    /// current state. A write that throws before changing any row just fails
    /// alone. Returns false when the transaction was rolled back: then each
    /// write's outcome is the error.
    private func transact(_ batch: [any QueuedWrite], on storage: any ModelStorage,
                          woken: inout [(observer: String, waiter: ChangeWaiter)]) -> Bool
    {
        var committed: [Change] = []
        /// By change, the receivers whose implied reads were stored with it.
        var storedImplied: [Int64: Set<String>] = [:]
        var writes: Int64 = 0
        var state: ModelState
        do {
            if let sharing {
                // Decided on the current state.
                try beginCaughtUp(sharing, woken: &woken)
            } else {
                try storage.begin()
            }
            state = snapshot.state
            do {
                for write in batch {
                    let rowsBefore = storage.rowsChanged
                    let seqBefore = state.seq
                    let singletonsBefore = WriteTransaction.computedOfSingletons(in: state, catalog)
                    var transaction = WriteTransaction(state: state, storage: storage, catalog: catalog, rowQuota: rowQuota)
                    // The transaction's state is then the only reference: the
                    // write changes it in place (after the batch's first, which
                    // copies what it changes from the current snapshot).
                    state = ModelState(seq: seqBefore)
                    do {
                        try write.run(&transaction)
                    } catch {
                        // Out of room, SQLite may have rolled the whole
                        // transaction back already: the batch fails with it.
                        guard storage.rowsChanged == rowsBefore, !storage.isOutOfSpace(error) else { throw error }
                        // No row changed, so neither did the state (models
                        // change it only after storing its rows).
                        state = transaction.state
                        write.fail(mapped(error, from: storage))
                        continue
                    }
                    transaction.finish(singletonsBefore: singletonsBefore)
                    let first = seqBefore + 1
                    for (offset, change) in transaction.pending.enumerated() {
                        let change = change.committed(seq: first + Int64(offset), transaction: first)
                        let receivers = try append(change, to: storage)
                        // For the reads of a reader tracked in between (at publish, below).
                        if let receivers { storedImplied[change.seq] = receivers }
                        committed.append(change)
                    }
                    state = transaction.state
                    state.seq = seqBefore + Int64(transaction.pending.count)
                    writes += 1
                }
                try storage.commit()
            } catch {
                storage.rollback()
                throw error
            }
        } catch {
            let error = mapped(error, from: storage)
            for write in batch { write.fail(error) }
            return false
        }
        outOfSpace.committed()
        // Publish before the new state is visible: a read that sees the new
        // state then tracks at a seq the registry already knows.
        let next = Snapshot(state)
        published.store(state.seq, ordering: .releasing)
        woken += reads.publish(committed, storedImplied: storedImplied)
        show(next)
        sharing?.appliedOwnCommit()
        groupCommit.counted(writes: writes)
        return true
    }

    /// Stores `change`, and the reads it implies for its receivers; returns
    /// those receivers (nil when it implies none).
    private func append(_ change: Change, to storage: any ModelStorage) throws -> Set<String>? {
        try storage.append(change)
        // Whoever reads a collection has read the elements it is told about.
        // Reads stored in the group commit are tracked under this same lock
        // (`store(_:on:woken:)`), so the readers the registry names now are
        // those `publish` reaches; with SQLite's read journal, `publish`
        // journals the reads of a reader that came in between. One that has
        // just been deleted is skipped by PostgreSQL's join; on SQLite its
        // row stays until the next start deletes it (see
        // `SQLiteStorage.observers`).
        guard !change.impliedReads.isEmpty else { return nil }
        let receivers = registry.readers(of: change.keys, before: change.seq)
        try reads.durability.storeImplied(receivers.map { ObserverReads(observer: $0, seq: change.seq, keys: change.impliedReads) })
        return receivers
    }

    /// Runs `body` on the storage under the writer lock; on a shared one,
    /// in an ordered transaction, after catching up with the others.
    package func exclusive<T>(_ body: (any ModelStorage) throws -> T) throws -> T {
        var woken: [(observer: String, waiter: ChangeWaiter)] = []
        let result = try writer.withLock { storage -> T in
            guard sharing != nil else { return try body(storage) }
            return try transaction(on: storage, woken: &woken) { try body(storage) }
        }
        if !woken.isEmpty, let wake = wakeHandler { wake(woken) }
        return result
    }

    /// Runs `body` in one transaction on `storage`, an ordered one caught up
    /// with the others first on a shared storage, and commits it; rolls it
    /// back when `body` or the commit throws. Call holding the writer lock.
    func transaction<T>(on storage: any ModelStorage, woken: inout [(observer: String, waiter: ChangeWaiter)],
                        _ body: () throws -> T) throws -> T {
        if let sharing { try beginCaughtUp(sharing, woken: &woken) } else { try storage.begin() }
        do {
            let result = try body()
            if let sharing {
                try sharing.storage.commit()
                sharing.appliedOwnCommit()
            } else {
                try storage.commit()
            }
            return result
        } catch {
            if let sharing { sharing.storage.rollback() } else { storage.rollback() }
            throw mapped(error, from: sharing?.storage ?? storage)
        }
    }
}
