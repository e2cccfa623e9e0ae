/// An image post (`/posts/{id}`). Posts never change; they are added and deleted.
@RemoteModel("/posts/{id}")
public final class Post {
    /// The server's id, which never changes.
    public let id: String
    /// The image's address.
    public var imageURL: String
    /// The image's height, for the staggered layout.
    public var height: Double
}
