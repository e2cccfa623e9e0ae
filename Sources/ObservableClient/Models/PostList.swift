import JSON
import Observation

/// The image posts (`/posts`).
@MainActor
public final class PostList: CollectionOwner {
    /// Every one, in the order they were made.
    public var posts: [Post] { noteRead(0, \.posts); return _posts }

    var _posts: [Post] = []
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
        if field == "posts" { replace("", with: value.arrayValue ?? []) }
    }

    func apply(_ change: FeedChange, field: String) {
        guard field.isEmpty, let client else { return }
        switch change.operation {
        case .insert:
            guard let new = change.new, let id = new.id, !_posts.contains(id: id) else { return }
            update(\.posts, \._posts, _posts + [client.element(Post.self, new, parent: path)])
        case .remove:
            guard let id = change.old?.id else { return }
            update(\.posts, \._posts, _posts.filter { $0.id != id })
            client.forget(Post.path(id: id, parent: path))
        default:
            break
        }
    }

    func replace(_ field: String, with elements: [JSONValue]) {
        guard let client else { return }
        update(\.posts, \._posts, elements.map { client.element(Post.self, $0, parent: path) })
    }

    /// Adds a post (`POST /posts`) after every other, and returns it, tracked.
    public func add(imageURL: String, height: Double) async throws -> Post {
        let created = try await ObservableClient.write(
            client, "POST", path, body: ["imageURL": .string(imageURL), "height": .double(height)])
        return try await ObservableClient.created(client, Post.self, created, parent: path)
    }
}
