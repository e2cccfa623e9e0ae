import JSON
import ModelObservation

/// The in-memory indexes of a collection's stored queryable fields, kept
/// in the state beside its elements and changed with them, so a query
/// read finds what it shows without a pass over the collection:
/// - a number field: its elements as `(value's ordinal, position)` pairs,
///   in value order (`SortKey.ordinal`; null after every number);
/// - a text or boolean field: per value (its JSON text), its elements'
///   positions in order.
/// Computed fields are not indexed: a query on one alone reads the whole
/// collection (jobs and games, not orders).
struct QueryIndex: Sendable {
    var ordered: [Int: PairSet] = [:]
    /// A plain dictionary, not a trie: a field queried by value has few
    /// values (a donut, a glaze), and copying a few entries costs less than
    /// a trie's path.
    var buckets: [Int: [String: PairSet]] = [:]

    /// The stored queryable fields of `resource`, by their index in a
    /// record's values, and whether each is a number.
    static func fields(of resource: Resource) -> [(index: Int, numeric: Bool)] {
        resource.queryable.compactMap { field in
            guard case .stored(let index) = field.source else { return nil }
            return (index, field.kind == .integer || field.kind == .number)
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
        for (index, numeric) in Self.fields(of: resource) {
            if numeric {
                var pairs: [PairSet.Pair] = []
                pairs.reserveCapacity(elements.count)
                elements.forEach { record in
                    pairs.append(PairSet.Pair(first: SortKey.ordinal(record.values[index]) ?? .max, second: record.position))
                    return true
                }
                pairs.sort()
                ordered[index] = PairSet(sorted: pairs)
            } else {
                var positions: [String: [PairSet.Pair]] = [:]
                elements.forEach { record in
                    positions[Self.bucket(record.values[index]), default: []].append(PairSet.Pair(first: 0, second: record.position))
                    return true
                }
                buckets[index] = positions.mapValues { PairSet(sorted: $0) }
            }
        }
    }

    mutating func insert(_ record: Record) {
        for slot in ordered.indices {
            let index = ordered.keys[slot]
            ordered.values[slot].insert(PairSet.Pair(first: SortKey.ordinal(record.values[index]) ?? .max, second: record.position))
        }
        for slot in buckets.indices {
            let index = buckets.keys[slot]
            buckets.values[slot][Self.bucket(record.values[index]), default: PairSet()].insert(PairSet.Pair(first: 0, second: record.position))
        }
    }

    mutating func remove(_ record: Record) {
        for slot in ordered.indices {
            let index = ordered.keys[slot]
            ordered.values[slot].remove(PairSet.Pair(first: SortKey.ordinal(record.values[index]) ?? .max, second: record.position))
        }
        for slot in buckets.indices {
            let value = Self.bucket(record.values[buckets.keys[slot]])
            buckets.values[slot][value]?.remove(PairSet.Pair(first: 0, second: record.position))
            if buckets.values[slot][value]?.count == 0 { buckets.values[slot][value] = nil }
        }
    }

    /// Whether `old` and `new` differ in a field indexed here.
    func moves(_ old: Record, _ new: Record) -> Bool {
        ordered.keys.contains { old.values[$0] != new.values[$0] } || buckets.keys.contains { old.values[$0] != new.values[$0] }
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
