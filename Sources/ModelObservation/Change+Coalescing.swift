extension Change {
    /// Folds the `set` changes of each path into one (first `old`, last
    /// `new`, at the last one's `seq`); a path that ends where it started is
    /// left out. Inserts and removes are kept as they are.
    public static func coalesce(_ changes: [Change]) -> [Change] {
        var firstOld: [String: String?] = [:]
        var lastIndex: [String: Int] = [:]
        // A query's reader hears each of its queries apart (`query`).
        func name(_ change: Change) -> String { change.query.map { change.path + "?" + $0 } ?? change.path }
        for (i, change) in changes.enumerated() where change.operation == .set {
            if firstOld[name(change)] == nil { firstOld[name(change)] = .some(change.old) }
            lastIndex[name(change)] = i
        }
        var result: [Change] = []
        for (i, change) in changes.enumerated() {
            guard change.operation == .set else {
                result.append(change)
                continue
            }
            guard lastIndex[name(change)] == i, let old = firstOld[name(change)] else { continue }
            if old == change.new { continue }
            result.append(Change(seq: change.seq, transaction: change.transaction, path: change.path, operation: .set,
                                 old: old, new: change.new, keys: change.keys, query: change.query))
        }
        return result
    }
}
