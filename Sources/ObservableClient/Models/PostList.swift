import JSON
import Observation

/// The image posts (`/posts`): every one oldest first, or, loaded with a page size, the
/// newest page first and older pages on demand.
public final class PostList: ElementList, @unchecked Sendable {
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
    static var elementsKey: KeyPath<PostList, [Post]> { \.posts }
    static var storage: ReferenceWritableKeyPath<PostList, [Post]> { \._posts }

    init(client: ObservableClient) {
        self.client = client
    }

    /// Loads the next older page (`GET` of the `Link` the last page
    /// answered), tracked like the first. Does nothing when `hasMore` is false.
    public func loadMore() async throws {
        try await loadNextPage()
    }

    /// Adds a post (`POST /posts`) after every other, and returns it, tracked.
    public func add(imageURL: String, height: Double) async throws -> Post {
        try await create(["imageURL": .string(imageURL), "height": .double(height)])
    }
}
