/// An observer's identity and what the registry keeps of it.
public struct ObserverSnapshot: Sendable, Equatable {
    public let id: String
    /// Property keys read, each with the `seq` at which it was read: changes
    /// at or before that `seq` were already visible to the reader.
    public var reads: [PropertyKey: Int64]
    /// The cursor last answered to this observer (the default `since`).
    public var cursor: Int64
    public var ttlSeconds: Int
    /// Seconds since 1970 of the last use.
    public var lastUsed: Double
    /// The last use as last saved (`lastUsed` when loaded or created).
    public var savedUse: Double
    /// The client that created it, as the API names clients (a digest of
    /// its token, or its address); nil for one created before owners were
    /// kept. Its observers count toward that client's quota.
    public var owner: String?
    /// Where the registry's reverse index finds it (`Slots`); not part of
    /// what it is.
    var slot: Int32 = -1
    /// The registry's group of observers whose first read was the same
    /// (`RegistryCore.Group`), -1 for none.
    var group: Int32 = -1
    /// The keys of the last read tracked, all in `reads`: a read of the
    /// same array again (a kept answer's) adds nothing, found without
    /// looking each key up. Emptied with `reads`.
    var lastRead: [PropertyKey] = []
    /// The shapes among `reads`, parsed (`receives` looks at them for
    /// every change); made again by the registry when it takes `reads`.
    var shapes: [ShapeRead] = []
    /// The bytes the registry estimates it holds: itself, and the reads
    /// of a table of its own (`MemoryEstimate`).
    var bytes = 0
    /// Whether its table of reads is its own: false while it shares its
    /// group's (`joinFirstRead`), which it copies when it reads more.
    var ownsReads = true

    public init(id: String, reads: [PropertyKey: Int64] = [:], cursor: Int64, ttlSeconds: Int, lastUsed: Double, owner: String? = nil) {
        self.id = id
        self.reads = reads
        self.cursor = cursor
        self.ttlSeconds = ttlSeconds
        self.lastUsed = lastUsed
        savedUse = lastUsed
        self.owner = owner
        shapes = Self.shapes(in: reads)
    }

    /// The shapes among `reads`, each with the `seq` it was read at.
    static func shapes(in reads: [PropertyKey: Int64]) -> [ShapeRead] {
        var shapes: [ShapeRead] = []
        for (key, seq) in reads where key.isShape {
            if let shape = Shape(key: key) { shapes.append(ShapeRead(shape: shape, seq: seq)) }
        }
        return shapes
    }

    /// Records a read of `key` at `seq`, a shape's among `shapes` too.
    mutating func setRead(_ key: PropertyKey, at seq: Int64) {
        reads[key] = seq
        if key.isShape, let shape = Shape(key: key) { shapes.append(ShapeRead(shape: shape, seq: seq)) }
    }

    /// The shapes it reads, for `GET /observers/{id}`.
    public var shapesRead: [Shape] { Self.shapes(in: reads).map(\.shape) }

    public static func == (a: ObserverSnapshot, b: ObserverSnapshot) -> Bool {
        a.id == b.id && a.reads == b.reads && a.cursor == b.cursor && a.ttlSeconds == b.ttlSeconds
            && a.lastUsed == b.lastUsed && a.savedUse == b.savedUse && a.owner == b.owner
    }

    /// Whether a use now is worth saving on its own: once the saved use is
    /// a quarter of the TTL old. Saved that often, an observer in use never
    /// looks expired to what reads the saved use (another instance, or this
    /// one after a restart), and a busy observer is not rewritten every
    /// second.
    func useIsStale(now: Double) -> Bool {
        now - savedUse >= Double(ttlSeconds) / 4
    }

    /// Whether this observer receives `change`: it read one of the change's
    /// keys before the change was committed, or a shape that it reaches
    /// (a query's only when its reader hears something of it).
    public func receives(_ change: Change) -> Bool {
        if receivesAsCommitted(change) { return true }
        guard hasQueries else { return false }
        for read in shapes where read.shape.query != nil && read.seq < change.seq && read.shape.hears(change) { return true }
        return false
    }

    /// Whether it hears `change` as it was committed: through a key or a
    /// shape that is no query's.
    func receivesAsCommitted(_ change: Change) -> Bool {
        let byKey = change.keys.contains { key in
            guard let readAt = reads[key] else { return false }
            return readAt < change.seq
        }
        if byKey || shapes.isEmpty { return byKey }
        for place in change.places {
            for read in shapes where read.seq < change.seq && read.shape.collection == place.collection && read.shape.covers(place) {
                return true
            }
        }
        return false
    }

    /// Whether it reads a query's shape (`said` then looks at each change).
    var hasQueries: Bool { shapes.contains { $0.shape.query != nil } }

    /// What it hears of `change`, which reaches it: the change as it was
    /// committed where a key or a plain shape reaches it, then what each
    /// query it read says of it (once each, told apart by `query`).
    func said(_ change: Change, into found: inout [Change]) {
        guard hasQueries else {
            found.append(change)
            return
        }
        if receivesAsCommitted(change) { found.append(change) }
        let first = found.count
        for read in shapes where read.shape.query != nil && read.seq < change.seq {
            guard let said = read.shape.said(change), !found[first...].contains(said) else { continue }
            found.append(said)
        }
        // An element that moves from one page of a query to another leaves
        // the first before it enters the second: removes come first.
        if found.count - first > 1 {
            let said = found[first...].filter { $0.operation == .remove } + found[first...].filter { $0.operation != .remove }
            found.replaceSubrange(first..., with: said)
        }
    }
}

/// A shape an observer read, and the `seq` it read it at.
struct ShapeRead: Sendable {
    let shape: Shape
    let seq: Int64
}
