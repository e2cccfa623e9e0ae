import JSON
import Observation

/// What every object of the client shares: its place on the server, the
/// registrar that tells Observation about it, and the bookkeeping of what
/// the app read and what the server tracks.
///
/// The objects are `Sendable`, so that an `onChange` closure, an
/// `Observations` sequence or a task can carry them back to the client's
/// actor; reading one anywhere else stops the program with a clear message
/// (`noteRead`), as a call of the client does off its actor.
///
/// The models are written out by hand instead of with the `@Observable`
/// macro for one reason: their getters also note which fields the app read
/// (`readMask`), which `ObservableClient.narrow()` needs and the macro
/// cannot be told to do.
protocol RemoteObject: AnyObject, Observable {
    /// The server path of the object (`/truck/donuts/{id}`): where it is read, and
    /// the prefix of its fields' change paths.
    var path: String { get }
    var registrar: ObservationRegistrar { get }
    var client: ObservableClient? { get }
    /// Bit i: field `Self.fields[i]` was read by the app since loading or the last narrowing.
    var readMask: UInt16 { get set }
    /// Bit i: the server tracks field i for this client's observer.
    var trackedMask: UInt16 { get set }
    /// The cursor of the newest read this object's values come from: feed
    /// changes at or before it are already in them.
    var freshAt: Int64 { get set }
    /// The field names, by bit.
    static var fields: [String] { get }

    /// Sets one field from its JSON value.
    func set(_ field: String, _ value: JSONValue)
    /// Applies one change of the feed to `field` (empty for a list's own path).
    func apply(_ change: FeedChange, field: String)
}

extension RemoteObject {
    /// Takes the values a read answered (only the fields present).
    func load(_ json: JSONValue) {
        guard case .object(let object) = json else { return }
        for (field, value) in object.entries { set(field, value) }
    }

    /// A `set` or `repair` of one field; what leaf objects receive.
    func apply(_ change: FeedChange, field: String) {
        guard let value = change.new, change.operation == .set || change.operation == .repair else { return }
        set(field, value)
    }

    /// Every getter calls this: the check that it runs on the client's
    /// actor, Observation's access, and the note for narrowing.
    func noteRead<Member>(_ bit: Int, _ keyPath: KeyPath<Self, Member>) {
        client?.checkIsolation(reading: Self.self)
        registrar.access(self, keyPath: keyPath)
        let mask: UInt16 = 1 << bit
        readMask |= mask
        if trackedMask & mask == 0 { client?.refresh(self, field: bit) }
    }

    /// Sets a stored value, telling observers only when it really changes.
    func update<Value: Equatable>(_ keyPath: KeyPath<Self, Value>, _ storage: ReferenceWritableKeyPath<Self, Value>, _ value: Value) {
        guard self[keyPath: storage] != value else { return }
        registrar.withMutation(of: self, keyPath: keyPath) { self[keyPath: storage] = value }
    }

    /// Updates a list of objects, telling observers only when its membership or order changed.
    func update<Element: AnyObject>(_ keyPath: KeyPath<Self, [Element]>, _ storage: ReferenceWritableKeyPath<Self, [Element]>,
                                    _ value: [Element])
    {
        let old = self[keyPath: storage]
        guard old.count != value.count || zip(old, value).contains(where: { $0 !== $1 }) else { return }
        registrar.withMutation(of: self, keyPath: keyPath) { self[keyPath: storage] = value }
    }

    static var allFields: UInt16 { UInt16((1 << fields.count) - 1) }
}

extension JSONValue {
    var string: String { stringValue ?? "" }
    var optionalString: String? { stringValue }
    var int: Int { Int(intValue ?? 0) }
    var bool: Bool { boolValue ?? false }
    var double: Double {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: 0
        }
    }
    var id: String? { self["id"]?.stringValue }
}
