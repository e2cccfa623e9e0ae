/// The bytes the registry holds, estimated as they come and go: each
/// operation adds or takes away what it adds or drops (an observer, a
/// read, a shape, a seq in an inbox, a change of the log), at O(1) for
/// each, never by a walk. The sizes are those of the tables' entries at
/// their usual load, with what each allocation costs beside them,
/// measured against the server's resident memory (docs/OPERATIONS.md, "Quotas").
struct MemoryEstimate: Sendable {
    /// An observer that has read nothing: its entry in the observers'
    /// table, its id, its slot, its place in the expiry queue, its inbox.
    static let observer = 640
    /// One key in an observer's own table of reads, and its entry in the
    /// reverse index (its path's text apart: `text`).
    static let read = 112
    /// One key of a table an observer copies from its group (its entry in
    /// the reverse index stays the group's).
    static let copiedRead = 64
    /// A shape read: its key, parsed once for the observer, and its entry
    /// in its collection's shape index.
    static let shape = 480
    /// An observer that shares the table of its group's first read.
    static let member = 16
    /// One key of a group's shared table, and the group's place among
    /// the key's readers.
    static let groupRead = 80
    /// One seq in an inbox.
    static let inboxEntry = 12
    /// A change in the log, without its texts and keys.
    static let change = 192
    /// One key, implied read or place of a change in the log.
    static let changeKey = 32

    /// Observers and the reads each holds (`ObserverSnapshot.bytes`).
    var observers = 0
    /// The tables and index entries of groups of first reads.
    var groups = 0
    /// Seqs in the observers' inboxes.
    var inboxEntries = 0
    /// The retained change log.
    var log = 0

    var bytes: Int { observers + groups + inboxEntries * Self.inboxEntry + log }

    /// What `key` costs read by one observer in a table of its own: its
    /// entry, and its path's text, which a read mostly makes anew.
    @inline(__always)
    static func read(_ key: PropertyKey) -> Int {
        (key.isShape ? shape : read) + text(key.path)
    }

    /// The heap a string's text takes: none up to 15 bytes (kept inline),
    /// else its bytes and the allocation's header.
    @inline(__always)
    static func text(_ string: String) -> Int {
        let count = string.utf8.count
        return count > 15 ? count + 32 : 0
    }

    /// What `keys` cost read by one observer in a table of its own.
    static func reads<Keys: Sequence<PropertyKey>>(_ keys: Keys) -> Int {
        keys.reduce(0) { $0 + read($1) }
    }

    /// What `change` costs in the log: its texts, keys and places.
    static func of(_ change: Change) -> Int {
        Self.change + (change.keys.count + change.impliedReads.count + change.places.count) * changeKey
            + text(change.old ?? "") + text(change.new ?? "")
    }
}
