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
    /// What query shapes look at of the element a `set` lands on (their keys are among `keys`).
    public var rows: [ElementRow] = []

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
        change.rows = rows
        return change
    }

    /// The same change, carrying `row` for query shapes.
    public func with(_ row: ElementRow) -> PendingChange {
        var change = PendingChange(path: path, operation: operation, old: old, new: new, keys: keys + [row.key], impliedReads: impliedReads)
        change.places = places
        change.rows = rows + [row]
        return change
    }

    public func committed(seq: Int64, transaction: Int64) -> Change {
        Change(seq: seq, transaction: transaction, path: path, operation: operation, old: old, new: new, keys: keys,
               impliedReads: impliedReads, places: places, rows: rows)
    }
}
