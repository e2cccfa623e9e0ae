import ModelObservation

/// Where an engine makes observers' reads durable: a sink the store hands
/// reads to, and asks to fold, compact and forget them. It holds the
/// engine's storage and nothing above it: neither the store nor the
/// registry is in its reach, and it publishes nothing. Each engine's
/// storage module supplies the one implementation (SQLite's: a read
/// journal beside the database, else the database; PostgreSQL's: the
/// database).
///
/// What the store keeps with it, across restarts and `kill -9`
/// (`ReadTracking`): a read is stored before it takes effect in the
/// registry, so no poll delivers a change through a read that is not
/// stored; the reads an insert implies for its receivers are stored with
/// the insert, or before any poll can deliver through them; and a read
/// stored before a clear never counts again after it.
///
/// "Holding the writer lock" below: the store's lock on the storage;
/// "holding the reads lock": `ReadTracking`'s, which orders the reads of
/// the registry and of the journal alike.
package protocol ReadDurability: AnyObject, Sendable {
    /// Stores the reads an earlier run left outside the database (a crash):
    /// called once at start, after the migrations and before the observers
    /// are loaded, so that they are loaded with those reads.
    func recover() throws

    /// Whether reads are appended to a journal on the thread that answers
    /// them (`journal`); if not, they wait for the group commit (`store`).
    var journals: Bool { get }

    /// Appends `reads` to the journal before they take effect. Holding the
    /// reads lock. Returns whether the journal asks to be folded now;
    /// throws when it could not take them (a full disk): they are then
    /// stored in the database, in the group commit.
    func journal(_ reads: [ObserverReads]) throws -> Bool

    /// Stores `reads`, those that the queued reads `tracks` add, in the
    /// transaction the group commit runs for them, before they take effect.
    /// Holding the writer lock.
    func store(_ reads: [ObserverReads], addedBy tracks: [PendingTrack]) throws

    /// Stores the reads an insert implies for the receivers the registry
    /// names at that moment, in the write's transaction. Holding the
    /// writer lock.
    func storeImplied(_ reads: [ObserverReads]) throws

    // MARK: - Clearing an observer's reads, in three steps

    /// Before the registry forgets the reads: what is journaled so far is
    /// stored. Holding the writer lock.
    func prepareClear() throws

    /// Right after the registry forgot them, in the same hold of the reads
    /// lock: nothing journaled from now on is folded in before the clear.
    /// Holding the writer lock and the reads lock.
    func markClear()

    /// Forgets every stored read of observer `id`, so that none stored
    /// before counts again. Holding the writer lock.
    func clearStored(of id: String) throws

    // MARK: - Folding the journal into the database

    /// Stores the next reads of the journal's idle part, a few thousand in
    /// one transaction; once none is left, empties it and returns false.
    /// Holding the writer lock.
    func foldIdleChunk() throws -> Bool

    /// Makes the journal's active part the idle one, to be folded, when it
    /// has grown past its threshold (or holds anything, with `all`) and the
    /// idle part is empty; returns whether it did. Holding the writer lock
    /// and the reads lock.
    func swapIfDue(all: Bool) -> Bool

    // MARK: - Compacting what is stored

    /// The newest stored batch of reads, when about as many stored entries
    /// no longer count as are stored, and at least a few thousand:
    /// `dropped` more have stopped counting (their observers deleted,
    /// expired or cleared) since the last compaction. Holding the writer
    /// lock.
    func compactionDue(dropped: Int) throws -> Int64?

    /// The entries of the next few stored batches after `after` up to
    /// `through`, for the store to decide which still count; nil when none
    /// is left. Holding the writer lock.
    func batchesToCompact(after: Int64, through: Int64) throws -> ReadBatchesToCompact?

    /// Rewrites `batches` with only the entries `keeping` marks, in one
    /// transaction. Holding the writer lock, the same hold as
    /// `batchesToCompact`.
    func compact(_ batches: ReadBatchesToCompact, keeping: [Bool]) throws

    /// The compaction ended: what it counted as no longer counting starts
    /// again from zero. Holding the writer lock.
    func compactionEnded()

    /// Closes what it keeps beside the database, once the database is closed.
    func close()
}

extension ReadDurability {
    /// None, where reads are not journaled.
    package var journals: Bool { false }
    package func journal(_ reads: [ObserverReads]) throws -> Bool { false }
    package func prepareClear() throws {}
    package func markClear() {}
    package func foldIdleChunk() throws -> Bool { false }
    package func swapIfDue(all: Bool) -> Bool { false }
    package func compactionDue(dropped: Int) throws -> Int64? { nil }
    package func batchesToCompact(after: Int64, through: Int64) throws -> ReadBatchesToCompact? { nil }
    package func compact(_ batches: ReadBatchesToCompact, keeping: [Bool]) throws {}
    package func compactionEnded() {}
    package func close() {}
}
