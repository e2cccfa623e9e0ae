/// The last first read tracked (`RegistryCore.State.firstReads`).
struct FirstRead {
    /// What it added, in the order read.
    let added: [(PropertyKey, Int64)]
    /// The keys of `added`: one array, given to every read that matches
    /// (the last request's, once one matched).
    var keys: [PropertyKey]
    /// The `seq` of every read in `added`; nil when they differ (a replay
    /// added some).
    let seq: Int64?
    let reads: [PropertyKey: Int64]
    /// The shapes among `reads`, parsed once for all who share them.
    let shapes: [ShapeRead]
    var group: Int32 = -1

    init(_ added: [(PropertyKey, Int64)], reads: [PropertyKey: Int64]) {
        self.added = added
        keys = added.map(\.0)
        seq = added.allSatisfy({ $0.1 == added[0].1 }) ? added.first?.1 : nil
        self.reads = reads
        shapes = ObserverSnapshot.shapes(in: reads)
    }
}

/// Observers whose first read added the same keys at the same `seq`
/// (`RegistryCore.State.groups`), `dead` of them stale. `reads` is
/// the table its members share.
struct Group {
    let reads: [PropertyKey: Int64]
    let seq: Int64
    var members: [Member] = []
    var dead = 0
}

struct Member {
    var slot: Int32
    var epoch: UInt32
}
