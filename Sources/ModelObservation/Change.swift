/// One committed change, as it is stored in the change log and delivered.
public struct Change: Sendable, Equatable {
    public enum Operation: String, Sendable {
        /// A property took a new value.
        case set
        /// An element joined a collection (`new` is the element).
        case insert
        /// An element left a collection (`old` is the element).
        case remove
        /// The current value of a property (`new`), sent to bring an
        /// observer past the retained log back in step; never stored.
        case repair
    }

    /// Global, strictly increasing sequence number.
    public let seq: Int64
    /// The `seq` of the first change of the same transaction: changes that
    /// share it were committed together and are never split across answers.
    public let transaction: Int64
    public let path: String
    public let operation: Operation
    /// The value before, as JSON text (`nil` when the operation has none).
    public let old: String?
    /// The value after, as JSON text (`nil` when the operation has none).
    public let new: String?
    /// Observers that read any of these keys receive the change.
    public let keys: [PropertyKey]
    /// Keys that an observer has read by receiving this change: the
    /// properties of an inserted element.
    public let impliedReads: [PropertyKey]
    /// Where it lands for readers of shapes: parsed once from the keys
    /// that name places (`Place.key`), which are kept among `keys`.
    public let places: [Place]

    public init(seq: Int64, transaction: Int64, path: String, operation: Operation, old: String?, new: String?,
                keys: [PropertyKey], impliedReads: [PropertyKey] = [])
    {
        self.init(seq: seq, transaction: transaction, path: path, operation: operation, old: old, new: new,
                  keys: keys, impliedReads: impliedReads, places: keys.compactMap { $0.isPlace ? Place(key: $0) : nil })
    }

    /// A change whose places are known already (among `keys` too): one
    /// just committed, not parsed again.
    init(seq: Int64, transaction: Int64, path: String, operation: Operation, old: String?, new: String?,
         keys: [PropertyKey], impliedReads: [PropertyKey], places: [Place])
    {
        self.seq = seq
        self.transaction = transaction
        self.path = path
        self.operation = operation
        self.old = old
        self.new = new
        self.keys = keys
        self.impliedReads = impliedReads
        self.places = places
    }

    /// About the bytes it holds: its texts, its keys' paths, and a fixed
    /// part for the rest. What `--retain-changes-bytes` counts.
    public var weight: Int {
        var bytes = 128 + path.utf8.count + (old?.utf8.count ?? 0) + (new?.utf8.count ?? 0)
        for key in keys { bytes += 16 + key.path.utf8.count }
        for key in impliedReads { bytes += 16 + key.path.utf8.count }
        return bytes
    }

    public static func == (a: Change, b: Change) -> Bool {
        a.seq == b.seq && a.transaction == b.transaction && a.path == b.path && a.operation == b.operation && a.old == b.old
            && a.new == b.new && a.keys == b.keys && a.impliedReads == b.impliedReads
    }
}

/// A change before it is committed: it gets its `seq` at commit.
public struct PendingChange: Sendable, Equatable {
    public let path: String
    public let operation: Change.Operation
    public let old: String?
    public let new: String?
    public let keys: [PropertyKey]
    public let impliedReads: [PropertyKey]
    /// Where it lands for readers of shapes (their keys are among `keys`).
    public var places: [Place] = []

    /// A property of `path` went from `old` to `new` (JSON texts).
    public static func set(_ path: String, old: String, new: String) -> PendingChange {
        set(PropertyKey(path), old: old, new: new)
    }

    /// The property `key` went from `old` to `new`, with its key already made.
    public static func set(_ key: PropertyKey, old: String, new: String) -> PendingChange {
        PendingChange(path: key.path, operation: .set, old: old, new: new, keys: [key], impliedReads: [])
    }

    /// `element` (JSON text) joined the collection at `collection`; its
    /// properties `elementKeys` count as read by whoever receives this.
    public static func insert(into collection: String, element: String, elementKeys: [PropertyKey]) -> PendingChange {
        PendingChange(path: collection, operation: .insert, old: nil, new: element, keys: [PropertyKey(collection)], impliedReads: elementKeys)
    }

    /// `element` left `collection`; readers of the collection and of any of
    /// the element's properties `elementKeys` are told.
    public static func remove(from collection: String, element: String, elementKeys: [PropertyKey]) -> PendingChange {
        PendingChange(path: collection, operation: .remove, old: element, new: nil, keys: [PropertyKey(collection)] + elementKeys, impliedReads: [])
    }

    /// The same change, landing also at `places` for readers of shapes.
    public func landing(at places: [Place]) -> PendingChange {
        guard !places.isEmpty else { return self }
        var change = PendingChange(path: path, operation: operation, old: old, new: new, keys: keys + places.map(\.key), impliedReads: impliedReads)
        change.places = self.places + places
        return change
    }

    public func committed(seq: Int64, transaction: Int64) -> Change {
        Change(seq: seq, transaction: transaction, path: path, operation: operation, old: old, new: new, keys: keys,
               impliedReads: impliedReads, places: places)
    }
}
