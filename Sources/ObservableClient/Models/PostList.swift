import JSON
import Observation

/// The image posts (`/posts`): every one oldest first, or, loaded with a page size, the
/// newest page first and older pages on demand.
public final class PostList: PagedList {
    /// The posts loaded: every one in the order they were made, or, when
    /// loaded a page at a time, the pages loaded so far, newest first. New
    /// ones arrive at the end, or at the front when paged.
    public var posts: [Post] { noteRead(0, \.posts); return _posts }
    /// True while older ones remain to be loaded with `loadMore()`.
    public var hasMore: Bool {
        registrar.access(self, keyPath: \.hasMore)
        return nextPage != nil
    }

    var _posts: [Post] = []
    var nextPage: String? {
        didSet { if nextPage != oldValue { registrar.withMutation(of: self, keyPath: \.hasMore) {} } }
    }
    var pageSize: Int?
    var pages = 1
    let path = "/posts"
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = PostList.allFields
    var freshAt: Int64 = -1
    static let fields = ["posts"]

    init(client: ObservableClient) {
        self.client = client
    }

    func set(_ field: String, _ value: JSONValue) {
        if field == "posts" { replace("", with: value.arrayValue ?? [], repaired: false) }
    }

    func apply(_ change: FeedChange, field: String) {
        guard field.isEmpty, let client else { return }
        switch change.operation {
        case .insert:
            guard let new = change.new, let id = new.id, !_posts.contains(id: id) else { return }
            let element = client.element(Post.self, new, parent: path)
            update(\.posts, \._posts, pageSize == nil ? _posts + [element] : [element] + _posts)
        case .remove:
            guard let id = change.old?.id else { return }
            update(\.posts, \._posts, _posts.filter { $0.id != id })
            client.forget(Post.path(id: id, parent: path))
        default:
            break
        }
    }

    func replace(_ field: String, with elements: [JSONValue], repaired: Bool) {
        guard let client else { return }
        let ordered = pageOrder(elements, repaired: repaired, current: _posts.map(\.id))
        update(\.posts, \._posts, ordered.map { client.element(Post.self, $0, parent: path) })
    }

    func append(page elements: [JSONValue]) {
        guard let client else { return }
        let known = Set(_posts.map(\.id))
        let added = elements.filter { !known.contains($0.id ?? "") }.map { client.element(Post.self, $0, parent: path) }
        update(\.posts, \._posts, _posts + added)
    }

    /// Loads the next older page (`GET` of the `Link` the last page
    /// answered), tracked like the first. Does nothing when `hasMore` is false.
    public func loadMore() async throws {
        guard let client, let next = nextPage else { return }
        try await client.loadPage(next, into: self)
    }

    /// Adds a post (`POST /posts`) after every other, and returns it, tracked.
    public func add(imageURL: String, height: Double) async throws -> Post {
        let created = try await ObservableClient.write(
            client, "POST", path, body: ["imageURL": .string(imageURL), "height": .double(height)])
        return try await ObservableClient.created(client, Post.self, created, parent: path)
    }
}
