import JSON
import ModelObservation

extension Resource {
    /// The elements that match `query` in its window, in its order, with
    /// their sort keys: at most `limit + 1` with a limit (one more than
    /// asked tells that more follow). Found through the state's query
    /// indexes where one serves (`QueryIndex`): a walk of the sorted
    /// field's index from the window's start, or the positions of the
    /// values an `eq`, `in` or `is.null` names or of a number field's
    /// range, when they are few; otherwise by a pass over the collection.
    func queryElements(in state: ModelState, _ query: ShapeQuery, limit: Int? = nil) -> [(key: SortKey, record: Record)] {
        let fields = query.conditions.map { queryableField($0.field) }
        let sortField = query.sort.flatMap { queryableField($0) }
        let elements = state[self]
        let wanted = limit.map { $0 + 1 } ?? .max
        func key(_ record: Record) -> SortKey {
            SortKey(value: sortField.map { $0.value(of: record, in: state) }, position: record.position)
        }
        var found: [(key: SortKey, record: Record)] = []
        /// Takes `record` when it is in the copy; false once the walk,
        /// in the query's order, is past the window or has enough.
        func take(_ record: Record) -> Bool {
            guard matches(record, query, in: state, fields: fields) else { return true }
            let key = key(record)
            if let upper = query.upper, query.precedes(upper.key, key) { return false }
            guard query.windowHolds(key) else { return true }
            found.append((key, record))
            return found.count < wanted
        }
        let index = state.indexes[ObjectIdentifier(self)]
        // The fewest elements an index names for one field's conditions:
        // the buckets of the values an `eq` or `in` names, or the value
        // ranges its conditions leave (`eq`, `in`, `is.null`, `lt` … `gte`)
        // of a number field, counted up to a bound.
        // With a sort an index walks, fewer than `sorted` decide for the
        // positions; without, fewer than an eighth of the collection.
        let sorted = 4 * min(wanted, 1 << 20) + 1024
        let walksSorted = sortField?.indexKey.map { index?.ordered[$0] != nil } ?? false
        let bound = (walksSorted ? sorted : max(elements.count / 8, 4096, sorted)) + 1
        var narrowest: (source: IndexedValues, count: Int)?
        if let index {
            for condition in query.conditions where condition.op == .eq || condition.op == .in || condition.op == .isNull {
                guard let column = queryableField(condition.field)?.indexKey, let buckets = index.buckets[column] else { continue }
                let values = condition.op == .isNull ? [JSONValue.null] : condition.values
                let count = values.reduce(0) { $0 + (buckets[QueryIndex.bucket($1)]?.count ?? 0) }
                if count < (narrowest?.count ?? .max) { narrowest = (.buckets(column, values), count) }
            }
            for (column, pairs) in index.ordered {
                let conditions = query.conditions.filter { queryableField($0.field)?.indexKey == column }
                guard let ranges = Self.ranges(of: conditions) else { continue }
                let count = Self.count(pairs, in: ranges, upTo: min(narrowest?.count ?? .max, bound))
                if count < (narrowest?.count ?? .max) { narrowest = (.ranges(column, ranges), count) }
            }
        }
        // Sorted by an indexed number, unless a small bucket names fewer.
        if let index, let sortField, let column = sortField.indexKey, let pairs = index.ordered[column],
           (narrowest?.count ?? .max) > sorted
        {
            var low = Int64.min, high = Int64.max
            for condition in query.conditions where condition.field == sortField.name {
                guard let ordinal = condition.values.first.flatMap(SortKey.ordinal) else { continue }
                switch condition.op {
                case .gt, .gte: low = max(low, ordinal)
                case .lt, .lte: high = min(high, ordinal)
                case .eq: (low, high) = (max(low, ordinal), min(high, ordinal))
                default: break
                }
            }
            if let start = query.lower?.key.value.flatMap(SortKey.ordinal) {
                if query.descending { high = min(high, start) } else { low = max(low, start) }
            }
            let start = query.descending ? PairSet.Pair(first: high, second: .max) : PairSet.Pair(first: low, second: .min)
            pairs.forEach(from: start, ascending: !query.descending) { pair in
                if query.descending ? pair.first < low : pair.first > high { return false }
                guard let record = elements.element(at: pair.second) else { return true }
                return take(record)
            }
            return found
        }
        // The positions of the values named, in creation order.
        if let index, let narrowest, narrowest.count <= max(elements.count / 8, 4096) {
            var positions: [Int64] = []
            switch narrowest.source {
            case .buckets(let column, let values):
                for value in values {
                    index.buckets[column]?[QueryIndex.bucket(value)]?.forEach { positions.append($0.second); return true }
                }
            case .ranges(let column, let ranges):
                for range in ranges {
                    index.ordered[column]?.forEach(from: PairSet.Pair(first: range.lowerBound, second: .min)) { pair in
                        guard pair.first <= range.upperBound else { return false }
                        positions.append(pair.second)
                        return true
                    }
                }
            }
            positions.sort()
            if query.sort == nil {
                // In the query's order already: taken until past the window.
                var previous: Int64?
                for position in query.descending ? positions.reversed() : positions where position != previous {
                    previous = position
                    guard let record = elements.element(at: position) else { continue }
                    if !take(record) { break }
                }
                return found
            }
            var candidates: [(key: SortKey, record: Record)] = []
            var previous: Int64?
            for position in positions where position != previous {
                previous = position
                guard let record = elements.element(at: position), matches(record, query, in: state, fields: fields) else { continue }
                let key = key(record)
                if query.windowHolds(key) { candidates.append((key, record)) }
            }
            candidates.sort { query.precedes($0.key, $1.key) }
            return Array(candidates.prefix(wanted))
        }
        if query.sort == nil {
            let boundary: ((Record) -> Bool)? = query.lower.map { lower in
                query.descending ? { $0.position >= lower.key.position } : { $0.position > lower.key.position }
            }
            elements.forEach(forward: !query.descending, from: boundary, take)
            return found
        }
        elements.forEach { record in
            guard matches(record, query, in: state, fields: fields) else { return true }
            let key = key(record)
            if query.windowHolds(key) { found.append((key, record)) }
            return true
        }
        found.sort { query.precedes($0.key, $1.key) }
        return Array(found.prefix(wanted))
    }

    /// Where an index finds the elements a query's conditions on one field
    /// allow: the buckets of some values, or ranges of a number field's
    /// ordinals.
    private enum IndexedValues {
        case buckets(Int, [JSONValue])
        case ranges(Int, [ClosedRange<Int64>])
    }

    /// The ordinals (`SortKey.ordinal`) that `conditions` on one number
    /// field allow, as ranges, inclusive (a superset: every element found
    /// is matched again); nil when they allow any (no condition, or only
    /// `neq` and `not.is.null`, which an index walk would not narrow).
    static func ranges(of conditions: [ShapeQuery.Condition]) -> [ClosedRange<Int64>]? {
        var low = Int64.min, high = Int64.max
        var points: [Int64]?
        var narrowed = false
        for condition in conditions {
            switch condition.op {
            case .eq, .in, .isNull:
                let ordinals = condition.op == .isNull ? [Int64.max] : condition.values.compactMap(SortKey.ordinal)
                points = points.map { Array(Set($0).intersection(ordinals)) } ?? ordinals
            case .gt, .gte:
                guard let ordinal = condition.values.first.flatMap(SortKey.ordinal) else { continue }
                low = max(low, ordinal)
                narrowed = true
            case .lt, .lte:
                guard let ordinal = condition.values.first.flatMap(SortKey.ordinal) else { continue }
                high = min(high, ordinal)
                narrowed = true
            default:
                continue
            }
        }
        if let points { return points.filter { $0 >= low && $0 <= high }.sorted().map { $0...$0 } }
        guard narrowed else { return nil }
        return low <= high ? [low...high] : []
    }

    /// How many pairs of `pairs` fall in `ranges`, counted up to `limit`.
    static func count(_ pairs: PairSet, in ranges: [ClosedRange<Int64>], upTo limit: Int) -> Int {
        var count = 0
        for range in ranges where count < limit {
            pairs.forEach(from: PairSet.Pair(first: range.lowerBound, second: .min)) { pair in
                guard pair.first <= range.upperBound else { return false }
                count += 1
                return count < limit
            }
        }
        return count
    }
}
