import JSON
import ModelObservation

extension Store {
    /// What brings an observer that fell behind the retained change log back
    /// in step, at the current cursor: the current value of every property
    /// it reads (`op: repair`, `new`), and for each collection whose
    /// membership it reads, an `insert` of each element it has not seen and
    /// a `remove` of each it saw that is gone (it saw the elements whose
    /// properties it had read by `since`, its place in the feed). Its cursor
    /// moves to the current one. A key only a custom read shows (the grid's
    /// rows) is repaired as that read's `View` shows it now.
    public func repair(_ id: String, since: Int64) throws -> (changes: [Change], cursor: Int64) {
        let state = snapshot.state
        guard let observer = registry.observer(id) else { throw ModelError.notFound("no observer \(id)") }
        var values: [String: String] = [:]
        var members: [String: [(id: String, element: String)]] = [:]
        func visit(_ resource: Resource, _ record: Record) {
            for (index, key) in record.keys.enumerated() where key != Record.noKey {
                let value = index < resource.fields.count
                    ? record.values[index] : resource.computed[index - resource.fields.count].value(state, record)
                values[key.path] = JSONWriter.string(value)
            }
            for (index, nested) in resource.nested.enumerated() {
                let elements = record.children[index].values
                members[PropertyKey(record.path, nested.name).path] = elements.map { ($0.id, nested.representation(of: $0, in: state).string) }
                for child in elements { visit(nested, child) }
            }
        }
        for resource in catalog.resources {
            switch resource.kind {
            case .singleton:
                visit(resource, state[singleton: resource])
            case .collection:
                let elements = state[resource].values
                members[resource.membershipKey.path] = elements.map { ($0.id, resource.representation(of: $0, in: state).string) }
                for record in elements { visit(resource, record) }
            }
        }
        let cursor = state.seq
        var changes: [Change] = []
        let views = Dictionary(catalog.reads.flatMap(\.views).map { ($0.key.path, $0) }) { first, _ in first }
        let reads = observer.reads.keys.map(\.path)
        for path in reads.sorted() {
            if let shape = Shape(key: PropertyKey(path)) {
                // A shape does not record each element it saw: its repair
                // is the window as it stands, the elements as a fresh read
                // of it shows them, for the client to replace its copy with.
                guard let (resource, elements) = Self.elements(of: shape, in: state, catalog) else { continue }
                var text = "["
                for (index, element) in elements.enumerated() {
                    if index > 0 { text += "," }
                    let selection = element.position > shape.newest ? FieldSelection.all : FieldSelection(shapeFields: shape.fields)
                    text += resource.representation(of: element, in: state, selection, tracking: false).string
                }
                text += "]"
                changes.append(Change(seq: cursor, transaction: cursor, path: shape.collection, operation: .repair, old: nil, new: text,
                                      keys: [PropertyKey(shape.collection)], query: shape.query?.text))
            } else if let view = views[path] {
                changes.append(Change(seq: cursor, transaction: cursor, path: path, operation: .repair, old: nil, new: view.current(state),
                                      keys: [PropertyKey(path)]))
            } else if let value = values[path] {
                changes.append(Change(seq: cursor, transaction: cursor, path: path, operation: .repair, old: nil, new: value,
                                      keys: [PropertyKey(path)]))
            } else if let current = members[path] {
                // Seen: the elements whose properties the observer reads.
                let prefix = path + "/"
                let seen = Set(observer.reads.compactMap { read, readAt -> Substring? in
                    guard readAt <= since, read.path.hasPrefix(prefix) else { return nil }
                    return read.path.dropFirst(prefix.count).split(separator: "/").first
                })
                let present = Set(current.map { Substring($0.id) })
                for element in current where !seen.contains(Substring(element.id)) {
                    changes.append(Change(seq: cursor, transaction: cursor, path: path, operation: .insert, old: nil, new: element.element,
                                          keys: [PropertyKey(path)]))
                }
                for gone in seen.subtracting(present).sorted() {
                    changes.append(Change(seq: cursor, transaction: cursor, path: path, operation: .remove,
                                          old: JSONWriter.string(["id": .string(String(gone))]), new: nil, keys: [PropertyKey(path)]))
                }
            }
        }
        registry.setCursor(of: id, to: cursor)
        return (changes, cursor)
    }
}
