extension Change {
    /// Folds the `set` changes of each path into one (first `old`, last
    /// `new`, at the last one's `seq`); a path that ends where it started is
    /// left out. Inserts and removes are kept as they are; a query's sets
    /// are not folded across its inserts and removes.
    public static func coalesce(_ changes: [Change]) -> [Change] {
        var firstOld: [String: String?] = [:]
        var lastIndex: [String: Int] = [:]
        // A query's reader hears each of its queries apart (`query`), and an
        // element may leave a query and come back: its sets are folded only
        // between two of that query's inserts and removes, never across one
        // (the insert brings the element as it is then).
        var names: [String?] = Array(repeating: nil, count: changes.count)
        var entries: [String: Int] = [:]
        for (i, change) in changes.enumerated() {
            guard change.operation == .set else {
                if let query = change.query { entries[query, default: 0] += 1 }
                continue
            }
            let name = change.query.map { change.path + "?" + $0 + "#" + String(entries[$0] ?? 0) } ?? change.path
            names[i] = name
            if firstOld[name] == nil { firstOld[name] = .some(change.old) }
            lastIndex[name] = i
        }
        var result: [Change] = []
        for (i, change) in changes.enumerated() {
            guard change.operation == .set, let name = names[i] else {
                result.append(change)
                continue
            }
            guard lastIndex[name] == i, let old = firstOld[name] else { continue }
            if old == change.new { continue }
            result.append(Change(seq: change.seq, transaction: change.transaction, path: change.path, operation: .set,
                                 old: old, new: change.new, keys: change.keys, query: change.query))
        }
        return result
    }
}
