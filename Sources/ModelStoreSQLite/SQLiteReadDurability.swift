import Concurrency
import Logging
import ModelObservation
import ModelStore

/// SQLite's way of making reads durable. With `synchronous=normal` a read
/// goes to the read journal beside the database, on the thread that
/// answers it, and is folded into the database (`observer_read_batches`)
/// later, where it is compacted too. With `synchronous=full`, when the
/// journal cannot be opened, and for a read the journal could not take,
/// reads are stored in the database, in the group commit's transaction.
///
/// `@unchecked Sendable`: its storage is used only under the store's writer
/// lock, and its read journal as `ReadJournal` says (appended to and
/// swapped under the store's reads lock, its idle file read and emptied
/// under the writer lock).
final class SQLiteReadDurability: ReadDurability, @unchecked Sendable {
    private let storage: SQLiteStorage
    /// The journal as opened: what a crash left in it is stored at start.
    private let openedJournal: ReadJournal?
    /// Where reads go before the database (with `synchronous=normal`).
    private let readJournal: ReadJournal?
    private let logger: Logger

    /// Opens the read journal `path-1` and `path-2` beside `storage`'s
    /// database; without it (it could not be opened) reads go to the
    /// database. Throws when another server holds the journal.
    init(storage: SQLiteStorage, journal path: String, durability: Store.Durability, logger: Logger) throws {
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
        readJournal = durability == .processCrash ? journal : nil
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

    var journals: Bool { readJournal != nil }

    func close() {
        readJournal?.close(removing: readJournal?.activeSize == 0 && readJournal?.idleIsEmpty == true)
    }

    // MARK: - Reads

    func journal(_ reads: [ObserverReads]) throws -> Bool {
        guard let readJournal else { return false }
        try readJournal.append(reads)
        return readJournal.askFold()
    }

    func store(_ reads: [ObserverReads], addedBy tracks: [PendingTrack]) throws {
        try storage.addReads(reads)
    }

    func storeImplied(_ reads: [ObserverReads]) throws {
        try storage.addReads(reads)
    }

    func prepareClear() throws {
        guard let readJournal else { return }
        try foldIdleReads(readJournal)
    }

    func markClear() {
        readJournal?.swap()
    }

    func clearStored(of id: String) throws {
        if let readJournal { try foldIdleReads(readJournal) }
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

    func foldIdleChunk() throws -> Bool {
        guard let readJournal else { return false }
        if try storeNextIdle(readJournal) { return true }
        try readJournal.resetIdle()
        return false
    }

    func swapIfDue(all: Bool) -> Bool {
        guard let readJournal, readJournal.idleIsEmpty,
              all ? readJournal.activeSize > 0 : readJournal.activeSize >= ReadJournal.foldThreshold
        else { return false }
        readJournal.swap()
        return true
    }

    static let foldChunk = 4096

    // MARK: - Compaction

    func compactionDue(dropped: Int) throws -> Int64? {
        guard readJournal != nil else { return nil }
        let dead = dropped + storage.deadBatchedReads
        guard dead >= Self.compactionMinimum, dead * 2 >= storage.batchedReads else { return nil }
        return try storage.lastReadBatch()
    }

    /// Two batches at a time.
    func batchesToCompact(after: Int64, through: Int64) throws -> ReadBatchesToCompact? {
        try storage.readBatches(after: after, through: through, limit: 2)
    }

    func compact(_ batches: ReadBatchesToCompact, keeping: [Bool]) throws {
        try storage.transaction { try storage.rewriteReadBatches(batches, keeping: keeping) }
    }

    func compactionEnded() {
        storage.deadBatchedReads = 0
    }

    static let compactionMinimum = 4096
}
