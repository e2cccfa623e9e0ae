import JSON

/// The fields of a model, by bit (declaration order): what `@RemoteModel`
/// writes out for a class, and what the client reads, decodes, narrows and
/// writes back by.
public final class RemoteSchema<Model: RemoteModel>: @unchecked Sendable {
    let fields: [RemoteField<Model>]
    /// The server's names, by bit.
    let names: [String]
    /// The bit of each name.
    let bits: [String: Int]
    let allFields: UInt16

    public init(_ fields: [RemoteField<Model>]) {
        self.fields = fields
        names = fields.map(\.name)
        bits = Dictionary(fields.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        allFields = UInt16((1 << fields.count) - 1)
    }

    /// A schema of names only, for an object that decodes by itself (a list).
    init(names: [String]) {
        fields = []
        self.names = names
        bits = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        allFields = UInt16((1 << names.count) - 1)
    }
}

/// One field of a model: its server name, and how its value is decoded,
/// changed by the feed and written back. Made by `@RemoteModel` with
/// `.field(name, \.name, \._name)`; the kind follows the property's type.
public class RemoteField<Model: RemoteModel>: @unchecked Sendable {
    enum Kind: Equatable {
        /// A value (`RemoteValue`).
        case value
        /// A collection of elements, listed in the resource; `paged`: read a
        /// page at a time, newest first.
        case elements(paged: Bool)
        /// Rows of elements (the grid).
        case rows
    }

    public let name: String
    let kind: Kind

    init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }

    /// Takes the field's value from a read or a change.
    func set(_ model: Model, _ value: JSONValue) {}

    /// A change of the feed to the field: a value's `set` or `repair` by
    /// default; inserts and removals for collections.
    func apply(_ model: Model, _ change: FeedChange) {
        guard let value = change.new, change.operation == .set || change.operation == .repair else { return }
        set(model, value)
    }

    /// A collection's elements as a read or a repair lists them.
    func replace(_ model: Model, _ elements: [JSONValue], repaired: Bool) {}

    /// The value as the server would write it.
    func representation(of model: Model) -> JSONValue { .null }

    /// The elements the field holds (none for a value).
    func elements(of model: Model) -> [any RemoteModel] { [] }

    /// The names of its elements' fields (none for a value).
    var elementFields: [String] { [] }

    /// The property's key path, which a `RemoteEdit` names the field by.
    var keyPath: AnyKeyPath { \RemoteField.name }
}

extension RemoteField {
    /// A value field.
    public static func field<Value: RemoteValue>(_ name: String, _ key: KeyPath<Model, Value>,
                                                  _ storage: ReferenceWritableKeyPath<Model, Value>,
                                                  paged: Bool = false) -> RemoteField<Model>
    {
        ValueField(name, key, storage)
    }

    /// A collection of elements the resource lists (`[Order]`).
    public static func field<Item: RemoteElement>(_ name: String, _ key: KeyPath<Model, [Item]>,
                                                   _ storage: ReferenceWritableKeyPath<Model, [Item]>,
                                                   paged: Bool = false) -> RemoteField<Model>
    {
        ElementsField(name, key, storage, paged: paged)
    }

    /// Rows of elements (`[[Dot]]`): a change inserts a row (`{"row", "dots"}`)
    /// or an element at the end of one (`{"row", "dot"}`).
    public static func field<Item: RemoteElement>(_ name: String, _ key: KeyPath<Model, [[Item]]>,
                                                   _ storage: ReferenceWritableKeyPath<Model, [[Item]]>,
                                                   paged: Bool = false) -> RemoteField<Model>
    {
        RowsField(name, key, storage)
    }
}

final class ValueField<Model: RemoteModel, Value: RemoteValue>: RemoteField<Model>, @unchecked Sendable {
    let key: KeyPath<Model, Value>
    let storage: ReferenceWritableKeyPath<Model, Value>

    init(_ name: String, _ key: KeyPath<Model, Value>, _ storage: ReferenceWritableKeyPath<Model, Value>) {
        self.key = key
        self.storage = storage
        super.init(name: name, kind: .value)
    }

    override var keyPath: AnyKeyPath { key }

    override func set(_ model: Model, _ value: JSONValue) {
        guard let value = Value(remoteJSON: value) else { return }
        model.update(key, storage, value)
    }

    override func representation(of model: Model) -> JSONValue { model[keyPath: storage].remoteJSON }
}

final class ElementsField<Model: RemoteModel, Item: RemoteElement>: RemoteField<Model>, @unchecked Sendable {
    let key: KeyPath<Model, [Item]>
    let storage: ReferenceWritableKeyPath<Model, [Item]>
    let paged: Bool

    init(_ name: String, _ key: KeyPath<Model, [Item]>, _ storage: ReferenceWritableKeyPath<Model, [Item]>, paged: Bool) {
        self.key = key
        self.storage = storage
        self.paged = paged
        super.init(name: name, kind: .elements(paged: paged))
    }

    override func set(_ model: Model, _ value: JSONValue) {
        replace(model, value.arrayValue ?? [], repaired: false)
    }

    /// An insert joins at the end, or at the front when paged (newest
    /// first); a remove leaves, and the client forgets the object.
    override func apply(_ model: Model, _ change: FeedChange) {
        guard let client = model.client else { return }
        let held = model[keyPath: storage]
        switch change.operation {
        case .insert:
            guard let new = change.new, let id = new.id, !held.contains(id: id) else { return }
            let element = client.element(Item.self, new, parent: model.path)
            model.update(key, storage, paged ? [element] + held : held + [element])
        case .remove:
            guard let id = change.old?.id else { return }
            model.update(key, storage, held.filter { $0.id != id })
            client.forget(Item.path(id: id, parent: model.path))
        case .set, .repair:
            super.apply(model, change)
        }
    }

    override func replace(_ model: Model, _ elements: [JSONValue], repaired: Bool) {
        guard let client = model.client else { return }
        let ordered = paged ? newestFirst(elements, repaired: repaired, current: model[keyPath: storage].map(\.id)) : elements
        model.update(key, storage, ordered.map { client.element(Item.self, $0, parent: model.path) })
    }

    /// Adds the elements of a further page that are not there yet.
    func append(_ model: Model, page elements: [JSONValue]) {
        guard let client = model.client else { return }
        let held = model[keyPath: storage]
        let known = Set(held.map(\.id))
        let added = elements.filter { !known.contains($0.id ?? "") }.map { client.element(Item.self, $0, parent: model.path) }
        model.update(key, storage, held + added)
    }

    override func representation(of model: Model) -> JSONValue {
        .array(model[keyPath: storage].map(\.representation))
    }

    override func elements(of model: Model) -> [any RemoteModel] { model[keyPath: storage] }
    override var elementFields: [String] { Item.fields }
}

final class RowsField<Model: RemoteModel, Item: RemoteElement>: RemoteField<Model>, @unchecked Sendable {
    let key: KeyPath<Model, [[Item]]>
    let storage: ReferenceWritableKeyPath<Model, [[Item]]>

    init(_ name: String, _ key: KeyPath<Model, [[Item]]>, _ storage: ReferenceWritableKeyPath<Model, [[Item]]>) {
        self.key = key
        self.storage = storage
        super.init(name: name, kind: .rows)
    }

    override func set(_ model: Model, _ value: JSONValue) {
        guard let client = model.client, let rows = value.arrayValue else { return }
        let new = rows.map { ($0.arrayValue ?? []).map { client.element(Item.self, $0, parent: model.path) } }
        model.update(key, storage, new)
    }

    override func apply(_ model: Model, _ change: FeedChange) {
        guard change.operation == .insert, let client = model.client, let new = change.new,
              let row = new["row"]?.intValue.map(Int.init)
        else { return super.apply(model, change) }
        var rows = model[keyPath: storage]
        if let dots = new["dots"]?.arrayValue {
            guard row == rows.count else { return }  // already there
            rows.append(dots.map { client.element(Item.self, $0, parent: model.path) })
        } else if let dot = new["dot"], let id = dot.id, row >= 0, row < rows.count {
            guard !rows[row].contains(id: id) else { return }
            rows[row].append(client.element(Item.self, dot, parent: model.path))
        }
        model.update(key, storage, rows)
    }

    override func representation(of model: Model) -> JSONValue {
        .array(model[keyPath: storage].map { .array($0.map(\.representation)) })
    }

    override func elements(of model: Model) -> [any RemoteModel] { model[keyPath: storage].flatMap { $0 } }
    override var elementFields: [String] { Item.fields }
}
