import JSON
import ModelObservation

/// One write in progress: a copy of the state to change, the storage inside
/// its transaction, and the changes recorded so far.
///
/// Models change state only through `insert`, `update` and `delete`, which
/// store the rows and record the changes (set with old and new, insert,
/// remove; a write that changes nothing records nothing). Computed
/// properties of what a write touched are compared when it ends.
public struct WriteTransaction: ~Copyable {
    public internal(set) var state: ModelState
    let storage: any ModelStorage
    let catalog: Catalog
    private(set) var pending: [PendingChange] = []
    /// Elements whose computed properties may have moved: their state
    /// before this write and their computed values then (taken when the
    /// write first touches them), compared with their state after it at
    /// the end.
    private var touched: [(resource: Resource, before: Record, computed: [JSONValue])] = []
    /// Elements of collections with queryable fields that this write
    /// changed, by path, in the order it first touched them: their `set`
    /// changes carry an `ElementRow` for query shapes (`addRows`).
    private var queried: [String: (resource: Resource, id: String, order: Int)] = [:]

    /// The quota on each collection's rows; nil: none (a migration's writes).
    let rowQuota: Store.RowQuota?
    /// Whether the write is exempt from the quotas (a trusted address's: `PreparedWrite.exemptingQuotas`).
    public internal(set) var exemptFromQuotas = false

    init(state: ModelState, storage: any ModelStorage, catalog: Catalog, rowQuota: Store.RowQuota? = nil) {
        self.state = state
        self.storage = storage
        self.catalog = catalog
        self.rowQuota = rowQuota
    }

    // MARK: - Inserting

    /// How an insert is announced to readers of its collection.
    public enum Announcement {
        /// As an `insert` of the element's representation on its collection's path.
        case element
        /// As this change instead (an element shown in another shape).
        case custom(PendingChange)
        /// Not by this insert: the caller records one change for several
        /// (a new row of dots is one insert into `/grid/rows`).
        case none
    }

    /// Stores `record` as the newest element of the top-level collection
    /// `resource`, with the elements nested in it, and announces it.
    @discardableResult
    public mutating func insert(_ record: Record, into resource: Resource, announce: Announcement = .element) throws -> Record {
        var record = record
        // No copy of the collection is kept: the state is changed in place below.
        // After every position given before, those of elements since
        // deleted too (a page's window is a range of positions, and an
        // element made later must never land inside one read before):
        // the `seq` only grows, through restarts and across instances.
        if resource.positioned { record.position = max((state[resource].last?.position ?? 0) + 1, state.seq + 1) }
        if let checkCreate = resource.checkCreate { try checkCreate(state, record) }
        if let rowQuota, !exemptFromQuotas, state[resource].count >= rowQuota.limit { throw rowQuota.refusal(resource) }
        try store(record, of: resource, parentId: nil)
        state[resource][record.id] = record
        state.reindex(resource, old: nil, new: record)
        switch announce {
        case .element:
            let representation = resource.representation(of: record, in: state)
            pending.append(.insert(into: resource.path, element: representation.string,
                                   elementKeys: resource.nested.isEmpty ? representation.reads : resource.propertyKeys(of: record, in: state))
                .landing(at: [Place(collection: resource.path, position: record.position)]))
        case .custom(let change):
            // Made before the element had its position (a create's, ahead
            // of the writer lock): it lands there now.
            let own = change.operation == .insert && change.path == resource.path
            pending.append(own ? change.landing(at: [Place(collection: resource.path, position: record.position)]) : change)
        case .none:
            break
        }
        return record
    }

    /// Appends a change made ahead of the transaction (a representation built
    /// before the writer lock, say).
    public mutating func record(_ change: PendingChange) {
        pending.append(change)
    }

    private func store(_ record: Record, of resource: Resource, parentId: String?) throws {
        try storage.insert(into: catalog.layout(of: resource),
                           StoredRow(id: record.id, parentId: parentId, position: record.position, values: record.values))
        for (nested, children) in zip(resource.nested, record.children) {
            for child in children.values { try store(child, of: nested, parentId: record.id) }
        }
    }

    // MARK: - Updating

    /// Changes the element `id` of `resource` with `change`; each stored
    /// field that moves, in it or in the elements nested in it, is one
    /// change. Throws `notFound` when there is no such element.
    @discardableResult
    public mutating func update(_ resource: Resource, _ id: String, onlyIf condition: Precondition? = nil,
                                _ change: (inout Record) throws -> Void) throws -> Record
    {
        let old = try resource.record(id, in: state)
        try require(condition, current: resource.representation(of: old, in: state))
        var new = old
        try change(&new)
        try save(old: old, new: new, of: resource, parentId: nil, within: [])
        switch resource.kind {
        case .singleton: state[singleton: resource] = new
        case .collection:
            state[resource][id] = new
            if resource.isTopLevel { state.reindex(resource, old: old, new: new) }
        }
        if !resource.computed.isEmpty && resource.kind == .collection {
            touched.append((resource, old, resource.computed.map { $0.value(state, old) }))
        }
        if !resource.queryable.isEmpty && resource.kind == .collection && resource.isTopLevel && queried[old.path] == nil {
            queried[old.path] = (resource, id, queried.count)
        }
        return new
    }

    /// Changes the singleton `resource` with `change`, as `update` does.
    @discardableResult
    public mutating func update(singleton resource: Resource, onlyIf condition: Precondition? = nil,
                                _ change: (inout Record) throws -> Void) throws -> Record {
        try update(resource, "", onlyIf: condition, change)
    }

    /// Stores what moved between `old` and `new` and records a change for
    /// each shown field that moved. `outer` are the places of the elements
    /// it is nested in (a card's game, at its field `cards`).
    private mutating func save(old: Record, new: Record, of resource: Resource, parentId: String?, within outer: [Place]) throws {
        if old.values != new.values {
            try storage.update(catalog.layout(of: resource), id: new.id, parentId: parentId, values: new.values)
            for index in old.values.indices where resource.keyNames[index] != nil && old.values[index] != new.values[index] {
                pending.append(.set(new.keys[index], old: JSONWriter.string(old.values[index]), new: JSONWriter.string(new.values[index]))
                    .landing(at: Self.places(of: new, resource, field: resource.fieldNamesInOrder[index], within: outer)))
            }
        }
        for (index, nested) in resource.nested.enumerated() {
            let before = old.children[index], after = new.children[index]
            let inner = Self.places(of: new, resource, field: nested.name, within: outer)
            for child in after.values {
                guard let previous = before[child.id] else {
                    throw ModelError(.unprocessable, "\(nested.elementName) \(child.id) cannot be added by an update")
                }
                try save(old: previous, new: child, of: nested, parentId: new.id, within: inner)
            }
        }
    }

    /// Where a change of `field` of `record` lands for readers of shapes:
    /// on the element in its collection, and on the elements it is nested
    /// in. A singleton's fields are read as keys only.
    static func places(of record: Record, _ resource: Resource, field: String, within outer: [Place]) -> [Place] {
        guard resource.kind == .collection, let slash = record.path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return outer }
        return [Place(collection: String(record.path[..<slash]), position: record.position, field: field)] + outer
    }

    // MARK: - Deleting

    /// Deletes the element `id` of `resource` and the elements nested in
    /// it, announcing a `remove` to readers of the collection or of any of
    /// its properties. Throws `notFound` when there is no such element.
    @discardableResult
    public mutating func delete(_ resource: Resource, _ id: String, onlyIf condition: Precondition? = nil) throws -> Record {
        let record = try resource.record(id, in: state)
        let representation = resource.representation(of: record, in: state)
        try require(condition, current: representation)
        try storage.delete(from: catalog.layout(of: resource), id: id)
        state[resource][id] = nil
        state.reindex(resource, old: record, new: nil)
        // Readers of a collection nested in it (a game's cards) hear it too.
        var places = [Place(collection: resource.path, position: record.position)]
        for (index, nested) in resource.nested.enumerated() {
            record.children[index].forEach { child in
                places.append(Place(collection: record.path + "/" + nested.name, position: child.position))
                return true
            }
        }
        pending.append(.remove(from: resource.path, element: representation.string, elementKeys: resource.nested.isEmpty ? representation.reads : resource.propertyKeys(of: record, in: state))
            .landing(at: places))
        return record
    }

    // MARK: - Preconditions

    /// Checks `condition` against the current representation, which is
    /// built only when there is a condition (an update of a job's progress
    /// or a card does not render the whole element).
    public func require(_ condition: Precondition?, current: @autoclosure () -> Representation) throws(ModelError) {
        guard let condition else { return }
        try condition.check(current())
    }

    // MARK: - Ending

    /// The changes of the computed properties that moved: those of what
    /// this write touched (in the order it touched them), then those of
    /// every singleton. Called once, when the write's body has run.
    mutating func finish(singletonsBefore: [(resource: Resource, computed: [JSONValue])]) {
        var seen = Set<String>()
        for (resource, old, was) in touched where seen.insert(old.path).inserted {
            guard let current = state[resource][old.id] else { continue }
            compareComputed(of: resource, was, current)
        }
        for (resource, was) in singletonsBefore {
            compareComputed(of: resource, was, state[singleton: resource])
        }
        addRows()
    }

    /// Gives each `set` that lands on an element of a collection with
    /// queryable fields what query shapes need (`ElementRow`): the
    /// element's queryable values before this write and after it, and on
    /// its last change in the write, when those moved, the element before
    /// and after it. A query's reader hears what the whole write does to
    /// its copy, never a state half-way through it. The element before is
    /// worked out from the element as the write leaves it, undoing its
    /// changes, those inside its nested elements (a game's cards) too.
    private mutating func addRows() {
        guard !queried.isEmpty else { return }
        for (resource, id, _) in queried.values.sorted(by: { $0.order < $1.order }) {
            // Deleted by the same write: its remove says what readers need.
            guard let current = state[resource][id] else { continue }
            let final = resource.queryValues(of: current, in: state)
            var values = final
            let prefix = current.path + "/"
            var indices: [Int] = []
            for index in pending.indices.reversed() {
                let change = pending[index]
                guard change.operation == .set,
                      let place = change.places.first(where: { $0.collection == resource.path && $0.position == current.position }),
                      let field = place.field
                else { continue }
                indices.append(index)
                guard field != "id", values[field] != nil, change.path == prefix + field,
                      let old = change.old.flatMap({ try? JSONParser.parse($0) })
                else { continue }
                values[field] = old
            }
            // The element's text before and after, only where it may come or go.
            var finalText: String?, oldText: String?
            if values != final {
                let text = resource.representation(of: current, in: state, tracking: false).string
                if case .object(var image)? = try? JSONParser.parse(text) {
                    for index in indices {
                        let change = pending[index]
                        guard change.path.hasPrefix(prefix), let old = change.old.flatMap({ try? JSONParser.parse($0) }) else { continue }
                        let parts = change.path.dropFirst(prefix.count).split(separator: "/").map(String.init)
                        if parts.count == 1 {
                            image[parts[0]] = old
                        } else if parts.count == 3, case .array(var children)? = image[parts[0]],
                                  let child = children.firstIndex(where: { $0["id"]?.stringValue == parts[1] }),
                                  case .object(var element) = children[child]
                        {
                            // A change inside a nested element (a card of a game).
                            element[parts[2]] = old
                            children[child] = .object(element)
                            image[parts[0]] = .array(children)
                        }
                    }
                    finalText = text
                    oldText = JSONWriter.string(.object(image))
                }
            }
            let moved = values != final
            for index in indices {
                let last = index == indices.first
                let row = ElementRow(collection: resource.path, position: current.position, values: values, final: moved ? final : nil,
                                     last: last, image: last && moved ? finalText : nil, oldImage: last && moved ? oldText : nil)
                pending[index] = pending[index].with(row)
            }
        }
    }

    /// The computed values of every singleton that has any, in `state`: taken
    /// before a write, so that the state before it need not be kept (kept,
    /// it would make the write copy what it changes instead of changing it
    /// in place).
    static func computedOfSingletons(in state: ModelState, _ catalog: Catalog) -> [(resource: Resource, computed: [JSONValue])] {
        catalog.singletons.compactMap { resource in
            guard !resource.computed.isEmpty else { return nil }
            let record = state[singleton: resource]
            return (resource, resource.computed.map { $0.value(state, record) })
        }
    }

    /// A change for each computed property of `new` whose value moved from `was`.
    private mutating func compareComputed(of resource: Resource, _ was: [JSONValue], _ new: Record) {
        for (index, computed) in resource.computed.enumerated() {
            let now = computed.value(state, new)
            guard was[index] != now else { continue }
            pending.append(.set(new.keys[resource.fields.count + index], old: JSONWriter.string(was[index]), new: JSONWriter.string(now))
                .landing(at: Self.places(of: new, resource, field: computed.name, within: [])))
        }
    }
}
