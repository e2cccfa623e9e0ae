import Logging
import ModelObservation
import ModelStore

/// PostgreSQL's way of making reads durable: a read waits in the group
/// commit's queue and is stored in the ordered transaction the reads that
/// gather take together, which also journals it for the other instances
/// (they replay the read itself). Nothing is kept beside the database.
final class PostgresReadDurability: ReadDurability {
    /// Used only under the store's writer lock.
    private let storage: PostgresStorage

    init(storage: PostgresStorage) {
        self.storage = storage
    }

    func recover() throws {}
    func start(_ store: Store) {}
    func stop(timeout: Duration?) {}
    func flush(_ store: Store) {}
    func close() {}

    /// None: reads are stored in the group commit.
    func track(_ keys: [PropertyKey], by id: String, at seq: Int64, now: Double, in store: Store) -> ObservationRegistry.TrackResult? {
        nil
    }

    func store(_ reads: [ObserverReads], addedBy tracks: [PendingTrack]) throws {
        for track in tracks {
            // Inside the ordered transaction: the others replay the read itself.
            storage.journalTrack(observer: track.observer, keys: track.keys, seq: track.seq)
        }
        try storage.addReads(reads)
    }

    func storeImplied(_ reads: [ObserverReads]) throws {
        try storage.addReads(reads)
    }

    /// Every receiver tracked in between was tracked under the writer lock,
    /// which the write holds: its implied reads were stored with it.
    func publish(_ committed: [Change], storedImplied: [Int64: Set<String>], in store: Store)
        -> [(observer: String, waiter: any ChangeWaiter)]
    {
        store.registry.publish(committed)
    }

    func clearReads(of id: String, now: Double, in store: Store) throws {
        guard store.registry.clearReads(id, now: now) else { throw ModelError.notFound("no observer \(id)") }
        try storage.clearReads(of: id)
    }
}
