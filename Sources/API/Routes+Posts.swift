import HTTPServer
import JSON
import Models

extension ObservableAPI {
    func addPostsRoutes(to router: Router) {
        router.get("/posts") { [self] context in
            try read(context, fields: Post.fields) { state, fields in state.posts.list(fields) }
        }
        router.post("/posts") { [self] context in
            let body = try RequestBody(context.request, allowed: ["imageURL", "height"])
            guard let imageURL = try body.string("imageURL") else { throw APIError(422, "imageURL is required") }
            guard let height = try body.number("height") else { throw APIError(422, "height is required") }
            return try commit(context, try Writes.addPost(imageURL: imageURL, height: height)) { post in
                Self.written(post.representation().bytes, status: 201, location: post.path)
            }
        }
        // Before `/posts/:id`, which would otherwise take "staggered" for an id.
        router.get("/posts/staggered") { [self] context in
            let query = context.request.query
            let columns = try Self.columns(query["columns"])
            let layout = try Self.layout(query["layout"])
            return try read(context, fields: Post.fields) { state, fields in
                state.posts.staggered(columns: columns, layout: layout, fields)
            }
        }
        router.get("/posts/:id") { [self] context in
            let id = context.parameter("id")
            return try read(context, fields: Post.fields) { state, fields in
                guard let post = state.posts[id] else { throw APIError(404, "no post \(id)") }
                return post.representation(fields)
            }
        }
        router.delete("/posts/:id") { [self] context in
            try commit(context, Writes.deletePost(context.parameter("id"), ifMatch: context.request.header("If-Match"))) { Self.noContent }
        }
    }

    /// A number field, integer or fraction; nil when absent.
    /// `columns=` of a staggered view: an integer from 1 to 12, 2 when absent.
    static func columns(_ parameter: String?) throws -> Int {
        guard let parameter else { return Posts.defaultColumns }
        guard parameter.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let columns = Int(parameter), Posts.columnsRange.contains(columns)
        else {
            throw APIError(400, "columns must be an integer from \(Posts.columnsRange.lowerBound) to \(Posts.columnsRange.upperBound)")
        }
        return columns
    }

    /// `layout=` of a staggered view: `roundRobin` (the default) or `balanced`.
    static func layout(_ parameter: String?) throws -> StaggeredLayout {
        guard let parameter else { return .roundRobin }
        guard let layout = StaggeredLayout(rawValue: parameter) else {
            throw APIError(400, "layout must be one of: \(StaggeredLayout.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return layout
    }
}
