import JSON
import ModelObservation

extension Resource {
    /// The elements that match `query` in its window, in its order, with
    /// their sort keys: at most `limit + 1` with a limit (one more than
    /// asked tells that more follow). Found through the state's query
    /// indexes where one serves (`QueryIndex`): a walk of the sorted
    /// field's index from the window's start, or of the positions of the
    /// values an `eq` or `in` names; otherwise by a pass over the
    /// collection.
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
        // The smallest `eq`/`in` an index answers, and how many it names.
        var narrowest: (column: Int, values: [JSONValue], count: Int)?
        if let index {
            for condition in query.conditions where condition.op == .eq || condition.op == .in {
                guard let field = queryableField(condition.field), case .stored(let column) = field.source else { continue }
                var count = 0
                for value in condition.values {
                    if let buckets = index.buckets[column] {
                        count += buckets[QueryIndex.bucket(value)]?.count ?? 0
                    } else if index.ordered[column] != nil {
                        count += elements.count  // Not counted: taken as large.
                    }
                }
                if index.buckets[column] != nil || index.ordered[column] != nil, count < (narrowest?.count ?? .max) {
                    narrowest = (column, condition.values, count)
                }
            }
        }
        // Sorted by an indexed number, unless a small bucket names fewer.
        if let index, let sortField, case .stored(let column) = sortField.source, let pairs = index.ordered[column],
           (narrowest?.count ?? .max) > 4 * min(wanted, 1 << 20) + 1024
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
            for value in narrowest.values {
                if let bucket = index.buckets[narrowest.column]?[QueryIndex.bucket(value)] {
                    bucket.forEach { positions.append($0.second); return true }
                } else if let pairs = index.ordered[narrowest.column], let ordinal = SortKey.ordinal(value) {
                    pairs.forEach(from: PairSet.Pair(first: ordinal, second: .min)) { pair in
                        guard pair.first == ordinal else { return false }
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
}
