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
    /// What query shapes look at of the elements a `set` lands on, parsed
    /// from the keys that hold them (`ElementRow.key`), kept among `keys`.
    public let rows: [ElementRow]
    /// The query (`ShapeQuery.text`) whose reader this change is said to,
    /// as that reader sees it (`ShapeQuery.effect`); nil for a change as
    /// it was committed.
    public let query: String?

    public init(seq: Int64, transaction: Int64, path: String, operation: Operation, old: String?, new: String?,
                keys: [PropertyKey], impliedReads: [PropertyKey] = [], query: String? = nil)
    {
        self.init(seq: seq, transaction: transaction, path: path, operation: operation, old: old, new: new,
                  keys: keys, impliedReads: impliedReads, places: keys.compactMap { $0.isPlace ? Place(key: $0) : nil }, query: query)
    }

    /// A change said to the reader of `query`: what it hears of a committed one.
    init(said change: Change, path: String, operation: Operation, old: String?, new: String?, query: String) {
        self.init(seq: change.seq, transaction: change.transaction, path: path, operation: operation, old: old, new: new,
                  keys: [], impliedReads: [], places: [], rows: [], query: query)
    }

    /// A change whose places are known already (among `keys` too): one
    /// just committed, not parsed again.
    init(seq: Int64, transaction: Int64, path: String, operation: Operation, old: String?, new: String?,
         keys: [PropertyKey], impliedReads: [PropertyKey], places: [Place], rows: [ElementRow]? = nil, query: String? = nil)
    {
        self.rows = rows ?? keys.compactMap { $0.isRow ? ElementRow(key: $0) : nil }
        self.query = query
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
            && a.new == b.new && a.keys == b.keys && a.impliedReads == b.impliedReads && a.query == b.query
    }
}
