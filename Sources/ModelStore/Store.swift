import FoundationEssentials
import JSON
import Logging
import ModelObservation
import Concurrency

/// The models' state, persisted through a `ModelStorage` (SQLite by
/// default) and observed through the registry.
///
/// Every write goes through `write` or `submit`: one transaction that
/// changes the model's rows and appends its changes to the change log, then
/// commit, then publish to the registry, then wake the observers' long-polls.
/// Which models there are, and their tables, comes from its `Catalog`.
/// Reads are served from an in-memory copy of the state that is replaced
/// only after a commit, so a read never shows an uncommitted write.
public final class Store: Sendable {
    public struct Configuration: Sendable {
        /// Where the database is, as the engines' module
        /// (`ModelStoreDatabases`) reads it: a file path, or a URL.
        public var database: String
        public var retainChanges: Int = 100_000
        /// Most bytes the retained changes may weigh (`Change.weight`).
        public var retainChangesBytes: Int = 64 << 20
        public var durability: Durability = .processCrash
        public var maxReadsPerObserver: Int = 100_000
        /// Most observers in all (`--max-observers`).
        public var maxObservers: Int = 100_000
        /// Most observers one client may hold (`--max-observers-per-client`).
        public var maxObserversPerClient: Int = 1_000
        /// Most bytes the observation registry may be estimated to hold
        /// before it refuses new observers and reads (`--max-registry-memory`).
        public var maxRegistryMemory: Int = 1 << 30
        /// Longest TTL an observer may ask for, seconds (`--max-observer-ttl`).
        public var maxObserverTTL: Int = 86_400

        public init(database: String) {
            self.database = database
        }
    }

    /// What an acknowledged commit survives: a crash of the process (the
    /// default), or a loss of power too. Each engine has its own means to
    /// it, and an engine whose database is a server of its own (shared by
    /// several instances) leaves it to that server's settings.
    public enum Durability: Sendable, CaseIterable {
        case processCrash
        case powerLoss
    }

    public typealias Wake = @Sendable ([(observer: String, waiter: ChangeWaiter)]) -> Void

    /// Who read what, and the recent change log; woken observers are
    /// answered after its lock is released.
    let registry: ObservationRegistry
    public let catalog: Catalog
    let writer: Exclusive<any ModelStorage>
    /// The quotas on observers, and their refusals.
    let quotas: ObserverQuotas
    /// The same storage when several instances share it; its calls made
    /// outside the writer lock (the probe, the listener, claims) have
    /// connections and locks of their own.
    let shared: (any SharedStorage)?
    /// Observers' reads, in the registry and made durable by the engine's
    /// one way (SQLite's read journal or database, PostgreSQL's database).
    let reads: ReadTracking
    /// The journal's version the state reflects (shared storage only);
    /// moved after the state it stands for is current.
    let appliedVersion: Locked<Int64>
    /// One question to the database for the reads waiting at that moment.
    let freshness = SharedRound()
    /// Follows the other instances' commits (shared storage only).
    let follower = Locked<ServiceThread?>(nil)
    /// Reads waiting for the state to catch up (`whenSynchronized`), and the
    /// thread that serves them.
    let waitingForSync = Locked<[@Sendable (Result<Void, any Error>) -> Void]>([])
    let synchronizer = Locked<ServiceThread?>(nil)
    /// Observers with a stream announced open on another instance (several
    /// instances): a poll answered here at once ends it.
    let remoteStreams = Locked<Set<String>>([])
    /// This instance among those sharing the database.
    let instance = Identifier.make()
    /// Per observer, this instance's announcements of a consumer (a parked
    /// poll, a stream, a poll answered at once) not heard back yet, and
    /// when the last was sent. Announcements reach every instance in the
    /// order they were sent, on one channel: one from another instance
    /// heard before them was sent before them, and names an older
    /// consumer, which must not end this one (`giveWay`).
    let unheardAnnouncements = Locked<[String: (count: Int, sent: ServerClock.Instant)]>([:])
    /// Answers parked polls that gave way to one parked elsewhere.
    let displacedHandler = Locked<Wake?>(nil)
    /// What reads see: replaced whole after each commit, so that a read
    /// takes one reference rather than one per model.
    let current: Locked<Snapshot>
    /// Writes waiting for the next group commit.
    private let queue: WriteQueue
    /// Commits the writes that gather while another commit runs (set once, in `init`).
    private let committer = Locked<ServiceThread?>(nil)
    private let commits = Locked<(transactions: Int64, writes: Int64)>((0, 0))
    private let wake: Locked<Wake?>
    public let logger: Logger

    /// Applies the catalog's pending migrations to `storage` and makes or
    /// checks its models' tables (a mismatch throws `SchemaMismatch`), has
    /// `readDurability` store the reads an earlier run left outside the
    /// database, and loads the state and the observers from it. The
    /// engines' modules make both (`ModelStoreDatabases` picks the one
    /// `Configuration.database` names).
    package init(storage: any ModelStorage, readDurability: any ReadDurability, configuration: Configuration, catalog: Catalog,
         logger: Logger = Logger(label: "observable.store")) throws
    {
        let applied = try storage.prepare(catalog)
        if !applied.isEmpty { logger.info("prepared the database: \(applied.joined(separator: ", "))") }
        try readDurability.recover()
        let registry = ObservationRegistry(retain: configuration.retainChanges, retainBytes: configuration.retainChangesBytes,
                                           maxReadsPerObserver: configuration.maxReadsPerObserver, maxBytes: configuration.maxRegistryMemory)
        let shared = storage as? any SharedStorage
        // Shared: loaded in an ordered transaction, so that no other
        // instance commits between the rows and the version they reflect.
        let version = try shared?.beginOrdered() ?? 0
        let state: ModelState
        do {
            state = try Self.loadState(storage, catalog)
            registry.restore(observers: try storage.observers(),
                             changes: try storage.changes(after: state.seq - Int64(configuration.retainChanges)), lastSeq: state.seq)
            try shared?.commit()
        } catch {
            shared?.rollback()
            throw error
        }
        self.registry = registry
        self.catalog = catalog
        self.writer = Exclusive(storage)
        quotas = ObserverQuotas(configuration)
        self.shared = shared
        reads = ReadTracking(registry: registry, durability: readDurability, logger: logger)
        queue = WriteQueue(handsOver: shared != nil)
        self.appliedVersion = Locked(version)
        self.current = Locked(Snapshot(state))
        self.wake = Locked(nil)
        self.logger = logger
        startCommitting()
        if shared != nil { startFollowing() }
        reads.start(writer)
    }

    deinit {
        // Not waited for: this may run on that thread.
        reads.stop(timeout: .zero)
        queue.close()
    }

    /// Transactions committed by writes, and the writes committed in them.
    public var commitCounts: (transactions: Int64, writes: Int64) { commits.withLock { $0 } }

    /// Sets who is told about observers to wake after each commit.
    public func onWake(_ wake: @escaping Wake) {
        self.wake.withLock { $0 = wake }
    }

    var wakeHandler: Wake? { wake.withLock { $0 } }

    /// The current state (a cheap copy-on-write snapshot).
    public var state: ModelState { snapshot.state }

    /// The current state, shared: what a read renders from.
    public var snapshot: Snapshot { current.withLock { $0 } }

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

    /// Commits `write` on this thread when nobody is committing, or when
    /// the caller cannot wait, and returns true: its outcome is then the
    /// caller's to read. Otherwise queues it for the committing thread,
    /// which hands the outcome to its completion, and returns false.
    func commitOrQueue(_ write: any QueuedWrite, wait: () -> Bool) -> Bool {
        switch queue.enter(write, wait: wait) {
        case .queued:
            return false
        case .commitNow:
            write.answeredByCaller()
            commit([write])
            queue.leave()
        case .commitAlone:
            write.answeredByCaller()
            commit([write])
        case .closed:
            write.answeredByCaller()
            write.fail(ModelError(.unavailable, "the server is stopping"))
        }
        return true
    }

    /// Most writes committed in one transaction.
    static let batchLimit = 128

    /// Starts the commit thread: it ends once the queue is closed and empty.
    private func startCommitting() {
        let thread = ServiceThread.start(name: "observable.commit") { [weak self, queue] _ in
            while let batch = queue.take(limit: Self.batchLimit) {
                guard let self else {
                    for write in batch {
                        write.fail(ModelError(.unavailable, "the store is closed"))
                        write.finish(nil)
                    }
                    continue
                }
                self.commit(batch)
            }
        }
        committer.withLock { $0 = thread }
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
        if !woken.isEmpty, let wake = wake.withLock({ $0 }) { wake(woken) }
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
            if let shared {
                // Decided on the current state.
                try beginCaughtUp(shared, woken: &woken)
            } else {
                try storage.begin()
            }
            state = snapshot.state
            do {
                for write in batch {
                    let rowsBefore = storage.rowsChanged
                    let seqBefore = state.seq
                    let singletonsBefore = WriteTransaction.computedOfSingletons(in: state, catalog)
                    var transaction = WriteTransaction(state: state, storage: storage, catalog: catalog)
                    // The transaction's state is then the only reference: the
                    // write changes it in place (after the batch's first, which
                    // copies what it changes from the current snapshot).
                    state = ModelState(seq: seqBefore)
                    do {
                        try write.run(&transaction)
                    } catch {
                        guard storage.rowsChanged == rowsBefore else { throw error }
                        // No row changed, so neither did the state (models
                        // change it only after storing its rows).
                        state = transaction.state
                        write.fail(error)
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
            for write in batch { write.fail(error) }
            return false
        }
        // Publish before the new state is visible: a read that sees the new
        // state then tracks at a seq the registry already knows.
        woken += reads.publish(committed, storedImplied: storedImplied)
        let next = Snapshot(state)
        current.withLock { $0 = next }
        if let shared {
            let version = shared.committedVersion
            appliedVersion.withLock { $0 = max($0, version) }
        }
        commits.withLock { $0.transactions += 1; $0.writes += writes }
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

    // MARK: - Loading

    /// Every model of `catalog` from its table, nested elements inside theirs.
    static func loadState(_ storage: any ModelStorage, _ catalog: Catalog) throws -> ModelState {
        var state = ModelState(seq: try storage.lastSeq())
        // Equal values share one copy across the whole state (a million
        // orders of a few donuts).
        try ValueInterner.shared.withLock { interner in
            for resource in catalog.resources {
                switch resource.kind {
                case .singleton:
                    var loaded: Record?
                    try storage.forEachRow(of: catalog.layout(of: resource), interning: interner) { row in
                        if loaded == nil { loaded = Record(resource: resource, id: "", position: 0, values: row.values) }
                    }
                    guard let loaded else { throw ModelError(.unavailable, "the \(resource.table) table has no row 1") }
                    state[singleton: resource] = loaded
                case .collection:
                    var elements = PersistentOrderedDictionary<String, Record>()
                    // Indexed once all are in: one sorted pass instead of a
                    // walk down the key index per row.
                    try storage.forEachRow(of: catalog.layout(of: resource), interning: interner) { row in
                        elements.appendUnindexed(row.id, Record(resource: resource, id: row.id, position: row.position,
                                                                values: interner.values(row.values)))
                    }
                    elements.makeIndex()
                    for (index, nested) in resource.nested.enumerated() {
                        try storage.forEachRow(of: catalog.layout(of: nested), interning: interner) { row in
                            guard let parentId = row.parentId, let parent = elements[parentId] else { return }
                            let child = Record(resource: nested, id: row.id, in: parent.path, position: row.position,
                                               values: interner.values(row.values))
                            elements[parentId]!.children[index][row.id] = child
                        }
                    }
                    state[resource] = elements
                }
            }
        }
        return state
    }

    // MARK: - Housekeeping

    /// Prunes the change log to its retained size, drops observers past their
    /// TTL and persists observers' cursors and last use. Run every second.
    public func maintain(now: Double = ServerClock.wallSeconds) {
        if let shared {
            maintainShared(shared, now: now)
            return
        }
        let (prunedThrough, expired, dirty) = registry.housekeeping(now: now, expiring: true)
        do {
            try writer.withLock { storage in
                try storage.housekeep(pruneThrough: prunedThrough, expired: expired, used: dirty)
            }
        } catch {
            logger.error("housekeeping failed: \(error)")
        }
        if !expired.isEmpty { logger.debug("observers expired: \(expired.count)") }
    }

    /// Commits the writes already submitted, persists what is pending and
    /// closes the database. Writes submitted after this fail.
    public func close() {
        queue.close()
        // Unbounded: an acknowledged write must not be cut off by closing.
        committer.withLock { $0 }?.join()
        follower.withLock { $0 }?.stop()
        synchronizer.withLock { $0 }?.stop()
        reads.stop(timeout: nil)
        maintain()
        // What is still journaled is stored.
        reads.fold(all: true, writer)
        writer.withLock { $0.close() }
        reads.durability.close()
    }

    /// Starts the catalog's background work (advancing jobs, say).
    public func startBackgroundWork() {
        for work in catalog.background { work.start(self) }
    }

    /// Stops the background work, after what it has in flight has
    /// committed; called before the database closes.
    public func stopBackgroundWork() {
        for work in catalog.background { work.stop() }
    }

    /// The database's own consistency check: `ok` for a sound one.
    public func integrityCheck() throws -> String {
        try writer.withLock { try $0.integrityCheck() }
    }
}

extension Store {
    /// One committed state, as reads see it.
    public final class Snapshot: Sendable {
        public let state: ModelState

        init(_ state: ModelState) {
            self.state = state
        }
    }
}
