import JSON
import Observation

/// The elements a query read showed (docs/API.md, "Queries"), kept equal to
/// a fresh read of the same query over the same window: an element that
/// comes to match joins at its place in the query's order, one that stops
/// matching or leaves the window leaves, and the elements' fields change as
/// any object's do. Its elements are the client's objects (the `Order` here
/// is the one in `truck.orders`).
///
/// The window is what the read showed: with a `limit` that left more to
/// read, it ends at the last element shown, and an element that comes to
/// match beyond it is not heard; one that comes to match before it joins
/// (so a list of "the ten tallest" may hold more than ten: show its
/// `prefix(10)`). `loadMore()` reads the next page and widens the window.
public final class QueryList<Item: AnyObject & Identifiable>: Observable, AnyQueryList, @unchecked Sendable where Item.ID == String {
    /// The elements, in the query's order.
    public var elements: [Item] {
        client?.checkIsolation(reading: Self.self)
        registrar.access(self, keyPath: \.elements)
        return _elements
    }

    /// True while more elements match beyond the window (`loadMore()`).
    public var hasMore: Bool {
        client?.checkIsolation(reading: Self.self)
        registrar.access(self, keyPath: \.hasMore)
        return nextPage != nil
    }

    /// The query's conditions and sort, as the server names them.
    public let query: String
    /// The collection read (`/truck/orders`).
    public let collection: String

    var _elements: [Item] = []
    /// The sort field's value of each element held, by id: where an insert goes.
    var sortValues: [String: JSONValue] = [:]
    var nextPage: String? {
        didSet { if nextPage != oldValue { registrar.withMutation(of: self, keyPath: \.hasMore) {} } }
    }
    /// The cursor of the newest read of it: changes at or before it are in it.
    var freshAt: Int64 = -1
    let sort: QuerySort?
    /// The member of a read's answer that holds the elements (`orders`).
    let listKey: String
    /// The read, path and query (`limit` included).
    let read: String
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    /// The client's object for an element's JSON.
    let element: (ObservableClient, JSONValue) -> Item

    init(client: ObservableClient, collection: String, listKey: String, key: QueryKey, read: String,
         element: @escaping (ObservableClient, JSONValue) -> Item)
    {
        self.client = client
        self.collection = collection
        self.listKey = listKey
        query = key.text
        sort = key.sort
        self.read = read
        self.element = element
    }

    /// The read of a query of `collection`: path, conditions, sort and `limit`.
    static func read(_ collection: String, _ key: QueryKey, limit: Int?) -> String {
        collection + "?" + key.urlQuery + (limit.map { "&limit=\($0)" } ?? "")
    }

    /// Loads the next page of the query (its `Link`), widening the window
    /// to it. Does nothing when `hasMore` is false.
    public func loadMore() async throws {
        guard let client, let next = nextPage else { return }
        let answer = try await client.read(next)
        guard next == nextPage, let elements = answer.json?[listKey]?.arrayValue else { return }
        let known = Set(_elements.map(\.id))
        client.readContext = ObservableClient.ReadContext(applies: true, cursor: answer.cursor ?? 0)
        defer { client.readContext = ObservableClient.ReadContext(applies: false, cursor: 0) }
        let added = elements.filter { !known.contains($0.id ?? "") }
        for json in added { note(json) }
        set(_elements + added.map { element(client, $0) })
        nextPage = answer.nextLink
    }

    /// Takes a read's answer: its elements, in its order, and its `Link`.
    func take(_ answer: HTTPAnswer, from client: ObservableClient) {
        let elements = answer.json?[listKey]?.arrayValue ?? []
        sortValues = [:]
        for json in elements { note(json) }
        set(elements.map { element(client, $0) })
        nextPage = answer.nextLink
        freshAt = answer.cursor ?? 0
    }

    /// Applies a change of the feed that names this query: an `insert`, a
    /// `remove`, a `repair` (the window read afresh) or a `set` (the element
    /// moves when its sort field changed).
    func apply(_ change: FeedChange, client: ObservableClient) {
        guard change.seq > freshAt else { return }
        switch change.operation {
        case .insert:
            guard let new = change.new, let id = new.id, !_elements.contains(where: { $0.id == id }) else { return }
            note(new)
            var elements = _elements
            elements.insert(element(client, new), at: place(of: id, among: elements))
            set(elements)
        case .remove:
            guard let id = change.old?.id else { return }
            sortValues[id] = nil
            set(_elements.filter { $0.id != id })
            // Out of the query, its fields are no longer heard through it:
            // the next read of one reads it again (as after a narrowing).
            client.objects[collection + "/" + id]?.trackedMask = 0
        case .repair:
            // The window as it is now: its values replace what the objects hold.
            client.readContext = ObservableClient.ReadContext(applies: true, cursor: change.seq)
            defer { client.readContext = ObservableClient.ReadContext(applies: false, cursor: 0) }
            let list = change.new?.arrayValue ?? []
            sortValues = [:]
            for json in list { note(json) }
            set(list.map { element(client, $0) })
        case .set:
            guard let sort, change.path.hasPrefix(collection + "/") else { return }
            let rest = change.path.dropFirst(collection.count + 1).split(separator: "/")
            guard rest.count == 2, rest[1] == sort.field, let index = _elements.firstIndex(where: { $0.id == String(rest[0]) }) else { return }
            let id = String(rest[0])
            sortValues[id] = change.new ?? .null
            var elements = _elements
            let item = elements.remove(at: index)
            elements.insert(item, at: place(of: id, among: elements))
            set(elements)
        }
    }

    /// Notes the sort field's value of an element's JSON.
    private func note(_ json: JSONValue) {
        guard let id = json.id else { return }
        sortValues[id] = sort.map { json[$0.field] ?? .null } ?? .string(id)
    }

    /// Where the element `id` (its sort value noted) goes among those held,
    /// in the query's order: by the sort field's value, and among equal
    /// values by position, which ids follow (they are made in creation
    /// order; a new element goes last ascending, first descending).
    private func place(of id: String, among elements: [Item]) -> Int {
        let value = sortValues[id] ?? .null
        let descending = sort?.descending ?? false
        return elements.firstIndex { other in
            var order = Self.compare(value, sortValues[other.id] ?? .null)
            if order == 0 { order = id < other.id ? -1 : id > other.id ? 1 : 0 }
            return descending ? order > 0 : order < 0
        } ?? elements.count
    }

    private func set(_ elements: [Item]) {
        guard elements.count != _elements.count || zip(elements, _elements).contains(where: { $0 !== $1 }) else { return }
        registrar.withMutation(of: self, keyPath: \.elements) { _elements = elements }
    }

    /// Orders two values of the sort field ascending, as the server does:
    /// numbers by value, texts by Unicode code points, `false` before
    /// `true`, and `null` after every value.
    static func compare(_ a: JSONValue, _ b: JSONValue) -> Int {
        switch (a, b) {
        case (.null, .null): return 0
        case (.null, _): return 1
        case (_, .null): return -1
        case (.string(let x), .string(let y)):
            let (u, v) = (Array(x.unicodeScalars.map(\.value)), Array(y.unicodeScalars.map(\.value)))
            return u == v ? 0 : u.lexicographicallyPrecedes(v) ? -1 : 1
        case (.bool(let x), .bool(let y)):
            return x == y ? 0 : (!x ? -1 : 1)
        default:
            let (x, y) = (number(a), number(b))
            return x == y ? 0 : x < y ? -1 : 1
        }
    }

    private static func number(_ value: JSONValue) -> Double {
        switch value {
        case .int(let int): Double(int)
        case .double(let double): double
        default: 0
        }
    }
}

/// A query list, whatever its elements: what the feed and a reload need.
protocol AnyQueryList: AnyObject {
    var collection: String { get }
    var query: String { get }
    /// The read, path and query.
    var read: String { get }
    func take(_ answer: HTTPAnswer, from client: ObservableClient)
    func apply(_ change: FeedChange, client: ObservableClient)
}
