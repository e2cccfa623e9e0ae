import JSON

/// One reader of a shape in the reverse index: the observer's slot and the
/// slot's epoch when indexed (`Slots`), or a group of observers (`group`
/// ≥ 0, slot and epoch unused), the `seq` it read the shape at, and the shape.
struct ShapeEntry: Sendable {
    var slot: Int32
    var epoch: UInt32
    var group: Int32
    var seq: Int64
    var shape: Shape
    /// The range it is indexed by: the shape's window of positions, or for
    /// a query indexed by a field's values, those values' range
    /// (`ShapeQuery.range`).
    var from: Int64
    var through: Int64

    init(slot: Int32, epoch: UInt32, group: Int32, seq: Int64, shape: Shape) {
        self.slot = slot
        self.epoch = epoch
        self.group = group
        self.seq = seq
        self.shape = shape
        from = shape.from
        through = shape.through
    }
}

/// The shapes read of one collection, found by the position a change
/// lands at without visiting the shapes whose window does not hold it:
/// - whole collections, each a reader of every change;
/// - windows open upward (the last page in ascending order, the first
///   newest-first), sorted by `from`: those at or below a position are a prefix;
/// - windows open downward, sorted by `through`: a suffix;
/// - bounded windows, in buckets by size: one of `2^k` or less starting
///   at `from` is in bucket `from >> k` of level `k`, so a position `p`
///   is in it only if it is in bucket `p >> k` or the one before: two
///   buckets for each level in use.
struct ShapeIndex: Sendable {
    struct Bucket: Hashable, Sendable {
        let level: Int
        let number: Int64
    }

    private(set) var whole: [ShapeEntry] = []
    private(set) var upward: [ShapeEntry] = []
    private(set) var downward: [ShapeEntry] = []
    private(set) var bounded: [Bucket: [ShapeEntry]] = [:]
    /// Bit `k` set when level `k` has a bucket.
    private var levels: UInt64 = 0
    private(set) var count = 0
    /// Query shapes (`Shape.query`), found by a value of the field their
    /// first `eq` or `in` condition looks at: an element's change looks in
    /// the buckets of its values before and after, and at the queries
    /// with no such condition (`otherQueries`).
    private(set) var queryBuckets: [QueryBucket: [ShapeEntry]] = [:]
    private(set) var otherQueries: [ShapeEntry] = []
    /// Queries with no `eq` or `in` but a range of one numeric field's
    /// values (`ShapeQuery.range`), by that field: indexed as windows are,
    /// on the values (`SortKey.ordinal`) instead of positions.
    private(set) var queryRanges: [String: ShapeIndex] = [:]
    /// The fields `queryBuckets` are keyed by, each with its number of buckets.
    private var bucketFields: [String: Int] = [:]
    var hasQueries: Bool { !queryBuckets.isEmpty || !otherQueries.isEmpty || !queryRanges.isEmpty }

    struct QueryBucket: Hashable, Sendable {
        let field: String
        /// The value as JSON text, a whole number as an integer.
        let value: String

        init(field: String, value: JSONValue) {
            self.field = field
            if case .double(let number) = value, number.rounded() == number, abs(number) < 9.0e15 {
                self.value = String(Int64(number))
            } else {
                self.value = JSONWriter.string(value)
            }
        }
    }
    /// Entries whose observer has cleared its reads or gone.
    var dead = 0

    var isEmpty: Bool { count == 0 }

    private static func level(of entry: ShapeEntry) -> Int {
        let span = UInt64(bitPattern: entry.through &- entry.from)
        return 64 - span.leadingZeroBitCount
    }

    mutating func insert(_ entry: ShapeEntry, positioned: Bool = true) {
        count += 1
        let shape = entry.shape
        if positioned, let query = shape.query {
            guard let condition = query.conditions.first(where: { $0.op == .eq || $0.op == .in }) else {
                if let (field, from, through) = query.range {
                    var entry = entry
                    entry.from = from
                    entry.through = through
                    queryRanges[field, default: ShapeIndex()].insert(entry, positioned: false)
                    return
                }
                otherQueries.append(entry)
                return
            }
            for value in Set(condition.values.map { QueryBucket(field: condition.field, value: $0) }) {
                if queryBuckets[value] == nil { bucketFields[condition.field, default: 0] += 1 }
                queryBuckets[value, default: []].append(entry)
            }
            return
        }
        switch (entry.from == .min, entry.through == .max) {
        case (true, true):
            whole.append(entry)
        case (false, true):
            upward.insert(entry, at: Self.partition(upward) { $0.from <= entry.from })
        case (true, false):
            downward.insert(entry, at: Self.partition(downward) { $0.through <= entry.through })
        case (false, false):
            let level = Self.level(of: entry)
            // A window past 2^62 wide fits no bucket pair: kept with the whole ones' cost.
            let bucket = Bucket(level: level, number: level >= 63 ? 0 : entry.from >> Int64(level))
            bounded[bucket, default: []].append(entry)
            levels |= 1 << UInt64(level)
        }
    }

    /// The first index of `entries` (sorted) at which `before` is false.
    private static func partition(_ entries: [ShapeEntry], _ before: (ShapeEntry) -> Bool) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if before(entries[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Calls `body` with every entry whose window holds `position` (and
    /// perhaps a few more of a bounded level: the caller checks `covers`).
    func forEach(holding position: Int64, _ body: (ShapeEntry) -> Void) {
        Self.visit(whole, whole.indices, body)
        let below = Self.partition(upward) { $0.from <= position }
        Self.visit(upward, 0..<below, body)
        let from = Self.partition(downward) { $0.through < position }
        Self.visit(downward, from..<downward.count, body)
        var remaining = levels
        while remaining != 0 {
            let level = remaining.trailingZeroBitCount
            remaining &= remaining - 1
            if level >= 63 {
                Self.visit(bounded[Bucket(level: level, number: 0)], body)
                continue
            }
            let number = position >> Int64(level)
            for candidate in [number - 1, number] {
                Self.visit(bounded[Bucket(level: level, number: candidate)], body)
            }
        }
    }

    /// Calls `body` with every query shape an element with `states` may
    /// concern (the caller asks each what its reader hears): those whose
    /// bucket holds one of its values, before or after, and the others.
    func forEachQuery(_ states: ElementStates, _ body: (ShapeEntry) -> Void) {
        for field in bucketFields.keys {
            let before = states.before?[field], after = states.after?[field]
            var seen: QueryBucket?
            for value in [before, after] {
                guard let value else { continue }
                let bucket = QueryBucket(field: field, value: value)
                guard bucket != seen else { continue }
                seen = bucket
                Self.visit(queryBuckets[bucket], body)
            }
        }
        for (field, ranges) in queryRanges {
            let before = states.before?[field].flatMap(SortKey.ordinal), after = states.after?[field].flatMap(SortKey.ordinal)
            if let before { ranges.forEach(holding: before, body) }
            if let after, after != before { ranges.forEach(holding: after, body) }
        }
        Self.visit(otherQueries, otherQueries.indices, body)
    }

    /// Calls `body` with the entries of `range` where they lie, each lent,
    /// not copied (a copy retains and releases every string and array of
    /// its shape, and a write may look at thousands).
    @inline(__always)
    private static func visit(_ entries: [ShapeEntry], _ range: Range<Int>, _ body: (ShapeEntry) -> Void) {
        entries.withUnsafeBufferPointer { buffer in
            for index in range { body(buffer[index]) }
        }
    }

    @inline(__always)
    private static func visit(_ entries: [ShapeEntry]?, _ body: (ShapeEntry) -> Void) {
        guard let entries else { return }
        visit(entries, entries.indices, body)
    }

    /// Drops the entries `isDead` names; counts none dead after.
    mutating func removeAll(where isDead: (ShapeEntry) -> Bool) {
        otherQueries.removeAll(where: isDead)
        var buckets = 0
        for field in Array(queryRanges.keys) {
            queryRanges[field]!.removeAll(where: isDead)
            if queryRanges[field]!.isEmpty { queryRanges[field] = nil } else { buckets += queryRanges[field]!.count }
        }
        for bucket in Array(queryBuckets.keys) {
            queryBuckets[bucket]!.removeAll(where: isDead)
            if queryBuckets[bucket]!.isEmpty { queryBuckets[bucket] = nil } else { buckets += queryBuckets[bucket]!.count }
        }
        bucketFields = [:]
        for bucket in queryBuckets.keys { bucketFields[bucket.field, default: 0] += 1 }
        whole.removeAll(where: isDead)
        upward.removeAll(where: isDead)
        downward.removeAll(where: isDead)
        var levels: UInt64 = 0
        for bucket in Array(bounded.keys) {
            bounded[bucket]!.removeAll(where: isDead)
            if bounded[bucket]!.isEmpty { bounded[bucket] = nil } else { levels |= 1 << UInt64(bucket.level) }
        }
        self.levels = levels
        // An entry of an `in` condition is in a bucket per value: counted in each.
        count = whole.count + upward.count + downward.count + bounded.values.reduce(0) { $0 + $1.count } + otherQueries.count + buckets
        dead = 0
    }
}
