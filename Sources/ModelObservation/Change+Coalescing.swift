extension Change {
    /// Folds the `set` changes of each path into one (first `old`, last
    /// `new`, at the last one's `seq`); a path that ends where it started is
    /// left out. Inserts and removes are kept as they are.
    public static func coalesce(_ changes: [Change]) -> [Change] {
        var firstOld: [String: String?] = [:]
        var lastIndex: [String: Int] = [:]
        for (i, change) in changes.enumerated() where change.operation == .set {
            if firstOld[change.path] == nil { firstOld[change.path] = .some(change.old) }
            lastIndex[change.path] = i
        }
        var result: [Change] = []
        for (i, change) in changes.enumerated() {
            guard change.operation == .set else {
                result.append(change)
                continue
            }
            guard lastIndex[change.path] == i, let old = firstOld[change.path] else { continue }
            if old == change.new { continue }
            result.append(Change(seq: change.seq, transaction: change.transaction, path: change.path, operation: .set,
                                 old: old, new: change.new, keys: change.keys))
        }
        return result
    }
}
