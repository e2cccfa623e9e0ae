import JSON
import ModelObservation

/// The in-memory indexes of a collection's queryable fields, kept in the
/// state beside its elements and changed with them, so a query read finds
/// what it shows without a pass over the collection:
/// - a number field: its elements as `(value's ordinal, position)` pairs,
///   in value order (`SortKey.ordinal`; null after every number);
/// - a text or boolean field: per value (its JSON text), its elements'
///   positions in order.
/// Stored fields and computed ones of the element alone (a job's
/// `isComplete`) are indexed, each under its `QueryableField.indexKey`; a
/// computed field of more than its element (none queryable now) is not:
/// a query on it alone reads the whole collection.
struct QueryIndex: Sendable {
    /// What is indexed: each field's key, whether it is a number, its value.
    struct Field: Sendable {
        let key: Int
        let numeric: Bool
        let value: @Sendable (Record) -> JSONValue
    }

    let fields: [Field]
    var ordered: [Int: PairSet] = [:]
    /// A plain dictionary, not a trie: a field queried by value has few
    /// values (a donut, a glaze), and copying a few entries costs less than
    /// a trie's path.
    var buckets: [Int: [String: PairSet]] = [:]

    /// The queryable fields of `resource` an index follows.
    static func fields(of resource: Resource) -> [Field] {
        resource.queryable.compactMap { field in
            guard let key = field.indexKey, let value = field.elementValue else { return nil }
            return Field(key: key, numeric: field.kind == .integer || field.kind == .number, value: value)
        }
    }

    /// The name of a value's bucket: a text as it is (shared with the
    /// record's, so a load makes no string), anything else as its JSON
    /// after a NUL, which no text of a field holds.
    static func bucket(_ value: JSONValue) -> String {
        if case .string(let text) = value { return text }
        return "\u{0}" + JSONWriter.string(value)
    }

    /// The indexes of `elements`, built at once (a load).
    init(_ resource: Resource, _ elements: PersistentOrderedDictionary<String, Record>) {
        fields = Self.fields(of: resource)
        for field in fields {
            if field.numeric {
                var pairs: [PairSet.Pair] = []
                pairs.reserveCapacity(elements.count)
                elements.forEach { record in
                    pairs.append(PairSet.Pair(first: SortKey.ordinal(field.value(record)) ?? .max, second: record.position))
                    return true
                }
                pairs.sort()
                ordered[field.key] = PairSet(sorted: pairs)
            } else {
                var positions: [String: [PairSet.Pair]] = [:]
                elements.forEach { record in
                    positions[Self.bucket(field.value(record)), default: []].append(PairSet.Pair(first: 0, second: record.position))
                    return true
                }
                buckets[field.key] = positions.mapValues { PairSet(sorted: $0) }
            }
        }
    }

    mutating func insert(_ record: Record) {
        for field in fields {
            let value = field.value(record)
            if field.numeric {
                ordered[field.key]?.insert(PairSet.Pair(first: SortKey.ordinal(value) ?? .max, second: record.position))
            } else {
                buckets[field.key, default: [:]][Self.bucket(value), default: PairSet()].insert(PairSet.Pair(first: 0, second: record.position))
            }
        }
    }

    mutating func remove(_ record: Record) {
        for field in fields {
            let value = field.value(record)
            if field.numeric {
                ordered[field.key]?.remove(PairSet.Pair(first: SortKey.ordinal(value) ?? .max, second: record.position))
            } else {
                let bucket = Self.bucket(value)
                buckets[field.key]?[bucket]?.remove(PairSet.Pair(first: 0, second: record.position))
                if buckets[field.key]?[bucket]?.count == 0 { buckets[field.key]?[bucket] = nil }
            }
        }
    }

    /// Whether `old` and `new` differ in a field indexed here.
    func moves(_ old: Record, _ new: Record) -> Bool {
        fields.contains { $0.value(old) != $0.value(new) }
    }
}

extension ModelState {
    /// Keeps the query indexes of `resource` (a top-level collection) in
    /// step with its elements: `old` left it, `new` joined it (either nil).
    mutating func reindex(_ resource: Resource, old: Record?, new: Record?) {
        // Changed in place: a copy of the index would be one more of every node it holds.
        guard let slot = indexes.index(forKey: ObjectIdentifier(resource)) else { return }
        if let old, let new, !indexes.values[slot].moves(old, new) { return }
        if let old { indexes.values[slot].remove(old) }
        if let new { indexes.values[slot].insert(new) }
    }

    /// Builds the query indexes of `resource` from its elements (a load).
    mutating func buildIndexes(of resource: Resource) {
        guard resource.kind == .collection, resource.isTopLevel, !QueryIndex.fields(of: resource).isEmpty else { return }
        indexes[ObjectIdentifier(resource)] = QueryIndex(resource, self[resource])
    }
}

extension PersistentOrderedDictionary where Value == Record {
    /// The element at `position`, found by a binary search over positions.
    func element(at position: Int64) -> Record? {
        var found: Record?
        forEach(from: { $0.position >= position }) { record in
            found = record
            return false
        }
        return found?.position == position ? found : nil
    }
}
