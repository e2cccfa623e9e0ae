import HashTreeCollections
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
    var buckets: [Int: TreeDictionary<String, PairSet>] = [:]

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
                var tree = TreeDictionary<String, PairSet>()
                for (value, pairs) in positions { tree[value] = PairSet(sorted: pairs) }
                buckets[index] = tree
            }
        }
    }

    mutating func insert(_ record: Record) {
        for index in Array(ordered.keys) {
            ordered[index]!.insert(PairSet.Pair(first: SortKey.ordinal(record.values[index]) ?? .max, second: record.position))
        }
        for index in Array(buckets.keys) {
            buckets[index]![Self.bucket(record.values[index]), default: PairSet()].insert(PairSet.Pair(first: 0, second: record.position))
        }
    }

    mutating func remove(_ record: Record) {
        for index in Array(ordered.keys) {
            ordered[index]!.remove(PairSet.Pair(first: SortKey.ordinal(record.values[index]) ?? .max, second: record.position))
        }
        for index in Array(buckets.keys) {
            let value = Self.bucket(record.values[index])
            buckets[index]![value]?.remove(PairSet.Pair(first: 0, second: record.position))
            if buckets[index]![value]?.count == 0 { buckets[index]![value] = nil }
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
        let id = ObjectIdentifier(resource)
        guard indexes[id] != nil else { return }
        if let old, let new, !indexes[id]!.moves(old, new) { return }
        if let old { indexes[id]!.remove(old) }
        if let new { indexes[id]!.insert(new) }
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
