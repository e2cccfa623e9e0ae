import JSON
import ModelObservation

/// One element of a collection (or a singleton's object) as the state holds
/// it: its stored values in the order of its model's fields, the elements
/// of the collections inside it, and its path and keys, made once since
/// every read of it tracks them.
public struct Record: Sendable {
    public let resource: Resource
    /// What never changes: id, path and keys, behind one reference, so that
    /// copying a record (a collection's chunk is copied on write) costs few.
    private let identity: Identity
    /// Creation order within its collection.
    public var position: Int64
    /// One value per stored field of `resource`, in its order.
    public internal(set) var values: [JSONValue]
    /// One collection per nested collection of `resource`, in its order.
    public var children: [PersistentOrderedDictionary<String, Record>]
    final class Identity: Sendable {
        let id: String
        let path: String
        /// The key of each field, in field order (none for a hidden field:
        /// it is never read), then of each computed property.
        let keys: [PropertyKey]

        init(id: String, path: String, keyNames: [String?]) {
            self.id = id
            self.path = path
            // From the names a resource keeps: copying its `Field`s would
            // cost more than the keys.
            var keys: [PropertyKey] = []
            keys.reserveCapacity(keyNames.count)
            for name in keyNames { keys.append(name.map { PropertyKey(path, $0) } ?? Record.noKey) }
            self.keys = keys
        }
    }

    /// The server-made id (empty for a singleton).
    public var id: String { identity.id }
    /// `/truck/donuts/{id}`, `/games/{id}/cards/{cardId}`, or a singleton's path.
    public var path: String { identity.path }
    var keys: [PropertyKey] { identity.keys }

    init(resource: Resource, id: String, path: String, position: Int64, values: [JSONValue],
         children: [PersistentOrderedDictionary<String, Record>]? = nil)
    {
        self.resource = resource
        identity = Identity(id: id, path: path, keyNames: resource.keyNames)
        self.position = position
        self.values = values
        self.children = children ?? resource.nested.map { _ in PersistentOrderedDictionary() }
    }

    static let noKey = PropertyKey("")

    /// A new element of `resource` with a new id: `values` by field name,
    /// the fields left out at their defaults (`null` without one). A nested
    /// element needs the path of the element it is in (`/games/{id}`).
    public static func new(_ resource: Resource, id: String? = nil, in parentPath: String? = nil,
                           _ values: [String: JSONValue]) -> Record
    {
        let id = id ?? Identifier.make()
        let base = parentPath.map { $0 + "/" + resource.path } ?? resource.path
        var stored = resource.defaults
        if !values.isEmpty {
            for index in stored.indices {
                if let value = values[resource.fieldNamesInOrder[index]] { stored[index] = value }
            }
        }
        return Record(resource: resource, id: id, path: base + "/" + id, position: 0, values: stored)
    }

    /// The value of a stored field by its place (`Resource.place(of:)`):
    /// what code that reads a field often uses, without a lookup by name.
    public subscript(place: Resource.FieldPlace) -> JSONValue {
        get { values[place.index] }
        set { values[place.index] = newValue }
    }

    /// The value of the stored field `name`.
    public subscript(name: String) -> JSONValue {
        get {
            guard let index = resource.fieldIndex[name] else { preconditionFailure("\(resource.name) has no field \(name)") }
            return values[index]
        }
        set {
            guard let index = resource.fieldIndex[name] else { preconditionFailure("\(resource.name) has no field \(name)") }
            values[index] = newValue
        }
    }

    public func string(_ name: String) -> String? { self[name].stringValue }
    public func int(_ name: String) -> Int64 { self[name].intValue ?? 0 }
    public func bool(_ name: String) -> Bool { self[name].boolValue ?? false }
    public func number(_ name: String) -> Double {
        switch self[name] {
        case .double(let value): return value
        case .int(let value): return Double(value)
        default: return 0
        }
    }

    /// The elements of the collection `nested` shown inside this one.
    public subscript(nested: Resource) -> PersistentOrderedDictionary<String, Record> {
        get { children[childIndex(nested)] }
        set { children[childIndex(nested)] = newValue }
    }

    private func childIndex(_ nested: Resource) -> Int {
        guard let index = resource.nested.firstIndex(where: { $0 === nested }) else {
            preconditionFailure("\(resource.name) has no collection \(nested.name)")
        }
        return index
    }
}
