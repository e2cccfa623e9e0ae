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
    /// rows) is repaired as that read's `View` shows it now. Only what the
    /// observer reads is looked up: the cost is its reads', whatever the
    /// size of the state.
    public func repair(_ id: String, since: Int64) throws -> (changes: [Change], cursor: Int64) {
        let state = snapshot.state
        guard let observer = registry.observer(id) else { throw ModelError.notFound("no observer \(id)") }
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
            } else if let value = currentValue(at: path, in: state) {
                changes.append(Change(seq: cursor, transaction: cursor, path: path, operation: .repair, old: nil, new: value,
                                      keys: [PropertyKey(path)]))
            } else if let (resource, elements) = Self.collection(at: path, in: state, catalog) {
                let current = elements.values.map { (id: $0.id, element: resource.representation(of: $0, in: state).string) }
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

    /// The current value, as JSON text, of the property whose key is at
    /// `path`, found from the path alone (only what the observer reads is
    /// looked at, never the whole state); nil when no record has it.
    private func currentValue(at path: String, in state: ModelState) -> String? {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")), slash != path.utf8.startIndex,
              let (resource, record) = record(at: String(path[..<slash]), in: state) else { return nil }
        for (index, key) in record.keys.enumerated() where key != Record.noKey && key.path == path {
            let value = index < resource.fields.count
                ? record.values[index] : resource.computed[index - resource.fields.count].value(state, record)
            return JSONWriter.string(value)
        }
        return nil
    }

    /// The record at `path` (a singleton, an element, an element of an
    /// element's nested collection) and its resource.
    private func record(at path: String, in state: ModelState) -> (Resource, Record)? {
        for resource in catalog.resources {
            switch resource.kind {
            case .singleton:
                if resource.path == path { return (resource, state[singleton: resource]) }
            case .collection:
                guard path.hasPrefix(resource.path + "/") else { continue }
                let rest = path.dropFirst(resource.path.count + 1).split(separator: "/", omittingEmptySubsequences: false)
                guard let element = state[resource][String(rest[0])] else { continue }
                if rest.count == 1 { return (resource, element) }
                if rest.count == 3, let index = resource.nested.firstIndex(where: { $0.name == rest[1] }),
                   let child = element.children[index][String(rest[2])]
                {
                    return (resource.nested[index], child)
                }
            }
        }
        return nil
    }
}
