import JSON
import ModelObservation

/// One element of a collection (or a singleton's object) as the state holds
/// it: its stored values in the order of its model's fields and the elements
/// of the collections inside it. Its path and keys are made when asked, from
/// its id and its model: a collection holds a million of these, and each
/// string kept per element costs it tens of megabytes.
public struct Record: Sendable {
    public let resource: Resource
    /// The id of an element of a top-level collection (its path is the
    /// collection's, "/", the id); the whole path of an element nested in
    /// another (`/games/{id}/cards/{cardId}`, its id the last segment);
    /// empty for a singleton (its path is the model's).
    private let name: String
    /// Creation order within its collection.
    public var position: Int64
    /// One value per stored field of `resource`, in its order.
    public internal(set) var values: [JSONValue]
    /// One collection per nested collection of `resource`, in its order.
    public var children: [PersistentOrderedDictionary<String, Record>]

    /// The server-made id (empty for a singleton).
    public var id: String {
        guard !name.isEmpty, !resource.isTopLevel else { return name }
        guard let slash = name.utf8.lastIndex(of: UInt8(ascii: "/")) else { return name }
        return String(name[name.index(after: slash)...])
    }

    /// `/truck/donuts/{id}`, `/games/{id}/cards/{cardId}`, or a singleton's path.
    public var path: String {
        if resource.kind == .singleton { return resource.path }
        return resource.isTopLevel ? Self.joined(resource.path, name) : name
    }

    /// The key of each field, in field order (`Record.noKey` for a hidden
    /// field: it is never read), then of each computed property; each made
    /// when asked.
    var keys: Keys { Keys(resource: resource, name: name) }

    struct Keys: RandomAccessCollection {
        let resource: Resource
        /// The record's `name`.
        let name: String
        var startIndex: Int { 0 }
        var endIndex: Int { resource.keyNames.count }
        subscript(index: Int) -> PropertyKey {
            guard let key = resource.keyNames[index] else { return Record.noKey }
            // The path and the key's name in one allocation.
            if resource.kind == .singleton { return PropertyKey(Record.joined(resource.path, key)) }
            return PropertyKey(resource.isTopLevel ? Record.joined(resource.path, name, key) : Record.joined(name, key))
        }
    }

    /// `base + "/" + last` (and `"/" + then`), made in one allocation.
    static func joined(_ base: String, _ last: String, _ then: String? = nil) -> String {
        var base = base, last = last, then = then ?? ""
        let count = base.utf8.count + 1 + last.utf8.count + (then.isEmpty ? 0 : then.utf8.count + 1)
        return String(unsafeUninitializedCapacity: count) { buffer in
            var at = 0
            func put(_ text: inout String) {
                text.withUTF8 { bytes in
                    guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
                    UnsafeMutableRawPointer(buffer.baseAddress! + at).copyMemory(from: source, byteCount: bytes.count)
                    at += bytes.count
                }
            }
            put(&base)
            buffer[at] = UInt8(ascii: "/")
            at += 1
            put(&last)
            if !then.isEmpty {
                buffer[at] = UInt8(ascii: "/")
                at += 1
                put(&then)
            }
            return at
        }
    }

    /// An element of `resource` with `id`: nested in the element at
    /// `parentPath` when `resource` is a nested collection.
    init(resource: Resource, id: String, in parentPath: String? = nil, position: Int64, values: [JSONValue],
         children: [PersistentOrderedDictionary<String, Record>]? = nil)
    {
        self.resource = resource
        if resource.kind == .singleton || resource.isTopLevel {
            name = id
        } else {
            name = Self.joined(parentPath.map { Self.joined($0, resource.path) } ?? resource.path, id)
        }
        self.position = position
        self.values = values
        self.children = children ?? resource.nested.map { _ in PersistentOrderedDictionary() }
    }

    init(resource: Resource, id: String, path: String, position: Int64, values: [JSONValue],
         children: [PersistentOrderedDictionary<String, Record>]? = nil)
    {
        self.resource = resource
        name = resource.kind == .singleton || resource.isTopLevel ? id : path
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
        var stored = resource.defaults
        if !values.isEmpty {
            for index in stored.indices {
                if let value = values[resource.fieldNamesInOrder[index]] { stored[index] = value }
            }
        }
        stored = ValueInterner.shared.withLock { $0.values(stored) }
        return Record(resource: resource, id: id, in: parentPath, position: 0, values: stored)
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
