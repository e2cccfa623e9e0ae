/// A read of a collection, whole or a page of it: which collection (its
/// membership path), which fields its elements showed (nil for all), and
/// the window of positions it covers, `from` through `through` (both
/// included; `Int64.min` and `Int64.max` where it is open).
///
/// Positions only grow, so the elements made after the read are those past
/// the collection's newest then (`newest`): their insert showed every
/// field, so every field of theirs counts as read (SPEC §3a), where only
/// the fields shown count for the elements that were there.
///
/// A shape is one read however many elements it covers: its reader hears
/// the `insert` of an element whose position lands in the window, the
/// `remove` of one in it, and a `set` of a shown field of one in it. It is
/// kept among an observer's reads as one key (`key`), so every engine
/// stores and restores it as it does a property's key.
public struct Shape: Hashable, Sendable, CustomStringConvertible {
    /// The collection's membership path (`/truck/orders`, `/games/{id}/cards`).
    public let collection: String
    /// The fields shown, sorted; nil when every field was.
    public let fields: [String]?
    public let from: Int64
    public let through: Int64
    /// The position of the collection's newest element when it was read
    /// (`Int64.min` when it was empty); kept only with `fields`.
    public let newest: Int64
    /// A query read's conditions, sort and window (SPEC §3d); nil for a
    /// plain read of the collection or a page of it. A query's window is
    /// in its sort keys (`from` and `through` are open), and its reader
    /// hears what `ShapeQuery.effect` says, not what `covers` does.
    public let query: ShapeQuery?

    public init(collection: String, fields: [String]? = nil, from: Int64 = .min, through: Int64 = .max, newest: Int64 = .max) {
        self.collection = collection
        self.fields = fields?.sorted()
        self.from = from
        self.through = through
        self.newest = fields == nil ? .max : newest
        query = nil
    }

    /// A query read's shape: its elements show `fields` (all for nil),
    /// and every element that comes to match shows only those.
    public init(collection: String, fields: [String]?, query: ShapeQuery) {
        self.collection = collection
        self.fields = fields?.sorted()
        from = .min
        through = .max
        newest = .max
        self.query = query
    }

    /// Whether it shows `field` of the element at `position`.
    public func shows(_ field: String, at position: Int64) -> Bool {
        guard let fields else { return true }
        return position > newest || fields.contains(field)
    }

    /// Whether it covers every element there is and will be.
    public var isWhole: Bool { from == .min && through == .max && query == nil }

    /// The key it is kept under: `/truck/orders?shape&from=12&through=40&fields=a,b`,
    /// the bounds and fields only where they narrow it. No property's path holds `?`.
    public var key: PropertyKey {
        var text = collection + "?shape"
        if let query { text += "&" + query.keyParts }
        if from != .min { text += "&from=\(from)" }
        if through != .max { text += "&through=\(through)" }
        if let fields {
            text += "&fields=" + fields.joined(separator: ",")
            if newest != .max { text += "&newest=\(newest)" }
        }
        return PropertyKey(text)
    }

    public var description: String { key.path }

    /// The shape a key made by `key` names; nil for a property's key.
    public init?(key: PropertyKey) {
        let path = key.path
        guard let mark = path.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        let collection = String(path[..<mark])
        var from = Int64.min, through = Int64.max, newest = Int64.max
        var fields: [String]?
        var queryParts: [(name: Substring, value: Substring)] = []
        let query = path[path.index(after: mark)...]
        for part in query.split(separator: "&") {
            if part == "shape" { continue }
            guard let equals = part.firstIndex(of: "=") else { return nil }
            let name = part[..<equals], value = part[part.index(after: equals)...]
            switch name {
            case "q", "lo", "lox", "hi", "hix": queryParts.append((name, value))
            case "from": guard let number = Int64(value) else { return nil }; from = number
            case "through": guard let number = Int64(value) else { return nil }; through = number
            case "newest": guard let number = Int64(value) else { return nil }; newest = number
            case "fields": fields = value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            default: return nil
            }
        }
        if !queryParts.isEmpty {
            guard let query = ShapeQuery(parts: queryParts) else { return nil }
            self.init(collection: collection, fields: fields, query: query)
            return
        }
        self.init(collection: collection, fields: fields, from: from, through: through, newest: newest)
    }

    /// Whether a change at `place` reaches a reader of this shape.
    @inline(__always)
    public func covers(_ place: Place) -> Bool {
        guard query == nil else { return false }
        guard from <= place.position && place.position <= through else { return false }
        guard let field = place.field, let fields, PlantedFault.current != .ignoreShapeFields else { return true }
        return place.position > newest || fields.contains(field)
    }
}

extension PropertyKey {
    /// Whether it is a shape's key (`Shape.key`) rather than a property's.
    @inline(__always)
    public var isShape: Bool { kind == .shape }

    /// Whether it is a place's key (`Place.key`) rather than a property's.
    @inline(__always)
    public var isPlace: Bool { kind == .place }

    /// Whether it is an element row's key (`ElementRow.key`): no reader reads it.
    @inline(__always)
    public var isRow: Bool { kind == .row }

    /// Whether an observer can have read it: neither a place's nor a row's key.
    @inline(__always)
    public var isReadable: Bool { kind != .place && kind != .row }
}
