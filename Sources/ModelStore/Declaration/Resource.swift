import JSON
import ModelObservation

/// A model, declared once: a singleton (`/truck`) or a collection of
/// elements (`/truck/donuts/{id}`), its members in the order its JSON shows
/// them, its table, and the standard operations it allows.
///
/// ```swift
/// static let donuts = Resource.collection("donuts", element: "donut", at: "/truck/donuts",
///                                         allowing: [.list, .create, .get, .patch, .delete]) {
///     Field.text("name")
///     Field.text("dough", default: "plain")
/// }
/// ```
public final class Resource: Sendable {
    public enum Kind: Sendable {
        case singleton
        case collection
    }

    /// The standard operations a model may allow; the API makes their routes.
    public enum Operation: Sendable, Hashable, CaseIterable {
        case list, create, get, patch, delete
    }

    /// What a model shows, in order.
    public enum Member: Sendable {
        case field(Field)
        case computed(Computed)
        /// A collection shown inside: at the state's top level when its
        /// path is absolute (`/truck/donuts` in the truck), else the
        /// element's own (`cards` of a game).
        case collection(Resource)
    }

    public let kind: Kind
    /// A collection's name in lists and messages (`donuts`), or a singleton's (`truck`).
    public let name: String
    /// One element's name in messages (`donut`).
    public let elementName: String
    /// The absolute path (`/truck/donuts`), or for a collection inside
    /// elements, its segment (`cards`).
    public let path: String
    public let table: String
    public let members: [Member]
    public let operations: Set<Operation>
    /// Stored fields in member order: `Record.values` follows it.
    public let fields: [Field]
    /// Collections shown inside each element, in member order: `Record.children` follows it.
    public let nested: [Resource]
    /// Computed properties, in member order.
    public let computed: [Computed]
    /// What the representation shows, in order, with names encoded once:
    /// made from `members` so that a read copies no declaration.
    let slots: [Slot]

    struct Slot: Sendable {
        enum Kind: Sendable {
            /// A stored field, by its index in `fields` (and `Record.keys`).
            case field(Int)
            /// A computed property and the index of its key in `Record.keys`.
            case computed(@Sendable (ModelState, Record) -> JSONValue, key: Int)
            /// A collection, in the state (`nested` nil) or in the element.
            case collection(Resource, nested: Int?)
        }

        let name: MemberName
        let kind: Kind
    }
    let fieldIndex: [String: Int]
    /// Per stored field, in order: what a new element takes when not given.
    /// Kept apart, as the names below, so that writes copy no `Field`.
    let defaults: [JSONValue]
    let fieldNamesInOrder: [String]
    /// The names of a record's keys: each stored field's (nil when it is
    /// hidden), then each computed property's.
    let keyNames: [String?]
    /// Whether rows keep their creation order in a `position` column.
    let positioned: Bool
    /// The SQL order of rows when loading, when not by position.
    let orderBy: String?
    /// Sets of columns no two elements share (their table's unique indexes).
    let uniqueKeys: [[String]]
    /// Rules on several fields of one row, which its table checks.
    let checks: [Check]

    /// A rule on two fields of one row that its table checks.
    public enum Check: Sendable {
        /// The first is never more than the second (a job's `current` and `total`).
        case atMost(Field, Field)
        /// Both are `null` or neither is.
        case nullTogether(Field, Field)

        var fields: [Field] {
            switch self {
            case .atMost(let a, let b), .nullTogether(let a, let b): [a, b]
            }
        }
    }
    /// A rule checked inside the transaction before a create is stored
    /// (an order needs a donut on the menu).
    let checkCreate: (@Sendable (ModelState, Record) throws -> Void)?

    /// The group its operations are listed under in the API reference.
    public let tag: String

    init(kind: Kind, name: String, elementName: String, path: String, table: String, operations: Set<Operation>,
         positioned: Bool, orderBy: [Field], unique: [[Field]], checks: [Check],
         checkCreate: (@Sendable (ModelState, Record) throws -> Void)?, tag: String?, queryable: [String] = [], members: [Member])
    {
        self.tag = tag ?? name
        self.kind = kind
        self.name = name
        self.elementName = elementName
        self.path = path
        isTopLevel = path.hasPrefix("/")
        self.table = table
        self.operations = operations
        self.positioned = positioned
        self.orderBy = orderBy.isEmpty ? nil : orderBy.map(\.column).joined(separator: ", ")
        uniqueKeys = unique.map { $0.map(\.column) }
        self.checks = checks
        self.checkCreate = checkCreate
        self.members = members
        // One pass over the members: what is stored, computed and nested,
        // and the slots a representation writes (computed keys follow the
        // fields' in `Record.keys`, so they are placed once all are known).
        var fields: [Field] = [], computed: [Computed] = [], nested: [Resource] = []
        var slots: [(name: String, kind: Slot.Kind?)] = []
        for member in members {
            switch member {
            case .field(let field):
                if field.isVisible { slots.append((field.name, .field(fields.count))) }
                fields.append(field)
            case .computed(let property):
                slots.append((property.name, nil))
                computed.append(property)
            case .collection(let collection):
                slots.append((collection.name, .collection(collection, nested: collection.isTopLevel ? nil : nested.count)))
                if !collection.isTopLevel { nested.append(collection) }
            }
        }
        self.fields = fields
        self.computed = computed
        self.nested = nested
        var computedIndex = 0
        self.slots = slots.map { slot in
            if let kind = slot.kind { return Slot(name: MemberName(slot.name), kind: kind) }
            defer { computedIndex += 1 }
            return Slot(name: MemberName(slot.name), kind: .computed(computed[computedIndex].value, key: fields.count + computedIndex))
        }
        fieldNames = slots.map(\.name)
        fieldIndex = Dictionary(uniqueKeysWithValues: fields.enumerated().map { ($1.name, $0) })
        for field in orderBy + unique.flatMap({ $0 }) + checks.flatMap(\.fields) {
            precondition(fieldIndex[field.name] != nil, "\(name) has no field \(field.name) to order, key or check by")
        }
        defaults = fields.map { $0.defaultValue ?? .null }
        fieldNamesInOrder = fields.map(\.name)
        keyNames = fields.map { $0.isVisible ? $0.name : nil } + computed.map(\.name)
        membershipKey = PropertyKey(path)
        selectableFields = (kind == .collection ? ["id"] : []) + fieldNames
        creatableFields = fields.filter { $0.access == .writable || $0.access == .createOnly }
        patchableFields = fields.filter { $0.access == .writable }
        let fieldIndex = self.fieldIndex
        self.queryable = queryable.map { name in
            if let index = fieldIndex[name], fields[index].isVisible {
                let field = fields[index]
                return QueryableField(name: name, kind: field.kind, nullable: field.nullable, source: .stored(index),
                                      indexKey: index, elementValue: { $0.values[index] })
            }
            guard let index = computed.firstIndex(where: { $0.name == name }) else {
                preconditionFailure("\(name) is no field of \(path) to query by")
            }
            let kind: Field.Kind
            switch computed[index].type {
            case .integer: kind = .integer
            case .boolean: kind = .boolean
            case .number: kind = .number
            case .text: kind = .text
            case .schema: preconditionFailure("\(name) of \(path) is an object: no query can compare it")
            }
            // One of the element alone is indexed under a key past the stored fields'.
            let elementValue = computed[index].elementValue
            return QueryableField(name: name, kind: kind, nullable: false, source: .computed(computed[index].value),
                                  indexKey: elementValue == nil ? nil : fields.count + index, elementValue: elementValue)
        }
    }

    /// The fields a query read may filter and sort by (SPEC §3d), in
    /// declaration order: stored or computed, each of one scalar kind.
    public let queryable: [QueryableField]

    /// A field a query may look at, and where a record's value of it is.
    public struct QueryableField: Sendable {
        public let name: String
        public let kind: Field.Kind
        public let nullable: Bool
        enum Source: Sendable {
            case stored(Int)
            case computed(@Sendable (ModelState, Record) -> JSONValue)
        }
        let source: Source
        /// Where `QueryIndex` keeps it (a stored field's index among the
        /// record's values, a computed one's past them); nil when it is a
        /// function of more than the element, which no index follows.
        let indexKey: Int?
        /// Its value of an element, where `indexKey` is given.
        let elementValue: (@Sendable (Record) -> JSONValue)?

        func value(of record: Record, in state: ModelState) -> JSONValue {
            switch source {
            case .stored(let index): record.values[index]
            case .computed(let value): value(state, record)
            }
        }
    }

    /// What a query looks at of `record`: its `id`, then each queryable field's value.
    public func queryValues(of record: Record, in state: ModelState) -> JSONObject {
        var values = JSONObject()
        values.append("id", .string(record.id))
        for field in queryable { values.append(field.name, field.value(of: record, in: state)) }
        return values
    }

    /// A collection of elements with server-made ids. Its rows are loaded
    /// in creation order (`positioned`), else in the order of the fields
    /// `orderBy`; no two share their values of the fields of a key in
    /// `unique`, and each row keeps to `checks`. A query read may filter
    /// and sort it by the fields named in `queryable` (stored or computed).
    public static func collection(_ name: String, element: String, at path: String, table: String? = nil,
                                  allowing operations: Set<Operation> = [], positioned: Bool = true, orderBy: [Field] = [],
                                  unique: [[Field]] = [], checks: [Check] = [],
                                  checkCreate: (@Sendable (ModelState, Record) throws -> Void)? = nil, tag: String? = nil,
                                  queryable: [String] = [], @MemberBuilder _ members: () -> [Member]) -> Resource
    {
        Resource(kind: .collection, name: name, elementName: element, path: path, table: table ?? name, operations: operations,
                 positioned: positioned, orderBy: orderBy, unique: unique, checks: checks, checkCreate: checkCreate, tag: tag,
                 queryable: queryable, members: members())
    }

    /// One object that always exists, stored in the row `id = 1` of its table.
    public static func singleton(_ name: String, at path: String, table: String? = nil, allowing operations: Set<Operation> = [],
                                 tag: String? = nil, @MemberBuilder _ members: () -> [Member]) -> Resource
    {
        Resource(kind: .singleton, name: name, elementName: name, path: path, table: table ?? name, operations: operations,
                 positioned: false, orderBy: [], unique: [], checks: [], checkCreate: nil, tag: tag, members: members())
    }

    /// The names `?fields=` may select: `id` for elements, then every shown member.
    public let selectableFields: [String]
    /// The names of the members shown, in order.
    public let fieldNames: [String]
    /// The key of a top-level collection's membership (`/truck/donuts`).
    public let membershipKey: PropertyKey

    /// Where the stored field `name` is in a record's values.
    public struct FieldPlace: Sendable {
        let index: Int
    }

    public func place(of name: String) -> FieldPlace {
        guard let index = fieldIndex[name] else { preconditionFailure("\(self.name) has no field \(name)") }
        return FieldPlace(index: index)
    }

    /// Whether its elements live in the state (`/truck/donuts`), rather
    /// than inside the elements of another collection (a game's `cards`).
    public let isTopLevel: Bool

    /// The stored field called `name`.
    public func field(_ name: String) -> Field? {
        fieldIndex[name].map { fields[$0] }
    }

    /// Fields a client may send when creating.
    public let creatableFields: [Field]
    /// Fields a client may send in a patch.
    public let patchableFields: [Field]
}
