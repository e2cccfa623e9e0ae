import JSON
import ModelObservation
import OrderedCollections
import SQLiteStore

/// An image post of the staggered grid.
public struct Post: Sendable, Equatable {
    public static let fields = ["id", "imageURL", "height"]

    public let id: String
    public let imageURL: String
    public let height: Double
    let position: Int64

    public var path: String { Posts.path + "/" + id }

    public func representation(_ selection: FieldSelection = .all) -> Representation {
        var builder = RepresentationBuilder(resource: path)
        builder.constant("id", .string(id))
        builder.field("imageURL", .string(imageURL), selection)
        builder.field("height", .double(height), selection)
        return builder.finish()
    }

    public var keys: [PropertyKey] { [PropertyKey(path, "imageURL"), PropertyKey(path, "height")] }
}

/// How posts are dealt into the columns of a staggered view.
public enum StaggeredLayout: String, Sendable, CaseIterable {
    /// Post `i` goes to column `i % n`, as the seed's `setUpList` does.
    case roundRobin
    /// Each post goes to the column with the least total height so far;
    /// a tie goes to the leftmost of the tied columns.
    case balanced
}

/// Every post, in creation order.
public struct Posts: Sendable, Equatable {
    public static let path = "/posts"
    public static let columnsRange = 1...12
    public static let defaultColumns = 2

    public internal(set) var all: PersistentOrderedDictionary<String, Post>

    public subscript(id: String) -> Post? { all[id] }

    /// The position the next post must be placed after.
    var lastPosition: Int64 { all.values.last?.position ?? 0 }

    /// `GET /posts`: `{"posts": [Post…]}`, reading the membership and each post.
    public func list(_ selection: FieldSelection = .all) -> Representation {
        let elements = all.values.map { $0.representation(selection) }
        return Representation(json: ["posts": .array(elements.map(\.json))],
                              reads: [PropertyKey(Self.path)] + elements.flatMap(\.reads))
    }

    /// `GET /posts/staggered`: the posts dealt into `columns` columns by
    /// `layout`, reading what `GET /posts` reads.
    public func staggered(columns: Int, layout: StaggeredLayout, _ selection: FieldSelection = .all) -> Representation {
        var dealt = [[Post]](repeating: [], count: columns)
        switch layout {
        case .roundRobin:
            for (index, post) in all.values.enumerated() { dealt[index % columns].append(post) }
        case .balanced:
            var heights = [Double](repeating: 0, count: columns)
            for post in all.values {
                // `firstIndex` of the minimum: ties go to the leftmost column.
                let shortest = heights.firstIndex(of: heights.min() ?? 0) ?? 0
                dealt[shortest].append(post)
                heights[shortest] += post.height
            }
        }
        var reads = [PropertyKey(Self.path)]
        var json: [JSONValue] = []
        for column in dealt {
            let elements = column.map { $0.representation(selection) }
            json.append(.array(elements.map(\.json)))
            reads.append(contentsOf: elements.flatMap(\.reads))
        }
        return Representation(json: ["columns": .array(json)], reads: reads)
    }

    static func load(_ database: Database) throws -> Posts {
        var all = PersistentOrderedDictionary<String, Post>()
        for row in try database.rows("SELECT id, position, image_url, height FROM posts ORDER BY position") {
            let post = Post(id: row[0].string ?? "", imageURL: row[2].string ?? "", height: row[3].double ?? 0, position: row[1].int64 ?? 0)
            all[post.id] = post
        }
        return Posts(all: all)
    }
}
