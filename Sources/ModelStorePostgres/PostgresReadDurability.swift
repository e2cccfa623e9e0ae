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

    func clearStored(of id: String) throws {
        try storage.clearReads(of: id)
    }
}
