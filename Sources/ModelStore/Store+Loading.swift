import Concurrency

/// The state, as the models' tables hold it.
extension Store {
    /// Every model of `catalog` from its table, nested elements inside theirs.
    static func loadState(_ storage: any ModelStorage, _ catalog: Catalog) throws -> ModelState {
        var state = ModelState(seq: try storage.lastSeq())
        // Equal values share one copy across the whole state (a million
        // orders of a few donuts).
        try ValueInterner.shared.withLock { interner in
            for resource in catalog.resources {
                switch resource.kind {
                case .singleton:
                    var loaded: Record?
                    try storage.forEachRow(of: catalog.layout(of: resource), interning: interner) { row in
                        if loaded == nil { loaded = Record(resource: resource, id: "", position: 0, values: row.values) }
                    }
                    guard let loaded else { throw ModelError(.unavailable, "the \(resource.table) table has no row 1") }
                    state[singleton: resource] = loaded
                case .collection:
                    var elements = PersistentOrderedDictionary<String, Record>()
                    // Indexed once all are in: one sorted pass instead of a
                    // walk down the key index per row.
                    try storage.forEachRow(of: catalog.layout(of: resource), interning: interner) { row in
                        elements.appendUnindexed(row.id, Record(resource: resource, id: row.id, position: row.position,
                                                                values: interner.values(row.values)))
                    }
                    elements.makeIndex()
                    for (index, nested) in resource.nested.enumerated() {
                        // Each parent's children gathered first, then set once:
                        // set one by one through the parent, each would copy
                        // the children before it (52 cards a game: 1,378 copies).
                        var children: [String: PersistentOrderedDictionary<String, Record>] = [:]
                        var parents: [String] = []
                        try storage.forEachRow(of: catalog.layout(of: nested), interning: interner) { row in
                            guard let parentId = row.parentId, let parent = elements[parentId] else { return }
                            let child = Record(resource: nested, id: row.id, in: parent.path, position: row.position,
                                               values: interner.values(row.values))
                            if children[parentId] == nil { parents.append(parentId) }
                            children[parentId, default: PersistentOrderedDictionary()][row.id] = child
                        }
                        for parentId in parents {
                            elements[parentId]!.children[index] = children.removeValue(forKey: parentId)!
                        }
                    }
                    state[resource] = elements
                    state.buildIndexes(of: resource)
                }
            }
        }
        return state
    }
}
