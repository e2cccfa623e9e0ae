import JSON
import Observation

/// An image post (`/posts/{id}`). Posts never change; they are added and deleted.
public final class Post: Element, Identifiable, @unchecked Sendable {
    /// The server's id, which never changes.
    public let id: String
    /// The image's address.
    public var imageURL: String { noteRead(0, \.imageURL); return _imageURL }
    /// The image's height, for the staggered layout.
    public var height: Double { noteRead(1, \.height); return _height.double }

    var _imageURL = "", _height: JSONValue = .int(0)
    let path: String
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = Post.allFields
    var freshAt: Int64 = -1
    static let fields = ["imageURL", "height"]

    init(id: String, path: String, client: ObservableClient) {
        self.id = id
        self.path = path
        self.client = client
    }

    static func path(id: String, parent: String) -> String { "/posts/" + id }

    func set(_ field: String, _ value: JSONValue) {
        switch field {
        case "imageURL": update(\.imageURL, \._imageURL, value.string)
        case "height":
            // Kept as the server wrote it (300 or 120.5), for If-Match.
            guard _height != value else { return }
            registrar.withMutation(of: self, keyPath: \.height) { _height = value }
        default: break
        }
    }

    var representation: JSONValue { ["id": .string(id), "imageURL": .string(_imageURL), "height": _height] }

    /// Deletes the post (`DELETE /posts/{id}` with `If-Match`).
    public func delete() async throws {
        try await ObservableClient.write(client, "DELETE", path, ifMatch: representation)
    }
}
