import JSON

/// Every model's current state, with the `seq` of the last change it reflects.
/// Reads copy it (copy-on-write makes that cheap); writes replace it after commit.
public struct ModelState: Sendable {
    public internal(set) var seq: Int64
    var collections: [ObjectIdentifier: PersistentOrderedDictionary<String, Record>] = [:]
    var singletons: [ObjectIdentifier: Record] = [:]
    /// The query indexes of the top-level collections with stored
    /// queryable fields (`QueryIndex`), changed with their elements.
    var indexes: [ObjectIdentifier: QueryIndex] = [:]

    init(seq: Int64) {
        self.seq = seq
    }

    /// The elements of the top-level collection `resource`, in creation order.
    public subscript(resource: Resource) -> PersistentOrderedDictionary<String, Record> {
        get { collections[ObjectIdentifier(resource)] ?? PersistentOrderedDictionary() }
        // In place: a copy would make every write copy what it changes.
        _modify { yield &collections[ObjectIdentifier(resource), default: PersistentOrderedDictionary()] }
    }

    /// The object of the singleton `resource`.
    public subscript(singleton resource: Resource) -> Record {
        get {
            guard let record = singletons[ObjectIdentifier(resource)] else { preconditionFailure("\(resource.name) is not loaded") }
            return record
        }
        set { singletons[ObjectIdentifier(resource)] = newValue }
        _modify { yield &singletons[ObjectIdentifier(resource)]! }
    }
}
