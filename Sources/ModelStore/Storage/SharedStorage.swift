import JSON
import ModelObservation

/// A storage that several instances share (PostgreSQL): every transaction
/// that changes something takes one commit order, and leaves an entry in a
/// journal from which the other instances apply it.
///
/// An ordered transaction is `beginOrdered`, then the writes (each
/// `insert`, `update`, `delete`, `append` and observer call journals
/// itself; `journalTrack` journals a read), then `commit`, which numbers the
/// transaction with the next version, announces it, and commits.
package protocol SharedStorage: ModelStorage, Sendable {
    /// Begins a transaction that holds the commit order until it ends, and
    /// returns the newest version committed.
    func beginOrdered() throws -> Int64
    /// The version the last `commit` of this connection took (unchanged by
    /// a transaction that journaled nothing).
    var committedVersion: Int64 { get }
    /// The journal after `version`, in order; nil when part of it is no
    /// longer kept (the caller loads everything again).
    func journal(after version: Int64) throws -> [JournalEntry]?
    /// The newest version committed, on the writer connection (with `lastSeq`).
    func lastVersion() throws -> Int64
    /// The change log after `seq` through `last`, oldest first.
    func changes(after seq: Int64, through last: Int64) throws -> [Change]
    /// Drops the journal older than the time it is kept for (instances cut
    /// off for longer load everything again).
    func pruneJournal(now: Double) throws
    /// Runs `body`'s reads on one snapshot of the database (inside an
    /// ordered transaction, as they are; else in a read-only one).
    func consistently<T>(_ body: () throws -> T) throws -> T
    /// Journals that `observer` read `keys` in a response reflecting `seq`.
    func journalTrack(observer: String, keys: [PropertyKey], seq: Int64)
    /// The newest version committed, asked on a connection of its own.
    func newestVersion() throws -> Int64
    /// Waits up to `timeout` seconds for announcements: the newest version
    /// committed, if any was announced, and the polls parked since, as
    /// (instance, observer).
    func awaitAnnouncement(timeout: Double) throws -> (newest: Int64?, parked: [ParkedAnnouncement])
    /// Announces that `instance` parked a poll of `observer`, or opened a
    /// stream for it, or answered a poll of it while a stream of it was
    /// open elsewhere: a poll or stream of it on another instance gives way.
    func announceParked(instance: String, observer: String, stream: Bool) throws
    /// The cursor saved for observer `id` (by any instance).
    func savedCursor(of id: String) throws -> Int64?
    /// Saves each observer's cursor as the one last answered to it,
    /// through whichever instance: the latest saved is the one a poll
    /// without `since` goes on from.
    func saveCursors(_ cursors: [(id: String, cursor: Int64)]) throws
    /// Observers past their TTL (with `grace` seconds more), by the uses
    /// every instance has saved.
    func expiredObservers(now: Double, grace: Double) throws -> [String]
    /// Tries to become (or stay) the one instance that runs `work`; the
    /// claim lasts as long as this instance's connection.
    func claim(_ work: String) throws -> Bool
}
