import JSON

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
        // between two of its inserts and removes said to that query, never
        // across one (the insert brings the element as it is then).
        var names: [String?] = Array(repeating: nil, count: changes.count)
        /// Per query and element path, how many of its inserts and removes came so far.
        var entries: [String: Int] = [:]
        /// Per query, the collections its inserts and removes were in.
        var collections: [String: Set<String>] = [:]
        for (i, change) in changes.enumerated() {
            guard change.operation == .set else {
                if let query = change.query, let id = Self.elementID(change) {
                    collections[query, default: []].insert(change.path)
                    entries[query + "\u{0}" + change.path + "/" + id, default: 0] += 1
                }
                continue
            }
            let name = change.query.map { query in
                var entered = 0
                for collection in collections[query] ?? [] where change.path.hasPrefix(collection + "/") {
                    let id = change.path.dropFirst(collection.count + 1).prefix { $0 != "/" }
                    entered = entries[query + "\u{0}" + collection + "/" + id] ?? 0
                }
                return change.path + "?" + query + "#" + String(entered)
            } ?? change.path
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

    /// The `id` of the element an insert or remove carries.
    private static func elementID(_ change: Change) -> String? {
        guard let text = change.new ?? change.old, case .object(let element)? = try? JSONParser.parse(text) else { return nil }
        return element["id"]?.stringValue
    }
}
