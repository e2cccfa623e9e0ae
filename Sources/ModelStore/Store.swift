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
        self.shared = shared
        reads = ReadTracking(registry: registry, durability: readDurability, logger: logger)
        groupCommit = GroupCommit(handsOver: shared != nil)
        self.appliedVersion = Locked(version)
        self.current = Locked(Snapshot(state))
        self.logger = logger
        groupCommit.start(committingThrough: self)
        if shared != nil { startFollowing() }
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
    public var snapshot: Snapshot { current.withLock { $0 } }

    /// Commits the writes already submitted, persists what is pending and
    /// closes the database. Writes submitted after this fail.
    public func close() {
        groupCommit.close()
        // Unbounded: an acknowledged write must not be cut off by closing.
        groupCommit.join()
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
