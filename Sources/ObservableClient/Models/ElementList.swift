import JSON

/// A top-level list of the server (`/jobs`, `/games`, `/posts`): loaded
/// whole, oldest first, or a page at a time, newest first. What the three
/// lists share; each names its elements (`jobs`, `games`, `posts`) and its
/// writes.
protocol ElementList: PagedList {
    associatedtype Item: Element & Identifiable where Item.ID == String
    /// The list's public property (`\.jobs`): the key Observation knows it by.
    static var elementsKey: KeyPath<Self, [Item]> { get }
    /// Where the elements are kept (`\._jobs`).
    static var storage: ReferenceWritableKeyPath<Self, [Item]> { get }
}

extension ElementList {
    var held: [Item] { self[keyPath: Self.storage] }

    func set(_ field: String, _ value: JSONValue) {
        if field == Self.fields[0] { replace("", with: value.arrayValue ?? [], repaired: false) }
    }

    /// An insert joins at the end, or at the front when paged (newest
    /// first); a remove leaves, and the client forgets the object.
    func apply(_ change: FeedChange, field: String) {
        guard field.isEmpty, let client else { return }
        switch change.operation {
        case .insert:
            guard let new = change.new, let id = new.id, !held.contains(id: id) else { return }
            let element = client.element(Item.self, new, parent: path)
            update(Self.elementsKey, Self.storage, pageSize == nil ? held + [element] : [element] + held)
        case .remove:
            guard let id = change.old?.id else { return }
            update(Self.elementsKey, Self.storage, held.filter { $0.id != id })
            client.forget(Item.path(id: id, parent: path))
        default:
            break
        }
    }

    func replace(_ field: String, with elements: [JSONValue], repaired: Bool) {
        guard let client else { return }
        let ordered = pageOrder(elements, repaired: repaired, current: held.map(\.id))
        update(Self.elementsKey, Self.storage, ordered.map { client.element(Item.self, $0, parent: path) })
    }

    func append(page elements: [JSONValue]) {
        guard let client else { return }
        let known = Set(held.map(\.id))
        let added = elements.filter { !known.contains($0.id ?? "") }.map { client.element(Item.self, $0, parent: path) }
        update(Self.elementsKey, Self.storage, held + added)
    }

    /// Loads the next older page (`GET` of the `Link` the last page
    /// answered), tracked like the first. Does nothing without one.
    func loadNextPage() async throws {
        guard let client, let next = nextPage else { return }
        try await client.loadPage(next, into: self)
    }

    /// Creates an element (`POST` to the list) and returns it, tracked.
    func create(_ body: JSONValue) async throws -> Item {
        let created = try await ObservableClient.write(client, "POST", path, body: body)
        return try await ObservableClient.created(client, Item.self, created, parent: path)
    }
}
