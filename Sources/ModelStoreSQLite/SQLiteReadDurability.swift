import Concurrency
import Logging
import ModelObservation
import ModelStore

/// SQLite's way of making reads durable. With `synchronous=normal` a read
/// goes to the read journal beside the database, on the thread that
/// answers it, and a thread of its own folds the journal into the database
/// (`observer_read_batches`) and compacts what it stored. With
/// `synchronous=full`, when the journal cannot be opened, and for a read
/// the journal could not take, reads are stored in the database, in the
/// group commit's transaction.
///
/// `@unchecked Sendable`: its storage is used only under the store's writer
/// lock, and its read journal as `ReadJournal` says (appended to and
/// swapped under the registry's lock, its idle file read and emptied under
/// the writer lock).
final class SQLiteReadDurability: ReadDurability, @unchecked Sendable {
    private let storage: SQLiteStorage
    /// The journal as opened: what a crash left in it is stored at start.
    private let openedJournal: ReadJournal?
    /// Where reads go before the database (with `synchronous=normal`).
    private let readJournal: ReadJournal?
    /// Folds the read journal into the database (set once, in `start`).
    private let folder = Locked<ServiceThread?>(nil)
    /// The registry's `droppedReadRecords` when the stored reads were last
    /// compacted (`compactReadsIfDue`).
    private let readCompaction = Locked(0)
    private let logger: Logger

    /// Opens the read journal `path-1` and `path-2` beside `storage`'s
    /// database; without it (it could not be opened) reads go to the
    /// database. Throws when another server holds the journal.
    init(storage: SQLiteStorage, journal path: String, synchronous: Store.Synchronous, logger: Logger) throws {
        var journal: ReadJournal?
        do {
            journal = try ReadJournal(path: path)
        } catch let error as ReadJournal.InUse {
            throw ModelError(.unavailable, error.description)
        } catch {
            // Reads are then committed to the database, as with `synchronous=full`.
            logger.warning("no read journal: \(error)")
        }
        self.storage = storage
        openedJournal = journal
        readJournal = synchronous == .normal ? journal : nil
        self.logger = logger
    }

    /// The reads a crash left in the journal are stored; with
    /// `synchronous=normal` new reads then go to it, else they are
    /// committed to the database before their answer, and it is removed.
    func recover() throws {
        guard let openedJournal else { return }
        let recovered = openedJournal.recovered()
        if !recovered.isEmpty {
            try storage.transaction { try storage.addReads(recovered) }
            logger.info("stored \(recovered.count) reads kept in the read journal")
        }
        try openedJournal.resetAll()
        if readJournal == nil { openedJournal.close(removing: true) }
    }

    /// Starts the thread that folds the read journal: woken when the active
    /// file passes the threshold, and every few seconds.
    func start(_ store: Store) {
        guard readJournal != nil else { return }
        let thread = ServiceThread.start(name: "observable.fold") { [weak self, weak store] thread in
            while !thread.sleep(seconds: 5) {
                guard let self, let store else { return }
                self.foldReads(in: store)
                self.compactReadsIfDue(in: store)
            }
        }
        folder.withLock { $0 = thread }
    }

    func stop(timeout: Duration?) {
        folder.withLock { $0 }?.stop(timeout: timeout)
    }

    func flush(_ store: Store) {
        foldReads(all: true, in: store)
    }

    func close() {
        readJournal?.close(removing: readJournal?.activeSize == 0 && readJournal?.idleIsEmpty == true)
    }

    // MARK: - Reads

    func track(_ keys: [PropertyKey], by id: String, at seq: Int64, now: Double, in store: Store) -> ObservationRegistry.TrackResult? {
        guard let readJournal else { return nil }
        return journal(keys, by: id, at: seq, now: now, in: readJournal, of: store)
    }

    /// Tracks the read on this thread, its new reads appended to the read
    /// journal before they take effect, all under the registry's lock: so
    /// no commit publishes in between, and no poll can deliver a change
    /// through a read not stored. Nil when the journal could not take them
    /// (a full disk): they are then stored in the database.
    private func journal(_ keys: [PropertyKey], by id: String, at seq: Int64, now: Double,
                         in readJournal: ReadJournal, of store: Store) -> ObservationRegistry.TrackResult?
    {
        do {
            return try store.registry.track(id, keys: keys, at: seq, now: now) { added, keys in
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

    func store(_ reads: [ObserverReads], addedBy tracks: [PendingTrack]) throws {
        try storage.addReads(reads)
    }

    func storeImplied(_ reads: [ObserverReads]) throws {
        try storage.addReads(reads)
    }

    /// With the read journal, a read can be tracked between an insert's
    /// stored receivers and this: the reads the insert implies for it are
    /// journaled here, before any poll can deliver through them.
    func publish(_ committed: [Change], storedImplied: [Int64: Set<String>], in store: Store)
        -> [(observer: String, waiter: any ChangeWaiter)]
    {
        guard let readJournal else { return store.registry.publish(committed) }
        return store.registry.publish(committed) { observer, seq, keys in
            guard storedImplied[seq]?.contains(observer) != true else { return }
            do {
                try readJournal.append([ObserverReads(observer: observer, seq: seq, keys: keys)])
            } catch {
                self.logger.error("the read journal failed: \(error)")
            }
        }
    }

    func clearReads(of id: String, now: Double, in store: Store) throws {
        guard let readJournal else {
            guard store.registry.clearReads(id, now: now) else { throw ModelError.notFound("no observer \(id)") }
            try storage.clearReads(of: id)
            return
        }
        // The reads journaled before the clear are stored, then deleted
        // with the others: none is folded in after it.
        try foldIdleReads(readJournal)
        let cleared = store.registry.clearReads(id, now: now) { readJournal.swap() }
        guard cleared else { throw ModelError.notFound("no observer \(id)") }
        try foldIdleReads(readJournal)
        try storage.clearReads(of: id)
    }

    // MARK: - Folding

    /// Stores the next reads of the read journal's idle file, at most
    /// `foldChunk`, in one transaction; returns false when none was left.
    /// Holding the writer lock.
    private func storeNextIdle(_ readJournal: ReadJournal) throws -> Bool {
        let (reads, end) = readJournal.nextIdle(limit: Self.foldChunk)
        guard !reads.isEmpty else { return false }
        try storage.transaction { try storage.addReads(reads) }
        // Only once they are stored: a fold that failed starts there again.
        readJournal.folded(through: end)
        return true
    }

    /// Stores what the idle file of the read journal holds, then empties
    /// it. Holding the writer lock.
    private func foldIdleReads(_ readJournal: ReadJournal) throws {
        while try storeNextIdle(readJournal) {}
        try readJournal.resetIdle()
    }

    /// Folds the read journal into the database when the active file is
    /// large or `all` is asked: what a fold cut short left in the idle file
    /// first, then the active file once it is the idle one, a few thousand
    /// reads a transaction (the writer lock is let go between them).
    func foldReads(all: Bool = false, in store: Store) {
        guard let readJournal else { return }
        do {
            try foldIdleInChunks(readJournal, in: store)
            // Under the writer lock: `clearReads` swaps too.
            let swapped = try store.exclusive { _ in
                store.registry.quiesced {
                    guard readJournal.idleIsEmpty,
                          all ? readJournal.activeSize > 0 : readJournal.activeSize >= ReadJournal.foldThreshold
                    else { return false }
                    readJournal.swap()
                    return true
                }
            }
            if swapped { try foldIdleInChunks(readJournal, in: store) }
        } catch {
            logger.error("folding the read journal failed: \(error)")
        }
    }

    private func foldIdleInChunks(_ readJournal: ReadJournal, in store: Store) throws {
        while try store.exclusive({ _ in try storeNextIdle(readJournal) }) {}
        try store.exclusive { _ in try readJournal.resetIdle() }
    }

    static let foldChunk = 4096

    // MARK: - Compaction

    /// Rewrites the stored batches of reads (`observer_read_batches`) once
    /// about as many of their entries no longer count (their observers
    /// deleted, expired or cleared) as are stored, and at least
    /// `compactionMinimum`: a few batches a transaction, the writer lock
    /// let go between them, an entry kept when its observer still reads
    /// each of its keys at its seq. So what is stored stays within about
    /// twice what counts, and each entry is rewritten a bounded number of
    /// times on average.
    func compactReadsIfDue(in store: Store) {
        guard readJournal != nil else { return }
        do {
            let dropped = store.registry.droppedReadRecords
            let through: Int64? = try store.exclusive { _ in
                let dead = dropped - readCompaction.withLock { $0 } + storage.deadBatchedReads
                guard dead >= Self.compactionMinimum, dead * 2 >= storage.batchedReads else { return nil }
                return try storage.lastReadBatch()
            }
            guard let through else { return }
            var after: Int64 = 0
            while let last = try store.exclusive({ _ in
                try storage.transaction {
                    try storage.compactReadBatches(after: after, through: through, limit: 2) { entries in
                        store.registry.stillReads(entries)
                    }
                }
            }) {
                after = last
            }
            try store.exclusive { _ in storage.deadBatchedReads = 0 }
            readCompaction.withLock { $0 = dropped }
        } catch {
            logger.error("compacting the stored reads failed: \(error)")
        }
    }

    static let compactionMinimum = 4096
}
