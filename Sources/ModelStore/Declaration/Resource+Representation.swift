import JSON
import ModelObservation

extension Resource {
    /// What a read of `record` answers and tracks: `id` for an element, then
    /// each shown member that `selection` names, each a read of its key. A
    /// collection inside it shows its elements whole and reads their membership.
    /// Without `tracking` (a write's answer), no reads are collected.
    public func representation(of record: Record, in state: ModelState, _ selection: FieldSelection = .all,
                               tracking: Bool = true) -> Representation {
        var builder = RepresentationBuilder(resource: record.path, fields: fields.count + 1, tracking: tracking)
        write(record, in: state, into: &builder, selection)
        return builder.finish()
    }

    /// `{"donuts": [...]}`: the top-level collection, reading its membership
    /// and what each element shows.
    public func list(in state: ModelState, _ selection: FieldSelection = .all) -> Representation {
        let elements = state[self]
        var builder = RepresentationBuilder(resource: path, fields: 1 + elements.count * (fields.count + 1))
        builder.elements(name, key: membershipKey) { builder in
            for element in elements.values {
                builder.object(resource: element.path) { write(element, in: state, into: &$0, selection) }
            }
        }
        return builder.finish()
    }

    /// `{"orderCount": 3}`: the computed property at `index` of a singleton, on its own.
    public func representation(ofComputed index: Int, in state: ModelState) -> Representation {
        let record = state[singleton: self]
        var builder = RepresentationBuilder(resource: path, fields: 1)
        builder.field(computed[index].name, computed[index].value(state, record), key: record.keys[fields.count + index])
        return builder.finish()
    }

    /// The members of `record` into the object `builder` is writing.
    public func write(_ record: Record, in state: ModelState, into builder: inout RepresentationBuilder, _ selection: FieldSelection = .all) {
        if kind == .collection { builder.constant("id", .string(record.id)) }
        for slot in slots {
            switch slot.kind {
            case .field(let index):
                builder.field(slot.name, record.values[index], key: record.keys[index], selection)
            case .computed(let value, let key):
                guard selection.includes(slot.name.name) else { continue }
                builder.field(slot.name, value(state, record), key: record.keys[key], selection)
            case .collection(let collection, let nested):
                let elements = nested.map { record.children[$0] } ?? state[collection]
                // A top-level collection's membership is its own path; one
                // inside an element is under the element's.
                let key = nested == nil ? collection.membershipKey : PropertyKey(record.path, collection.name)
                builder.elements(slot.name, key: key, selection) { builder in
                    for element in elements.values {
                        builder.object(resource: element.path) { collection.write(element, in: state, into: &$0) }
                    }
                }
            }
        }
    }
}
