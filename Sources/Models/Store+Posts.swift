import FoundationEssentials
import JSON
import ModelObservation

extension Store {
    public static let maxImageURLLength = 2048
    public static let maxPostHeight = 100_000.0

    /// An `http` or `https` URL with a host, at most 2048 characters.
    static func validateImageURL(_ url: String) throws(ModelError) {
        guard url.count <= maxImageURLLength else {
            throw .unprocessable("imageURL must be at most \(maxImageURLLength) characters")
        }
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            throw .unprocessable("imageURL must be an http:// or https:// URL")
        }
        guard !url.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }),
              let components = URLComponents(string: url), let host = components.host, !host.isEmpty
        else {
            throw .unprocessable("imageURL must be an http:// or https:// URL with a host")
        }
    }

    /// Adds a post after every existing one.
    public func addPost(imageURL: String, height: Double) throws -> Post {
        try write(Writes.addPost(imageURL: imageURL, height: height))
    }

    /// Removes a post.
    public func deletePost(_ id: String, ifMatch: String? = nil) throws {
        try write(Writes.deletePost(id, ifMatch: ifMatch))
    }
}

extension Writes {
    /// Adds a post after every existing one.
    public static func addPost(imageURL: String, height: Double) throws -> PreparedWrite<Post> {
        try Store.validateImageURL(imageURL)
        guard height > 0, height <= Store.maxPostHeight else {
            throw ModelError.unprocessable("height must be a number above 0 and at most 100000")
        }
        return PreparedWrite { tx in
            // The shared position counter starts after the donuts and orders
            // when the state is loaded; staying after the last post keeps
            // creation order across restarts whatever it starts from.
            let position = tx.takePosition()
            let post = Post(id: Identifier.make(), imageURL: imageURL, height: height, position: position)
            try tx.execute("INSERT INTO posts (id, position, image_url, height) VALUES (?, ?, ?, ?)",
                           [.text(post.id), .integer(position), .text(imageURL), .real(height)])
            tx.state.posts.all[post.id] = post
            tx.insert(into: Posts.path, element: post.representation())
            return post
        }
    }

    /// Removes a post.
    public static func deletePost(_ id: String, ifMatch: String? = nil) -> PreparedWrite<Void> {
        PreparedWrite { tx in
            guard let post = tx.state.posts[id] else { throw ModelError.notFound("no post \(id)") }
            try tx.require(ifMatch: ifMatch, current: post.representation())
            try tx.execute("DELETE FROM posts WHERE id = ?", [.text(id)])
            tx.state.posts.all[id] = nil
            tx.remove(from: Posts.path, element: post.representation())
        }
    }
}
