import ModelObservation

/// Stored batches of reads read back for a compaction: each entry's
/// observer, `seq` and keys, and where the engine keeps them.
package struct ReadBatchesToCompact {
    package let entries: [(observer: String, seq: Int64, keys: [PropertyKey])]
    /// The batches read: those after `after`, through `last`.
    package let after: Int64
    package let last: Int64
    /// The engine's own note of each entry (SQLite: its set of keys).
    package let notes: [Int64]
    /// The entries the batches held, counted ones that are gone included.
    package let read: Int

    package init(entries: [(observer: String, seq: Int64, keys: [PropertyKey])], after: Int64, last: Int64, notes: [Int64], read: Int) {
        self.entries = entries
        self.after = after
        self.last = last
        self.notes = notes
        self.read = read
    }
}
