import FoundationEssentials
import Glibc
import Synchronization
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
///
/// It owns the state, the storage behind the writer lock and the registry,
/// and leaves each other job to a part: `GroupCommit` (who commits a write,
/// and when), `ReadTracking` (observers' reads, made durable),
/// `ObserverQuotas`, and `InstanceSharing` when several instances share
/// the database.
public final class Store: Sendable {
    public typealias Wake = @Sendable ([(observer: String, waiter: ChangeWaiter)]) -> Void

    /// Who read what, and the recent change log; woken observers are
    /// answered after its lock is released.
    let registry: ObservationRegistry
    public let catalog: Catalog
    /// The storage, behind the writer lock: taken before the reads lock,
    /// which is taken before the registry's.
    let writer: Exclusive<any ModelStorage>
    /// The quota on each collection's rows.
    let rowQuota: RowQuota
    /// Whether writes fail for a full disk.
    public let outOfSpace = OutOfSpace()
    /// The quotas on observers, and their refusals.
    let quotas: ObserverQuotas
    /// Several instances sharing the database: nil on a database of
    /// one's own.
    let sharing: InstanceSharing?
    /// Observers' reads, in the registry and made durable by the engine's
    /// one way (SQLite's read journal or database, PostgreSQL's database).
    let reads: ReadTracking
    /// What reads see: replaced whole after each commit, so that a read
    /// takes one reference rather than one per model.
    let current: Locked<Snapshot>
    /// The newest `seq` published to the registry. A commit publishes its
    /// changes, then makes its state current: between the two a poll may
    /// answer a cursor the current state does not reach yet, and a read
    /// that follows it (`snapshot`) waits for that state.
    let published = Atomic<Int64>(.min)
    /// Called between a commit's publishing and its state becoming current
    /// (tests hold a commit there).
    package let afterPublishing = Locked<(@Sendable () -> Void)?>(nil)
    /// The writes waiting for a commit, the thread that commits them, and
    /// who is told which observers to wake.
    let groupCommit: GroupCommit
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
        rowQuota = RowQuota(limit: configuration.maxRowsPerCollection)
        sharing = shared.map { InstanceSharing(storage: $0, appliedVersion: version, logger: logger) }
        reads = ReadTracking(registry: registry, durability: readDurability, logger: logger)
        groupCommit = GroupCommit(handsOver: sharing != nil)
        self.current = Locked(Snapshot(state))
        self.logger = logger
        groupCommit.start(committingThrough: self)
        sharing?.start(for: self)
        reads.start(writer)
    }

    deinit {
        // Not waited for: this may run on that thread.
        reads.stop(timeout: .zero)
        groupCommit.close()
    }

    /// The current state (a cheap copy-on-write snapshot).
    public var state: ModelState { snapshot.state }

    /// The current state, shared: what a read renders from.
    /// The current state: never older than a cursor the registry has
    /// answered (a commit that published is about to make its state
    /// current; the wait is that moment).
    public var snapshot: Snapshot {
        while true {
            let snapshot = current.withLock { $0 }
            if snapshot.state.seq >= published.load(ordering: .acquiring) { return snapshot }
            sched_yield()
        }
    }

    /// Makes `next` the current state, after its changes were published
    /// (`published` says how far).
    func show(_ next: Snapshot) {
        afterPublishing.withLock { $0 }?()
        current.withLock { $0 = next }
    }

    /// Commits the writes already submitted, persists what is pending and
    /// closes the database. Writes submitted after this fail.
    public func close() {
        groupCommit.close()
        // Unbounded: an acknowledged write must not be cut off by closing.
        groupCommit.join()
        sharing?.stop()
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
