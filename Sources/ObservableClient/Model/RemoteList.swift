import JSON

/// A top-level collection of the server (`/jobs`, `/games`, `/posts`, or
/// one of a model of your own): loaded whole, oldest first, or a page at a
/// time, newest first. Load one with `ObservableClient.list(_:pageSize:)`.
///
/// New elements join at the end, or at the front when paged; deleted ones
/// leave. Each element is the client's one object for its id.
public final class RemoteList<Item: RemoteElement>: RemoteSingleton, PagedList, @unchecked Sendable {
    /// The elements loaded: every one in the order they were made, or, when
    /// loaded a page at a time, the pages loaded so far, newest first.
    public var elements: [Item] {
        _$noteRead(0, \.elements)
        return _elements
    }

    /// True while older ones remain to be loaded with `loadMore()`.
    public var hasMore: Bool {
        _$client?.checkIsolation(reading: Self.self)
        _$registrar.access(self, keyPath: \.hasMore)
        return nextPage != nil
    }

    var _elements: [Item] = []
    var nextPage: String? {
        didSet { if nextPage != oldValue { _$registrar.withMutation(of: self, keyPath: \.hasMore) {} } }
    }
    var pageSize: Int?
    var pages = 1
    public let _$path: String
    public let _$registrar = ObservationRegistrar()
    public weak var _$client: ObservableClient?
    public var _$readMask: UInt16 = 0, _$trackedMask: UInt16 = 1
    public var _$freshAt: Int64 = -1
    public static var _$schema: RemoteSchema<RemoteList> { RemoteSchema(names: [Item.collectionKey]) }
    public static var _$singletonPath: String { Item.collectionPath }

    public init(_$client client: ObservableClient) {
        _$path = Item.collectionPath
        _$client = client
    }

    /// Loads the next older page (`GET` of the `Link` the last page
    /// answered), tracked like the first. Does nothing when `hasMore` is false.
    public func loadMore() async throws {
        guard let client, let next = nextPage else { return }
        try await client.loadPage(next, into: self)
    }

    public func _$set(_ field: String, _ value: JSONValue) {
        if field == Item.collectionKey { _$replace("", with: value.arrayValue ?? [], repaired: false) }
    }

    /// An insert joins at the end, or at the front when paged (newest
    /// first); a remove leaves, and the client forgets the object.
    public func _$apply(_ change: FeedChange, field: String) {
        guard field.isEmpty, let client else { return }
        switch change.operation {
        case .insert:
            guard let new = change.new, let id = new.id, !_elements.contains(id: id) else { return }
            let element = client.element(Item.self, new, parent: path)
            update(\.elements, \._elements, pageSize == nil ? _elements + [element] : [element] + _elements)
        case .remove:
            guard let id = change.old?.id else { return }
            update(\.elements, \._elements, _elements.filter { $0.id != id })
            client.forget(Item.path(id: id, parent: path))
        default:
            break
        }
    }

    public func _$replace(_ field: String, with elements: [JSONValue], repaired: Bool) {
        guard let client else { return }
        let ordered = pageOrder(elements, repaired: repaired, current: _elements.map(\.id))
        update(\.elements, \._elements, ordered.map { client.element(Item.self, $0, parent: path) })
    }

    public func _$isCollection(_ field: String) -> Bool { field.isEmpty }

    func append(page elements: [JSONValue]) {
        guard let client else { return }
        let known = Set(_elements.map(\.id))
        let added = elements.filter { !known.contains($0.id ?? "") }.map { client.element(Item.self, $0, parent: path) }
        update(\.elements, \._elements, _elements + added)
    }

    var held: [any RemoteModel] { _elements }
    var elementFields: [String] { Item.fields }
}

/// The jobs (`/jobs`).
public typealias JobList = RemoteList<Job>
/// The memory games (`/games`).
public typealias GameList = RemoteList<Game>
/// The image posts (`/posts`).
public typealias PostList = RemoteList<Post>

extension RemoteList where Item == Job {
    /// The jobs loaded (`elements`).
    public var jobs: [Job] { elements }

    /// Creates a job (`POST /jobs`) and returns it, tracked. With `step` and
    /// `interval` the server advances it by `step` every `interval`; without,
    /// clients report its progress (`Job.report(current:)`).
    public func create(total: Int, step: Int? = nil, interval: Duration? = nil) async throws -> Job {
        guard let client else { throw ObservableClientError.closed }
        var body = JSONObject()
        body["total"] = .int(Int64(total))
        if let step { body["step"] = .int(Int64(step)) }
        if let interval {
            let (seconds, attoseconds) = interval.components
            body["intervalMs"] = .int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        }
        return try await client.create(Job.self, body: .object(body))
    }
}

extension RemoteList where Item == Game {
    /// The games loaded (`elements`).
    public var games: [Game] { elements }

    /// Deals a new game of `pairs` pairs (`POST /games`) and returns it,
    /// tracked. The same `seed` deals the same cards.
    public func create(pairs: Int, seed: Int64? = nil) async throws -> Game {
        guard let client else { throw ObservableClientError.closed }
        var body = JSONObject()
        body["pairs"] = .int(Int64(pairs))
        if let seed { body["seed"] = .int(seed) }
        return try await client.create(Game.self, body: .object(body))
    }
}

extension RemoteList where Item == Post {
    /// The posts loaded (`elements`).
    public var posts: [Post] { elements }

    /// Adds a post (`POST /posts`) after every other, and returns it, tracked.
    public func add(imageURL: String, height: Double) async throws -> Post {
        guard let client else { throw ObservableClientError.closed }
        return try await client.create(Post.self, .set(\.imageURL, imageURL), .set(\.height, height))
    }
}
