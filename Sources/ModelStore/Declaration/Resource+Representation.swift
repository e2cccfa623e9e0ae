import JSON
import ModelObservation

extension Resource {
    /// What a read of `record` answers and tracks: `id` for an element, then
    /// each shown member that `selection` names, each a read of its key. A
    /// collection inside it shows its elements whole and reads their membership.
    /// Without `tracking` (a write's answer), no reads are collected.
    /// `pages` names, by member name, the collections shown inside (the
    /// truck's `orders`) that are to show one page.
    public func representation(of record: Record, in state: ModelState, _ selection: FieldSelection = .all,
                               tracking: Bool = true, pages: [String: Page] = [:], output: RepresentationOutput? = nil) -> Representation {
        var builder = RepresentationBuilder(resource: record.path, fields: fields.count + 1, tracking: tracking, output: output)
        write(record, in: state, into: &builder, selection, pages: pages)
        return builder.finish()
    }

    /// The key of every property `record` shows, those of the elements of
    /// the collections inside it too (not as shapes): whom its insert
    /// implies reads of, and whose readers its remove reaches.
    public func propertyKeys(of record: Record, in state: ModelState, _ selection: FieldSelection = .all, pages: [String: Page] = [:]) -> [PropertyKey] {
        var builder = RepresentationBuilder(resource: record.path, fields: fields.count + 1, shapes: false)
        write(record, in: state, into: &builder, selection, pages: pages)
        return builder.finish().reads
    }

    /// `{"donuts": [...]}`: the top-level collection, or one `page` of it,
    /// read as one shape (the collection, the fields selected, the window
    /// the page covers), with the next page while more follow.
    public func list(in state: ModelState, _ selection: FieldSelection = .all, page: Page? = nil,
                     output: RepresentationOutput? = nil) -> Representation {
        let elements = state[self]
        var builder = RepresentationBuilder(resource: path, fields: 4, output: output)
        Self.writeElements(elements, named: MemberName(name), collection: path, page: page, fields: selection.shapeFields,
                           selection: .all, into: &builder, member: nil) { element, builder in
            builder.object(resource: element.path) { write(element, in: state, into: &$0, selection) }
        }
        return builder.finish()
    }

    /// The first position an ascending page after `after` can hold. No
    /// element is ever at `Int64.max` (positions count up from 1), so a page
    /// after it covers nothing, and its window from `Int64.max` nothing either.
    static func past(_ after: Int64) -> Int64 {
        after == .max ? .max : after + 1
    }

    /// Writes `elements` under `name` (when `selection` shows it) as a
    /// shape read of `collection`: all of them, or the `page` asked for,
    /// each with `write`. The window of a page runs from its cursor to its
    /// last element, and is open at the far end when no more follow (the
    /// last page oldest-first, the first newest-first: new elements land
    /// there); the next page, while more follow, is noted as shown under
    /// `member` (nil for the collection read on its own).
    static func writeElements(_ elements: PersistentOrderedDictionary<String, Record>, named name: MemberName, collection: String,
                              page: Page?, fields: [String]?, selection: FieldSelection, into builder: inout RepresentationBuilder,
                              member: String?, write: (Record, inout RepresentationBuilder) -> Void)
    {
        let newest = fields == nil ? Int64.max : (elements.last?.position ?? .min)
        guard let page else {
            builder.elements(name, shape: Shape(collection: collection, fields: fields, newest: newest), selection) { builder in
                elements.forEach { element in
                    write(element, &builder)
                    return true
                }
            }
            return
        }
        let boundary: ((Record) -> Bool)? = page.after.map { after in
            page.descending ? { $0.position >= after } : { $0.position > after }
        }
        guard let limit = page.limit else {
            let shape = page.descending
                ? Shape(collection: collection, fields: fields, through: page.after.map { $0 - 1 } ?? .max, newest: newest)
                : Shape(collection: collection, fields: fields, from: page.after.map(Self.past) ?? .min, newest: newest)
            builder.elements(name, shape: shape, selection) { builder in
                elements.forEach(forward: !page.descending, from: boundary) { element in
                    write(element, &builder)
                    return true
                }
            }
            return
        }
        var shown: [Record] = []
        shown.reserveCapacity(limit + 1)
        elements.forEach(forward: !page.descending, from: boundary) { element in
            shown.append(element)
            return shown.count <= limit
        }
        let more = shown.count > limit
        if more { shown.removeLast() }
        let end = more ? shown.last?.position : nil
        var edge = end
        if PlantedFault.current == .narrowPageWindow, let last = end { edge = page.descending ? last + 1 : last - 1 }
        let shape = page.descending
            ? Shape(collection: collection, fields: fields, from: edge ?? .min, through: page.after.map { $0 - 1 } ?? .max, newest: newest)
            : Shape(collection: collection, fields: fields, from: page.after.map(Self.past) ?? .min, through: edge ?? .max, newest: newest)
        guard selection.includes(name.name) else { return }
        builder.elements(name, shape: shape, selection) { builder in
            for element in shown { write(element, &builder) }
        }
        if let end {
            builder.nextPages.append(NextPage(collection: collection, page: page.next(after: end), fields: fields, member: member))
        }
    }

    /// `{"orderCount": 3}`: the computed property at `index` of a singleton, on its own.
    public func representation(ofComputed index: Int, in state: ModelState) -> Representation {
        let record = state[singleton: self]
        var builder = RepresentationBuilder(resource: path, fields: 1)
        builder.field(computed[index].name, computed[index].value(state, record), key: record.keys[fields.count + index])
        return builder.finish()
    }

    /// The members of `record` into the object `builder` is writing.
    public func write(_ record: Record, in state: ModelState, into builder: inout RepresentationBuilder, _ selection: FieldSelection = .all,
                      pages: [String: Page] = [:]) {
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
                let path = nested == nil ? collection.path : record.path + "/" + collection.name
                let name = collection.name
                Self.writeElements(elements, named: slot.name, collection: path, page: pages[name], fields: nil, selection: selection,
                                   into: &builder, member: name) { element, builder in
                    builder.object(resource: element.path) { collection.write(element, in: state, into: &$0) }
                }
            }
        }
    }
}
