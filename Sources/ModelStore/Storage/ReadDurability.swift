import ModelObservation

/// How an engine makes observers' reads durable: everything the store asks
/// about a read becoming durable goes through this, and each engine's
/// storage module supplies the one implementation (SQLite's: a read journal
/// beside the database, else the database; PostgreSQL's: the database).
///
/// What every implementation keeps, across restarts and `kill -9`: a read
/// is stored before it takes effect in the registry, so no poll delivers a
/// change through a read that is not stored; the reads an insert implies
/// for its receivers are stored with the insert, or before any poll can
/// deliver through them; and a read stored before a clear never counts
/// again after it.
///
/// An implementation holds the store's storage (the one behind its writer
/// lock) and uses it only before the store exists (`recover`) and where a
/// requirement says that the writer lock is held.
package protocol ReadDurability: AnyObject, Sendable {
    /// Stores the reads an earlier run left outside the database (a crash):
    /// called once at start, after the migrations and before the observers
    /// are loaded, so that they are loaded with those reads.
    func recover() throws

    /// Starts the background work, once the store is made.
    func start(_ store: Store)

    /// Tracks a read on the reading thread: observer `id` read `keys` in a
    /// response reflecting every change up to `seq`. Its new reads, with
    /// those implied by inserts published since `seq`, are made durable
    /// before they take effect, all under the registry's lock, so that no
    /// commit publishes in between. Returns nil when it does not track it
    /// here: the store then queues it for the group commit, which stores it
    /// with `store(_:addedBy:)`.
    func track(_ keys: [PropertyKey], by id: String, at seq: Int64, now: Double, in store: Store) -> ObservationRegistry.TrackResult?

    /// Stores `reads`, those that the queued reads `tracks` add, in the
    /// transaction the group commit runs for them, before they take effect
    /// (`applyTrack`). Holding the writer lock.
    func store(_ reads: [ObserverReads], addedBy tracks: [PendingTrack]) throws

    /// Stores the reads an insert implies for the receivers the registry
    /// names at that moment, in the write's transaction. Holding the writer
    /// lock.
    func storeImplied(_ reads: [ObserverReads]) throws

    /// Publishes `committed` to the store's registry, after their commit and
    /// before the state that holds them is visible; returns the parked
    /// waiters to wake. The reads an insert implies for a reader tracked
    /// between the moment its receivers were stored (`storedImplied`, by
    /// `seq`) and this one are made durable here, before any poll can
    /// deliver through them. Holding the writer lock.
    func publish(_ committed: [Change], storedImplied: [Int64: Set<String>], in store: Store)
        -> [(observer: String, waiter: any ChangeWaiter)]

    /// Forgets every read of observer `id`, in the registry and stored, so
    /// that none stored before counts again; throws `notFound` for an
    /// unknown observer. Holding the writer lock (inside `exclusive`).
    func clearReads(of id: String, now: Double, in store: Store) throws

    /// Stops the background work, waiting for it at most `timeout` (nil:
    /// until it has ended).
    func stop(timeout: Duration?)

    /// Stores what is still kept outside the database: at a clean stop,
    /// after the last commit and housekeeping.
    func flush(_ store: Store)

    /// Closes what it keeps beside the database, once the database is closed.
    func close()
}
