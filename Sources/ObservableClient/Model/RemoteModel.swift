@_exported import Observation
import JSON

/// Declares a class as a model of the server: the resource at `path`, each
/// stored `var` one of its fields, kept current by the client's feed.
///
/// ```swift
/// @RemoteModel("/truck/donuts/{id}")
/// final class MenuItem {
///     let id: String
///     var name: String
///     var dough: String
/// }
/// ```
///
/// - `path` is the resource's path: absolute for one object (`"/truck"`),
///   ending in `{id}` for an element of a collection (`"/truck/donuts/{id}"`),
///   or starting with `{parent}` for an element held by another
///   (`"{parent}/cards/{id}"`). An element declares `let id: String`.
/// - A field's name is the server's; its type is a `RemoteValue` (`String`,
///   `Int`, `Double`, `Bool`, optionals and arrays of them, your own
///   `Codable` types), an array of elements (`[Order]`, a collection the
///   server lists in the resource), or an array of arrays of elements (the
///   grid's rows). `@Paged` marks a collection read a page at a time,
///   newest first; `@RemoteIgnored` leaves a property out.
/// - Declare the fields in the order the server writes them: the client
///   writes its copy that way for `If-Match`. A field the server sends and
///   the class does not declare is not kept.
///
/// Each field becomes a read-only property: reading it tells Observation,
/// and notes the read for `ObservableClient.narrow()`. Its value changes
/// only as the feed brings the server's changes. Load a model with
/// `ObservableClient.load(_:)`, `load(_:id:)` or `list(_:pageSize:)`.
@attached(
    member,
    names: named(_$path), named(_$registrar), named(_$client), named(_$readMask), named(_$trackedMask), named(_$freshAt),
    named(_$schema), named(init), named(_$elementPath), named(_$singletonPath))
@attached(memberAttribute)
@attached(extension, conformances: RemoteElement, RemoteSingleton, Sendable)
public macro RemoteModel(_ path: String) = #externalMacro(module: "ObservableClientMacros", type: "RemoteModelMacro")

/// What `@RemoteModel` puts on each field: its getter and its storage.
@attached(accessor, names: named(init), named(get))
@attached(peer, names: prefixed(_))
public macro _RemoteTracked(_ bit: Int) = #externalMacro(module: "ObservableClientMacros", type: "RemoteTrackedMacro")

/// Leaves a stored property of a `@RemoteModel` class out of its fields.
@attached(peer)
public macro RemoteIgnored() = #externalMacro(module: "ObservableClientMacros", type: "MarkerMacro")

/// Marks a collection field of a `@RemoteModel` read a page at a time,
/// newest first (`orders.limit=…&orders.order=desc`), as `Truck.orders` is.
@attached(peer)
public macro Paged() = #externalMacro(module: "ObservableClientMacros", type: "MarkerMacro")

/// What every object of the client is, and what `@RemoteModel` declares:
/// its place on the server, the registrar that tells Observation about it,
/// the bookkeeping of what the app read and what the server tracks, and
/// its fields (`_$schema`). The members starting with `_$` are the macro's
/// and the client's; an app uses the fields.
///
/// The objects are `Sendable`, so that an `onChange` closure, an
/// `Observations` sequence or a task can carry them back to the client's
/// actor; reading one anywhere else stops the program with a clear message
/// (`_$noteRead`), as a call of the client does off its actor.
public protocol RemoteModel: AnyObject, Observable {
    /// The server path of the object (`/truck/donuts/{id}`): where it is read, and
    /// the prefix of its fields' change paths.
    var _$path: String { get }
    var _$registrar: ObservationRegistrar { get }
    var _$client: ObservableClient? { get }
    /// Bit i: field i of the schema was read by the app since loading or the last narrowing.
    var _$readMask: UInt16 { get set }
    /// Bit i: the server tracks field i for this client's observer.
    var _$trackedMask: UInt16 { get set }
    /// The cursor of the newest read this object's values come from: feed
    /// changes at or before it are already in them.
    var _$freshAt: Int64 { get set }
    /// The fields, by bit.
    static var _$schema: RemoteSchema<Self> { get }

    /// Sets one field from its JSON value (a read's, or a change's).
    func _$set(_ field: String, _ value: JSONValue)
    /// Applies one change of the feed to `field` (empty for a list's own path).
    func _$apply(_ change: FeedChange, field: String)
    /// Replaces the collection `field` (empty: the object's own) with the
    /// elements a read listed, or a repair (`repaired`).
    func _$replace(_ field: String, with elements: [JSONValue], repaired: Bool)
    /// Whether `field` (empty: the object's own) is a collection of elements.
    func _$isCollection(_ field: String) -> Bool
}

/// A model that is one element of a collection on the server
/// (`@RemoteModel("/truck/donuts/{id}")`), made from the element's JSON the
/// first time the client sees its id.
public protocol RemoteElement: RemoteModel, Identifiable where ID == String {
    init(_$id id: String, path: String, client: ObservableClient)
    /// The element's path, from its id and the path of what holds it.
    static func _$elementPath(id: String, parent: String) -> String
}

/// A model the server has one of (`@RemoteModel("/account")`).
public protocol RemoteSingleton: RemoteModel {
    init(_$client client: ObservableClient)
    static var _$singletonPath: String { get }
}

extension RemoteModel {
    public func _$set(_ field: String, _ value: JSONValue) {
        guard let bit = Self._$schema.bits[field] else { return }
        Self._$schema.fields[bit].set(self, value)
    }

    public func _$apply(_ change: FeedChange, field: String) {
        guard let bit = Self._$schema.bits[field] else { return }
        Self._$schema.fields[bit].apply(self, change)
    }

    public func _$replace(_ field: String, with elements: [JSONValue], repaired: Bool) {
        guard let bit = Self._$schema.bits[field] else { return }
        Self._$schema.fields[bit].replace(self, elements, repaired: repaired)
    }

    public func _$isCollection(_ field: String) -> Bool {
        Self._$schema.bits[field].map { Self._$schema.fields[$0].kind != .value } ?? false
    }

    /// Every getter calls this: the check that it runs on the client's
    /// actor, Observation's access, and the note for narrowing.
    public func _$noteRead<Member>(_ bit: Int, _ keyPath: KeyPath<Self, Member>) {
        _$client?.checkIsolation(reading: Self.self)
        _$registrar.access(self, keyPath: keyPath)
        let mask: UInt16 = 1 << bit
        _$readMask |= mask
        if _$trackedMask & mask == 0 { _$client?.refresh(self, field: bit) }
    }
}

// The names the rest of the client uses.
typealias RemoteObject = RemoteModel
typealias Element = RemoteElement

extension RemoteModel {
    var path: String { _$path }
    var registrar: ObservationRegistrar { _$registrar }
    var client: ObservableClient? { _$client }
    var readMask: UInt16 {
        get { _$readMask }
        set { _$readMask = newValue }
    }
    var trackedMask: UInt16 {
        get { _$trackedMask }
        set { _$trackedMask = newValue }
    }
    var freshAt: Int64 {
        get { _$freshAt }
        set { _$freshAt = newValue }
    }
    /// The field names, by bit.
    static var fields: [String] { _$schema.names }
    static var allFields: UInt16 { _$schema.allFields }

    func set(_ field: String, _ value: JSONValue) { _$set(field, value) }
    func apply(_ change: FeedChange, field: String) { _$apply(change, field: field) }
    func replace(_ field: String, with elements: [JSONValue], repaired: Bool) {
        _$replace(field, with: elements, repaired: repaired)
    }

    /// Whether a field of it is rows of elements, which a repair does not cover.
    var hasRows: Bool { Self._$schema.fields.contains { $0.kind == .rows } }

    /// The elements the object's collections hold.
    var heldElements: [any RemoteModel] {
        if let list = self as? any PagedList { return list.held }
        return Self._$schema.fields.flatMap { $0.elements(of: self) }
    }

    /// Takes the values a read answered (only the fields present).
    func load(_ json: JSONValue) {
        guard case .object(let object) = json else { return }
        for (field, value) in object.entries { set(field, value) }
    }

    /// The representation the server would answer for this object as the
    /// client sees it, for `If-Match`: its fields in declaration order,
    /// after its id.
    var representation: JSONValue {
        var object = JSONObject()
        if let element = self as? any RemoteElement { object.append("id", .string(element.id)) }
        for field in Self._$schema.fields { object.append(field.name, field.representation(of: self)) }
        return .object(object)
    }

    /// Sets a stored value, telling observers only when it really changes.
    func update<Value: Equatable>(_ keyPath: KeyPath<Self, Value>, _ storage: ReferenceWritableKeyPath<Self, Value>, _ value: Value) {
        guard self[keyPath: storage] != value else { return }
        registrar.withMutation(of: self, keyPath: keyPath) { self[keyPath: storage] = value }
    }

    /// Updates a list of objects, telling observers only when its membership or order changed.
    func update<Item: AnyObject>(_ keyPath: KeyPath<Self, [Item]>, _ storage: ReferenceWritableKeyPath<Self, [Item]>,
                                 _ value: [Item])
    {
        let old = self[keyPath: storage]
        guard old.count != value.count || zip(old, value).contains(where: { $0 !== $1 }) else { return }
        registrar.withMutation(of: self, keyPath: keyPath) { self[keyPath: storage] = value }
    }

    /// Updates rows of objects, telling observers only when a row's membership or order changed.
    func update<Item: AnyObject>(_ keyPath: KeyPath<Self, [[Item]]>, _ storage: ReferenceWritableKeyPath<Self, [[Item]]>,
                                 _ value: [[Item]])
    {
        let old = self[keyPath: storage]
        let same = old.count == value.count && zip(old, value).allSatisfy { a, b in
            a.count == b.count && zip(a, b).allSatisfy { $0 === $1 }
        }
        guard !same else { return }
        registrar.withMutation(of: self, keyPath: keyPath) { self[keyPath: storage] = value }
    }
}

extension RemoteElement {
    static func path(id: String, parent: String) -> String { _$elementPath(id: id, parent: parent) }
    /// The collection an element of an absolute path belongs to (`/truck/orders`).
    static var collectionPath: String { String(_$elementPath(id: "", parent: "").dropLast()) }
    /// The member of the collection's reads that lists them (`orders`).
    static var collectionKey: String { String(collectionPath.split(separator: "/").last ?? "") }
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
